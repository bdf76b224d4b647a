"""The ledger on PostgreSQL: several ``roundwise serve`` replicas share one defect ledger.

``PostgresLedgerStore`` implements ``tracker.store.LedgerStore`` with the same semantics and
shapes as the SQLite ``bot.store.ledger_sqlite.Ledger`` (dict rows for PRs and rounds, typed defects and
signals, ``LedgerError`` for what it cannot honour). It lives in ``bot`` because the tracker
does no network I/O. psycopg 3 with a connection pool; methods are synchronous and the store
says ``threaded``, so async callers run them off the event loop (``bot.store.offload``).

``transaction()`` pins one pooled connection to the calling thread until the outermost block
ends; nested blocks are savepoints, as with SQLite. ``record_round`` reads the PR's defects and
their last states once, checks every decision in memory (``tracker.batch``) and writes
the round set-based: one ``update ... from unnest(...)`` for the defects and one
``insert ... select * from unnest(...)`` for their history, whatever the round's size. The schema is its own ordered migrations
(``bot.store.schema_postgres``), applied under the same advisory lock as the queue's, so
replicas starting together migrate once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from psycopg import sql

from tracker import keys as defect_keys
from tracker.anchors import fingerprint as code_fingerprint
from tracker.batch import WRITTEN, apply_decisions
from tracker.ledger_base import (
    TALLY,
    LedgerBase,
    LedgerError,
    like_prefix,
    now,
)
from tracker.lifecycle import State
from tracker.models import DecidedBy, Decision, Defect, Finding, Origin, Signal

from .ledger_sql import SharedStatements
from .queue_postgres import connection_pool, migrate
from .schema_postgres import LEDGER_MIGRATIONS

__all__ = ["LEDGER_MIGRATIONS", "PostgresLedgerStore"]

#: a defect row with the ids of its comments, in one statement
# the keys a PR has used, counting a comment's requests (D3a, D3b) once
_COMMENTS_COUNTED = ("select count(*) as n from defects where pr_id = %s "
                     "and key !~ '[b-z]$'")
_DEFECTS = ("select d.*, coalesce((select array_agg(c.id order by c.id) from defect_comments c "
            "where c.defect_id = d.id), '{}') as comment_ids from defects d ")


#: the SQL types of the defect columns a round writes back (``tracker.batch.WRITTEN``)
_WRITTEN_TYPES = {"state": "text", "state_round": "int", "updated_at": "text", "path": "text",
                  "line_start": "int", "line_end": "int", "anchor_sha": "text", "code": "text",
                  "fingerprint": "text", "resolved_code": "text"}

#: a round's changed defect rows written back in one statement, whatever their number
_UPDATE_WRITTEN = (
    "update defects d set " + ", ".join(f"{c} = u.{c}" for c in WRITTEN)
    + " from unnest(%s::bigint[], "
    + ", ".join(f"%s::{_WRITTEN_TYPES[c]}[]" for c in WRITTEN)
    + ") as u(id, " + ", ".join(WRITTEN) + ") where d.id = u.id")

#: history rows ``(defect_id, round, state, rule, evidence, decided_by, at)``, in one statement
_INSERT_HISTORY = (
    "insert into state_history (defect_id, round, state, rule, evidence, decided_by, at) "
    "select * from unnest(%s::bigint[], %s::int[], %s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::text[])")


def _arrays(rows: list, width: int) -> list[list]:
    """Rows as one list per column, the parameters an ``unnest`` statement takes."""
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width


def _defect(row: dict) -> Defect:
    return Defect(
        id=row["id"], key=row["key"], description=row["description"] or "",
        origin=row["origin"], state=row["state"], raised_round=row["raised_round"],
        state_round=row["state_round"], path=row["path"], line_start=row["line_start"],
        line_end=row["line_end"], side=row["side"] or "RIGHT", fingerprint=row["fingerprint"],
        code=row["code"], type=row["type"] or "F.2", severity=row["severity"] or "Normal",
        confidence=row["confidence"] if row["confidence"] is not None else 0.5,
        rule=row["rule"], author=row["author"], ignored=bool(row["ignored"]),
        resolved_code=row["resolved_code"], comment_ids=list(row["comment_ids"] or []),
        thread_node_id=row["thread_node_id"], anchor_sha=row["anchor_sha"])


class PostgresLedgerStore(SharedStatements, LedgerBase):
    """The defect ledger in PostgreSQL (see the module docstring). ``schema``: the schema its
    tables live in (created when missing); the connection's search path otherwise."""

    threaded = True

    def __init__(self, conninfo: str, *, schema: str | None = None, max_size: int = 8):
        self.pool = connection_pool(conninfo, schema, max_size, "roundwise-ledger")
        self._local = threading.local()
        try:
            self.migrated = migrate(self.pool, schema, LEDGER_MIGRATIONS)
        except BaseException:
            self.pool.close()
            raise

    def close(self) -> None:
        self.pool.close()

    # -- connections and transactions -------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside commits together or not at all; nested blocks are savepoints.
        The block's statements run on one connection, pinned to the calling thread."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            with conn.transaction():
                yield
            return
        with self.pool.connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    yield
            finally:
                self._local.conn = None

    @contextmanager
    def _conn(self):
        """The thread's transaction connection, else a pooled one (autocommit)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self.pool.connection() as conn:
            yield conn

    def _all(self, query, params=()) -> list[dict]:
        with self._conn() as conn:
            return conn.execute(query, params).fetchall()

    def _one(self, query, params=()) -> dict | None:
        with self._conn() as conn:
            return conn.execute(query, params).fetchone()

    def _run(self, query, params=()) -> int:
        with self._conn() as conn:
            return conn.execute(query, params).rowcount

    def _update(self, table: str, row_id: int, fields: dict) -> None:
        if not fields:
            return
        query = sql.SQL("update {} set {} where id = %s").format(
            sql.Identifier(table),
            sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in fields))
        if not self._run(query, [*fields.values(), row_id]):
            raise LedgerError(f"no row {row_id} in {table}")

    # -- pull requests -----------------------------------------------------------------------

    def pull_request(self, repo: str, number: int, **fields) -> dict:
        """The PR's row, created on first use; ``fields`` (title, author...) update it."""
        stamp = now()
        with self.transaction():
            self._run("insert into pull_requests (repo, number, created_at, updated_at) "
                      "values (%s, %s, %s, %s) on conflict (repo, number) do nothing",
                      [repo, number, stamp, stamp])
            pr = self._one("select * from pull_requests where repo = %s and number = %s "
                           "for update", [repo, number])
            pr = self._refresh_pull_request(pr, fields, stamp)
        return pr

    def update_pull_request(self, pr_id: int, **fields) -> None:
        self._update("pull_requests", pr_id, {**fields, "updated_at": now()})

    # -- rounds ------------------------------------------------------------------------------

    def last_round(self, pr_id: int, status: str | None = "complete") -> dict | None:
        if status:
            return self._one("select * from rounds where pr_id = %s and status = %s "
                             "order by number desc limit 1", [pr_id, status])
        return self._one("select * from rounds where pr_id = %s order by number desc limit 1",
                         [pr_id])

    def current_round(self, pr_id: int) -> int:
        """The number of the latest round started on the PR (0 before the first)."""
        row = self._one("select max(number) as n from rounds where pr_id = %s", [pr_id])
        return row["n"] or 0

    def begin_round(self, pr_id: int, head_sha: str, base_sha: str | None = None,
                    *, force: bool = False) -> dict:
        """Start (or resume) the round that reviews ``head_sha`` (``Ledger.begin_round``)."""
        with self.transaction():
            # the PR's row lock: two replicas cannot both open the next round
            self._one("select id from pull_requests where id = %s for update", [pr_id])
            latest = self.last_round(pr_id, status=None)
            if latest and latest["head_sha"] == head_sha and (
                latest["status"] != "complete" or not force
            ):
                if latest["status"] != "complete":
                    latest = self._one("update rounds set status = 'running', started_at = %s, "
                                       "error = null where id = %s returning *",
                                       [now(), latest["id"]])
                return latest
            number = (latest["number"] if latest else 0) + 1
            row = self._one("insert into rounds (pr_id, number, head_sha, base_sha, status, "
                            "started_at) values (%s, %s, %s, %s, 'running', %s) returning *",
                            [pr_id, number, head_sha, base_sha, now()])
            self.update_pull_request(pr_id, head_sha=head_sha)
            return row

    # -- defects -----------------------------------------------------------------------------

    def defects(self, pr_id: int, *, include_ignored: bool = True) -> list[Defect]:
        """Every defect of the PR, in the order they were raised (D1, D2, ...)."""
        where = "where d.pr_id = %s" + ("" if include_ignored else " and d.ignored = 0")
        return [_defect(r) for r in self._all(_DEFECTS + where + " order by d.id", [pr_id])]

    def defect(self, pr_id: int, key: str) -> Defect:
        row = self._one(_DEFECTS + "where d.pr_id = %s and d.key = %s",
                        [pr_id, defect_keys.canonical(key)])
        if row is None:
            raise LedgerError(f"no defect {key} on this pull request")
        return _defect(row)

    def defect_by_comment(self, pr_id: int, comment_id: int) -> Defect | None:
        """The defect a GitHub comment (or a reply to it) belongs to."""
        row = self._one(_DEFECTS + "join defect_comments k on k.defect_id = d.id "
                        "where d.pr_id = %s and k.id = %s", [pr_id, comment_id])
        return _defect(row) if row else None

    def defect_by_thread(self, pr_id: int, node_id: str) -> Defect | None:
        row = self._one(_DEFECTS + "where d.pr_id = %s and d.thread_node_id = %s "
                        "order by d.id limit 1", [pr_id, node_id])
        return _defect(row) if row else None

    def next_key(self, pr_id: int, offset: int = 0) -> str:
        """The key the next new defect of the PR gets (``offset`` more for later ones)."""
        # a comment's requests (D3a, D3b) share one number: count comments, not requests
        count = self._one(_COMMENTS_COUNTED, [pr_id])["n"]
        return f"D{count + 1 + offset}"

    def add_defect(self, pr_id: int, finding: Finding, round_number: int, *,
                   code: str | None = None, evidence: str = "", rule: str = "raised",
                   key: str | None = None, anchor_sha: str | None = None) -> Defect:
        """Track a new finding as defect ``D<n>``, New at ``round_number``."""
        return self._add_defects(pr_id, [(finding, code)], [key], round_number, anchor_sha,
                                 evidence=evidence, rule=rule)[0]

    def _add_defects(self, pr_id: int, findings: list[tuple[Finding, str | None]],
                     keys: list[str | None], round_number: int, anchor_sha: str | None,
                     *, evidence: str = "", rule: str = "raised") -> list[Defect]:
        """Insert new defects with their first history rows and comments, batched."""
        if not findings:
            return []
        stamp = now()
        with self.transaction(), self._conn() as conn:
            count = conn.execute(_COMMENTS_COUNTED, [pr_id]).fetchone()["n"]
            rows = []
            for i, ((finding, code), key) in enumerate(zip(findings, keys, strict=True)):
                expected = f"D{count + 1 + i}"
                if key is not None and not defect_keys.fits(key, expected):
                    raise LedgerError(f"cannot add {key}: the next free key is {expected}")
                rows.append([pr_id, key or expected, str(finding.origin), finding.author, finding.path,
                             finding.line_start, finding.line_end, finding.side, code,
                             code_fingerprint(code) if code else None,
                             finding.recorded_description(), finding.type, finding.severity,
                             finding.confidence, finding.rule, State.NEW.value, round_number,
                             round_number, anchor_sha, stamp, stamp])
            columns = ("pr_id, key, origin, author, path, line_start, line_end, side, code, "
                       "fingerprint, description, type, severity, confidence, rule, state, "
                       "state_round, raised_round, anchor_sha, created_at, updated_at")
            ids = {r["key"]: r["id"] for r in conn.execute(
                f"insert into defects ({columns}) select * from unnest("
                "%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::int[], "
                "%s::int[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                "%s::text[], %s::float8[], %s::text[], %s::text[], %s::int[], %s::int[], "
                "%s::text[], %s::text[], %s::text[]) returning id, key",
                [list(col) for col in zip(*rows, strict=True)]).fetchall()}
            history, comments = [], []
            for (finding, _code), row in zip(findings, rows, strict=True):
                pk = ids[row[1]]
                by = DecidedBy.HUMAN if finding.origin is Origin.HUMAN else DecidedBy.RULE
                history.append([pk, round_number, str(State.NEW), rule,
                                evidence or f"raised by {finding.author or finding.origin}",
                                str(by), stamp])
                if finding.comment_id is not None:
                    comments.append([finding.comment_id, pk, "review_comment", finding.author,
                                     finding.description, None, None, 0, stamp])
            conn.execute(_INSERT_HISTORY, _arrays(history, 7))
            if comments:
                with conn.cursor() as cur:
                    cur.executemany(self._ATTACH, comments)
            created = conn.execute(_DEFECTS + "where d.id = any(%s) order by d.id",
                                   [list(ids.values())]).fetchall()
        return [_defect(r) for r in created]

    def record_decision(self, pr_id: int, round_number: int, decision: Decision,
                        head_sha: str | None = None) -> Defect:
        """Store one decision after checking the lifecycle allows it."""
        self.record_round(pr_id, round_number, [decision], head_sha=head_sha)
        return self.defect(pr_id, decision.key)

    def record_round(self, pr_id: int, round_number: int, decisions: Iterable[Decision],
                     new_findings: Iterable[tuple[Finding, str | None]] = (),
                     keys: Iterable[str | None] | None = None,
                     head_sha: str | None = None) -> list[Defect]:
        """Store a whole round at once, all or nothing: one read of the PR's defects and
        their last states, the decisions checked in memory, then batched writes."""
        decisions = list(decisions)
        new_findings = list(new_findings)
        keys = list(keys) if keys is not None else [None] * len(new_findings)
        with self.transaction(), self._conn() as conn:
            if decisions:
                rows = {r["key"]: r for r in conn.execute(
                    "select * from defects where pr_id = %s for update", [pr_id])}
                last = {r["defect_id"]: (r["state"], r["round"]) for r in conn.execute(
                    "select distinct on (h.defect_id) h.defect_id, h.state, h.round "
                    "from state_history h join defects d on d.id = h.defect_id "
                    "where d.pr_id = %s and h.round < %s "
                    "order by h.defect_id, h.round desc, h.id desc", [pr_id, round_number])}
                changed, history = apply_decisions(rows, last, round_number, decisions,
                                                   head_sha, now())
                if changed:
                    conn.execute(_UPDATE_WRITTEN, _arrays(
                        [[r["id"]] + [r[c] for c in WRITTEN] for r in changed],
                        len(WRITTEN) + 1))
                if history:
                    conn.execute(_INSERT_HISTORY, _arrays(history, 7))
            return self._add_defects(pr_id, new_findings, keys, round_number, head_sha)

    def states_by_round(self, pr_id: int) -> dict[str, dict[int, str]]:
        """``{key: {round: state}}``: the state each defect stood in at the end of each round."""
        out: dict[str, dict[int, str]] = {}
        for row in self._all("select d.key, h.round, h.state from state_history h join "
                             "defects d on d.id = h.defect_id where d.pr_id = %s order by h.id",
                             [pr_id]):
            out.setdefault(row["key"], {})[row["round"]] = row["state"]
        return out

    def _history(self, defect_id: int, round_number: int, state: State, rule: str,
                 evidence: str, decided_by: DecidedBy) -> None:
        self._run("insert into state_history (defect_id, round, state, rule, evidence, "
                  "decided_by, at) values (%s, %s, %s, %s, %s, %s, %s)",
                  [defect_id, round_number, str(state), rule, evidence, str(decided_by), now()])

    # -- signals, comments, threads -----------------------------------------------------------

    def add_signal(self, pr_id: int, defect: Defect, round_number: int, signal: Signal) -> None:
        """Remember a person's action on a defect, for the next round's decisions."""
        self._run("insert into signals (pr_id, defect_id, round, kind, author, body, "
                  "comment_id, at) values (%s, %s, %s, %s, %s, %s, %s, %s)",
                  [pr_id, defect.id, round_number, str(signal.kind), signal.author, signal.body,
                   signal.comment_id, now()])

    _ATTACH = """
        insert into defect_comments (id, defect_id, kind, author, body, in_reply_to, node_id,
                                     posted_by_bot, created_at)
        values (%s, %s, %s, %s, %s, %s, %s, %s, %s)
        on conflict (id) do update set defect_id = excluded.defect_id, kind = excluded.kind,
            author = excluded.author, body = excluded.body, in_reply_to = excluded.in_reply_to,
            node_id = excluded.node_id, posted_by_bot = excluded.posted_by_bot,
            created_at = excluded.created_at
    """

    def attach_comment(self, defect_id: int, comment_id: int, *, kind: str = "review_comment",
                       author: str | None = None, body: str | None = None,
                       in_reply_to: int | None = None, node_id: str | None = None,
                       posted_by_bot: bool = False) -> None:
        """Remember that a GitHub comment belongs to a defect's thread (idempotent)."""
        self._run(self._ATTACH, [comment_id, defect_id, kind, author, body, in_reply_to,
                                 node_id, int(posted_by_bot), now()])

    # -- live verdicts (tracker.verdicts) ----------------------------------------------------

    def defect_activity(self, defect_id: int) -> dict[str, list[dict]]:
        """A defect's history, signals and comments rows, each oldest first."""
        with self._conn() as conn:
            return {table: conn.execute(
                sql.SQL("select * from {} where defect_id = %s order by id").format(
                    sql.Identifier(table)), [defect_id]).fetchall()
                for table in ("state_history", "signals", "defect_comments")}

    def replace_verdicts(self, pr_id: int, rows: list[dict]) -> None:
        """Replace one PR's verdict rows."""
        with self.transaction(), self._conn() as conn:
            conn.execute("delete from verdicts where pr_id = %s", [pr_id])
            if rows:
                columns = list(rows[0])
                with conn.cursor() as cur:
                    cur.executemany(
                        sql.SQL("insert into verdicts ({}) values ({})").format(
                            sql.SQL(", ").join(map(sql.Identifier, columns)),
                            sql.SQL(", ").join(sql.Placeholder(c) for c in columns)), rows)

    # -- learnings (tracker.learnings) --------------------------------------------------------

    def finding_tally(self, repo: str) -> list[dict]:
        """Per kind of bot finding in ``repo`` (and ``repo:BRANCH``): judged and dismissed
        findings raised since the kind was last unmuted."""
        return [{**r, "dismissed": int(r["dismissed"]), "judged": int(r["judged"])}
                for r in self._all(TALLY, [repo, repo, like_prefix(repo)])]

    def save_learning(self, repo: str, kind: str, **fields) -> None:
        """Create or update the learning row of ``kind`` in ``repo``."""
        fields = {**fields, "updated_at": now()}
        columns = [sql.Identifier(c) for c in fields]
        self._run(sql.SQL("insert into learnings (repo, kind, {}) values (%s, %s, {}) "
                          "on conflict (repo, kind) do update set {}").format(
            sql.SQL(", ").join(columns), sql.SQL(", ").join([sql.Placeholder()] * len(fields)),
            sql.SQL(", ").join(sql.SQL("{} = excluded.{}").format(c, c) for c in columns)),
            [repo, kind, *fields.values()])

    # -- health ------------------------------------------------------------------------------

    def heartbeat(self) -> None:
        """Write one row (``/healthz``: the database takes writes); raises when it cannot."""
        self._run("insert into heartbeat (id, at) values (1, %s) "
                  "on conflict (id) do update set at = excluded.at", [now()])
