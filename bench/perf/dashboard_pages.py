"""Benchmark: the dashboard's three pages on a big ledger against a bare query for their rows.

Seeds a ledger of ``--scale`` × (10,000 pull requests in 100 repositories, 200,000 defects,
1,000,000 state rows: 5 rounds of 20 defects per pull request, each defect decided every
round, with round plans, 50,000 verdicts and a few jobs) on SQLite and on PostgreSQL (a fresh
schema, dropped afterwards), then serves it with ``roundwise dashboard``'s app on loopback
(the operator token) and times, interleaved, each page over HTTP and a bare query returning
the rows that page shows (one SQL statement, no HTTP, no template):

- Overview: the first 50 repositories with pull requests, open ones, rounds, open defects,
  last activity and the live acceptance and contradiction rates;
- Repository: the largest repository's 50 last-active pull requests with rounds, open and
  resolved defects;
- Pull request: one pull request's 20 defects with their 5 decisions each.

Prints min/median/p95/max milliseconds of both and the ratio of the p95s (the goal: at most
3×); the machine is shared and noisy, so only ratios measured in the same run are compared.

    python -m bench.perf.dashboard_pages [--scale 1] [--repeats 40]
                                         [--db sqlite] [--db postgresql://127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

__all__ = ["main"]

PRS, REPOS, ROUNDS, DEFECTS_PER_PR = 10_000, 100, 5, 20
TOKEN = "benchmark-operator-token"
STATES = ("Open", "Resolved")
OPEN = "('New', 'Open', 'Reopened')"

BARE = {
    "overview": f"""
        select p.repo, count(*) as prs, sum(case when p.status = 'open' then 1 else 0 end)
               as open_prs, max(p.updated_at) as last_activity,
          (select count(*) from rounds r join pull_requests q on q.id = r.pr_id
           where q.repo = p.repo) as rounds,
          (select count(*) from defects d join pull_requests q on q.id = d.pr_id
           where q.repo = p.repo and d.state in {OPEN} and d.ignored = 0) as open_defects,
          (select sum(case when v.verdict = 'accepted' then 1 else 0 end) * 1.0 /
                  nullif(sum(case when v.verdict in ('accepted', 'dismissed') then 1 else 0
                                  end), 0)
           from verdicts v join pull_requests q on q.id = v.pr_id where q.repo = p.repo)
           as acceptance,
          (select sum(case when v.verdict = 'contradicted' then 1 else 0 end) * 1.0 /
                  nullif(sum(case when v.verdict in ('confirmed', 'contradicted') then 1
                                  else 0 end), 0)
           from verdicts v join pull_requests q on q.id = v.pr_id where q.repo = p.repo)
           as contradiction
        from pull_requests p group by p.repo order by p.repo limit 50""",
    "repository": f"""
        select p.number, p.title, p.author, p.status, p.updated_at,
          (select count(*) from rounds r where r.pr_id = p.id) as rounds,
          (select count(*) from defects d where d.pr_id = p.id and d.state in {OPEN}
           and d.ignored = 0) as open_defects,
          (select count(*) from defects d where d.pr_id = p.id and d.state = 'Resolved'
           and d.ignored = 0) as resolved_defects
        from pull_requests p where p.repo = %s
        order by p.updated_at desc, p.number desc limit 50""",
    "pull request": """
        select d.key, d.severity, d.description, d.path, d.line_start, h.round, h.state,
               h.rule, h.evidence, h.decided_by
        from defects d join state_history h on h.defect_id = d.id
        where d.pr_id = %s order by d.id, h.round, h.id""",
}


def _stamp(day: int, second: int = 0) -> str:
    base = time.gmtime(time.time() - (182 - day) * 86400 + second)
    return time.strftime("%Y-%m-%dT%H:%M:%S.000+00:00", base)


def rows(scale: float, seed: int = 7) -> dict[str, list[tuple]]:
    """Every table's rows for ``scale`` (see the module docstring), deterministic."""
    rnd = random.Random(seed)
    n_prs = max(int(PRS * scale), REPOS)
    out: dict[str, list[tuple]] = {k: [] for k in ("pull_requests", "rounds", "defects",
                                                   "state_history", "verdicts", "jobs")}
    defect_id = history_id = verdict_id = 0
    for pr in range(1, n_prs + 1):
        repo = f"org{(pr % REPOS) // 10}/repo{pr % REPOS}"
        day = rnd.randrange(182)
        status = rnd.choices(("open", "merged", "closed"), (6, 3, 1))[0]
        out["pull_requests"].append((pr, repo, pr, 1000 + pr % REPOS, f"Change number {pr}",
                                     f"dev{pr % 37}", status, f"{pr:040x}", _stamp(day),
                                     _stamp(day, 3600 * ROUNDS)))
        finals = {}
        for d in range(1, DEFECTS_PER_PR + 1):
            defect_id += 1
            state = "New"
            history = [(1, "New", "raised", "found in round 1")]
            for rnd_no in range(2, ROUNDS + 1):
                if state == "Resolved":
                    state = "Reopened" if rnd.random() < 0.05 else "Resolved"
                else:
                    state = "Resolved" if rnd.random() < 0.35 else "Open"
                history.append((rnd_no, state, "anchor-modified" if state == "Resolved"
                                else "anchor-untouched", f"lines {d}..{d + 2} at round {rnd_no}"))
            finals[d] = state
            out["defects"].append((defect_id, pr, f"D{d}", "bot", f"src/module{d % 7}.py",
                                   d * 3, d * 3 + 2, f"Defect {d}: a problem worth fixing",
                                   "F.2", ("Minor", "Normal", "Major")[d % 3], 0.6,
                                   ("todo-comment", "debug-print", None)[d % 3], state,
                                   ROUNDS, 1, 0, _stamp(day), _stamp(day, 3600 * ROUNDS)))
            for rnd_no, hstate, rule, evidence in history:
                history_id += 1
                out["state_history"].append((history_id, defect_id, rnd_no, hstate, rule,
                                             evidence, "rule", _stamp(day, 3600 * rnd_no)))
            if d % 4 == 0:
                verdict_id += 1
                kind = "finding" if d % 8 == 0 else "state"
                verdict = rnd.choice(("accepted", "dismissed") if kind == "finding"
                                     else ("confirmed", "contradicted"))
                out["verdicts"].append((verdict_id, pr, defect_id, f"D{d}", 2, kind,
                                        "raised" if kind == "finding" else "Open→Resolved",
                                        "anchor-modified", verdict, "thread resolved", 3,
                                        "reviewer", "", _stamp(day, 7200), _stamp(day, 7200)))
        for rnd_no in range(1, ROUNDS + 1):
            plan = json.dumps({"decisions": [{"key": f"D{d}", "confidence": 0.6}
                                             for d in range(1, DEFECTS_PER_PR + 1)]})
            out["rounds"].append(((pr - 1) * ROUNDS + rnd_no, pr, rnd_no, f"{rnd_no:040x}",
                                  "complete", _stamp(day, 3600 * rnd_no),
                                  _stamp(day, 3600 * rnd_no + 30), rnd.randrange(4), plan))
    for job in range(1, 21):
        out["jobs"].append((job, "round", "failed" if job % 10 == 0 else "done",
                            "RuntimeError: boom" if job % 10 == 0 else None))
    return out


COLUMNS = {
    "pull_requests": "id, repo, number, installation_id, title, author, status, head_sha, "
                     "created_at, updated_at",
    "rounds": "id, pr_id, number, head_sha, status, started_at, finished_at, findings, plan",
    "defects": "id, pr_id, key, origin, path, line_start, line_end, description, type, "
               "severity, confidence, rule, state, state_round, raised_round, ignored, "
               "created_at, updated_at",
    "state_history": "id, defect_id, round, state, rule, evidence, decided_by, at",
    "verdicts": "id, pr_id, defect_id, defect_key, round, kind, transition, rule, verdict, "
                "signal, signal_round, by, evidence, decided_at, at",
}


def seed_sqlite(path: Path, data: dict[str, list[tuple]]) -> None:
    from bot.store import open_ledger_store, open_queue_store

    store = open_ledger_store(str(path))
    open_queue_store(str(path), ledger=store)  # the queue's tables too
    store.close()
    conn = sqlite3.connect(path)
    with conn:
        for table, columns in COLUMNS.items():
            marks = ", ".join("?" * len(columns.split(",")))
            conn.executemany(f"insert into {table} ({columns}) values ({marks})", data[table])
        conn.executemany("insert into jobs (id, kind, status, error) values (?, ?, ?, ?)",
                         data["jobs"])
    conn.execute("analyze")
    conn.close()


def seed_postgres(url: str, schema: str, data: dict[str, list[tuple]]) -> None:
    import psycopg

    from bot.store import open_ledger_store, open_queue_store

    open_ledger_store(url, schema=schema).close()
    open_queue_store(url, schema=schema).close()
    with psycopg.connect(url, options=f"-c search_path={schema}", autocommit=True) as conn:
        for table, columns in COLUMNS.items():
            with conn.cursor().copy(f"copy {table} ({columns}) from stdin") as copy:
                for row in data[table]:
                    copy.write_row(row)
        with conn.cursor().copy("copy jobs (id, kind, status, error) from stdin") as copy:
            for row in data["jobs"]:
                copy.write_row(row)
        for table in (*COLUMNS, "jobs"):
            conn.execute(f"analyze {table}")


def _bare(target: str, schema: str | None):
    """A function running one bare query (``%s`` placeholders) and fetching every row."""
    if target.startswith("postgresql"):
        import psycopg

        conn = psycopg.connect(target, options=f"-c search_path={schema}", autocommit=True)
        return (lambda sql, args: conn.execute(sql, args).fetchall()), conn.close
    conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True, check_same_thread=False)
    return (lambda sql, args: conn.execute(sql.replace("%s", "?"), args).fetchall()), conn.close


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"min": ordered[0] * 1000, "median": statistics.median(ordered) * 1000,
            "p95": p95 * 1000, "max": ordered[-1] * 1000}


async def measure(target: str, schema: str | None, repeats: int) -> dict[str, dict]:
    import aiohttp
    from aiohttp import web

    from bot.cli.dashboard import build_app
    from bot.config.dashboard import DashboardConfig

    url_target = f"{target}?schema={schema}" if schema else target
    app = build_app(url_target, DashboardConfig(token=TOKEN))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}/dashboard"
    query, close = _bare(target, schema)
    repo = "org0/repo1"
    pr_number = 1  # in org0/repo1 at every scale
    pages = {"overview": (base, BARE["overview"], []),
             "repository": (f"{base}/repo/{repo}", BARE["repository"], [repo]),
             "pull request": (f"{base}/repo/{repo}/pull/{pr_number}", BARE["pull request"],
                              [pr_number])}
    out = {}
    try:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for name, (url, sql, args) in pages.items():
                page_times, bare_times = [], []
                async with http.get(url) as resp:  # warm both
                    assert resp.status == 200, (url, resp.status, await resp.text())
                    await resp.read()
                await asyncio.to_thread(query, sql, args)
                for _ in range(repeats):
                    start = time.perf_counter()
                    async with http.get(url) as resp:
                        await resp.read()
                    page_times.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await asyncio.to_thread(query, sql, args)
                    bare_times.append(time.perf_counter() - start)
                page, bare = _summary(page_times), _summary(bare_times)
                out[name] = {"page": page, "bare": bare, "ratio": page["p95"] / bare["p95"]}
    finally:
        close()
        await runner.cleanup()
    return out


def report(engine: str, counts: dict[str, int], figures: dict[str, dict]) -> str:
    head = (f"{engine}: {counts['pull_requests']:,} PRs, {counts['defects']:,} defects, "
            f"{counts['state_history']:,} state rows")
    columns = (f"  {'page':14} {'page ms min/median/p95/max':>34} "
               f"{'bare ms min/median/p95/max':>34} {'p95 ratio':>9}")
    lines = [head, columns]
    for name, fig in figures.items():
        page = "/".join(f"{fig['page'][k]:.1f}" for k in ("min", "median", "p95", "max"))
        bare = "/".join(f"{fig['bare'][k]:.1f}" for k in ("min", "median", "p95", "max"))
        lines.append(f"  {name:14} {page:>34} {bare:>34} {fig['ratio']:>8.2f}×")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.dashboard_pages",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of 10,000 PRs / 200,000 defects / 1,000,000 state rows")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--db", action="append",
                        help="sqlite, or a postgresql://... URL (repeatable; default both: "
                             "sqlite and postgresql://postgres@127.0.0.1:5432/test)")
    args = parser.parse_args(argv)
    engines = args.db or ["sqlite", "postgresql://postgres@127.0.0.1:5432/test"]
    start = time.perf_counter()
    data = rows(args.scale)
    counts = {table: len(values) for table, values in data.items()}
    print(f"built {counts['state_history']:,} state rows in {time.perf_counter() - start:.1f}s",
          file=sys.stderr)
    for engine in engines:
        if engine == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "ledger.db"
                start = time.perf_counter()
                seed_sqlite(path, data)
                print(f"seeded SQLite in {time.perf_counter() - start:.1f}s", file=sys.stderr)
                figures = asyncio.run(measure(str(path), None, args.repeats))
                print(report("SQLite", counts, figures), flush=True)
        else:
            import psycopg

            schema = f"rw_dash_{uuid.uuid4().hex[:8]}"
            try:
                start = time.perf_counter()
                seed_postgres(engine, schema, data)
                print(f"seeded PostgreSQL in {time.perf_counter() - start:.1f}s",
                      file=sys.stderr)
                figures = asyncio.run(measure(engine, schema, args.repeats))
                print(report("PostgreSQL", counts, figures), flush=True)
            finally:
                with psycopg.connect(engine, autocommit=True) as conn:
                    conn.execute(f"drop schema if exists {schema} cascade")
    return 0


if __name__ == "__main__":
    sys.exit(main())
