"""The ``gaussian_model`` kind's section codec: the manifest check of a private Gaussian model."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpspark.privacy.measures import ZCDP
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.rederive import check_group_privacy, exact, fail, param, privacy_checked, within_budget

KIND = "gaussian_model"
MECHANISMS = ("gaussian_covariance", "gaussian_mean", "gaussian_learner")
ESTIMATES = ("covariance", "mean")
#: largest d a reader accepts (the covariance table has d^2 rows)
MAX_DIMENSION = 1 << 14
#: relative tolerance of the PSD check (float rounding only)
PSD_TOLERANCE = 1e-9  # report
_SECTION_INTS = ("dimension", "data_bits", "matrix_bits", "passes")
_SECTION_TEXTS = ("values",)
#: which units the model used: ``units_used`` (every single, issue 23) or, in releases before it, ``units_paired``
_UNITS_KEYS = ("units_used", "units_paired")


def noise_unit(label: str, data_bits: int, matrix_bits: int) -> tuple[str, int] | None:
    """(what a noise addition's pass summed, log2 of its integer unit in the data's units) from its label, or None.

    Sums of preconditioned, centred rows y = M x have unit 2^-(data + matrix bits); sums of their outer products
    the square of that; a count of units unit 1.
    """
    y_bits = int(data_bits) + int(matrix_bits)
    if label.endswith(("sums", "mean")):
        return f"{label}: each coordinate of a sum of preconditioned rows, in the data's units", y_bits
    if label.startswith(("PCE", "PPC", "covariance")) and not label.endswith("count"):
        return f"{label}: each entry of a sum of outer products, in the data's units squared", 2 * y_bits
    if label.endswith("count"):
        return f"{label}: a count of units", 0
    return None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_gaussian_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """Manifest check: d, the columns, which estimates (and so which tables), the public bounds' types."""
    if manifest.mechanism not in MECHANISMS:
        raise ReleaseFormatError(f"{name}: a gaussian_model release comes from one of {MECHANISMS}")
    if not all(_int(section.get(k)) and section[k] >= 0 for k in _SECTION_INTS):
        raise ReleaseFormatError(f"{name}: section.{'/'.join(_SECTION_INTS)} must be ints >= 0")
    if not all(isinstance(section.get(k), str) for k in _SECTION_TEXTS + ("radius", "kappa", "rho")):
        raise ReleaseFormatError(f"{name}: section.{'/'.join(_SECTION_TEXTS)}, radius, kappa and rho must be strings")
    if sum(isinstance(section.get(k), str) for k in _UNITS_KEYS) != 1 or any(
            k in section and not isinstance(section[k], str) for k in _UNITS_KEYS):
        raise ReleaseFormatError(f"{name}: section must state the units used as one string "
                                 f"({' or '.join(_UNITS_KEYS)})")
    if not isinstance(section.get("rho_by_noise"), list) or "add_remove" not in manifest.privacy:
        raise ReleaseFormatError(f"{name}: section.rho_by_noise must be a list, and privacy state add_remove")
    d, columns, estimates = section["dimension"], section.get("columns"), section.get("estimates")
    if not 1 <= d <= MAX_DIMENSION:
        raise ReleaseFormatError(f"{name}: section.dimension must lie in [1, {MAX_DIMENSION}]")
    if (not isinstance(columns, list) or len(columns) != d or not all(isinstance(c, str) for c in columns)
            or len(set(columns)) != d):
        raise ReleaseFormatError(f"{name}: section.columns must name the {d} columns once each")
    if (not isinstance(estimates, list) or not estimates or not all(isinstance(e, str) for e in estimates)
            or estimates != sorted(set(estimates)) or not set(estimates) <= set(ESTIMATES)):
        raise ReleaseFormatError(f"{name}: section.estimates must list some of {list(ESTIMATES)} once, sorted")
    if "clipping" in section:
        _check_clipping(section["clipping"], name)
    tables = sorted(f[: -len(".parquet")] for f in manifest.files if f.endswith(".parquet"))
    if tables != estimates:
        raise ReleaseFormatError(f"{name}: the release's tables {tables} differ from section.estimates {estimates}")


def _check_clipping(clip: Any, name: str) -> None:
    """The clipped-row counts (issue 36; absent before): noisy ints, pass names, flags, a rate and the warning text."""
    ok = (isinstance(clip, dict) and _int(clip.get("noisy_singles")) and clip["noisy_singles"] >= 1
          and isinstance(clip.get("warning"), str) and isinstance(clip.get("gaussian_rate"), str)
          and isinstance(clip.get("passes"), list))
    if ok:
        for p in clip["passes"]:
            ok = ok and isinstance(p, dict) and isinstance(p.get("pass"), str) and _int(p.get("noisy_clipped")) \
                and p["noisy_clipped"] >= 0 and isinstance(p.get("above_gaussian"), bool) \
                and isinstance(p.get("gaussian_rate", ""), str)
    if ok:
        try:
            [float(clip["gaussian_rate"])] + [float(p.get("gaussian_rate", "0")) for p in clip["passes"]]  # report
        except ValueError:
            ok = False
    if not ok:
        raise ReleaseFormatError(f"{name}: section.clipping must hold noisy_singles (int >= 1), gaussian_rate, "
                                 "warning (strings) and passes (pass, noisy_clipped >= 0, above_gaussian)")


def rederive_gaussian_model(m: Any, name: str) -> None:
    """The model's statements re-derive: within the config's budget, replacement by group privacy, and rho the
    sum of its noise additions' (zCDP composition), within the planned ``mechanism.parameters.rho``."""
    ar = m.privacy.get("add_remove")
    if m.mechanism not in MECHANISMS or ar is None:
        return
    within_budget(m, name)
    check_group_privacy(m, name)
    _check_gaussian_rho(m, ar, name)


def _check_gaussian_rho(m: Any, ar: Any, name: str) -> None:
    section = m.section
    rho = exact(section.get("rho"), name, "section.rho")
    parts = section.get("rho_by_noise")
    if not isinstance(parts, list) or not parts:
        raise fail(name, "section.rho_by_noise", "must list the rho of every noise addition")
    noise = section.get("noise")
    if not isinstance(noise, list) or len(noise) != len(parts) or not all(isinstance(x, dict) for x in noise):
        raise fail(name, "section.noise", "must describe every noise addition")
    values = [exact(p, name, "section.rho_by_noise") for p in parts]
    if any(v <= 0 for v in values) or [exact(x.get("rho"), name, "section.noise.rho") for x in noise] != values:
        raise fail(name, "section.noise", "rho differs from section.rho_by_noise")
    if sum(values, Fraction(0)) != rho:
        raise fail(name, "section.rho", "is not the sum of section.rho_by_noise (zCDP composition)")
    if not isinstance(ar.measure, ZCDP) or ar.measure.rho != rho:
        raise fail(name, "privacy.statements.add_remove", f"differs from section.rho = {rho}")
    if rho > param(m, "rho", name):
        raise fail(name, "section.rho", "exceeds the planned mechanism.parameters.rho")


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The kind's codec check (declared in ``kind.py``): the statements re-derive, then the section is checked."""
    privacy_checked(name, rederive_gaussian_model, manifest, name)
    check_gaussian_section(section, manifest, name)
