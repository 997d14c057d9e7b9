"""Writing a compact release: ``manifest.json`` plus ``coefficients.arrow`` (and copied universe value lists).

See :mod:`dpspark.mechanisms.compact.coefficients` for the coefficient file and the
README ("Compact release file format") for the whole format. The manifest
holds public parameters only: m and the modulus, l = n + 1, the encodings,
every parameter of the counting mechanism and of the empty-bin sampler G, the
privacy and accuracy statements and the data files' sha256; never |S| or a
count. The directory appears atomically (:mod:`dpspark.release.atomic`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpspark.mechanisms.compact.coefficients import COEFFICIENTS_FILE, COLUMN, DEFAULT_BATCH_ROWS, write_coefficient_file
from dpspark.release.exactjson import frac_to_str, int_to_str
from dpspark.privacy.relations import AddRemove
from dpspark.release.header import utc_now
from dpspark.release.writer import exact_config_value, manifest_body, write_release_dir
from dpspark.universe import Universe

if TYPE_CHECKING:
    from dpspark.mechanisms.compact import CompactRelease

#: The manifest's fixed descriptions (the schema pins them; the README explains them).
ORDER = "ascending degree: row i holds the coefficient of z^i"
ELEMENT_ENCODING = "big-endian m/8 bytes of iota(e) - 1; bit j of that integer is the coefficient of z^j"
BASIS = "polynomial: GF(2^m) = GF(2)[z]/(modulus)"
IOTA = "iota(e) = 1 + sum_j e_j 2^j for e = sum_j e_j z^j: a bijection GF(2^m) -> [1, 2^m]"
EMBEDDING = "phi(x) = iota^-1(x) for the 1-based universe index x in [1, |X|], i.e. the element whose integer is x - 1"
EVALUATION = "count(x) = G(iota(p(phi(x)))) with p(z) = sum_{i < ell} c_i z^i over GF(2^m)"


def _opt(value: Any) -> str | None:
    return None if value is None else int_to_str(int(value))


def counting_section(params: Mapping[str, Any]) -> dict[str, Any]:
    """The counting mechanism's exact parameters (from ``mechanism_parameters``) as manifest strings."""
    gamma = params.get("gamma")
    return {
        "mechanism": params["mechanism"],
        "n": int_to_str(int(params["n"])),
        "exp_eps": {"num": int_to_str(int(params["exp_eps"]["num"])), "den": int_to_str(int(params["exp_eps"]["den"]))},
        "gamma": None if gamma is None else {"num": int_to_str(int(gamma["num"])), "den": int_to_str(int(gamma["den"]))},
        "t_star": None if params.get("t_star") is None else str(int(params["t_star"])),
        "t": None if params.get("t") is None else str(int(params["t"])),
        "fallback": params.get("fallback"),
        "d": str(params["d"]),
    }


def compact_section(release: "CompactRelease", batch_rows: int) -> dict[str, Any]:
    """The manifest's ``compact`` section."""
    from dpspark.mechanisms.compact.rebuild import mechanism_parameters
    from dpspark.gf import modulus_string

    width = release.m // 8
    detail = release.privacy_detail
    return {
        "coefficients": {
            "file": COEFFICIENTS_FILE,
            "format": "arrow-ipc-file",
            "column": COLUMN,
            "arrow_type": f"fixed_size_binary[{width}]",
            "byte_width": width,
            "rows": int_to_str(release.ell),
            "batch_rows": int_to_str(batch_rows),
            "order": ORDER,
            "element_encoding": ELEMENT_ENCODING,
        },
        "field": {"m": release.m, "modulus": hex(release.modulus), "modulus_polynomial": modulus_string(release.m), "basis": BASIS},
        "ell": int_to_str(release.ell),
        "iota": IOTA,
        "embedding": EMBEDDING,
        "evaluation": EVALUATION,
        "counting_mechanism": counting_section(mechanism_parameters(release.mechanism)),
        "sampler": {k: v for k, v in release.sampler.describe().items() if k != "m"},
        "epsilon2": str(release.parameters["epsilon2"]),
        "privacy_pieces": {
            "eps_a": frac_to_str(detail.eps_a),
            "eps_b": frac_to_str(detail.eps_b),
            "sampler_epsilon": frac_to_str(detail.sampler_epsilon),
            "rng_draws_per_bin": detail.rng_draws_per_bin,
            "rng_lambda": detail.lam,
            "rng_bias": frac_to_str(detail.rng_bias),
        },
    }


def build_compact_manifest(
    *,
    release: "CompactRelease",
    universe_spec: dict[str, Any],
    universe: Universe,
    key_columns: list[str],
    config: Mapping[str, Any],
    input_description: Mapping[str, Any],
    rng_name: str,
    files: dict[str, Any],
    batch_rows: int = DEFAULT_BATCH_ROWS,
    created_utc: str | None = None,
) -> dict[str, Any]:
    """The manifest dict of a compact release (before sealing)."""
    counting = release.parameters["mechanism"]
    return manifest_body(
        kind="compact", algorithm="CompactHistogram",
        counting=counting["mechanism"] + (" (GeoSample fallback)" if counting.get("fallback") else ""),
        n=int(config.get("max_units", release.n)), parameters=release.parameters, privacy=release.privacy, accuracy=release.accuracy,
        privacy_notes=release.privacy.notes + "; the replacement statement below is the (looser) two-step group-privacy bound",
        eps_requested=exact_config_value(config, "epsilon", None), delta_requested=Fraction(0),
        universe_spec=universe_spec, universe=universe, key_columns=key_columns, config=config,
        input_description=input_description, rng_name=rng_name, created_utc=created_utc,
        section=("compact", compact_section(release, batch_rows)), files=files,
    )


def _check_release(release: "CompactRelease", universe: Universe) -> None:
    if release.universe_size != universe.size:
        raise ValueError("the release's universe size differs from the universe's size")
    if universe.size > 1 << release.m:
        raise ValueError("the universe has more than 2^m elements")
    if not 2 <= release.ell <= release.n + 1 or release.coefficients.shape != (release.ell, release.m // 64):
        raise ValueError("a compact release has l <= n + 1 coefficients of m/64 words (l = k n + 1)")
    if not isinstance(release.privacy.relation, AddRemove) or release.privacy.delta != 0:
        raise ValueError("compact release privacy must be pure and stated under add/remove of one unit")
    if release.accuracy.per_query_above != -1:
        raise ValueError("a compact release's per-query error bar holds for every key")


def write_compact_release(
    out_path: str | Path,
    *,
    release: "CompactRelease",
    universe: Universe,
    key_columns: list[str],
    config: dict[str, Any],
    input_description: dict[str, Any],
    rng_name: str,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    created_utc: str | None = None,
) -> Path:
    """Write a compact release directory atomically and return its path.

    Arguments as for :func:`~dpspark.mechanisms.histogram.writer.write_sparse_release`;
    ``batch_rows`` sets the coefficient file's record-batch size and
    ``created_utc`` pins the creation time (the job passes its start time; test
    vectors a fixed one); it is also every file's modification time.
    Raises :class:`~dpspark.release.errors.ReleaseExistsError` if the path
    exists and :class:`~dpspark.release.errors.ReleaseWriteError` on OS errors.
    """
    if not isinstance(rng_name, str) or not rng_name:
        raise ValueError("rng_name must be the randomness source's name")
    key_columns = list(key_columns)
    _check_release(release, universe)

    def build(spec: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
        return build_compact_manifest(
            release=release, universe_spec=spec, universe=universe, key_columns=key_columns, config=config,
            input_description=input_description, rng_name=rng_name, files=files, batch_rows=batch_rows,
            created_utc=created,
        )

    created = created_utc or utc_now()
    return write_release_dir(
        out_path, universe,
        lambda tmp: write_coefficient_file(tmp / COEFFICIENTS_FILE, release.coefficients, release.m, batch_rows),
        build, created,
    )
