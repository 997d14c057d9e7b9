"""The ``answers`` kind's section codec: the manifest check of an answers section (declared in ``kind.py``)."""

from __future__ import annotations

from fractions import Fraction

from typing import Any

from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac
from dpspark.release.rederive import check_group_privacy, check_rho, fail, param, privacy_checked, within_budget

_SECTION_KEYS = ("mechanism", "k", "queries", "table", "deterministic_bound", "bounds", "noise")
_COLUMNS = ("name", "kind", "value", "R", "bound95", "conditional_bound", "conditional_bound95",
            "noisy_sum", "noisy_count", "condition")
_EXACT = ("value", "R", "bound95", "conditional_bound", "conditional_bound95", "noisy_sum", "noisy_count")
_BOUNDS = ("R", "bound95", "conditional_bound", "conditional_bound95")
_KINDS = ("count", "sum", "mean")
_MECHANISMS = ("bounded_noise", "gaussian")
#: bits of an answer's numerator or denominator (the writer's are ~100: fixed-point sums over max_units units)
_MAX_BITS = 4096


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The ``answers`` section: its keys and their types, an int k >= 1, and a table the release holds."""
    missing = [k for k in _SECTION_KEYS if k not in section]
    if missing:
        raise ReleaseFormatError(f"{name}: the answers section lacks {', '.join(missing)}")
    k, queries = section["k"], section["queries"]
    if not _int(k) or k < 1:
        raise ReleaseFormatError(f"{name}: answers.k must be an int >= 1")
    if not _int(queries) or not 1 <= queries <= k:
        raise ReleaseFormatError(f"{name}: answers.queries must be an int in [1, k]")
    if section["mechanism"] not in _MECHANISMS or section["mechanism"] != manifest.mechanism:
        raise ReleaseFormatError(f"{name}: answers.mechanism must be the manifest's mechanism, one of {_MECHANISMS}")
    if not isinstance(section["table"], str) or f"{section['table']}.parquet" not in manifest.files:
        raise ReleaseFormatError(f"{name}: the answers table {section['table']!r} is not among the release files")
    if not isinstance(section["bounds"], str) or not isinstance(section["deterministic_bound"], bool):
        raise ReleaseFormatError(f"{name}: answers.bounds must be a string and answers.deterministic_bound a boolean")
    _check_noise(section["noise"], section["mechanism"], section["deterministic_bound"], name)
    listed = manifest.parameters.get("queries")
    if not isinstance(listed, list) or len(listed) != queries or not all(
            isinstance(q, dict) and isinstance(q.get("name"), str) and q.get("kind") in _KINDS for q in listed):
        raise ReleaseFormatError(f"{name}: mechanism.parameters.queries must describe the {queries} queries")
    if len({q["name"] for q in listed}) != queries:
        raise ReleaseFormatError(f"{name}: mechanism.parameters.queries names a query twice")


def _check_noise(noise: Any, mechanism: str, deterministic: bool, name: str) -> None:
    """The noise description ``inspect`` prints: bounded noise has M and an always-bound, Gaussian sigma and rho."""
    if not isinstance(noise, dict):
        raise ReleaseFormatError(f"{name}: answers.noise must be an object")
    ints = ("M", "abs_bound_units", "bound95_units") if mechanism == "bounded_noise" else ("bound95_units",)
    texts = ("certified_delta", "certified_epsilon") if mechanism == "bounded_noise" else ("sigma", "rho")
    if not all(_int(noise.get(key)) and noise[key] >= 0 for key in ints):
        raise ReleaseFormatError(f"{name}: answers.noise.{'/'.join(ints)} must be ints >= 0")
    try:
        for key in texts:
            str_to_frac(noise.get(key), _MAX_BITS)
    except ValueError:
        raise ReleaseFormatError(f"{name}: answers.noise.{'/'.join(texts)} must be exact rationals") from None
    if deterministic != (mechanism == "bounded_noise"):
        raise ReleaseFormatError(f"{name}: answers.deterministic_bound contradicts the mechanism")


def rederive_answers(m: Any, name: str) -> None:
    """The statements of the built-in answers mechanisms re-derive from ``mechanism.parameters``.

    Within the config's budget; replacement by group privacy; Gaussian: rho = parameters.rho >= k / (2 sigma^2)
    and within rho_budget; bounded noise: the certified (epsilon, delta) of the parameters.
    """
    from dpspark.privacy.measures import ZCDP, ApproxDP

    ar = m.privacy.get("add_remove")
    if m.mechanism not in _MECHANISMS or ar is None:
        return
    within_budget(m, name)
    check_group_privacy(m, name)
    pure, zcdp = _bounds_step(m, name)  # bounds chosen privately: the pure step composed before the answers
    if m.mechanism == "gaussian":
        if not pure:
            check_rho(m, name, ("add_remove",))
        elif not isinstance(ar.measure, ZCDP) or ar.measure.rho != param(m, "rho", name) + zcdp:
            raise fail(name, "privacy.statements.add_remove", "differs from mechanism.parameters.rho composed with "
                                                              "the bounds step's (epsilon_each^2 / 2 per query)")
        k, sigma = param(m, "k", name), param(m, "sigma", name)
        if sigma <= 0 or ar.measure.rho * 2 * sigma * sigma < k:
            raise fail(name, "privacy.statements.add_remove", f"rho is below k / (2 sigma^2) for k = {k}, "
                                                              f"sigma = {sigma}")
        if "rho_budget" in m.parameters and ar.measure.rho > param(m, "rho_budget", name) + zcdp:
            raise fail(name, "privacy.statements.add_remove", "rho exceeds mechanism.parameters.rho_budget")
    if m.mechanism == "bounded_noise":
        want = ApproxDP(param(m, "certified_epsilon", name) + pure, param(m, "certified_delta", name))
        if ar.measure != want:
            raise fail(name, "privacy.statements.add_remove", "differs from mechanism.parameters.certified_epsilon "
                                                              "and certified_delta")


def _bounds_step(m: Any, name: str) -> tuple[Fraction, Fraction]:
    """(the bounds step's pure epsilon, its zCDP rho) from ``parameters.bounds`` (zeros without it): m queries at
    ``epsilon_each``, each eps-DP, i.e. eps^2/2-zCDP (mechanisms/answers/autobounds.py)."""
    b = m.parameters.get("bounds")
    if b is None:
        return Fraction(0), Fraction(0)
    try:
        each, count = str_to_frac(b["epsilon_each"], _MAX_BITS), len(b["queries"])
    except (KeyError, TypeError, ValueError):
        raise ReleaseFormatError(f"{name}: mechanism.parameters.bounds is malformed") from None
    if each <= 0 or count < 1:
        raise ReleaseFormatError(f"{name}: mechanism.parameters.bounds is malformed")
    return each * count, each * each * count / 2


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The kind's codec check (declared in ``kind.py``): the statements re-derive, then the section is checked."""
    privacy_checked(name, rederive_answers, manifest, name)
    check_section(section, manifest, name)
