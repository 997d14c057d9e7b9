"""The ``sample`` kind's section codec: the manifest check of a sample section (declared in ``kind.py``)."""

from __future__ import annotations

from typing import Any

from dpspark.lookup.statement_base import section_keys_and_columns
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.rederive import check_group_privacy, check_rho, fail, param, privacy_checked, within_budget

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


def rederive_sample(m: Any, name: str) -> None:
    """The statements of the built-in samplers re-derive: within the config's budget; k-ary: replacement by group
    privacy and e^eps = ``mechanism.parameters.exp_eps``; the product sampler: rho = ``mechanism.parameters.rho``."""
    from dpspark.privacy.measures import PureDP

    ar = m.privacy.get("add_remove")
    if m.mechanism not in BIT_ROWS + KEYED or ar is None:
        return
    within_budget(m, name)
    if m.mechanism == "kary_sampler":
        check_group_privacy(m, name)
    if m.mechanism == "product_sampler":
        check_rho(m, name, ("add_remove", "replacement"))
    if m.mechanism == "kary_sampler":
        if not isinstance(ar.measure, PureDP) or ar.measure.epsilon.exp != param(m, "exp_eps", name):
            raise fail(name, "privacy.statements.add_remove", "differs from mechanism.parameters.exp_eps")


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The kind's codec check (declared in ``kind.py``): the statements re-derive, then the section is checked."""
    privacy_checked(name, rederive_sample, manifest, name)
    check_sample_section(section, manifest, name)
