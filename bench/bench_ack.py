"""Acknowledgement bench (a script, not a test): the real webhook path against a bare handler.

    python -m bench.bench_ack [--deliveries 200] [--rounds 5] [--baseline bare|none]
                              [--db sqlite | --db postgresql://...]

Each round starts two servers, one after the other (which goes first alternates by round), each
in a process of its own on 127.0.0.1, and sends both the same ``--deliveries`` signed
deliveries all at once (``bench.load_webhooks``' mix and client: one connection each, as GitHub
does), after a warm-up of 20 sent one by one:

* ``bare``: an aiohttp handler that reads the body, checks its HMAC in constant time and answers
  202, nothing else: the floor any webhook server on this machine and client has;
* ``app``: the real roundwise app (``bot.app.create_app``, workers off): verify, validate, record
  the delivery and queue its job in the store named by ``--db``.

Both run under the same ``web.AppRunner`` (no access log), so the handler is the only
difference. Per round it prints p50 and p99 (client-measured, ms) of each; then the median over
rounds of each and the ratio app p99 / bare p99. The target is a ratio of at most 1.5.

``--db sqlite`` (default): a fresh ledger file per round. ``--db postgresql://...``: the app on
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


async def one_server(kind: str, config: Config, batch: list[tuple[str, dict]],
                     warmup: list[tuple[str, dict]]) -> tuple[list[float], list[int]]:
    """Start ``kind``, warm it up, send ``batch`` at once; (latencies ms, statuses)."""
    loop = asyncio.get_running_loop()
    ours, theirs = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=serve,
                                                          args=(kind, config, theirs))
    server.start()
    try:
        what, value = await loop.run_in_executor(None, ours.recv)
        if what == "error":
            raise CannotServe(value)
        url = f"http://127.0.0.1:{value}"
        await send_all(url, config.webhook_secret, warmup, concurrent=False)
        latencies, statuses, _ = await send_all(url, config.webhook_secret, batch)
    finally:
        if server.is_alive():
            ours.send("stop")
        await loop.run_in_executor(None, server.join, 30)
    return latencies, statuses


async def run(count: int, rounds: int, db: str, baseline: bool) -> list[dict]:
    private, public = throwaway_key()
    fake = FakeGitHub(APP_ID, public)
    setup_fake(fake)
    batch = deliveries(fake, count)
    warmup = deliveries(fake, WARMUP)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for r in range(rounds):
            target = db if is_postgres(db) else str(Path(folder) / f"ledger{r}.db")
            config = Config(app_id=str(APP_ID), private_key=private,
                            webhook_secret=secrets.token_hex(16), api_url="http://127.0.0.1:9",
                            db_path=target, workers=1, bot_login=fake.bot_login)
            row = {"round": r + 1}
            kinds = ("bare", "app") if baseline else ("app",)
            for kind in kinds if r % 2 == 0 else kinds[::-1]:  # alternate who goes first
                latencies, statuses = await one_server(kind, config, batch, warmup)
                row[kind] = {"p50": statistics.median(latencies),
                             "p99": percentile(latencies, 0.99),
                             "ok": sum(s in (200, 202) for s in statuses)}
            results.append(row)
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
    ratio = medians["app"]["p99"] / medians["bare"]["p99"]
    verdict = "ok" if ratio <= TARGET else "OVER"
    print(f"app p99 / bare p99 = {ratio:.2f} (target <= {TARGET:g}): {verdict}; "
          f"p50 ratio {medians['app']['p50'] / medians['bare']['p50']:.2f}")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=200, help="deliveries sent at once")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (bare, then app, each)")
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
