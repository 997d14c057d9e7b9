"""The ``sample`` kind's section codec: the manifest check of a sample section (declared in ``kind.py``)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpspark.lookup.statement_base import section_keys_and_columns
from dpspark.release.errors import ReleaseFormatError
from dpspark.privacy.relations import AddRemove, Substitute
from dpspark.release.rederive import (check_group_privacy, check_rho, exact, fail, param, privacy_checked,
                                      within_budget)

KIND = "sample"
_KEYS = {"samples", "columns", "batches", "independence"}


#: mechanisms whose samples are rows of d bits (0 or 1, one per column)
BIT_ROWS = ("bernoulli_sampler", "product_sampler")
#: mechanisms whose samples are keys of the release's universe
KEYED = ("kary_sampler",)
#: longest text value of a sample (a key of a string universe is far shorter)
MAX_TEXT = 1 << 16


def _scalar(value: Any) -> bool:
    """A sample's value: a JSON string or integer (never null, a float, a boolean, a list or an object)."""
    if isinstance(value, str):
        return len(value) <= MAX_TEXT
    return isinstance(value, int) and not isinstance(value, bool)


def check_sample_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """Manifest check of a "sample" section: the four keys, one sample per batch, every sample well-typed.

    Rows of the bit samplers hold exactly d values in {0, 1}; a k-ary sample is one key value (a row of
    values with several key columns); any other sample is a string or an integer or a row of them.
    """
    columns = section_keys_and_columns(section, _KEYS, "columns", "sample", name)
    samples, batches = section["samples"], section["batches"]
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        raise ReleaseFormatError(f"{name}: sample.batches must be an int >= 1")
    if not isinstance(samples, list) or len(samples) != batches:
        raise ReleaseFormatError(f"{name}: sample.samples must hold one sample per batch ({batches})")
    if not isinstance(section["independence"], str):
        raise ReleaseFormatError(f"{name}: sample.independence must be a string")
    mechanism = getattr(manifest, "mechanism", None)
    recorded = getattr(manifest, "parameters", {}).get("samples")
    if recorded is not None and recorded != batches:
        raise ReleaseFormatError(f"{name}: sample.batches differs from mechanism.parameters.samples")
    if mechanism == "bernoulli_sampler" and getattr(manifest, "parameters", {}).get("d") != len(columns):
        raise ReleaseFormatError(f"{name}: mechanism.parameters.d differs from the number of sample.columns")
    if mechanism in BIT_ROWS:
        if not all(isinstance(s, list) and len(s) == len(columns) and all(_int01(x) for x in s) for s in samples):
            raise ReleaseFormatError(f"{name}: each sample must be a row of {len(columns)} bits (0 or 1)")
        return
    if len(columns) > 1:
        if not all(isinstance(s, list) and len(s) == len(columns) and all(_scalar(x) for x in s) for s in samples):
            raise ReleaseFormatError(f"{name}: each sample must be a row of {len(columns)} values")
    elif not all(_scalar(s) for s in samples):
        raise ReleaseFormatError(f"{name}: each sample must be a string or an integer value")


def _int01(value: Any) -> bool:
    return type(value) is int and value in (0, 1)


def _int_param(m: Any, key: str, name: str, lo: int, hi: int) -> int:
    """``mechanism.parameters[key]``, an int in [lo, hi] (bounded before any arithmetic on it)."""
    value = m.parameters.get(key)
    if type(value) is not int or not lo <= value <= hi:
        raise fail(name, f"mechanism.parameters.{key}", f"must be an int in [{lo}, {hi}]")
    return value


#: the most random bits a bernoulli draw reads beyond bitlen(4 max_units) (the writer's lam is 128)
MAX_LAMBDA = 1024
#: e^eps = (1 + 4/n0)^d has at most about d bitlen(n0 + 4) bits; a stated one has far fewer (schema: 1200 digits)
MAX_EXP_BITS = 1 << 16


def rederive_bernoulli(m: Any, name: str) -> None:
    """The bernoulli sampler's statements, recomputed from ``mechanism.parameters`` (d, n0, random_bits).

    Pure: eps = d ln(1 + 4/n0) + bias_epsilon(d, lam), lam = random_bits - bitlen(4 max_units), under AddRemove(n)
    and Substitute(n) alike (RSSS Thms 6.1, 6.4 with the floored denominator; see the mechanism). With delta the
    add/remove and replacement statements are rho-zCDP with rho = d floor_column_rho(n0, random_bits), the
    certified bound the writer states (RSSS Thm 1.8), and the pure ones are named ``*_pure``.
    """
    from dpspark.mechanisms.samplers import bernoulli as B
    from dpspark.privacy.epsilon import LogEpsilon
    from dpspark.privacy.measures import PureDP, ZCDP
    from dpspark.rng import bias_epsilon

    n = m.max_units
    base = (4 * n).bit_length()
    d = _int_param(m, "d", name, 1, MAX_TEXT)
    n0 = _int_param(m, "n0", name, 4, 4 * n)
    bits = _int_param(m, "random_bits", name, base + 1, base + MAX_LAMBDA)
    if n0 % 4:
        raise fail(name, "mechanism.parameters.n0", "must be a multiple of 4")
    if d * (n0 + 4).bit_length() > MAX_EXP_BITS:  # (1 + 4/n0)^d is computed exactly below: keep it small
        raise fail(name, "mechanism.parameters.d", "d and n0 are out of the range a release states")
    ratio = m.parameters.get("column_ratio")
    if ratio is not None and exact(ratio, name, "mechanism.parameters.column_ratio") != 1 + Fraction(4, n0):
        raise fail(name, "mechanism.parameters.column_ratio", "differs from 1 + 4/n0")
    pure = PureDP(LogEpsilon(B.floor_exp_epsilon(n0, d), bias_epsilon(d, bits - base)))
    ar = m.privacy["add_remove"]
    zcdp = isinstance(ar.measure, ZCDP)
    rho = d * B.floor_column_rho(n0, bits) if zcdp else None
    for key, want in (("add_remove", ZCDP(rho) if zcdp else pure), ("replacement", ZCDP(rho) if zcdp else pure),
                      ("add_remove_pure", pure), ("replacement_pure", pure)):
        st = m.privacy.get(key)
        if st is None:
            if key == "replacement" or (zcdp and key.endswith("_pure")):
                raise fail(name, f"privacy.statements.{key}", "is missing")
            continue
        if st.measure != want:
            raise fail(name, f"privacy.statements.{key}", "differs from the bernoulli sampler's statement at "
                                                          f"d = {d}, n0 = {n0}, random_bits = {bits}")
        if st.relation != (Substitute(n) if key.startswith("replacement") else AddRemove(n)):
            raise fail(name, f"privacy.statements.{key}", f"must hold under the relation of n = {n}")


def rederive_sample(m: Any, name: str) -> None:
    """The statements of the built-in samplers re-derive: within the config's budget; k-ary: replacement by group
    privacy and e^eps = ``mechanism.parameters.exp_eps``; the product sampler: rho = ``mechanism.parameters.rho``;
    bernoulli: every statement recomputed from its parameters (:func:`rederive_bernoulli`)."""
    from dpspark.privacy.measures import PureDP

    ar = m.privacy.get("add_remove")
    if m.mechanism not in BIT_ROWS + KEYED or ar is None:
        return
    within_budget(m, name)
    if m.mechanism == "kary_sampler":
        check_group_privacy(m, name)
    if m.mechanism == "product_sampler":
        check_rho(m, name, ("add_remove", "replacement"))
    if m.mechanism == "bernoulli_sampler":
        rederive_bernoulli(m, name)
    if m.mechanism == "kary_sampler":
        if not isinstance(ar.measure, PureDP) or ar.measure.epsilon.exp != param(m, "exp_eps", name):
            raise fail(name, "privacy.statements.add_remove", "differs from mechanism.parameters.exp_eps")


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The kind's codec check (declared in ``kind.py``): the statements re-derive, then the section is checked."""
    privacy_checked(name, rederive_sample, manifest, name)
    check_sample_section(section, manifest, name)
