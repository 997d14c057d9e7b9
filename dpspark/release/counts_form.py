"""The count statements of the histogram kinds (``sparse``, ``compact``): e^eps~ = p/q plus a bias, error bars.

A histogram manifest states the mechanism with its exact parameters, the privacy statement under
add/remove of one unit (the primary relation) and under replacement (two steps, by group privacy), the
accuracy statement (beta, per-query and simultaneous error bars and the threshold above which the
per-query bar holds), the universe spec and the key columns; the kind's own section (``bins``,
``compact``) is parsed by the kind's codec (:mod:`dpspark.release.kinds`). The envelope
(:mod:`dpspark.release.manifest`) has checked the header and the files. JSON Schema:
``manifest.schema.json`` beside this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpspark.privacy.accuracy import AccuracyStatement
from dpspark.privacy.relations import AddRemove, Substitute
from dpspark.privacy.statement import PrivacyStatement
from dpspark.release.exactjson import frac_log2, frac_to_str
from dpspark.release.header import FileEntry, ManifestHeader, ReadLimits, exact_frac, exact_int, fail

#: the parsed statements are the shared types of :mod:`dpspark.privacy` (one definition for writer and reader)
RelationPrivacy = PrivacyStatement
AccuracyInfo = AccuracyStatement
#: algorithms whose replacement delta equals their add/remove delta (proof in dpspark.mechanisms.histogram.stability)
REPLACEMENT_DELTA_EQUALS_DELTA = ("StabilityHistogram",)
#: the top-level keys of a histogram manifest other than its kind's own section
COMMON_KEYS = frozenset({
    "format", "schema_version", "dpspark_version", "kind", "created_utc", "rng", "max_units", "mechanism",
    "privacy", "accuracy", "universe", "universe_size", "index_width", "key_columns", "input", "config", "files",
    "manifest_sha256", "release_id",
})


@dataclass(frozen=True)
class Manifest(ManifestHeader):
    """A parsed, validated histogram manifest (kinds sparse and compact)."""

    algorithm: str
    counting: str
    epsilon_requested: Fraction | None
    delta_requested: Fraction
    exp_epsilon_tilde: Fraction
    theorem: str
    privacy_notes: str
    add_remove: PrivacyStatement
    replacement: PrivacyStatement
    accuracy: AccuracyStatement
    universe_spec: dict[str, Any]
    universe_size: int
    index_width: int
    key_columns: tuple[str, ...]
    input: dict[str, Any]
    config: dict[str, Any]
    bins: dict[str, Any] | None
    files: dict[str, FileEntry]
    #: the compact kind's parsed section (a :class:`dpspark.mechanisms.compact.section.CompactInfo`)
    compact: Any = None
    #: every count lies in [0, count_range]: max_units x max_keys_per_unit x max_rows_per_key (config)
    count_range: int = 0


@dataclass(frozen=True)
class SectionContext:
    """The envelope's checked values a kind's section codec compares its own fields with."""

    max_units: int
    universe_size: int
    add_remove: PrivacyStatement
    accuracy: AccuracyStatement
    keys_per_unit: int = 1
    rows_per_key: int = 1


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


def _exp_eps_float(exp_eps: Fraction) -> float | None:
    if exp_eps <= 0:
        return None
    return math.log(exp_eps.numerator) - math.log(exp_eps.denominator)  # report


def relation_statements(
    exp_eps: Fraction,
    bias: Fraction,
    delta: Fraction,
    relation: str,
    theorem: str,
    replacement_delta: Fraction | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Manifest entries for add/remove (as stated) and replacement (two add/remove steps).

    Replacement by group privacy over two steps: eps' = 2 eps and delta' = (1 + e^eps) delta.
    e^eps = (p/q) e^b is irrational, so delta' is stated as the exact rational upper bound
    (1 + (p/q)/(1 - b)) delta, using e^b <= 1/(1 - b) for 0 <= b < 1.
    ``replacement_delta`` replaces that delta' by a bound the algorithm proves itself
    (only ``delta`` itself is accepted: StabilityHistogram's two changed bins are
    independent coordinates, see :mod:`dpspark.mechanisms.histogram.stability`).
    """
    if replacement_delta is not None and replacement_delta != delta:
        raise ValueError("a proved replacement delta must equal the add/remove delta (the only proved case)")
    if bias < 0 or bias >= 1:
        raise ValueError("bias_epsilon must lie in [0, 1)")
    if exp_eps < 1:
        raise ValueError("exp_eps must be >= 1")
    base = _exp_eps_float(exp_eps)
    add_remove = {
        "relation": relation,
        "exp_epsilon_tilde": frac_to_str(exp_eps),
        "bias_epsilon": frac_to_str(bias),
        "epsilon": f"ln({frac_to_str(exp_eps)}) + {frac_to_str(bias)}",
        "epsilon_float": None if base is None else base + float(bias),  # report
        "delta": frac_to_str(delta),
        "delta_log2": frac_log2(delta),
        "pure": delta == 0,
        "derivation": f"as stated by {theorem}"[:2000],
    }
    exp2, bias2 = exp_eps * exp_eps, 2 * bias
    delta2 = (1 + exp_eps / (1 - bias)) * delta if replacement_delta is None else replacement_delta
    derivation = (
        "eps' = 2 eps; delta' = (1 + e^eps) delta <= (1 + (p/q)/(1 - b)) delta, since e^b <= 1/(1 - b)"
        if replacement_delta is None
        else "eps' = 2 eps; delta' = delta: the two changed bins are independent, each (eps, delta) with its "
        "count-0 side deterministic, and the hockey-stick divergence at e^(2 eps) of such a pair is at most "
        "delta (derivation in dpspark.histogram.stability)"
    )
    replacement = {
        "relation": "replace one unit (two add/remove steps; group privacy)",
        "exp_epsilon_tilde": frac_to_str(exp2),
        "bias_epsilon": frac_to_str(bias2),
        "epsilon": f"ln({frac_to_str(exp2)}) + {frac_to_str(bias2)}",
        "epsilon_float": None if base is None else 2 * (base + float(bias)),  # report
        "delta": frac_to_str(delta2),
        "delta_log2": frac_log2(delta2),
        "pure": delta2 == 0,
        "derivation": derivation,
    }
    return add_remove, replacement


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def parse_relation(obj: dict[str, Any], name: str, where: str, delta_bits: int, relation: Any,
                   bias_bits: int = 4096) -> PrivacyStatement:
    """One relation's statement (``privacy.add_remove`` or ``privacy.replacement``), checked."""
    exp = exact_frac(obj["exp_epsilon_tilde"], name, f"{where}.exp_epsilon_tilde")
    bias = exact_frac(obj["bias_epsilon"], name, f"{where}.bias_epsilon", bias_bits)
    delta = exact_frac(obj["delta"], name, f"{where}.delta", delta_bits)
    if exp < 1 or not 0 <= bias < 1 or not 0 <= delta <= 1:
        raise fail(name, f"{where}: privacy parameters out of range (need e^eps >= 1, 0 <= bias < 1, 0 <= delta <= 1)")
    if obj["pure"] != (delta == 0):
        raise fail(name, f"{where}: 'pure' contradicts delta")
    derivation = obj["derivation"]
    theorem = derivation[len("as stated by "):] if derivation.startswith("as stated by ") else derivation
    return PrivacyStatement.from_exp_eps(exp, bias, delta, theorem, relation)


def parse_counts(obj: dict[str, Any], header: dict[str, Any], files: dict[str, FileEntry], name: str,
                 limits: ReadLimits, kind: Any) -> Manifest:
    """The histogram statements of a manifest whose header and files the envelope has checked.

    ``kind``: the :class:`~dpspark.release.kinds.ReleaseKind` whose codec parses the own section.
    """
    max_units = header["max_units"]
    mech = obj["mechanism"]
    eps_req = None if mech["epsilon"] is None else exact_frac(mech["epsilon"], name, "mechanism.epsilon")
    delta_req = exact_frac(mech["delta"], name, "mechanism.delta", limits.max_delta_bits)
    exp_eps = exact_frac(mech["epsilon_tilde"]["exp"], name, "mechanism.epsilon_tilde.exp")
    privacy = obj["privacy"]
    # a compact release's bias holds the sampler's exact bound, whose denominator grows with d
    bias_bits = 4 * limits.max_sampler_d_bits if kind.wide_bias else 4096
    add_remove = parse_relation(privacy["add_remove"], name, "privacy.add_remove", limits.max_delta_bits,
                                AddRemove(max_units), bias_bits)
    replacement = parse_relation(privacy["replacement"], name, "privacy.replacement", limits.max_delta_bits + 4200,
                                 Substitute(max_units), bias_bits + 8)
    if add_remove.exp_eps != exp_eps:
        raise fail(name, "privacy.add_remove.exp_epsilon_tilde differs from mechanism.epsilon_tilde.exp")
    if (
        replacement.exp_eps != exp_eps * exp_eps
        or replacement.bias_epsilon != 2 * add_remove.bias_epsilon
        or (
            replacement.delta != (1 + exp_eps / (1 - add_remove.bias_epsilon)) * add_remove.delta
            and not (mech["algorithm"] in REPLACEMENT_DELTA_EQUALS_DELTA and replacement.delta == add_remove.delta)
        )
    ):
        raise fail(name, "privacy.replacement is not the two-step group-privacy statement of privacy.add_remove")
    accuracy = _accuracy(obj["accuracy"], name)
    universe_size = exact_int(obj["universe_size"], name, "universe_size", 257)
    if universe_size > 1 << 256:
        raise fail(name, "universe_size is above 2^256")
    if obj["index_width"] != (16 if universe_size <= 1 << 128 else 32):
        raise fail(name, "index_width does not match universe_size")
    recorded_n = obj["config"].get("max_units") if isinstance(obj["config"], dict) else None
    if recorded_n is not None and (isinstance(recorded_n, bool) or str(recorded_n) != str(max_units)):
        raise fail(name, f"config.max_units differs from max_units = {max_units} (the manifest's statements "
                         "do not re-derive)")
    keys_per_unit = _bound(obj["config"], "max_keys_per_unit", name)
    rows_per_key = _bound(obj["config"], "max_rows_per_key", name)
    for key in sorted(set(obj) - COMMON_KEYS - {kind.section}):  # another kind's section (the schema names them)
        raise fail(name, f"a {kind.name} release has no {key} section")
    section = kind.codec_fn()(obj, files, name, limits, SectionContext(
        max_units=max_units, universe_size=universe_size, add_remove=add_remove, accuracy=accuracy,
        keys_per_unit=keys_per_unit, rows_per_key=rows_per_key))
    columns = obj["key_columns"]
    if len(set(columns)) != len(columns):
        raise fail(name, "key_columns has duplicates")
    return Manifest(
        **header,
        algorithm=mech["algorithm"],
        counting=mech["counting"],
        epsilon_requested=eps_req,
        delta_requested=delta_req,
        exp_epsilon_tilde=exp_eps,
        theorem=privacy["theorem"],
        privacy_notes=privacy["notes"],
        add_remove=add_remove,
        replacement=replacement,
        accuracy=accuracy,
        universe_spec=obj["universe"],
        universe_size=universe_size,
        index_width=obj["index_width"],
        key_columns=tuple(columns),
        input=obj["input"],
        config=obj["config"],
        bins=section.get("bins"),
        files=files,
        compact=section.get("compact"),
        count_range=max_units * keys_per_unit * rows_per_key,
    )


def _accuracy(acc: dict[str, Any], name: str) -> AccuracyStatement:
    above = exact_int(acc["per_query"]["holds_for_true_counts_above"], name,
                      "accuracy.per_query.holds_for_true_counts_above", 256)
    betas = (exact_frac(acc["per_query"]["beta"], name, "accuracy.per_query.beta"),
             exact_frac(acc["simultaneous"]["beta"], name, "accuracy.simultaneous.beta"))
    if exact_int(acc["threshold"], name, "accuracy.threshold", 256) != above:
        raise fail(name, "accuracy.threshold differs from accuracy.per_query.holds_for_true_counts_above")
    for beta in betas:
        if not 0 <= beta <= 1:
            raise fail(name, "accuracy: beta must lie in [0, 1]")
    if above < -1:
        raise fail(name, "accuracy.threshold must be >= -1")
    a_pq = exact_int(acc["per_query"]["a"], name, "accuracy.per_query.a", 256)
    a_sim = exact_int(acc["simultaneous"]["a"], name, "accuracy.simultaneous.a", 256)
    if a_pq < 0 or a_sim < 0:
        raise fail(name, "accuracy: error bars must be >= 0")
    return AccuracyStatement.histogram(a_pq, betas[0], above, a_sim, betas[1], acc["notes"])


def _bound(config: Any, key: str, name: str) -> int:
    """A contribution bound recorded in the config section (1 when absent: releases before the engine port)."""
    value = config.get(key, 1) if isinstance(config, dict) else 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise fail(name, f"config.{key} must be an integer in [1, 1000000]")
    return value
