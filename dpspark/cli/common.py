"""What every release command shares: the subcommand parser with examples, the error line, the --no-verify help."""

from __future__ import annotations

import argparse
import sys
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
