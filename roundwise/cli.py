"""The ``roundwise`` command: one parser composed of the bot's and the bench's subcommands.

This is the composition root: ``main`` sets litellm up once (``configure_litellm``) before any
command can import it, then hands over to the chosen subcommand.
"""

from __future__ import annotations

import argparse
import sys

from bot.review.llm_config import configure_litellm

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from bench.cli import add_commands as add_bench
    from bot.cli import add_commands as add_bot

    parser = argparse.ArgumentParser(
        prog="roundwise",
        description="A multi-round pull request reviewer with memory.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_bot(sub)
    add_bench(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    configure_litellm()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
