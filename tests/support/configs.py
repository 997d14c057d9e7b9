"""Config texts shared by the job tests (one place for the small dense release they all run)."""

from __future__ import annotations


def dense_toml(column: str = "v", privacy_extra: str = "", tail: str = "") -> str:
    """A dense release over ``column`` in {0..9} at epsilon = 1/2, n = 10, reading ``in.parquet``."""
    return f"""
[input]
path = "in.parquet"
[keys]
columns = ["{column}"]
[universe]
kind = "int_range"
lo = 0
hi = 9
[privacy]
mechanism = "dense"
epsilon = "1/2"
max_units = 10
{privacy_extra}
[output]
path = "release"
{tail}"""
