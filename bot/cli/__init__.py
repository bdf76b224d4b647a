"""The bot's subcommands of ``roundwise``: ``serve`` (the GitHub App), ``setup`` (create the App),
``review`` (local git), ``stats``, ``db`` (the store's upkeep) and ``dashboard`` (the ledger in the
browser, read-only).

``add_commands`` registers them; each lives in its own module, imported only when the parser is
built: ``setup``, ``local`` (``roundwise review``, with its outputs ``textreport``, ``sarif`` and
``fixpatch``; ``printable`` escapes what a terminal would obey), ``stats``, ``db`` and
``dashboard``; ``serve`` is ``bot.server.app.serve``. ``roundwise.cli`` composes these with
the bench's; this package knows nothing of the bench.
"""

from __future__ import annotations

import argparse

__all__ = ["add_commands", "dashboard", "db", "fixpatch", "local", "printable", "sarif", "setup",
           "stats", "textreport"]


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``roundwise serve`` and ``roundwise review`` on the ``roundwise`` parser."""
    from ..server.hosts import HOSTS

    routes = ", ".join(f"{host.route} ({host.title}, when configured)" for host in HOSTS)
    serve = sub.add_parser(
        "serve", help="run the webhook server (GitHub App, GitLab)",
        description=f"Serve {routes}, GET /healthz and GET /metrics. Configuration comes "
                    "from the environment (see bot/config/env.py); a missing or invalid setting "
                    "stops the server at start-up with a message saying how to fix it.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080,
                       help="port to bind (default 8080; 0: any free port, named in the ready "
                            "line)")
    serve.add_argument("--env-file", help="read settings from this file (default: ./.env when "
                                          "it exists; the environment wins over the file)")
    serve.set_defaults(func=cmd_serve)

    from .local import add_commands as add_local
    from .setup import add_commands as add_setup

    add_local(sub)
    add_setup(sub)

    from .stats import add_command as add_stats

    add_stats(sub)

    from .db import add_commands as add_db

    add_db(sub)

    from .dashboard import add_command as add_dashboard

    add_dashboard(sub)


def cmd_serve(args) -> int:
    from ..server.app import serve

    return serve(args.host, args.port, args.env_file)
