"""Re-derivation of a statement-envelope manifest's privacy statements from what else it says.

The seal (``manifest_sha256``) detects damage, not edits: anyone can reseal an edited manifest. So
the reader also recomputes what a manifest's parts determine and refuses a manifest whose parts
disagree (a :class:`ReleaseFormatError` naming the file and the field; manifests hold only public
values, so quoting them is fine):

* every ``<name>_approx_dp`` statement is the certified CKS20 conversion of the zCDP statement
  ``<name>`` at its own delta, recomputed exactly as the writer computes it
  (:meth:`PrivacyStatement.to_approx_dp`);
* ``config.max_units`` (and ``mechanism.parameters.max_units`` where recorded) equal ``max_units``;
* for the built-in mechanisms (checked by each kind's codec with the helpers here), the add/remove statement fits the budget the config requested (the amount a
  ledger charges):
  pure or approximate DP with epsilon <= ``config.epsilon`` and delta <= ``config.delta``; zCDP whose
  conversion at ``config.delta`` has epsilon <= ``config.epsilon``;
* per mechanism (each family's ``section.py``), where a closed form exists: the statements equal ``mechanism.parameters`` (rho of the
  zCDP learners and of the Gaussian answers, the bounded-noise certified (epsilon, delta), the k-ary
  sampler's e^eps, every statement of the bernoulli sampler from d, n0 and random_bits), the Gaussian
  answers' rho is at least k / (2 sigma^2), a Gaussian model's rho is the
  sum of its noise additions', and a replacement statement obtained by group privacy is exactly
  ``add_remove.under(Substitute(n))``.

What this cannot catch: an edit that changes every dependent field consistently (e.g. n, the relations
and the config together). Only a signature (:mod:`dpspark.release.signature`) protects against that.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dpspark.privacy.errors import PrivacyError
from dpspark.privacy.measures import ApproxDP, ZCDP
from dpspark.privacy.relations import Substitute
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac

if TYPE_CHECKING:
    from dpspark.privacy.statement import PrivacyStatement

#: a :class:`dpspark.release.statements.StatementManifest` (not imported: statements calls this module)
StatementManifest = Any

#: a rho or delta whose conversion is recomputed has at most this many bits per part (the writer's are far below)
MAX_CONVERSION_BITS = 1024


def fail(name: str, field: str, message: str) -> ReleaseFormatError:
    return ReleaseFormatError(f"{name}: {field}: {message} (the manifest's statements do not re-derive)")


@lru_cache(maxsize=256)
def _converted(rho: Fraction, delta: Fraction) -> ApproxDP:
    """CKS20 Cor. 13 of rho-zCDP at delta, as the writer computes it (cached: readers reopen the same releases).

    Also memoised on disk (:mod:`dpspark.disk_memo`, keyed by rho, delta and flint's release): the certified
    search imports python-flint, 0.1-0.2 s of an ``inspect`` or ``verify`` start (issue 35 §1).
    """
    from dpspark.disk_memo import memoised
    from dpspark.privacy import certified, conversions

    def compute() -> ApproxDP:
        return conversions.zcdp_to_approx_dp_cks(ZCDP(rho), delta)

    def decode(raw: Any) -> ApproxDP:
        if not isinstance(raw, str) or Fraction(raw) < 0:
            raise ValueError("not a non-negative rational epsilon")
        return ApproxDP(Fraction(raw), delta)

    return memoised("cks_conversion", (rho, delta, conversions.DEFAULT_BITS, certified.flint_release()),
                    CKS_MODULES, compute, lambda m: str(m.epsilon.as_fraction()), decode)


#: the modules whose source decides :func:`_converted` (the on-disk memo's key holds their digest)
CKS_MODULES = ("dpspark.privacy.conversions", "dpspark.privacy.certified", "dpspark.privacy.measures",
               "dpspark.privacy.epsilon")


def _small(value: Fraction) -> bool:
    return max(value.numerator.bit_length(), value.denominator.bit_length()) <= MAX_CONVERSION_BITS


def converted(rho: Fraction, delta: Fraction, name: str, field: str) -> ApproxDP:
    """The certified (eps, delta) of rho-zCDP, refusing absurd sizes before computing (never slow)."""
    if not (_small(rho) and _small(delta)) or not 0 < delta < 1:
        raise fail(name, field, "rho or delta is out of the range a release states")
    return _converted(rho, delta)


def exact(value: Any, name: str, field: str) -> Fraction:
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    try:
        return str_to_frac(value, MAX_CONVERSION_BITS)
    except ValueError:
        raise fail(name, field, "not an exact rational") from None


def check_conversions(m: "StatementManifest", name: str) -> None:
    """Each ``X_approx_dp`` statement is the CKS20 conversion of the zCDP statement X at its delta."""
    for key, st in m.privacy.items():
        if not key.endswith("_approx_dp"):
            continue
        base = m.privacy.get(key[: -len("_approx_dp")])
        field = f"privacy.statements.{key}"
        if base is None or not isinstance(base.measure, ZCDP):
            raise fail(name, field, "names no zCDP statement it converts")
        if not isinstance(st.measure, ApproxDP) or st.relation != base.relation:
            raise fail(name, field, "must be an (eps, delta) statement under the converted statement's relation")
        if converted(base.measure.rho, st.measure.delta, name, field) != st.measure:
            raise fail(name, field, f"is not the CKS20 conversion of rho = {base.measure.rho} at delta = "
                                     f"{st.measure.delta}")


def _within_budget(st: "PrivacyStatement", config: dict[str, Any], name: str) -> None:
    eps_text, delta_text = config.get("epsilon"), config.get("delta")
    if eps_text is None:
        return
    eps = exact(eps_text, name, "config.epsilon")
    delta = Fraction(0) if delta_text is None else exact(delta_text, name, "config.delta")
    field = "privacy.statements.add_remove"
    measure = st.measure
    if isinstance(measure, ZCDP):
        if delta == 0:
            raise fail(name, field, "a zCDP statement needs config.delta > 0 to state an (eps, delta) budget")
        measure = converted(measure.rho, delta, name, field)
    if not measure.epsilon.le(eps) or measure.delta > delta:
        raise fail(name, field, f"states more than the requested budget (config.epsilon = {eps}, "
                                 f"config.delta = {delta})")


def _check_n(m: "StatementManifest", name: str) -> None:
    for where, value in (("config.max_units", m.config.get("max_units")),
                         ("mechanism.parameters.max_units", m.parameters.get("max_units"))):
        if value is not None and exact(value, name, where) != m.max_units:
            raise fail(name, where, f"{value} differs from max_units = {m.max_units}")


def param(m: "StatementManifest", key: str, name: str) -> Fraction:
    if key not in m.parameters:
        raise fail(name, f"mechanism.parameters.{key}", "is missing")
    return exact(m.parameters[key], name, f"mechanism.parameters.{key}")


def check_group_privacy(m: "StatementManifest", name: str) -> None:
    """A replacement statement obtained by group privacy is exactly ``add_remove.under(Substitute(n))``."""
    ar = m.privacy.get("add_remove")
    if ar is not None and "replacement" in m.privacy:
        if m.privacy["replacement"].measure != ar.under(Substitute(m.max_units)).measure:
            raise fail(name, "privacy.statements.replacement", "is not add_remove by group privacy over two steps")


def check_rho(m: "StatementManifest", name: str, keys: tuple[str, ...]) -> None:
    """The zCDP statements ``keys`` state ``mechanism.parameters.rho``."""
    rho = param(m, "rho", name)
    for key in keys:
        st = m.privacy.get(key)
        if st is not None and (not isinstance(st.measure, ZCDP) or st.measure.rho != rho):
            raise fail(name, f"privacy.statements.{key}", f"differs from mechanism.parameters.rho = {rho}")


def within_budget(m: "StatementManifest", name: str) -> None:
    """The add/remove statement fits the budget the config requested (for the built-in mechanisms)."""
    ar = m.privacy.get("add_remove")
    if ar is not None:
        _within_budget(ar, m.config, name)


def check_statements(m: "StatementManifest", name: str) -> None:
    """The kind-free re-derivations (conversions, n); raises :class:`ReleaseFormatError` naming ``name`` and the field.

    Each kind's codec re-derives its mechanisms' own statements with the helpers above (budget, group privacy,
    rho), inside its section check.
    """
    try:
        check_conversions(m, name)
        _check_n(m, name)
    except PrivacyError as exc:
        raise ReleaseFormatError(f"{name}: invalid statement ({exc})") from None


def privacy_checked(name: str, check: Any, *args: Any) -> None:
    """Run a kind's re-derivation ``check(*args)``; an invalid statement is a :class:`ReleaseFormatError`."""
    try:
        check(*args)
    except PrivacyError as exc:
        raise ReleaseFormatError(f"{name}: invalid statement ({exc})") from None
