"""The ``compact`` section of a manifest: the GF(2^m) field, the coefficient file's layout, M and G.

The envelope (:mod:`dpspark.release.manifest`) has already checked the common parts; this codec checks
the compact-specific fields against them (l = k n + 1, the per-unit statement, sizes before any
allocation). Declared for the ``compact`` kind in ``kind.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpspark.release.counts_form import SectionContext
    from dpspark.release.header import FileEntry, ReadLimits

SECTION_KEY = "compact"


@dataclass(frozen=True)
class CompactInfo:
    """The validated ``compact`` section: field, coefficient file layout, mechanism and sampler parameters.

    ``counting`` and ``sampler`` are the sections as read (exact strings),
    already checked for shape and size; :mod:`dpspark.mechanisms.compact.files`
    rebuilds M and G from them and checks every recorded value.
    """

    m: int
    modulus: int
    ell: int
    file: str
    byte_width: int
    batch_rows: int
    counting: dict[str, Any]
    sampler: dict[str, Any]
    epsilon2: Fraction
    eps_a: Fraction
    eps_b: Fraction
    rng_draws_per_bin: int
    rng_lambda: int
    rng_bias: Fraction



def parse_compact_section(
    obj: dict[str, Any], files: "dict[str, FileEntry]", name: str, limits: "ReadLimits", ctx: "SectionContext"
) -> dict[str, Any]:
    """Semantic checks of the ``compact`` section; sizes are checked before anything is allocated.

    With ``max_keys_per_unit = k`` the polynomial is built for total count <= k n (l = k n + 1) at epsilon/k,
    and the add/remove statement is k times the per-step one (group privacy).
    """
    from dpspark.gf.moduli import modulus_int, modulus_string  # no numba: inspect needs no GF arithmetic
    from dpspark.release.header import exact_frac as _frac, exact_int as _int, fail as _fail

    if "bins" in obj:
        raise _fail(name, "a compact release has no bins section")
    max_units, universe_size, add_remove, accuracy = ctx.max_units, ctx.universe_size, ctx.add_remove, ctx.accuracy
    keys_per_unit, rows_per_key = ctx.keys_per_unit, ctx.rows_per_key
    from dpspark.mechanisms.compact.coefficients import MAX_BATCH_ROWS, max_metadata_bytes
    from dpspark.rng import bias_epsilon

    sec = obj["compact"]
    coef, fld, mech, samp = sec["coefficients"], sec["field"], sec["counting_mechanism"], sec["sampler"]
    m = fld["m"]
    width = m // 8
    if coef["byte_width"] != width or coef["arrow_type"] != f"fixed_size_binary[{width}]":
        raise _fail(name, f"compact.coefficients: byte width must be m/8 = {width} bytes for m = {m}")
    if _int(fld["modulus"], name, "compact.field.modulus", 300) != modulus_int(m) or fld["modulus_polynomial"] != modulus_string(m):
        raise _fail(name, f"compact.field: the modulus is not dpspark's modulus for m = {m} ({modulus_string(m)})")
    ell = _int(sec["ell"], name, "compact.ell", 256)
    count_range = keys_per_unit * rows_per_key * max_units  # M's range; at most k n keys are non-zero
    if ell != keys_per_unit * max_units + 1:
        raise _fail(name, "compact.ell must be k n + 1 (max_keys_per_unit x max_units + 1)")
    if _int(coef["rows"], name, "compact.coefficients.rows", 256) != ell:
        raise _fail(name, "compact.coefficients.rows differs from compact.ell")
    if universe_size > 1 << m:
        raise _fail(name, f"universe_size is above 2^m = 2^{m}: phi would not be injective")
    batch_rows = _int(coef["batch_rows"], name, "compact.coefficients.batch_rows", 64)
    if not 1 <= batch_rows <= MAX_BATCH_ROWS:
        raise _fail(name, f"compact.coefficients.batch_rows must lie in [1, {MAX_BATCH_ROWS}]")
    fname = coef["file"]
    if fname not in files:
        raise _fail(name, f"the coefficient file {fname!r} is not listed under files")
    need = ell * width
    if need > limits.max_file_bytes:
        raise _fail(name, f"compact.ell = {ell} coefficients of {width} bytes exceed the file size limit of {limits.max_file_bytes} bytes")
    declared = files[fname].size
    if not need <= declared <= need + max_metadata_bytes(ell, batch_rows):
        raise _fail(name, f"files.{fname} declares {declared} bytes, but {ell} coefficients of {width} bytes need "
                    f"{need} bytes plus at most {max_metadata_bytes(ell, batch_rows)} bytes of metadata")
    if _int(mech["n"], name, "compact.counting_mechanism.n", 256) != count_range:
        raise _fail(name, "compact.counting_mechanism.n differs from k c n (max_keys_per_unit x max_rows_per_key x max_units)")
    d = _int(mech["d"], name, "compact.counting_mechanism.d", limits.max_sampler_d_bits)
    if _int(samp["d"], name, "compact.sampler.d", limits.max_sampler_d_bits) != d:
        raise _fail(name, "compact.sampler.d differs from compact.counting_mechanism.d")
    fast = mech["mechanism"] == "FastSample"
    if fast != (mech["gamma"] is not None) or fast != (mech["t_star"] is not None) or fast != (mech["t"] is not None):
        raise _fail(name, "compact.counting_mechanism: gamma, t_star and t are given exactly for FastSample")
    if not fast and mech["fallback"] is not None:
        raise _fail(name, "compact.counting_mechanism: only FastSample has a fallback")
    eps_num = _int(mech["exp_eps"]["num"], name, "compact.counting_mechanism.exp_eps.num", 4096)
    eps_den = _int(mech["exp_eps"]["den"], name, "compact.counting_mechanism.exp_eps.den", 4096)
    if eps_den < 1:
        raise _fail(name, "compact.counting_mechanism.exp_eps.den must be a positive integer")
    exp_eps = Fraction(eps_num, eps_den)
    if exp_eps <= 1 or exp_eps ** (keys_per_unit * rows_per_key) != add_remove.exp_eps:
        raise _fail(name, "compact.counting_mechanism.exp_eps must be > 1 and equal privacy.add_remove.exp_epsilon_tilde")
    if fast:
        num = _int(mech["gamma"]["num"], name, "compact.counting_mechanism.gamma.num", 8)
        den = _int(mech["gamma"]["den"], name, "compact.counting_mechanism.gamma.den", 4096)
        if num != 1 or den < 2:
            raise _fail(name, "compact.counting_mechanism.gamma must be 1/g with an integer g >= 2")
    expected_keys = {"rounded-cdf": {"kind", "rule", "d", "min_scaled_pmf_at_zero"}, "block": {"kind", "rule", "d", "block", "rem"}}
    if set(samp) != expected_keys[samp["kind"]]:
        raise _fail(name, f"compact.sampler: a {samp['kind']} sampler has exactly the fields {sorted(expected_keys[samp['kind']])}")
    for key in ("min_scaled_pmf_at_zero", "block", "rem"):
        if key in samp:
            _int(samp[key], name, f"compact.sampler.{key}", limits.max_sampler_d_bits + 300)
    pieces = sec["privacy_pieces"]
    eps_a = _frac(pieces["eps_a"], name, "compact.privacy_pieces.eps_a", 4 * limits.max_sampler_d_bits)
    eps_b = _frac(pieces["eps_b"], name, "compact.privacy_pieces.eps_b", 4 * limits.max_sampler_d_bits)
    sampler_eps = _frac(pieces["sampler_epsilon"], name, "compact.privacy_pieces.sampler_epsilon", 4 * limits.max_sampler_d_bits)
    rng_bias = _frac(pieces["rng_bias"], name, "compact.privacy_pieces.rng_bias")
    draws, lam = pieces["rng_draws_per_bin"], pieces["rng_lambda"]
    if eps_a < 0 or eps_b < 0 or sampler_eps != max(eps_a, eps_b):
        raise _fail(name, "compact.privacy_pieces: sampler_epsilon must be max(eps_a, eps_b) >= 0")
    if rng_bias != bias_epsilon(draws, lam):
        raise _fail(name, "compact.privacy_pieces.rng_bias is not bias_epsilon(rng_draws_per_bin, rng_lambda)")
    if add_remove.bias_epsilon != keys_per_unit * (sampler_eps + rng_bias) or not add_remove.pure:
        raise _fail(name, "privacy.add_remove must be pure with bias_epsilon = k (sampler_epsilon + rng_bias)")
    epsilon2 = _frac(sec["epsilon2"], name, "compact.epsilon2")
    if sampler_eps > epsilon2:
        raise _fail(name, "compact.privacy_pieces.sampler_epsilon exceeds compact.epsilon2")
    if accuracy.per_query_above != -1:
        raise _fail(name, "a compact release's per-query error bar holds for every key (threshold -1)")
    return {"compact": CompactInfo(
        m=m, modulus=modulus_int(m), ell=ell, file=fname, byte_width=width, batch_rows=batch_rows,
        counting=mech, sampler=samp, epsilon2=epsilon2, eps_a=eps_a, eps_b=eps_b,
        rng_draws_per_bin=draws, rng_lambda=lam, rng_bias=rng_bias,
    )}


def check_compact_plan(plan: Any, mech: Any, limits: "ReadLimits") -> None:
    """Before any spend: the compact section's sizes and the statements this plan's manifest will state."""
    from dpspark.release.plan_check import check_count_statements

    counting = mech.compact_plan.mechanism
    if mech.ell > limits.max_rows:  # l = k n + 1 coefficients, one row each
        raise ValueError(f"the coefficient file would have l = k n + 1 = {mech.ell} rows, above the "
                         f"reader's limit of {limits.max_rows}")
    if counting.d.bit_length() > limits.max_sampler_d_bits:
        raise ValueError(f"compact.counting_mechanism.d has {counting.d.bit_length()} bits, above the reader's "
                         f"limit of {limits.max_sampler_d_bits}")
    step = counting.exp_eps
    if max(step.numerator.bit_length(), step.denominator.bit_length()) > 4096:
        raise ValueError("compact.counting_mechanism.exp_eps has a part above 4096 bits")
    # the compact bias has its own, far larger bound: the plan states none
    check_count_statements(plan, mech.name, step ** (mech.k * mech.c), Fraction(0), Fraction(0), "CompactHistogram", True,
                           limits)
