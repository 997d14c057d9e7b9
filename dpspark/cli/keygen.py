"""The ``dpspark keygen`` command: an Ed25519 key pair for signing releases."""

from __future__ import annotations

import argparse
from typing import Any

from dpspark.cli.common import command_parser


def _cmd_keygen(args: argparse.Namespace) -> int:
    from dpspark.release.signature import generate_keypair

    key, pub = generate_keypair(args.out)
    print(f"private key {key} (keep it secret; dpspark release --sign {key})")
    print(f"public key  {pub} (give it to readers; dpspark verify RELEASE --key {pub})")
    return 0


def add_keygen_command(subparsers: Any) -> None:
    """Register ``keygen`` on the ``dpspark`` command's subparsers."""
    k = command_parser(subparsers, "keygen", "make an Ed25519 key pair for signing releases",
                ["dpspark keygen --out keys/team"])
    k.add_argument("--out", required=True, metavar="PREFIX", help="writes PREFIX.key (private, 0600) and PREFIX.pub")
    k.set_defaults(func=_cmd_keygen)
