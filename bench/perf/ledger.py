"""Benchmark: one round's ledger update against a raw-SQL reference doing the same work.

Each PR has its defects spread over 20 files; every round edits a tenth of the anchored lines
and adds lines at the top of each file, so anchors move and some defects resolve. Per round it
times decide (read the defects and signals, map every anchor, decide) and write (``record_round``,
one transaction), then hands the same decisions to a reference that does the same reads (the
PR's defects and each one's last state) and the same writes (batched updates and history rows,
one transaction) in plain SQL, set-based on PostgreSQL (``update ... from unnest(...)``,
``insert ... select * from unnest(...)``). The two databases are compared after the last round.
Prints the median milliseconds per round, the ratios write/reference and
(decide + write)/reference, and the write and the reference as multiples of one durable commit
measured in the same run (the floor of any write on that disk).

Then the big-diff cases (``bench.perf.bigdiff``): a push of 20,000 changed lines in many hunks or in
one giant hunk, under 1,000 and 10,000 defects, its anchor mapping and its whole decide against
a reference that parses the same diff text minimally and maps every anchor by bisect.

    python -m bench.perf.ledger [--rounds 7] [--sizes 10,100,1000,10000]
                                 [--db sqlite | --db postgresql://127.0.0.1:5432/test]
                                 [--big-sizes 1000,10000] [--shapes hunks,giant]
                                 [--big-rounds 3] [--changed 20000]

The PostgreSQL ledger comes from ``bot.store.open_ledger_store``; its reference runs with
psycopg 3 in a fresh schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from bench.perf import bigdiff
from bench.tasks.diffs import git_diff
from bot.store.ledger_sqlite import Ledger, now
from tracker.anchors import fingerprint
from tracker.decide import RoundInput, decide_round
from tracker.models import Decision, Defect, Finding

FILES = 20
SIZES = (10, 100, 1000, 10000)

#: the defect columns a round's decisions change, as the reference writes them back
WRITTEN = ("state", "state_round", "updated_at", "path", "line_start", "line_end", "anchor_sha",
           "code", "fingerprint", "resolved_code")
COMPARED = ("key", "state", "state_round", "path", "line_start", "line_end", "code",
            "fingerprint", "resolved_code")

REFERENCE_DDL = """
create table defects (id integer primary key, pr_id integer not null, key text not null,
    origin text, author text, path text, line_start integer, line_end integer, side text,
    fingerprint text, code text, resolved_code text, description text, type text,
    severity text, confidence real, rule text, state text, state_round integer,
    raised_round integer, ignored integer, thread_node_id text, created_at text,
    updated_at text, anchor_sha text);
create unique index defects_pr_key on defects (pr_id, key);
create table state_history ({id}, defect_id integer not null references defects (id),
    round integer not null, state text not null, rule text, evidence text,
    decided_by text not null, at text);
create index state_history_defect_round on state_history (defect_id, round);
"""


def make_files(defects: int, round_number: int) -> dict[str, str]:
    per_file = max(defects // FILES, 1)
    files = {}
    for f in range(FILES):
        lines = [f"# round {round_number} header {k}" for k in range(round_number)]
        for i in range(per_file * 3):
            edited = round_number and i % 30 == 0 and i // 30 < round_number
            lines.append(f"value_{f}_{i} = compute({i})" + ("  # fixed" if edited else ""))
        files[f"pkg/mod_{f}.py"] = "\n".join(lines) + "\n"
    return files


# -- the reference: the same reads and writes in plain SQL -------------------------------------


REFERENCES = {"sqlite": "executemany, one transaction",
              "postgresql": "set-based (unnest), one transaction"}


class Reference:
    """The work of one round's ledger update and nothing else, on its own database."""

    param = "?"

    def __init__(self, conn):
        self.conn = conn

    def sql(self, text: str) -> str:
        return text.replace("?", self.param)

    def seed(self, pr_id: int, defects: list[Defect]) -> None:
        cur = self.conn.cursor()
        cur.executemany(self.sql(
            "insert into defects (id, pr_id, key, origin, path, line_start, line_end, side, "
            "fingerprint, code, description, state, state_round, raised_round, ignored) "
            "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"),
            [(d.id, pr_id, d.key, str(d.origin), d.path, d.line_start, d.line_end, d.side,
              d.fingerprint, d.code, d.description, str(d.state), d.state_round,
              d.raised_round) for d in defects])
        cur.executemany(self.sql(
            "insert into state_history (defect_id, round, state, rule, evidence, decided_by, "
            "at) values (?, ?, ?, 'raised', 'raised', 'rule', ?)"),
            [(d.id, d.raised_round, str(d.state), now()) for d in defects])
        self.conn.commit()

    def write_round(self, pr_id: int, round_number: int, decisions: list[Decision]) -> None:
        """Read the PR's defects with their last state before the round, then write every
        decision: one batched update of the defects, one batched insert of history rows."""
        cur = self.conn.cursor()
        cur.execute(self.sql(
            "select d.id, d.key, d.state, d.state_round, d.raised_round, d.path, d.line_start, "
            "d.line_end, d.anchor_sha, d.code, d.fingerprint, d.resolved_code, h.state, h.round "
            "from defects d left join state_history h on h.id = (select s.id from state_history "
            "s where s.defect_id = d.id and s.round < ? order by s.round desc, s.id desc "
            "limit 1) where d.pr_id = ?"), [round_number, pr_id])
        rows = {r[1]: list(r) for r in cur.fetchall()}
        stamp = now()
        history = []
        for d in decisions:
            row = rows[d.key]
            if d.state == "Resolved" and row[2] != "Resolved":
                row[11] = row[9]
            row[2:4] = [d.state.value, round_number]
            if d.path is not None and d.line_start is not None:
                row[5:8] = [d.path, d.line_start, d.line_end]
            if d.code is not None:
                row[9:11] = [d.code, fingerprint(d.code)]
            evidence = d.evidence + (" | signals: " + "; ".join(d.signals) if d.signals else "")
            history.append((row[0], round_number, d.state.value, d.rule, evidence,
                            d.decided_by.value, stamp))
        # each defect once, with its final values (a round may decide one twice)
        updates = list({r[0]: (r[2], r[3], stamp, r[5], r[6], r[7], r[8], r[9], r[10], r[11],
                               r[0]) for r in (rows[d.key] for d in decisions)}.values())
        self.write(cur, updates, history)
        self.conn.commit()

    def write(self, cur, updates: list[tuple], history: list[tuple]) -> None:
        """The round's writes: a batched update of the defects, a batched insert of history."""
        cur.executemany(self.sql(
            "update defects set state = ?, state_round = ?, updated_at = ?, path = ?, "
            "line_start = ?, line_end = ?, anchor_sha = ?, code = ?, fingerprint = ?, "
            "resolved_code = ? where id = ?"), updates)
        cur.executemany(self.sql(
            "insert into state_history (defect_id, round, state, rule, evidence, decided_by, "
            "at) values (?, ?, ?, ?, ?, ?, ?)"), history)

    def commit_floor(self) -> float:
        """Milliseconds of one durable commit on this connection: one row updated in a
        transaction of its own (what any write that commits costs at least)."""
        started = time.perf_counter()
        self.conn.cursor().execute(self.sql("update defects set updated_at = updated_at "
                                            "where id = (select min(id) from defects)"))
        self.conn.commit()
        return (time.perf_counter() - started) * 1000

    def snapshot(self, pr_id: int) -> tuple[list[tuple], dict[str, dict[int, str]]]:
        """The PR's defects (``COMPARED`` columns) and ``{key: {round: last state}}``."""
        cur = self.conn.cursor()
        cur.execute(self.sql(f"select {', '.join(COMPARED)} from defects where pr_id = ? "
                             "order by id"), [pr_id])
        rows = [tuple(r) for r in cur.fetchall()]
        cur.execute(self.sql("select d.key, h.round, h.state from state_history h join defects "
                             "d on d.id = h.defect_id where d.pr_id = ? order by h.id"), [pr_id])
        states: dict[str, dict[int, str]] = {}
        for key, number, state in cur.fetchall():
            states.setdefault(key, {})[number] = state
        return rows, states


class SetBasedReference(Reference):
    """The PostgreSQL reference: each write one set-based statement, whatever the round's
    size (``update ... from unnest(...)``, ``insert ... select * from unnest(...)``)."""

    param = "%s"

    def write(self, cur, updates: list[tuple], history: list[tuple]) -> None:
        columns = [list(c) for c in zip(*updates, strict=True)]
        cur.execute(
            "update defects d set state = u.state, state_round = u.state_round, "
            "updated_at = u.updated_at, path = u.path, line_start = u.line_start, "
            "line_end = u.line_end, anchor_sha = u.anchor_sha, code = u.code, "
            "fingerprint = u.fingerprint, resolved_code = u.resolved_code from unnest("
            "%s::text[], %s::int[], %s::text[], %s::text[], %s::int[], %s::int[], %s::text[], "
            "%s::text[], %s::text[], %s::text[], %s::bigint[]) as u(state, state_round, "
            "updated_at, path, line_start, line_end, anchor_sha, code, fingerprint, "
            "resolved_code, id) where d.id = u.id", columns)
        cur.execute(
            "insert into state_history (defect_id, round, state, rule, evidence, decided_by, "
            "at) select * from unnest(%s::bigint[], %s::int[], %s::text[], %s::text[], "
            "%s::text[], %s::text[], %s::text[])",
            [list(c) for c in zip(*history, strict=True)])


class SqliteBackend:
    """The SQLite ledger in a temporary file; the reference in another, same pragmas."""

    name = "sqlite"

    def __init__(self, stack: ExitStack):
        self.dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))

    def ledger(self, size: int):
        return Ledger(self.dir / f"ledger-{size}.db")

    def reference(self, stack: ExitStack, size: int) -> Reference:
        import sqlite3

        conn = sqlite3.connect(self.dir / f"reference-{size}.db")
        stack.callback(conn.close)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(REFERENCE_DDL.format(id="id integer primary key"))
        return Reference(conn)


class PostgresBackend:
    """The PostgreSQL ledger (``bot.store.open_ledger_store``) and a psycopg 3 reference,
    each in a fresh schema dropped at the end."""

    name = "postgresql"

    def __init__(self, stack: ExitStack, target: str):
        try:
            from bot.store import open_ledger_store
        except ImportError:
            sys.exit("bench.perf.ledger: this branch has no PostgreSQL ledger "
                     "(bot.store.open_ledger_store); run with --db sqlite")
        import psycopg

        self.open, self.target, self.stack = open_ledger_store, target, stack
        self.admin = psycopg.connect(target, autocommit=True)
        stack.callback(self.admin.close)

    def _schema(self, stack: ExitStack, what: str) -> str:
        schema = f"bench_{what}_{uuid.uuid4().hex[:8]}"
        self.admin.execute(f"create schema {schema}")
        stack.callback(self.admin.execute, f"drop schema {schema} cascade")
        return schema

    def ledger(self, size: int):
        if "schema" in inspect.signature(self.open).parameters:
            return self.open(self.target, schema=self._schema(self.stack, "ledger"))
        print("note: open_ledger_store takes no schema; the ledger runs in the target's own",
              file=sys.stderr)
        return self.open(self.target)

    def reference(self, stack: ExitStack, size: int) -> Reference:
        import psycopg

        schema = self._schema(stack, "reference")
        conn = psycopg.connect(self.target, options=f"-c search_path={schema}")
        stack.callback(conn.close)
        conn.execute(REFERENCE_DDL.format(id="id bigserial primary key"))
        conn.commit()
        return SetBasedReference(conn)


# -- one size --------------------------------------------------------------------------------


def seed(ledger, defects: int, files: dict[str, str]) -> int:
    pr = ledger.pull_request(f"bench/{uuid.uuid4().hex[:8]}", defects)["id"]
    ledger.begin_round(pr, "h0")
    with ledger.transaction():
        for n in range(defects):
            f, i = n % FILES, (n // FILES) * 3
            path = f"pkg/mod_{f}.py"
            ledger.add_defect(pr, Finding(f"problem {n}", path, i + 1, i + 1), 0,
                              code=files[path].splitlines()[i])
    ledger.finish_round(pr, 1)
    return pr


def run(backend, defects: int, rounds: int) -> dict[str, list[float]]:
    """Milliseconds per round: ``decide``, ``write``, ``reference`` and ``commit`` (one
    durable commit on the reference's connection, the floor of any write)."""
    times: dict[str, list[float]] = {"decide": [], "write": [], "reference": [], "commit": []}
    with ExitStack() as stack:
        ledger = backend.ledger(defects)
        stack.callback(ledger.close)
        ref = backend.reference(stack, defects)
        files = make_files(defects, 0)
        pr = seed(ledger, defects, files)
        ref.seed(pr, ledger.defects(pr))
        for r in range(1, rounds + 1):
            new = make_files(defects, r)
            diff = git_diff(files, new)
            ledger.begin_round(pr, f"h{r}")
            start = time.perf_counter()
            rnd = RoundInput.from_diff(r + 1, diff, new, ledger.signals(pr, r))
            decisions = decide_round(ledger.defects(pr), rnd)
            decided = time.perf_counter()
            ledger.record_round(pr, r + 1, decisions)
            written = time.perf_counter()
            ref.write_round(pr, r + 1, decisions)
            times["reference"].append((time.perf_counter() - written) * 1000)
            times["commit"].append(ref.commit_floor())
            times["decide"].append((decided - start) * 1000)
            times["write"].append((written - decided) * 1000)
            ledger.finish_round(pr, r + 1)
            files = new
        check_same(ledger, ref, pr, defects)
    return times


def check_same(ledger, ref: Reference, pr: int, size: int) -> None:
    """The ledger and the reference must have stored the same defects and history."""
    mine = [tuple(getattr(d, c) if c != "state" else str(d.state) for c in COMPARED)
            for d in ledger.defects(pr)]
    theirs, states = ref.snapshot(pr)
    if len(mine) != size or mine != theirs or ledger.states_by_round(pr) != states:
        sys.exit(f"bench.perf.ledger: the ledger and the reference disagree at {size} defects")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="comma-separated defect counts (10000 takes about 20 s)")
    parser.add_argument("--db", default="sqlite", help="sqlite, or a postgresql:// URL")
    parser.add_argument("--big-sizes", default=",".join(map(str, bigdiff.SIZES)),
                        help="defect counts of the big-diff cases (empty: none)")
    parser.add_argument("--shapes", default=",".join(bigdiff.SHAPES),
                        help="big-diff shapes: hunks (20 files, ~2,000 hunks), giant (one hunk)")
    parser.add_argument("--big-rounds", type=int, default=bigdiff.ROUNDS)
    parser.add_argument("--changed", type=int, default=bigdiff.CHANGED,
                        help="changed lines per round of the big diffs")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    big = [int(s) for s in args.big_sizes.split(",") if s.strip()]
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if sizes:
        ledger_table(args, sizes)
    if big and shapes:
        bigdiff.print_cases(shapes, big, args.big_rounds, args.changed)


def ledger_table(args, sizes: list[int]) -> None:
    with ExitStack() as stack:
        backend = (SqliteBackend(stack) if args.db == "sqlite"
                   else PostgresBackend(stack, args.db))
        print(f"backend: {backend.name}; median ms per round over {args.rounds} rounds; "
              f"reference: {REFERENCES[backend.name]}; commit: one durable commit (one row, "
              "its own transaction), measured each round")
        print(f"{'defects':>8} {'decide':>9} {'write':>9} {'reference':>10} "
              f"{'write/ref':>10} {'round/ref':>10} {'ms/defect':>10} {'commit':>8} "
              f"{'write/commit':>13} {'ref/commit':>11}")
        for n in sizes:
            t = {k: statistics.median(v) for k, v in run(backend, n, args.rounds).items()}
            whole = t["decide"] + t["write"]
            print(f"{n:>8} {t['decide']:>9.1f} {t['write']:>9.1f} {t['reference']:>10.1f} "
                  f"{t['write'] / t['reference']:>9.2f}x {whole / t['reference']:>9.1f}x "
                  f"{whole / n:>10.3f} {t['commit']:>8.2f} {t['write'] / t['commit']:>12.1f}x "
                  f"{t['reference'] / t['commit']:>10.1f}x", flush=True)


if __name__ == "__main__":
    main()
