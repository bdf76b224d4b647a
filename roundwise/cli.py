"""The ``roundwise`` command: one parser composed of the bot's and the bench's subcommands.

This is the composition root: ``main`` sets litellm up once (``configure_litellm``) before any
command can import it, then hands over to the chosen subcommand, its stdout escaping control
characters (``bot.cli.printable``).
"""

from __future__ import annotations

import argparse
import sys

from bot.cli.printable import PrintableWriter
from bot.review.llm_config import configure_litellm

__all__ = ["CLOSED_PIPE", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from bench.cli import add_commands as add_bench
    from bot.cli import add_commands as add_bot

    parser = argparse.ArgumentParser(
        prog="roundwise",
        description="A multi-round pull request reviewer with memory.",
    )
    from bot.server.startup import version

    parser.add_argument("--version", action="version", version=f"roundwise {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_bot(sub)
    add_bench(sub)
    return parser


#: exit status of a command whose reader went away (128 + SIGPIPE), as ``cat`` or ``git`` give
CLOSED_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    configure_litellm()
    args = build_parser().parse_args(argv)
    stdout = sys.stdout
    sys.stdout = PrintableWriter(stdout)  # text from pull requests cannot drive the terminal
    try:
        status = args.func(args) or 0
        sys.stdout.flush()  # a closed pipe shows here, where it can still be handled
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    finally:
        sys.stdout = stdout


def _closed_pipe() -> int:
    """The reader of stdout (``| head``) has gone: stop quietly, as other commands do.

    stdout is pointed at /dev/null so that the interpreter's own flush at exit does not raise
    the same error again as an "Exception ignored" message.
    """
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return CLOSED_PIPE


if __name__ == "__main__":
    sys.exit(main())
