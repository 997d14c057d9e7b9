"""The metadata check of a groups-kind release's input (key, value and filter columns), before any spend.

Shared by ``groups`` and ``pure_groups``: the key columns must have the universe's key type, every value
column must read as numbers, and the filter's columns must fit its comparisons. Schema only, no data.
"""

from __future__ import annotations

from typing import Any, Sequence

from dpspark.mechanisms.groups.aggregates import Aggregate


def input_problem(universe: Any, by: Sequence[str], aggregates: Sequence[Aggregate], row_filter: Any, schema: Any,
                  *, text_input: bool = False, key_label: str = "groups.by") -> str | None:
    """The first problem of ``schema`` for this release, in words naming the config field; None when none."""
    from dpspark.engine.numeric import numeric_type_problem
    from dpspark.universe.keytypes import key_type_problem

    problem = key_type_problem(universe, by, schema, text_input=text_input)
    if problem:  # e.g. int keys on a string column never match: a release of pure noise, refused here
        return f"{key_label}: {problem}"
    for agg in aggregates:
        if agg.column is None:
            continue
        if agg.column not in set(schema.names):
            return f"aggregate {agg.name!r}: the input has no column {agg.column!r}"
        problem = numeric_type_problem(schema.field(agg.column).type, agg.column, text_input=text_input)
        if problem:
            return f"aggregate {agg.name!r}: {problem}"
    if row_filter is not None:  # the filter's types, as an answers query's (metadata only)
        problem = row_filter.type_problem(schema, text_input=text_input)
        if problem:
            return f"groups.filter {row_filter.text!r}: {problem}"
    return None
