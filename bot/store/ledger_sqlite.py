"""The per-PR defect ledger: one SQLite file that remembers every defect ever raised on a PR.

``Ledger(path)`` opens (and migrates) the database in WAL mode. It stores pull requests,
rounds, defects with their anchors and fingerprints, the state history of every defect with the
evidence for each decision, the GitHub comments that belong to each defect, installations and
received webhook deliveries. Every multi-row change runs in one transaction. The ledger does no
network I/O; deciding states is ``tracker.decide``'s job, the ledger validates and stores them.
It is one of ``tracker.store.LedgerStore``'s two engines, beside ``bot.store.ledger_postgres``;
what both do the same way is ``tracker.ledger_base``'s. Its schema is ``bot.store.schema_sqlite``.
"""

from __future__ import annotations

import fcntl
import sqlite3
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database

from tracker import keys as defect_keys
from tracker.anchors import fingerprint as code_fingerprint
from tracker.batch import WRITTEN, apply_decisions
from tracker.ledger_base import (
    TALLY,
    LedgerBase,
    LedgerError,
    dump_defects,
    like_prefix,
    now,
)
from tracker.lifecycle import State
from tracker.models import DecidedBy, Decision, Defect, Finding, Origin, Signal

from .ledger_sql import SharedStatements
from .schema_sqlite import migrations

__all__ = ["Ledger", "LedgerError", "dump_defects", "migration_lock", "now"]


@contextmanager
def migration_lock(path: str):
    """Hold an exclusive lock beside a SQLite file while it is opened and migrated: two
    processes starting together would otherwise both try to migrate, and one fail with
    "database is locked" (a read transaction cannot wait to become a write)."""
    if path == ":memory:":
        yield
        return
    fd = open(f"{Path(path).expanduser()}.migrate-lock", "a")  # noqa: SIM115
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fd.close()  # closing releases the lock


class Ledger(SharedStatements, LedgerBase):
    """Read and write the defect ledger stored in one SQLite file.

    ``path`` may be ``":memory:"`` for throwaway use. The connection may be used from the thread
    that runs the event loop and from worker threads, one at a time.
    """

    def __init__(self, path: str | Path = "roundwise.db"):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self.db = Database(conn)
        with migration_lock(self.path):
            if self.path != ":memory:":
                self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.execute("PRAGMA synchronous=NORMAL")
            migrations.apply(self.db)

    def close(self) -> None:
        self.db.close()

    def transaction(self):
        """A context manager: everything inside commits together or not at all."""
        return self.db.atomic()

    # -- pull requests -----------------------------------------------------------------------

    def pull_request(self, repo: str, number: int, **fields) -> dict:
        """The PR's row, created on first use; ``fields`` (title, author...) update it."""
        rows = self._rows("select * from pull_requests where repo = ? and number = ?",
                          [repo, number])
        stamp = now()
        if rows:
            return self._refresh_pull_request(rows[0], fields, stamp)
        row = {"repo": repo, "number": number, "created_at": stamp, "updated_at": stamp}
        row.update({k: v for k, v in fields.items() if v is not None})
        pk = self._insert("pull_requests", row)
        return self._get("pull_requests", pk)

    def update_pull_request(self, pr_id: int, **fields) -> None:
        fields["updated_at"] = now()
        self._update("pull_requests", pr_id, fields)

    # -- rounds ------------------------------------------------------------------------------

    def last_round(self, pr_id: int, status: str | None = "complete") -> dict | None:
        where, args = "pr_id = ?", [pr_id]
        if status:
            where, args = where + " and status = ?", args + [status]
        rows = self._rows(f"select * from rounds where {where} order by number desc limit 1",
                          args)
        return rows[0] if rows else None

    def current_round(self, pr_id: int) -> int:
        """The number of the latest round started on the PR (0 before the first)."""
        row = self.last_round(pr_id, status=None)
        return row["number"] if row else 0

    def begin_round(self, pr_id: int, head_sha: str, base_sha: str | None = None,
                    *, force: bool = False) -> dict:
        """Start (or resume) the round that reviews ``head_sha``.

        A round for the same head that did not complete (a crash, a failure) is resumed under
        its number; one that completed is returned as it is (check ``status``) unless
        ``force`` asks for a fresh round of the same head.
        """
        with self.transaction():
            latest = self.last_round(pr_id, status=None)
            if latest and latest["head_sha"] == head_sha and (
                latest["status"] != "complete" or not force
            ):
                if latest["status"] != "complete":
                    self._update("rounds", latest["id"],
                                 {"status": "running", "started_at": now(), "error": None})
                    latest = self._get("rounds", latest["id"])
                return latest
            number = (latest["number"] if latest else 0) + 1
            pk = self._insert("rounds", {
                "pr_id": pr_id, "number": number, "head_sha": head_sha, "base_sha": base_sha,
                "status": "running", "started_at": now(),
            })
            self.update_pull_request(pr_id, head_sha=head_sha)
            return self._get("rounds", pk)

    # -- defects -----------------------------------------------------------------------------

    def defects(self, pr_id: int, *, include_ignored: bool = True) -> list[Defect]:
        """Every defect of the PR, in the order they were raised (D1, D2, ...)."""
        where = "pr_id = ?" + ("" if include_ignored else " and ignored = 0")
        rows = self._rows(f"select * from defects where {where} order by id", [pr_id])
        comments: dict[int, list[int]] = {}
        for defect_id, comment_id in self.db.execute(
            "select c.defect_id, c.id from defect_comments c join defects d "
            "on d.id = c.defect_id where d.pr_id = ? order by c.id", [pr_id]
        ):
            comments.setdefault(defect_id, []).append(comment_id)
        return [self._defect(row, comments.get(row["id"], [])) for row in rows]

    def defect(self, pr_id: int, key: str) -> Defect:
        rows = self._rows("select * from defects where pr_id = ? and key = ?",
                          [pr_id, defect_keys.canonical(key)])
        if not rows:
            raise LedgerError(f"no defect {key} on this pull request")
        return self._defect(rows[0])

    def defect_by_comment(self, pr_id: int, comment_id: int) -> Defect | None:
        """The defect a GitHub comment (or a reply to it) belongs to."""
        rows = list(
            self.db.query(
                "select d.* from defect_comments c join defects d on d.id = c.defect_id "
                "where d.pr_id = ? and c.id = ?",
                [pr_id, comment_id],
            )
        )
        return self._defect(rows[0]) if rows else None

    def defect_by_thread(self, pr_id: int, node_id: str) -> Defect | None:
        rows = self._rows("select * from defects where pr_id = ? and thread_node_id = ?",
                          [pr_id, node_id])
        return self._defect(rows[0]) if rows else None

    def next_key(self, pr_id: int, offset: int = 0) -> str:
        """The key the next new defect of the PR gets (``offset`` more for later ones)."""
        # a comment's requests (D3a, D3b) share one number: count comments, not requests
        count = self.db.execute("select count(*) from defects where pr_id = ? and "
                                "not key glob '*[b-z]'", [pr_id]).fetchone()[0]
        return f"D{count + 1 + offset}"

    def add_defect(self, pr_id: int, finding: Finding, round_number: int, *,
                   code: str | None = None, evidence: str = "", rule: str = "raised",
                   key: str | None = None, anchor_sha: str | None = None) -> Defect:
        """Track a new finding as defect ``D<n>``, New at ``round_number``.

        ``key`` must be the next free key when given (a plan made earlier reserved it), or a
        request of a comment (``D5a``, then ``D5b``; ``tracker.keys``).
        """
        with self.transaction():
            expected = self.next_key(pr_id)
            if key is not None and not defect_keys.fits(key, expected):
                raise LedgerError(f"cannot add {key}: the next free key is {expected}")
            key = key or expected
            stamp = now()
            row = {
                "pr_id": pr_id,
                "key": key,
                "origin": str(finding.origin),
                "author": finding.author,
                "path": finding.path,
                "line_start": finding.line_start,
                "line_end": finding.line_end,
                "side": finding.side,
                "code": code,
                "fingerprint": code_fingerprint(code) if code else None,
                "description": finding.recorded_description(),
                "type": finding.type,
                "severity": finding.severity,
                "confidence": finding.confidence,
                "rule": finding.rule,
                "state": State.NEW.value,
                "state_round": round_number,
                "raised_round": round_number,
                "ignored": 0,
                "anchor_sha": anchor_sha,
                "created_at": stamp,
                "updated_at": stamp,
            }
            pk = self._insert("defects", row)
            decided_by = DecidedBy.HUMAN if finding.origin is Origin.HUMAN else DecidedBy.RULE
            self._history(pk, round_number, State.NEW, rule,
                          evidence or f"raised by {finding.author or finding.origin}", decided_by)
            if finding.comment_id is not None:
                self.attach_comment(pk, finding.comment_id, kind="review_comment",
                                    author=finding.author, body=finding.description)
            return self._defect(self._get("defects", pk))

    def record_decision(self, pr_id: int, round_number: int, decision: Decision,
                        head_sha: str | None = None) -> Defect:
        """Store one decision after checking the lifecycle allows it.

        The state is checked against the state the defect ended the previous round in, so a
        decision can be revised within a round (the last one of the round stands).
        """
        with self.transaction():
            self._write_decisions(pr_id, round_number, [decision], head_sha)
        return self.defect(pr_id, decision.key)

    def record_round(self, pr_id: int, round_number: int, decisions: Iterable[Decision],
                     new_findings: Iterable[tuple[Finding, str | None]] = (),
                     keys: Iterable[str | None] | None = None,
                     head_sha: str | None = None) -> list[Defect]:
        """Store a whole round at once: every decision (checked as ``record_decision`` does,
        written in two statements), then every new defect; all or nothing.

        ``new_findings`` pairs each finding with the code it is anchored to (or None);
        ``keys`` are the keys a plan reserved for them. Returns the defects created.
        """
        created = []
        decisions = list(decisions)
        new_findings = list(new_findings)
        keys = list(keys) if keys is not None else [None] * len(new_findings)
        with self.transaction():
            self._write_decisions(pr_id, round_number, decisions, head_sha)
            for (finding, code), key in zip(new_findings, keys, strict=True):
                created.append(self.add_defect(pr_id, finding, round_number, code=code,
                                               key=key, anchor_sha=head_sha))
        return created

    def _write_decisions(self, pr_id: int, round_number: int, decisions: list[Decision],
                         head_sha: str | None) -> None:
        """Check every decision, then write them: one read of the decided defects with their
        last state before the round, one batched update, one batched insert of history."""
        if not decisions:
            return
        wanted = {defect_keys.canonical(d.key) for d in decisions}
        one = " and d.key = ?" if len(wanted) == 1 else ""  # else the whole PR, read at once
        rows, last = {}, {}
        for row in self._rows(
            f"select {', '.join(f'd.{c}' for c in ('id', 'key', 'raised_round', *WRITTEN))}, "
            "h.state as _last_state, h.round as _last_round from defects d "
            "left join state_history h on h.id = (select s.id from state_history s "
            "where s.defect_id = d.id and s.round < ? order by s.round desc, s.id desc limit 1) "
            f"where d.pr_id = ?{one}", [round_number, pr_id, *(wanted if one else ())],
        ):
            state, number = row.pop("_last_state"), row.pop("_last_round")
            if state is not None:
                last[row["id"]] = (state, number)
            rows[row["key"]] = row
        changed, history = apply_decisions(rows, last, round_number, decisions, head_sha, now())
        conn = self.db.conn
        conn.executemany(
            f"update defects set {', '.join(f'{c} = ?' for c in WRITTEN)} where id = ?",
            [[row[c] for c in WRITTEN] + [row["id"]] for row in changed],
        )
        conn.executemany(
            "insert into state_history (defect_id, round, state, rule, evidence, decided_by, "
            "at) values (?, ?, ?, ?, ?, ?, ?)", history,
        )

    def states_by_round(self, pr_id: int) -> dict[str, dict[int, str]]:
        """``{key: {round: state}}``: the state each defect stood in at the end of each round."""
        out: dict[str, dict[int, str]] = {}
        for row in self.db.query(
            "select d.key, h.round, h.state from state_history h join defects d "
            "on d.id = h.defect_id where d.pr_id = ? order by h.id",
            [pr_id],
        ):
            out.setdefault(row["key"], {})[row["round"]] = row["state"]
        return out

    # -- signals (what people did between rounds) ---------------------------------------------

    def add_signal(self, pr_id: int, defect: Defect, round_number: int, signal: Signal) -> None:
        """Remember a person's action on a defect, for the next round's decisions."""
        self._insert("signals", {
            "pr_id": pr_id, "defect_id": defect.id, "round": round_number,
            "kind": str(signal.kind), "author": signal.author, "body": signal.body,
            "comment_id": signal.comment_id, "at": now(),
        })

    # -- live verdicts (tracker.verdicts) ----------------------------------------------------

    def defect_activity(self, defect_id: int) -> dict[str, list[dict]]:
        """A defect's history, signals and comments rows, each oldest first."""
        return {table: list(self.db[table].rows_where("defect_id = ?", [defect_id],
                                                      order_by="id"))
                for table in ("state_history", "signals", "defect_comments")}

    def replace_verdicts(self, pr_id: int, rows: list[dict]) -> None:
        """Replace one PR's verdict rows."""
        with self.transaction():
            self.db.execute("delete from verdicts where pr_id = ?", [pr_id])
            if rows:
                self.db["verdicts"].insert_all(rows)

    # -- learnings (tracker.learnings) --------------------------------------------------------

    def finding_tally(self, repo: str) -> list[dict]:
        """Per kind of bot finding in ``repo`` (and its local branches, ``repo:BRANCH``): the
        judged findings and the dismissed ones, raised since the kind was last unmuted."""
        return self._rows(TALLY.replace("%s", "?"), [repo, repo, like_prefix(repo)])

    def save_learning(self, repo: str, kind: str, **fields) -> None:
        """Create or update the learning row of ``kind`` in ``repo``."""
        fields = {**fields, "updated_at": now()}
        names = ", ".join(f"[{c}]" for c in fields)
        sets = ", ".join(f"[{c}] = excluded.[{c}]" for c in fields)
        self.db.execute(f"insert into learnings (repo, kind, {names}) values "
                        f"(?, ?, {', '.join('?' * len(fields))}) "
                        f"on conflict (repo, kind) do update set {sets}",
                        [repo, kind, *fields.values()])

    # -- GitHub comments and threads ---------------------------------------------------------

    def attach_comment(self, defect_id: int, comment_id: int, *, kind: str = "review_comment",
                       author: str | None = None, body: str | None = None,
                       in_reply_to: int | None = None, node_id: str | None = None,
                       posted_by_bot: bool = False) -> None:
        """Remember that a GitHub comment belongs to a defect's thread (idempotent)."""
        self.db.execute(
            "insert into defect_comments (id, defect_id, kind, author, body, in_reply_to, "
            "node_id, posted_by_bot, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "on conflict (id) do update set defect_id = excluded.defect_id, "
            "kind = excluded.kind, author = excluded.author, body = excluded.body, "
            "in_reply_to = excluded.in_reply_to, node_id = excluded.node_id, "
            "posted_by_bot = excluded.posted_by_bot, created_at = excluded.created_at",
            [comment_id, defect_id, kind, author, body, in_reply_to, node_id,
             int(posted_by_bot), now()],
        )

    def heartbeat(self) -> None:
        """Write one row (``/healthz``: the database takes writes); raises when it cannot."""
        with self.transaction():
            self.db.execute(
                "create table if not exists heartbeat (id integer primary key, at text)")
            self.db.execute("insert or replace into heartbeat (id, at) values (1, ?)", [now()])

    # -- helpers -----------------------------------------------------------------------------

    def _history(self, defect_id: int, round_number: int, state: State, rule: str,
                 evidence: str, decided_by: DecidedBy) -> None:
        self.db.execute(
            "insert into state_history (defect_id, round, state, rule, evidence, decided_by, "
            "at) values (?, ?, ?, ?, ?, ?, ?)",
            [defect_id, round_number, str(state), rule, evidence, str(decided_by), now()],
        )

    def _exists(self, table: str, pk) -> bool:
        return self._get(table, pk) is not None

    def _get(self, table: str, pk) -> dict | None:
        rows = self._rows(f"select * from [{table}] where id = ?", [pk])
        return rows[0] if rows else None

    def _all(self, sql: str, params=()) -> list[dict]:
        """``bot.store.ledger_sql``'s statements (``%s`` placeholders) as ``_rows`` runs them."""
        return self._rows(sql.replace("%s", "?"), params)

    def _one(self, sql: str, params=()) -> dict | None:
        rows = self._all(sql, params)
        return rows[0] if rows else None

    def _run(self, sql: str, params=()) -> int:
        with self.transaction():
            return self.db.execute(sql.replace("%s", "?"), params).rowcount

    def _rows(self, sql: str, params=()) -> list[dict]:
        """The rows of a query as dicts, in plain SQL (no table introspection)."""
        cursor = self.db.execute(sql, params)
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _insert(self, table: str, row: dict) -> int:
        """Insert one row in plain SQL; its rowid."""
        sql = (f"insert into [{table}] ({', '.join(f'[{c}]' for c in row)}) "
               f"values ({', '.join('?' * len(row))})")
        return self.db.execute(sql, list(row.values())).lastrowid

    def _update(self, table: str, pk, fields: dict) -> None:
        """Set ``fields`` of one row (by ``id``) in plain SQL; the row must exist."""
        if not fields:
            return
        sets = ", ".join(f"[{c}] = ?" for c in fields)
        cursor = self.db.execute(f"update [{table}] set {sets} where id = ?",
                                 [*fields.values(), pk])
        if cursor.rowcount == 0:
            raise LedgerError(f"no row {pk!r} in {table}")

    def _defect(self, row: dict, comment_ids: list[int] | None = None) -> Defect:
        if comment_ids is None:
            comment_ids = [
                r[0] for r in self.db.execute(
                    "select id from defect_comments where defect_id = ? order by id", [row["id"]]
                )
            ]
        return Defect(
            id=row["id"], key=row["key"], description=row["description"] or "",
            origin=row["origin"], state=row["state"], raised_round=row["raised_round"],
            state_round=row["state_round"], path=row["path"], line_start=row["line_start"],
            line_end=row["line_end"], side=row["side"] or "RIGHT",
            fingerprint=row["fingerprint"], code=row["code"], type=row["type"] or "F.2",
            severity=row["severity"] or "Normal", confidence=row["confidence"] or 0.5,
            rule=row["rule"], author=row["author"], ignored=bool(row["ignored"]),
            resolved_code=row["resolved_code"], comment_ids=comment_ids,
            thread_node_id=row["thread_node_id"], anchor_sha=row.get("anchor_sha"),
        )
