"""Queue bench (a script, not a test): job claim latency by backlog size, and burst drain.

    python -m bench.perf.queue [--sizes 1000,10000] [--claims 300] [--engines sqlite,postgresql]
                                [--pg postgresql://postgres@127.0.0.1:5432/test] [--explain]
                                [--drain-seconds 20 --drain-workers 4 --drain-work 0.05
                                 --drain-rate 250 --drain-prefill 0]

Claim latency: a fresh store per size (a new SQLite file; a new PostgreSQL schema, dropped
after) holding that many queued jobs spread as ``bench.perf.queue_fill`` describes, plus as many
finished ones. Each sample times one ``store.claim`` (the real claim path: transaction, the
claim query, the superseded check, the update); the claimed job is then finished and a new one
queued on a new PR, untimed, so the depth holds. Two same-run baselines go through the same
connection path: a trivial ``select * from jobs order by id desc limit 1`` (a round trip on
the primary key) and a one-row update in a transaction of its own (a durable commit, which a
claim also makes). The target is 5 ms per claim at 10,000 queued jobs. ``--explain`` prints
the claim query's plan (SQLite ``EXPLAIN QUERY PLAN``, PostgreSQL ``EXPLAIN ANALYZE``) at each
size.

Burst drain (``bench.perf.queue_drain``): jobs arrive at 250/s while the real ``Workers`` claim and
finish them with a fixed simulated processing time; the drain rate per depth bucket should stay
at the workers' capacity (workers / processing time) as the backlog grows. Each figure is also
given against a durable commit measured in the same run (``p50/commit``; per drained job, the
worker's time beyond the work in commits), since a commit's cost is the disk's, not the code's.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bot.store import queue_postgres as pg_store
from bot.store import queue_sqlite as sqlite_store

from .queue_fill import Bench, add_one, close_store, fill, open_store, touch

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
TARGET_MS = 5.0
BASELINE = "select * from jobs order by id desc limit 1"  # the newest job, by primary key


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _trivial(bench: Bench) -> None:
    """The baseline: one indexed row through the store's own connection path."""
    if bench.engine == "sqlite":
        bench.store.db.execute(BASELINE).fetchone()
    else:
        with bench.store.pool.connection() as conn:
            conn.execute(BASELINE).fetchone()


def time_claims(bench: Bench, claims: int, first_new_pr: int) -> dict[str, list[float]]:
    """Claim, trivial read and one-row commit, in ms: one sample each per iteration."""
    store, claim_ms, base_ms, write_ms = bench.store, [], [], []
    for i in range(claims):
        started = time.perf_counter()
        _trivial(bench)
        base_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        touch(bench)
        write_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        job = store.claim("bench-worker", time.time(), 600.0)
        claim_ms.append((time.perf_counter() - started) * 1000)
        if job is None:
            raise SystemExit(f"{bench.engine}: nothing to claim after {i} claims")
        store.finish(job.id, "done", None)
        add_one(bench, first_new_pr + i)
    return {"claim": claim_ms, "read": base_ms, "write": write_ms}


def explain(bench: Bench) -> str:
    """The claim query's plan on this store, as text."""
    if bench.engine == "sqlite":
        rows = bench.store.db.execute("explain query plan " + sqlite_store.CLAIM,
                                      [time.time()]).fetchall()
        return "\n".join(f"  {r[3]}" for r in rows)
    with bench.store.pool.connection() as conn, conn.transaction():  # row locks end with it
        rows = conn.execute("explain (analyze, costs off) " + pg_store.CLAIM,
                            [time.time(), pg_store.BATCH]).fetchall()
        return "\n".join(f"  {next(iter(r.values()))}" for r in rows)


def claim_table(engines: list[str], sizes: list[int], claims: int, pg_url: str,
                show_plan: bool) -> list[dict]:
    results = []
    for engine in engines:
        for size in sizes:
            with tempfile.TemporaryDirectory() as folder:
                bench = open_store(engine, Path(folder), pg_url)
                try:
                    fill(bench, size, history=size)
                    if show_plan:
                        print(f"-- {engine}, {size:,} queued: claim plan\n{explain(bench)}")
                    ms = time_claims(bench, claims, first_new_pr=10 ** 8)
                finally:
                    close_store(bench)
            results.append({"engine": engine, "queued": size, "claims": claims,
                            "p50": statistics.median(ms["claim"]),
                            "p95": percentile(ms["claim"], 0.95), "max": max(ms["claim"]),
                            "base_p50": statistics.median(ms["read"]),
                            "write_p50": statistics.median(ms["write"])})
    return results


def print_claims(results: list[dict]) -> None:
    print(f"{'engine':<11}{'queued':>8}{'claims':>8}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
          f"{'read p50':>10}{'commit p50':>12}{'p50-commit':>12}{'p50/commit':>12}"
          f"  target p95 <= {TARGET_MS:g} ms")
    for r in results:
        verdict = "ok" if r["p95"] <= TARGET_MS else "OVER"
        print(f"{r['engine']:<11}{r['queued']:>8,}{r['claims']:>8}{r['p50']:>9.2f}"
              f"{r['p95']:>9.2f}{r['max']:>9.2f}{r['base_p50']:>10.3f}{r['write_p50']:>12.3f}"
              f"{r['p50'] - r['write_p50']:>12.2f}{r['p50'] / r['write_p50']:>11.2f}x"
              f"  {verdict}")
    print("read: select * from jobs order by id desc limit 1; commit: one row updated in a "
          "transaction of its own (a durable commit); both through the same connection path")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="queued jobs, comma-separated")
    parser.add_argument("--claims", type=int, default=300, help="claims timed per size")
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--pg", default=PG_URL, help="PostgreSQL database for the bench schema")
    parser.add_argument("--explain", action="store_true", help="print the claim query's plan")
    parser.add_argument("--drain-seconds", type=float, default=20.0,
                        help="burst-drain duration per engine (0: skip)")
    parser.add_argument("--drain-workers", type=int, default=4)
    parser.add_argument("--drain-work", type=float, default=0.05,
                        help="simulated processing seconds per job")
    parser.add_argument("--drain-rate", type=float, default=250.0, help="jobs enqueued per s")
    parser.add_argument("--drain-prefill", type=int, default=0,
                        help="queued jobs before the drain starts (start deep)")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    sizes = [int(s) for s in args.sizes.split(",")]
    results = claim_table(engines, sizes, args.claims, args.pg, args.explain)
    print_claims(results)
    if args.drain_seconds > 0:
        from .queue_drain import print_drain, run_drain

        for engine in engines:
            print_drain(run_drain(engine, args.pg, seconds=args.drain_seconds,
                                  workers=args.drain_workers, work=args.drain_work,
                                  rate=args.drain_rate, prefill=args.drain_prefill))
    big = [r for r in results if r["queued"] >= 10_000]
    return 0 if all(r["p95"] <= TARGET_MS for r in big) else 1


if __name__ == "__main__":
    raise SystemExit(main())
