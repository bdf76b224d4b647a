"""The ``roundwise`` command: one entry point for the server, local review and the bench."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roundwise",
        description="A multi-round pull request reviewer with memory.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    from bench.cli import add_commands as add_bench

    add_bench(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
