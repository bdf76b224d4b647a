"""The aiohttp application: routes, start-up and shutdown, and ``roundwise serve``.

``create_app(config)`` builds the app: ``POST /webhook`` (see ``bot.github.webhooks``), ``GET /healthz``
and ``GET /metrics``. On start-up it opens the ledger, re-queues jobs a crash interrupted and
starts the worker pool; on shutdown it stops the workers and closes everything.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from tracker.ledger import Ledger
from tracker.serial import PRSerializer

from . import health, metrics
from .config import Config, ConfigError, load_config
from .github import GitHubApp, GitHubForge, RetryPolicy
from .github.webhooks import handle_webhook
from .handlers import Handlers
from .jobs import JobQueue, Workers
from .review.engine import Engine, offline_engine
from .round import RoundRunner
from .serving import serve_app

log = logging.getLogger("roundwise")

MAX_BODY = 25 * 1024 * 1024  # GitHub does not send payloads over 25 MB


@dataclass
class State:
    config: Config
    ledger: Ledger
    queue: JobQueue
    session: aiohttp.ClientSession | None = None
    github: GitHubApp | None = None
    workers: Workers | None = None


def build_engine(config: Config) -> Engine:
    """The offline engine, or the LLM engine for ``config.llm``."""
    if config.llm is None:
        return offline_engine()
    from .review.llm import build_llm_engine

    return build_llm_engine(config.llm)


async def healthz(request: web.Request) -> web.Response:
    state: State = request.app["state"]
    problems = health.problems(state)  # a database write and the workers (bot.health)
    if problems:
        return web.json_response({"status": "unhealthy", "problems": problems}, status=503)
    return web.json_response({"status": "ok", "queue": state.queue.depth()})


async def metrics_view(request: web.Request) -> web.Response:
    state: State = request.app["state"]
    metrics.QUEUE_DEPTH.set(state.queue.depth())
    return web.Response(body=metrics.render(), content_type="text/plain", charset="utf-8")


def create_app(config: Config, *, engine: Engine | None = None,
               retry: RetryPolicy | None = None, start_workers: bool = True,
               poll: float = 0.5) -> web.Application:
    """The server for ``config``. ``engine`` and ``retry`` may be given (tests, the bench)."""
    app = web.Application(client_max_size=MAX_BODY)
    ledger = Ledger(config.db_path)
    state = State(config=config, ledger=ledger, queue=JobQueue(ledger))
    app["state"] = state
    app.router.add_post("/webhook", handle_webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)

    lock = health.ServerLock(config.db_path)

    async def start(app: web.Application) -> None:
        lock.acquire()  # one server per SQLite ledger file (bot.health)
        state.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=(retry or RetryPolicy()).timeout))
        state.github = GitHubApp(state.session, config.app_id, config.private_key,
                                 config.api_url, retry=retry)
        github = state.github

        def forge_for(job) -> GitHubForge:
            return GitHubForge(github.repo(job.installation_id, job.repo))

        runner = RoundRunner(ledger, forge_for, engine or build_engine(config),
                             PRSerializer(ledger), bot_login=config.bot_login,
                             bot_logins=config.bot_logins, review_drafts=config.review_drafts)
        handlers = Handlers(ledger, state.queue, runner,
                            bot_logins=config.bot_logins)
        state.workers = Workers(state.queue, handlers.handle, count=config.workers, poll=poll)
        if start_workers:
            state.workers.start()
        log.info("roundwise ready: ledger %s, %d worker(s), %s reviewer", config.db_path,
                 config.workers, config.model or "offline")

    async def stop(app: web.Application) -> None:
        if state.workers:
            await state.workers.stop()
        if state.session:
            await state.session.close()
        ledger.close()
        lock.release()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


def serve(host: str = "127.0.0.1", port: int = 8080) -> int:
    """``roundwise serve``: check the configuration, then run until interrupted."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        config = load_config()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        asyncio.run(serve_app(create_app(config), host, port))  # bot.serving: connection limits
    except health.AlreadyServing as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0
