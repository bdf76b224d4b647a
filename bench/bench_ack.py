"""Acknowledgement bench (a script, not a test): the real webhook path against a bare handler.

    python -m bench.bench_ack [--deliveries 200] [--rounds 9] [--baseline bare|none]
                              [--db sqlite | --db postgresql://...]

Two servers run side by side, each in a process of its own on 127.0.0.1, started once and
warmed up (20 deliveries one by one, then one untimed burst), as a server that has been up a
while is. Each round then sends each of them ``--deliveries`` signed deliveries all at once
(``bench.load_webhooks``' mix and client: one connection each, as GitHub does; fresh delivery
ids every burst), alternating which goes first:

* ``bare``: an aiohttp handler that reads the body, checks its HMAC in constant time and answers
  202, nothing else: the floor any webhook server on this machine and client has;
* ``app``: the real roundwise app (``bot.app.create_app``, workers off): verify, validate, record
  the delivery and queue its job in the store named by ``--db``.

Both run under the same ``web.AppRunner`` (no access log), so the handler is the only
difference. Per round it prints p50 and p99 (client-measured, ms) of each; then the median over
rounds of each and the ratio app p99 / bare p99 two ways: of the medians, and the median of each
round's own ratio (its two bursts ran back to back, under the same load from elsewhere on the
machine). The target is at most 1.5 for the worse of the two.

``--db sqlite`` (default): a fresh ledger file for the run. ``--db postgresql://...``: the app on
that database, when the server can run on it; otherwise the bench stops with the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import multiprocessing
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

from aiohttp import web

from bench.fake_github import FakeGitHub
from bench.load_webhooks import APP_ID, deliveries, percentile, send_all, setup_fake
from bench.replay import throwaway_key
from bot.config import Config
from bot.github import RetryPolicy
from bot.store import is_postgres

TARGET = 1.5
WARMUP = 20


def bare_app(secret: str) -> web.Application:
    """The baseline: constant-time HMAC check of the whole body, then 202."""
    key = secret.encode()

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        given = request.headers.get("X-Hub-Signature-256", "")
        if not hmac.compare_digest(expected.encode(), given.encode()):
            return web.Response(status=401)
        return web.Response(status=202)

    app = web.Application()
    app.router.add_post("/webhook", hook)
    return app


def serve(kind: str, config: Config, conn) -> None:
    """One server, in its own process; sends its port, or ``("error", reason)``."""
    async def main() -> None:
        try:
            if kind == "bare":
                app = bare_app(config.webhook_secret)
            else:
                from bot.app import create_app
                from bot.review.llm_config import configure_litellm

                configure_litellm()
                app = create_app(config, retry=RetryPolicy(attempts=1), start_workers=False)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()  # the app's start-up (store, lock) runs here
            await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the reason
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
            return
        conn.send(("port", runner.addresses[0][1]))
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until told to stop
        await runner.cleanup()

    asyncio.run(main())


class CannotServe(RuntimeError):
    """The app could not start on the database asked for."""


class Server:
    """One server process (``bare`` or ``app``) on 127.0.0.1 and the pipe that stops it."""

    def __init__(self, kind: str, config: Config):
        self.kind, self.config = kind, config
        self.pipe, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.get_context("spawn").Process(
            target=serve, args=(kind, config, theirs))
        self.url = ""

    async def start(self) -> None:
        self.process.start()
        what, value = await asyncio.get_running_loop().run_in_executor(None, self.pipe.recv)
        if what == "error":
            await self.stop()
            raise CannotServe(value)
        self.url = f"http://127.0.0.1:{value}"

    async def burst(self, batch: list[tuple[str, dict]], *, concurrent: bool = True
                    ) -> tuple[list[float], list[int]]:
        latencies, statuses, _ = await send_all(self.url, self.config.webhook_secret, batch,
                                                concurrent=concurrent)
        return latencies, statuses

    async def stop(self) -> None:
        if self.process.is_alive() and self.url:
            self.pipe.send("stop")
        await asyncio.get_running_loop().run_in_executor(None, self.process.join, 30)


async def run(count: int, rounds: int, db: str, baseline: bool) -> list[dict]:
    """Both servers started once and warmed up (``WARMUP`` deliveries one by one, then one
    untimed burst), then ``rounds`` measured bursts each, alternating which goes first. Every
    burst has fresh delivery ids, so the app records and queues every one."""
    private, public = throwaway_key()
    fake = FakeGitHub(APP_ID, public)
    setup_fake(fake)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        target = db if is_postgres(db) else str(Path(folder) / "ledger.db")
        config = Config(app_id=str(APP_ID), private_key=private,
                        webhook_secret=secrets.token_hex(16), api_url="http://127.0.0.1:9",
                        db_path=target, workers=1, bot_login=fake.bot_login)
        kinds = ("bare", "app") if baseline else ("app",)
        servers = {kind: Server(kind, config) for kind in kinds}
        started = []
        try:
            for kind in ("app", *[k for k in kinds if k != "app"]):  # the app fails first
                await servers[kind].start()
                started.append(servers[kind])
                await servers[kind].burst(deliveries(fake, WARMUP), concurrent=False)
                await servers[kind].burst(deliveries(fake, count))
            for r in range(rounds):
                row = {"round": r + 1}
                for kind in kinds if r % 2 == 0 else kinds[::-1]:
                    latencies, statuses = await servers[kind].burst(deliveries(fake, count))
                    row[kind] = {"p50": statistics.median(latencies),
                                 "p99": percentile(latencies, 0.99),
                                 "ok": sum(s in (200, 202) for s in statuses)}
                results.append(row)
        finally:
            for server in started:
                await server.stop()
    return results


def report(results: list[dict], count: int) -> float | None:
    """Print the table; the ratio of the median p99s (None without a baseline)."""
    kinds = [k for k in ("bare", "app") if k in results[0]]
    print(f"{count} concurrent signed deliveries per server per round; ms, client-measured")
    print(f"{'round':>5}" + "".join(f"{k + ' p50':>11}{k + ' p99':>11}{k + ' ok':>8}"
                                    for k in kinds))
    for row in results:
        print(f"{row['round']:>5}" + "".join(
            f"{row[k]['p50']:>11.1f}{row[k]['p99']:>11.1f}{row[k]['ok']:>8}" for k in kinds))
    medians = {k: {q: statistics.median(row[k][q] for row in results) for q in ("p50", "p99")}
               for k in kinds}
    print(f"{'median':>5}" + "".join(f"{medians[k]['p50']:>11.1f}{medians[k]['p99']:>11.1f}"
                                     f"{'':>8}" for k in kinds))
    if "bare" not in medians:
        return None
    of_medians = medians["app"]["p99"] / medians["bare"]["p99"]
    paired = statistics.median(row["app"]["p99"] / row["bare"]["p99"] for row in results)
    ratio = max(of_medians, paired)  # the worse of the two readings is the verdict
    verdict = "ok" if ratio <= TARGET else "OVER"
    print(f"app p99 / bare p99: {of_medians:.2f} (of the medians), {paired:.2f} (median of "
          f"each round's, the two bursts back to back); target <= {TARGET:g}: {verdict}; "
          f"p50 ratio {medians['app']['p50'] / medians['bare']['p50']:.2f}")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=200, help="deliveries sent at once")
    parser.add_argument("--rounds", type=int, default=9, help="measured bursts per server")
    parser.add_argument("--baseline", choices=("bare", "none"), default="bare")
    parser.add_argument("--db", default="sqlite",
                        help="sqlite (a fresh file per round) or postgresql://...")
    args = parser.parse_args(argv)
    try:
        results = asyncio.run(run(args.deliveries, args.rounds, args.db,
                                  args.baseline == "bare"))
    except CannotServe as exc:
        print(f"bench_ack: the app cannot run on {args.db}: {exc}", file=sys.stderr)
        return 2
    total_ok = all(row[k]["ok"] == args.deliveries for row in results
                   for k in ("bare", "app") if k in row)
    ratio = report(results, args.deliveries)
    return 0 if total_ok and (ratio is None or ratio <= TARGET) else 1


if __name__ == "__main__":
    raise SystemExit(main())
