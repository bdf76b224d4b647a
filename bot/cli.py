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
    serve = sub.add_parser(
        "serve", help="run the GitHub App's webhook server",
        description="Serve POST /webhook, GET /healthz and GET /metrics. Configuration comes "
                    "from the environment (see bot/config.py); a missing or invalid setting "
                    "stops the server at start-up with a message saying how to fix it.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port to bind (default 8080)")
    serve.set_defaults(func=cmd_serve)
    from bench.cli import add_commands as add_bench

    from .local import add_commands as add_local

    add_local(sub)
    add_bench(sub)
    return parser


def cmd_serve(args) -> int:
    from .app import serve

    return serve(args.host, args.port)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
