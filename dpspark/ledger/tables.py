"""Tables that share a privacy unit are one dataset for the ledger (issue 33, section 2).

The curator declares that tables (``orders``, ``users``) belong to one dataset (``shop``): a charge to a
dataset name that is one of those tables, or any '+'-joined set of them (``orders+users``, the name a
Session over several private tables charges), is charged to ``shop``: one total, one filter, one history.
A table belongs to at most one dataset. A name that mixes tables of two datasets, or a declared table with
an undeclared name, is refused: charging one dataset for it would under-charge the other.
"""

from __future__ import annotations

from typing import Mapping

from dpspark.errors import ParameterError

__all__ = ["check_table_name", "parts", "resolve_dataset"]


def parts(name: str) -> list[str]:
    """The table names a dataset name joins with '+' (one part: itself)."""
    return name.split("+")


def check_table_name(table: str, dataset_id: str) -> str:
    """A table name a dataset may declare: no '+', and not the dataset's own name."""
    if "+" in table:
        raise ParameterError(f"table name {table!r} contains '+': a '+' joins table names in a dataset name")
    if table == dataset_id:
        raise ParameterError(f"table {table!r} cannot be declared in a dataset of the same name")
    return table


def resolve_dataset(name: str, table_map: Mapping[str, str]) -> str:
    """The dataset a charge to ``name`` is charged to under ``table_map`` (table -> dataset): ``name``
    itself when none of its '+'-parts is a declared table; the one dataset when all of them belong to it;
    else a :class:`ParameterError` (parts in two datasets, or declared and undeclared parts mixed)."""
    owners = {table_map.get(p) for p in parts(name)}
    if owners == {None}:
        return name
    if None in owners or len(owners) > 1:
        where = ", ".join(f"{p} -> {table_map.get(p) or 'no dataset'}" for p in parts(name))
        raise ParameterError(
            f"dataset name {name!r} joins tables of different datasets ({where}): charging one of them would "
            "under-charge the others; declare every table in one dataset (`dpspark budget DATASET --tables "
            "a,b`). Nothing was spent.")
    return owners.pop()  # type: ignore[return-value]
