"""The ``gaussian_model`` kind's section codec: the manifest check of a private Gaussian model."""

from __future__ import annotations

from typing import Any

from dpspark.release.errors import ReleaseFormatError

KIND = "gaussian_model"
MECHANISMS = ("gaussian_covariance", "gaussian_mean", "gaussian_learner")
ESTIMATES = ("covariance", "mean")
#: largest d a reader accepts (the covariance table has d^2 rows)
MAX_DIMENSION = 1 << 14
#: relative tolerance of the PSD check (float rounding only)
PSD_TOLERANCE = 1e-9  # report
_SECTION_INTS = ("dimension", "data_bits", "matrix_bits", "passes")
_SECTION_TEXTS = ("values", "units_paired")


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
    tables = sorted(f[: -len(".parquet")] for f in manifest.files if f.endswith(".parquet"))
    if tables != estimates:
        raise ReleaseFormatError(f"{name}: the release's tables {tables} differ from section.estimates {estimates}")
