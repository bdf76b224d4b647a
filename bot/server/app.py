"""The aiohttp application: routes, start-up and shutdown, and ``roundwise serve``.

``create_app(config)`` builds the app: each configured code-host backend's webhook route
(``bot.server.hosts``: ``POST /webhook`` for the GitHub App, ``POST /gitlab/webhook`` with
GitLab configured), ``GET /healthz``
and ``GET /metrics``, a small ``GET /`` page with ``GET /docs`` (``bot.server.home``) and the
dashboard under ``/dashboard`` (``bot.dashboard``, ``mount_dashboard``). It opens
the ledger and the queue through ``bot.store`` (one SQLite file, locked to this server, or a
PostgreSQL database that replicas share); on start-up it re-queues jobs a crash interrupted
(on PostgreSQL: those whose lease ran out) and starts the worker pool; on shutdown
it stops the workers and closes everything. ``serve`` reads ``.env``, runs the start-up checks
(``bot.server.startup``) and logs the ready line once listening.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import sys
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from tracker.serial import PRSerializer
from tracker.store import LedgerStore

from ..config.env import Config, ConfigError
from ..forge import Forge
from ..forge.appkeys import STATE, UNVERIFIED
from ..forge.unverified import UnverifiedBodies
from ..github import GitHubApp, RetryPolicy
from ..jobs import JobQueue, Workers
from ..jobs.handlers import Handlers
from ..jobs.retention import prune_periodically
from ..observe import metrics
from ..review.engine import Engine, offline_engine
from ..review.offline import tempclean
from ..round import RoundRunner
from ..store import engine_of, off_loop, open_ledger_store, open_queue_store
from ..store.queue_base import redact
from . import health, hosts
from .disconnects import disconnects
from .logs import with_job_context

log = logging.getLogger("roundwise")

MAX_BODY = 25 * 1024 * 1024  # GitHub does not send payloads over 25 MB


@dataclass
class State:
    config: Config
    ledger: LedgerStore
    queue: JobQueue
    session: aiohttp.ClientSession | None = None
    github: GitHubApp | None = None
    workers: Workers | None = None
    pruner: asyncio.Task | None = None  # hourly retention (bot.jobs.retention)


def build_engine(config: Config) -> Engine:
    """The offline engine, or the LLM engine for ``config.llm``."""
    if config.llm is None:
        return offline_engine()
    from ..review.llm import build_llm_engine

    return build_llm_engine(config.llm)


async def healthz(request: web.Request) -> web.Response:
    state: State = request.app[STATE]
    # a database write and the workers (bot.server.health); off the loop on a network database
    problems = await off_loop(state.ledger, health.problems, state)
    if problems:
        return web.json_response({"status": "unhealthy", "problems": problems}, status=503)
    depth = await state.queue.call(state.queue.depth)
    return web.json_response({"status": "ok", "queue": depth})


def metrics_refusal(request: web.Request) -> web.Response | None:
    """Why a scrape of ``/metrics`` is refused, or None: its labels name (private)
    repositories, so it answers a Bearer ``ROUNDWISE_METRICS_TOKEN`` (compared in constant
    time) or, with none set, a scraper on the loopback address only, as exporters commonly do."""
    token = os.environ.get("ROUNDWISE_METRICS_TOKEN") or ""
    if token:
        sent = request.headers.get("Authorization", "")
        if hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            return None
        return web.Response(status=401, text="a Bearer token is needed\n",
                            headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    try:
        loopback = ipaddress.ip_address((request.remote or "").split("%")[0]).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return web.Response(status=403, text="metrics are served to loopback only; set "
                                         "ROUNDWISE_METRICS_TOKEN to scrape from elsewhere\n")


async def metrics_view(request: web.Request) -> web.Response:
    refused = metrics_refusal(request)
    if refused is not None:
        return refused
    state: State = request.app[STATE]
    metrics.QUEUE_DEPTH.set(await state.queue.call(state.queue.depth))
    return web.Response(body=metrics.render(), content_type="text/plain", charset="utf-8")


def serializer(queue: JobQueue) -> PRSerializer:
    """Per-PR leases in the queue's store. On a shared store a PR lease lasts no longer than a
    job's, so a dead replica's PR leases run out with its jobs' (``recover`` drops both)."""
    if queue.store.threaded:
        return PRSerializer(queue.store, ttl=queue.lease)
    return PRSerializer(queue.store)


def counters() -> dict[str, int]:
    """What the dashboard's health shows of this process's metrics: jobs, model calls and
    GitHub calls by outcome (``bot.observe.metrics``)."""
    out: dict[str, int] = {}
    for collector, label in ((metrics.JOBS, "outcome"), (metrics.GITHUB_CALLS, "outcome"),
                             (metrics.LLM_FAILURES, "error")):
        for family in collector.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    key = f"{family.name.removeprefix('roundwise_')}: {sample.labels.get(label)}"
                    out[key] = out.get(key, 0) + int(sample.value)
    for family in metrics.LLM_TOKENS.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out[f"llm tokens: {sample.labels.get('kind')}"] = int(sample.value)
    return dict(sorted(out.items()))


def mount_dashboard(app: web.Application, config: Config, listen_host: str) -> None:
    """``/dashboard`` (``bot.dashboard``), unless no one could sign in to it on
    ``listen_host`` (then one warning line, and the rest of the server as ever)."""
    from ..dashboard.routes import mount

    problem = config.dashboard.problem_on(listen_host)
    if problem:
        log.warning("not serving /dashboard: %s", problem)
        return
    gitlab_url = config.gitlab.url if config.gitlab else "https://gitlab.com"
    mount(app, config.dashboard, config.db_path, gitlab_url=gitlab_url, metrics=counters)


def create_app(config: Config, *, engine: Engine | None = None,
               retry: RetryPolicy | None = None, start_workers: bool = True,
               poll: float = 0.5, listen_host: str = "127.0.0.1") -> web.Application:
    """The server for ``config``. ``engine`` and ``retry`` may be given (tests, the bench);
    ``listen_host`` is where it listens, which decides whether an open dashboard is served."""
    from .home import docs, home

    app = web.Application(client_max_size=MAX_BODY)
    app.middlewares.append(disconnects)  # a client hanging up mid-body: one line, no traceback
    # bot.store: SQLite (the ledger's file holds the queue) or PostgreSQL (both stores there,
    # each migrated at start-up under an advisory lock)
    ledger = open_ledger_store(config.db_path)
    shared = engine_of(config.db_path).shared  # a server replicas share: no one-server lock
    queue_store = open_queue_store(config.db_path, ledger=None if shared else ledger)
    state = State(config=config, ledger=ledger,
                  queue=JobQueue(store=queue_store, lease=config.job_lease))
    app[STATE] = state
    app[UNVERIFIED] = UnverifiedBodies()  # bot.forge.unverified: slow bodies cannot take every slot
    # bot.server.hosts: each configured backend adds its webhook route (GitHub: with an App)
    services = [service for service in (host.mount(app, config) for host in hosts.HOSTS)
                if service is not None]
    app.router.add_get("/", home)
    app.router.add_get("/docs", docs)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)

    lock = None if shared else health.ServerLock(config.db_path)

    async def start(app: web.Application) -> None:
        if lock:
            lock.acquire()  # one server per SQLite ledger file (bot.server.health)
        await asyncio.to_thread(tempclean.clean_stale)  # what a killed server left in /tmp
        state.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=(retry or RetryPolicy()).timeout))
        for service in services:  # GitHub's sets state.github
            await service.start(state.session, retry)

        def forge_for(job) -> Forge:
            # later backends first; GitHub, the first, owns what no other does
            owner = next(service for service in reversed(services) if service.owns(job))
            return owner.forge(job)

        runner = RoundRunner(ledger, forge_for, engine or build_engine(config),
                             serializer(state.queue), bot_login=config.bot_login,
                             bot_logins=config.bot_logins, review_drafts=config.review_drafts,
                             limits=config.review_limits,
                             public_url=config.dashboard.public_url)
        handlers = Handlers(ledger, state.queue, runner,
                            bot_logins=config.bot_logins)
        handle = handlers.handle
        for service in services:  # each backend takes its own kinds of job first
            handle = service.jobs(handlers, handle)
        state.workers = Workers(state.queue, with_job_context(handle),
                                count=config.workers, poll=poll)
        if start_workers:
            state.workers.start()
            state.pruner = asyncio.create_task(
                prune_periodically(state.queue, config.retention_days))
        log.debug("started %d worker(s) on ledger %s", config.workers, redact(config.db_path))

    async def stop(app: web.Application) -> None:
        if state.pruner:
            state.pruner.cancel()
            await asyncio.gather(state.pruner, return_exceptions=True)
        if state.workers:
            await state.workers.stop()
        if state.session:
            await state.session.close()
        if shared:
            queue_store.close()
        ledger.close()
        if lock:
            lock.release()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    # after the server's own start and stop: the workers stop before anything else yields
    mount_dashboard(app, config, listen_host)
    return app


def serve(host: str = "127.0.0.1", port: int = 8080, env_file: str | None = None) -> int:
    """``roundwise serve``: read ``.env``, check the configuration, then run until interrupted.

    Every problem found before listening is one line on stderr and exit status 2.
    """
    from ..config.envfile import EnvFileError, load_env_file, readable_by_others
    from .logs import configure_logging
    from .startup import host_problems, startup_problems

    path = env_file or ".env"
    try:
        loaded = load_env_file(path, required=env_file is not None)
    except EnvFileError as exc:
        print(f"roundwise cannot start:\n  - {exc}", file=sys.stderr)
        return 2
    try:
        config = hosts.load_config()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    configure_logging(config.log_format)
    if loaded:
        log.info("read %d setting(s) from %s", len(loaded), path)
        if readable_by_others(path):
            log.warning("%s holds secrets but others can read it: chmod 600 %s", path, path)
    problems = startup_problems(config) or host_problems(config)
    if problems:
        print("roundwise cannot start:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        return 2

    try:
        return asyncio.run(_run(config, host, port))
    except health.AlreadyServing as exc:  # another server holds this ledger file
        print(exc, file=sys.stderr)
        return 2


async def _run(config: Config, host: str, port: int) -> int:
    """Serve until SIGINT or SIGTERM; logs the ready line once listening (port 0: any)."""
    from .serving import GuardedRunner, listening, until_stopped
    from .startup import ready_line

    # bot.server.serving: connection limits
    runner = GuardedRunner(create_app(config, listen_host=host))
    await runner.setup()
    try:
        bound = await listening(runner, host, port, "roundwise cannot start:\n  - cannot "
                                "listen on {where} ({why}); choose another --port or --host")
        if bound is None:
            return 2
        log.info(ready_line(config, host, bound))
        await until_stopped()
        log.info("roundwise stopping")
    finally:
        await runner.cleanup()
    return 0
