"""What every release command shares: the subcommand parser with examples, the error line, the --no-verify help,
and :func:`without_pandas` for the read commands' start-up."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

NO_VERIFY_HELP = (
    "skip the sha256 check of the data files. This gives up the guarantee that the answers are the release's: "
    "a damaged or altered file is read as is and can show wrong counts or WRONG KEYS (one flipped byte can show "
    "one key's count under another key's name) with no error"
)


def fail(command: str, err: BaseException) -> int:
    """Print ``dpspark COMMAND: error: ...`` and return the error exit status 2."""
    print(f"dpspark {command}: error: {err}", file=sys.stderr)
    return 2


def command_parser(subparsers: Any, name: str, summary: str, examples: list[str], extra: str = "") -> argparse.ArgumentParser:
    """A subcommand with a one-line description, examples and (optionally) more text in its --help."""
    epilog = (extra + "\n" if extra else "") + "examples:\n" + "\n".join(f"  {e}" for e in examples)
    return subparsers.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".",
                                 epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)



#: the read commands, which start without pandas (:func:`without_pandas`)
READ_COMMANDS = ("lookup", "inspect", "verify")


@contextmanager
def without_pandas() -> Iterator[None]:
    """Run a read command without pandas: an ``import pandas`` inside the block raises ImportError.

    pyarrow imports pandas, when it is installed, the first time it converts a list, builds a table, reads a
    Parquet file or makes a numpy array - about half of ``dpspark lookup``'s start-up, for nothing: the read
    commands hand pyarrow no pandas object and print no DataFrame. Without pandas pyarrow does the same work
    by its pandas-free paths (tests/unit/cli/test_startup.py compares every kind's output both ways). Code
    inside the block that does need pandas calls :func:`allow_pandas` first.
    """
    if "pandas" in sys.modules:  # loaded already (a caller in Python): nothing to save, nothing to refuse
        yield
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        if blocker in sys.meta_path:
            sys.meta_path.remove(blocker)


def allow_pandas() -> None:
    """Lift :func:`without_pandas` (for a read path that needs pandas); pyarrow then imports it when it asks."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _NoPandas)]


class _NoPandas:
    """A meta-path finder that refuses pandas (see :func:`without_pandas`)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not loaded by dpspark's read commands (dpspark.cli.common.allow_pandas)")
        return None
