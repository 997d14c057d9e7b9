"""Re-derivation of a statement-envelope manifest's privacy statements from what else it says.

The seal (``manifest_sha256``) detects damage, not edits: anyone can reseal an edited manifest. So
the reader also recomputes what a manifest's parts determine and refuses a manifest whose parts
disagree (a :class:`ReleaseFormatError` naming the file and the field; manifests hold only public
values, so quoting them is fine):

* every ``<name>_approx_dp`` statement is the certified CKS20 conversion of the zCDP statement
  ``<name>`` at its own delta, recomputed exactly as the writer computes it
  (:meth:`PrivacyStatement.to_approx_dp`);
* ``config.max_units`` (and ``mechanism.parameters.max_units`` where recorded) equal ``max_units``;
* for the built-in mechanisms, the add/remove statement fits the budget the config requested (the amount a
  ledger charges):
  pure or approximate DP with epsilon <= ``config.epsilon`` and delta <= ``config.delta``; zCDP whose
  conversion at ``config.delta`` has epsilon <= ``config.epsilon``;
* per mechanism, where a closed form exists: the statements equal ``mechanism.parameters`` (rho of the
  zCDP learners and of the Gaussian answers, the bounded-noise certified (epsilon, delta), the k-ary
  sampler's e^eps), the Gaussian answers' rho is at least k / (2 sigma^2), a Gaussian model's rho is the
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
from dpspark.privacy.measures import ApproxDP, PureDP, ZCDP
from dpspark.privacy.relations import Substitute
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac

if TYPE_CHECKING:
    from dpspark.privacy.statement import PrivacyStatement

#: a :class:`dpspark.release.statements.StatementManifest` (not imported: statements calls this module)
StatementManifest = Any

#: a rho or delta whose conversion is recomputed has at most this many bits per part (the writer's are far below)
MAX_CONVERSION_BITS = 1024
#: mechanisms whose replacement statement is add_remove.under(Substitute(n)) (standard_statements' default)
_GROUP_PRIVACY = ("bounded_noise", "gaussian", "kary_sampler", "gaussian_covariance", "gaussian_mean",
                  "gaussian_learner")
_ZCDP_LEARNERS = ("product_sampler", "product_learner")
#: the built-in mechanisms, whose add/remove statement is within the config's (epsilon, delta) by construction
#: (a plugin's mechanism may account differently: its manifest is not held to this)
_BUDGETED = _GROUP_PRIVACY + _ZCDP_LEARNERS + ("bernoulli_sampler",)
_GAUSSIAN_MODELS = ("gaussian_covariance", "gaussian_mean", "gaussian_learner")


def _fail(name: str, field: str, message: str) -> ReleaseFormatError:
    return ReleaseFormatError(f"{name}: {field}: {message} (the manifest's statements do not re-derive)")


@lru_cache(maxsize=256)
def _converted(rho: Fraction, delta: Fraction) -> ApproxDP:
    """CKS20 Cor. 13 of rho-zCDP at delta, as the writer computes it (cached: readers reopen the same releases)."""
    from dpspark.privacy.conversions import zcdp_to_approx_dp_cks

    return zcdp_to_approx_dp_cks(ZCDP(rho), delta)


def _small(value: Fraction) -> bool:
    return max(value.numerator.bit_length(), value.denominator.bit_length()) <= MAX_CONVERSION_BITS


def converted(rho: Fraction, delta: Fraction, name: str, field: str) -> ApproxDP:
    """The certified (eps, delta) of rho-zCDP, refusing absurd sizes before computing (never slow)."""
    if not (_small(rho) and _small(delta)) or not 0 < delta < 1:
        raise _fail(name, field, "rho or delta is out of the range a release states")
    return _converted(rho, delta)


def _exact(value: Any, name: str, field: str) -> Fraction:
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    try:
        return str_to_frac(value, MAX_CONVERSION_BITS)
    except ValueError:
        raise _fail(name, field, "not an exact rational") from None


def check_conversions(m: "StatementManifest", name: str) -> None:
    """Each ``X_approx_dp`` statement is the CKS20 conversion of the zCDP statement X at its delta."""
    for key, st in m.privacy.items():
        if not key.endswith("_approx_dp"):
            continue
        base = m.privacy.get(key[: -len("_approx_dp")])
        field = f"privacy.statements.{key}"
        if base is None or not isinstance(base.measure, ZCDP):
            raise _fail(name, field, "names no zCDP statement it converts")
        if not isinstance(st.measure, ApproxDP) or st.relation != base.relation:
            raise _fail(name, field, "must be an (eps, delta) statement under the converted statement's relation")
        if converted(base.measure.rho, st.measure.delta, name, field) != st.measure:
            raise _fail(name, field, f"is not the CKS20 conversion of rho = {base.measure.rho} at delta = "
                                     f"{st.measure.delta}")


def _within_budget(st: "PrivacyStatement", config: dict[str, Any], name: str) -> None:
    eps_text, delta_text = config.get("epsilon"), config.get("delta")
    if eps_text is None:
        return
    eps = _exact(eps_text, name, "config.epsilon")
    delta = Fraction(0) if delta_text is None else _exact(delta_text, name, "config.delta")
    field = "privacy.statements.add_remove"
    measure = st.measure
    if isinstance(measure, ZCDP):
        if delta == 0:
            raise _fail(name, field, "a zCDP statement needs config.delta > 0 to state an (eps, delta) budget")
        measure = converted(measure.rho, delta, name, field)
    if not measure.epsilon.le(eps) or measure.delta > delta:
        raise _fail(name, field, f"states more than the requested budget (config.epsilon = {eps}, "
                                 f"config.delta = {delta})")


def _check_n(m: "StatementManifest", name: str) -> None:
    for where, value in (("config.max_units", m.config.get("max_units")),
                         ("mechanism.parameters.max_units", m.parameters.get("max_units"))):
        if value is not None and _exact(value, name, where) != m.max_units:
            raise _fail(name, where, f"{value} differs from max_units = {m.max_units}")


def _param(m: "StatementManifest", key: str, name: str) -> Fraction:
    if key not in m.parameters:
        raise _fail(name, f"mechanism.parameters.{key}", "is missing")
    return _exact(m.parameters[key], name, f"mechanism.parameters.{key}")


def _check_mechanism(m: "StatementManifest", name: str) -> None:
    mech, ar = m.mechanism, m.privacy.get("add_remove")
    if ar is None:
        return
    if mech in _GROUP_PRIVACY and "replacement" in m.privacy:
        if m.privacy["replacement"].measure != ar.under(Substitute(m.max_units)).measure:
            raise _fail(name, "privacy.statements.replacement", "is not add_remove by group privacy over two steps")
    if mech in _ZCDP_LEARNERS or mech == "gaussian":
        rho = _param(m, "rho", name)
        for key in ("add_remove", "replacement") if mech in _ZCDP_LEARNERS else ("add_remove",):
            st = m.privacy.get(key)
            if st is not None and (not isinstance(st.measure, ZCDP) or st.measure.rho != rho):
                raise _fail(name, f"privacy.statements.{key}", f"differs from mechanism.parameters.rho = {rho}")
    if mech == "gaussian":
        k, sigma = _param(m, "k", name), _param(m, "sigma", name)
        if sigma <= 0 or ar.measure.rho * 2 * sigma * sigma < k:  # type: ignore[union-attr]
            raise _fail(name, "privacy.statements.add_remove", f"rho is below k / (2 sigma^2) for k = {k}, "
                                                               f"sigma = {sigma}")
        if "rho_budget" in m.parameters and ar.measure.rho > _param(m, "rho_budget", name):  # type: ignore[union-attr]
            raise _fail(name, "privacy.statements.add_remove", "rho exceeds mechanism.parameters.rho_budget")
    if mech == "bounded_noise":
        want = ApproxDP(_param(m, "certified_epsilon", name), _param(m, "certified_delta", name))
        if ar.measure != want:
            raise _fail(name, "privacy.statements.add_remove", "differs from mechanism.parameters.certified_epsilon "
                                                               "and certified_delta")
    if mech == "kary_sampler":
        if not isinstance(ar.measure, PureDP) or ar.measure.epsilon.exp != _param(m, "exp_eps", name):
            raise _fail(name, "privacy.statements.add_remove", "differs from mechanism.parameters.exp_eps")
    if mech in _GAUSSIAN_MODELS:
        _check_gaussian_rho(m, ar, name)


def _check_gaussian_rho(m: "StatementManifest", ar: "PrivacyStatement", name: str) -> None:
    section = m.section
    rho = _exact(section.get("rho"), name, "section.rho")
    parts = section.get("rho_by_noise")
    if not isinstance(parts, list) or not parts:
        raise _fail(name, "section.rho_by_noise", "must list the rho of every noise addition")
    noise = section.get("noise")
    if not isinstance(noise, list) or len(noise) != len(parts) or not all(isinstance(x, dict) for x in noise):
        raise _fail(name, "section.noise", "must describe every noise addition")
    values = [_exact(p, name, "section.rho_by_noise") for p in parts]
    if any(v <= 0 for v in values) or [_exact(x.get("rho"), name, "section.noise.rho") for x in noise] != values:
        raise _fail(name, "section.noise", "rho differs from section.rho_by_noise")
    if sum(values, Fraction(0)) != rho:
        raise _fail(name, "section.rho", "is not the sum of section.rho_by_noise (zCDP composition)")
    if not isinstance(ar.measure, ZCDP) or ar.measure.rho != rho:
        raise _fail(name, "privacy.statements.add_remove", f"differs from section.rho = {rho}")
    if rho > _param(m, "rho", name):
        raise _fail(name, "section.rho", "exceeds the planned mechanism.parameters.rho")


def check_statements(m: "StatementManifest", name: str) -> None:
    """Every re-derivation above; raises :class:`ReleaseFormatError` naming ``name`` and the field."""
    try:
        check_conversions(m, name)
        _check_n(m, name)
        ar = m.privacy.get("add_remove")
        if ar is not None and m.mechanism in _BUDGETED:
            _within_budget(ar, m.config, name)
        _check_mechanism(m, name)
    except PrivacyError as exc:
        raise ReleaseFormatError(f"{name}: invalid statement ({exc})") from None
