"""The ``dpspark sign`` command: sign an existing, unsigned release (the second step; see ``release --sign``)."""

from __future__ import annotations

import argparse
from typing import Any

from dpspark.cli.common import command_parser


def _cmd_sign(args: argparse.Namespace) -> int:
    from dpspark.release.signature import sign_release

    print(sign_release(args.release, args.key))
    return 0


def add_sign_command(subparsers: Any) -> None:
    """Register ``sign`` on the ``dpspark`` command's subparsers."""
    s = command_parser(subparsers, "sign", "sign an existing, unsigned release (second step; see release --sign)",
                ["dpspark sign releases/queries --key keys/team.key"])
    s.add_argument("release", help="release directory")
    s.add_argument("--key", required=True, metavar="KEYFILE", help="Ed25519 private key (PEM)")
    s.set_defaults(func=_cmd_sign)
