"""dpspark.cli: created by the issue-21 layout move (a curated __init__ is left for later)."""

from dpspark.cli.app import main

__all__ = ["main"]
