"""``roundwise dashboard``: the dashboard for a ledger on its own, read-only.

The same pages ``roundwise serve`` serves under ``/dashboard`` (``bot.dashboard``), for a ledger
file or database (``--db``, the same URLs as ``serve``'s ``ROUNDWISE_DB``) without the App: after
a bench replay, or beside the servers for people who should not reach them. It reads ``.env``
as ``serve`` does; without GitHub sign-in or ``ROUNDWISE_DASHBOARD_TOKEN`` it listens on
loopback only. Every problem before listening is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

__all__ = ["add_command", "build_app"]


def add_command(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser(
        "dashboard", help="serve the dashboard of a ledger, read-only",
        description="Serve /dashboard for the ledger named by --db (a SQLite path, "
                    "sqlite:///PATH or postgresql://...), reading it only. Settings: "
                    "GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (GitHub sign-in), "
                    "ROUNDWISE_DASHBOARD_TOKEN, ROUNDWISE_PUBLIC_URL, GITHUB_API_URL, GITLAB_URL.")
    cmd.add_argument("--db", help="the ledger (default: ROUNDWISE_DB, else roundwise.db)")
    cmd.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    cmd.add_argument("--port", type=int, default=8081,
                     help="port to bind (default 8081; 0: any free port)")
    cmd.add_argument("--env-file", help="read settings from this file (default: ./.env when "
                                        "it exists; the environment wins over the file)")
    cmd.set_defaults(func=cmd_dashboard)


def build_app(target: str, config, *, gitlab_url: str = "https://gitlab.com"):
    """An aiohttp app serving the dashboard alone (``/`` leads to it)."""
    from aiohttp import web

    from ..dashboard.routes import mount

    app = web.Application(client_max_size=64 * 1024)

    async def home(request: web.Request) -> web.Response:
        raise web.HTTPFound("/dashboard")

    app.router.add_get("/", home)
    mount(app, config, target, gitlab_url=gitlab_url)
    return app


def cmd_dashboard(args) -> int:
    from ..config.dashboard import DashboardConfig, DashboardError
    from ..config.envfile import EnvFileError, load_env_file
    from ..store.target import TargetError, check_target

    def fail(message: str) -> int:
        print(f"roundwise dashboard: {message}", file=sys.stderr)
        return 2

    try:
        load_env_file(args.env_file or ".env", required=args.env_file is not None)
    except EnvFileError as exc:
        return fail(str(exc))
    target = args.db or os.environ.get("ROUNDWISE_DB") or "roundwise.db"
    try:
        check_target(target, must_exist=True)
        config = DashboardConfig.from_env(os.environ)
    except (TargetError, DashboardError) as exc:
        return fail(str(exc))
    problem = config.problem_on(args.host)
    if problem:
        return fail(problem)
    from ..store.ledger_reads import LedgerReader

    try:  # the server opens it at the first page; a ledger it cannot read stops it here
        reader = LedgerReader(target)
        reader.repo_names()
        reader.close()
    except Exception as exc:  # noqa: BLE001 - sqlite3 or psycopg: one line either way
        return fail(f"the ledger cannot be read ({type(exc).__name__}: "
                    f"{(str(exc).splitlines() or [''])[0][:200]})")
    return asyncio.run(_run(build_app(target, config,
                                      gitlab_url=os.environ.get("GITLAB_URL")
                                      or "https://gitlab.com"), args.host, args.port))


async def _run(app, host: str, port: int) -> int:
    from aiohttp import web

    from ..server.serving import listening, until_stopped

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        bound = await listening(runner, host, port, "roundwise dashboard: cannot listen on "
                                "{where} ({why}); choose another --port or --host")
        if bound is None:
            return 2
        print(f"roundwise dashboard on http://{host}:{bound}/dashboard (read-only)",
              flush=True)
        await until_stopped()
    finally:
        await runner.cleanup()
    return 0
