"""The ledger's statements both engines run as the same SQL, written once.

The SQLite ``Ledger`` and the PostgreSQL store keep the same tables and columns, so most of
what reads them (and a round's usage counter) is one statement in either. Those methods live
here, with ``%s`` placeholders, over three primitives each engine provides: ``_all(sql,
params)`` (the rows, as dicts), ``_one(sql, params)`` (the first row, or None) and ``_run(sql,
params)`` (a write, committed unless a transaction is open; its row count). SQLite's
primitives swap the placeholders for ``?``. What each engine does its own way (upserts, the
round's set-based write, locking, migrations) stays in its module; what is the same in meaning
but not in SQL is ``tracker.ledger_base``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

from tracker.batch import state_before
from tracker.ledger_base import RULE_VERDICTS, LedgerError, dump_defects, like_prefix
from tracker.lifecycle import State
from tracker.models import Defect, Signal

__all__ = ["SharedStatements"]


class SharedStatements:
    """The reads (and the usage counter) both ledger engines share; mixed in before
    ``LedgerBase``."""

    # -- pull requests -----------------------------------------------------------------------

    def find_pull_request(self, repo: str, number: int) -> dict | None:
        return self._one("select * from pull_requests where repo = %s and number = %s",
                         [repo, number])

    def _refresh_pull_request(self, pr: dict, fields: dict, stamp: str) -> dict:
        """A found PR row with the ``fields`` that differ written (and ``updated_at``)."""
        changes = {k: v for k, v in fields.items() if v is not None and pr.get(k) != v}
        if changes:
            changes["updated_at"] = stamp
            self._update("pull_requests", pr["id"], changes)
            pr.update(changes)
        return pr

    def pull_request_by_id(self, pr_id: int) -> dict | None:
        return self._one("select * from pull_requests where id = %s", [pr_id])

    def pull_requests(self, repo: str | None = None) -> list[dict]:
        """Every PR (of ``repo``), by repository and number."""
        where, args = (" where repo = %s", [repo]) if repo else ("", [])
        return self._all(f"select * from pull_requests{where} order by repo, number", args)

    def pr_number_for_check(self, repo: str, check_run_id: int | None,
                            head_sha: str | None) -> int | None:
        """The PR whose latest round posted this check run or reviewed this head."""
        row = self._one(
            "select p.number from rounds r join pull_requests p on p.id = r.pr_id "
            "where p.repo = %s and (r.check_run_id = %s or r.head_sha = %s) "
            "order by r.id desc limit 1", [repo, check_run_id, head_sha])
        return row["number"] if row else None

    # -- rounds ------------------------------------------------------------------------------

    def rounds(self, pr_id: int) -> list[dict]:
        return self._all("select * from rounds where pr_id = %s order by number", [pr_id])

    def round(self, pr_id: int, number: int) -> dict | None:
        return self._one("select * from rounds where pr_id = %s and number = %s",
                         [pr_id, number])

    def add_usage(self, pr_id: int, number: int, prompt_tokens: int = 0,
                  completion_tokens: int = 0, cost: float = 0.0) -> None:
        """Add LLM token counts and cost to a round's totals."""
        self._run("update rounds set prompt_tokens = coalesce(prompt_tokens, 0) + %s, "
                  "completion_tokens = coalesce(completion_tokens, 0) + %s, "
                  "cost = coalesce(cost, 0) + %s where pr_id = %s and number = %s",
                  [prompt_tokens, completion_tokens, cost, pr_id, number])

    def finish_round(self, pr_id: int, number: int, status: str = "complete", **stats) -> None:
        """Close a round: ``complete``, ``failed`` (with ``error``) or ``superseded`` (a newer
        head took over before it completed), plus any stats columns."""
        if status not in ("complete", "failed", "superseded"):
            raise LedgerError(f"a round ends complete or failed (or superseded), not {status!r}")
        row = self.round(pr_id, number)
        if row is None:
            raise LedgerError(f"no round {number} on PR {pr_id}")
        started = datetime.fromisoformat(row["started_at"]) if row["started_at"] else None
        finished = datetime.now(UTC)
        update = {"status": status, "finished_at": finished.isoformat(timespec="milliseconds")}
        if started:
            update["seconds"] = round((finished - started).total_seconds(), 3)
        update.update(stats)
        with self.transaction():
            self._update("rounds", row["id"], update)
            if status == "complete":
                self.update_pull_request(pr_id, last_reviewed_sha=row["head_sha"])

    def save_plan(self, pr_id: int, number: int, plan: dict) -> None:
        """Keep a round's computed plan until the round completes (see ``finish_round``)."""
        self._run("update rounds set plan = %s where pr_id = %s and number = %s",
                  [json.dumps(plan), pr_id, number])

    # -- defects -----------------------------------------------------------------------------

    def dump(self, pr_id: int) -> Iterator[dict]:
        """Every defect as a plain dict with its history, for JSON output."""
        return dump_defects(self, pr_id)

    def next_key(self, pr_id: int, offset: int = 0) -> str:
        """The key the next new defect of the PR gets (``offset`` more for later ones)."""
        count = self._one("select count(*) as n from defects where pr_id = %s", [pr_id])["n"]
        return f"D{count + 1 + offset}"

    def previous_state(self, defect: Defect, round_number: int) -> State | None:
        """The state a defect ended round ``round_number - 1`` in (None if not raised yet)."""
        row = self._one("select state, round from state_history where defect_id = %s "
                        "and round < %s order by round desc, id desc limit 1",
                        [defect.id, round_number])
        return state_before((row["state"], row["round"]) if row else None, round_number)

    def history(self, pr_id: int, key: str) -> list[dict]:
        """Every decision taken on a defect, oldest first."""
        defect = self.defect(pr_id, key)
        return self._all("select * from state_history where defect_id = %s order by id",
                         [defect.id])

    # -- signals and comments ----------------------------------------------------------------

    def signals(self, pr_id: int, since_round: int) -> list[Signal]:
        """Signals recorded at round ``since_round`` or later, oldest first."""
        rows = self._all("select s.*, d.key from signals s join defects d on d.id = s.defect_id "
                         "where s.pr_id = %s and s.round >= %s order by s.id",
                         [pr_id, since_round])
        return [Signal(kind=r["kind"], defect_key=r["key"], author=r["author"],
                       body=r["body"] or "", comment_id=r["comment_id"]) for r in rows]

    def comments(self, pr_id: int, key: str) -> list[dict]:
        defect = self.defect(pr_id, key)
        return self._all("select * from defect_comments where defect_id = %s order by id",
                         [defect.id])

    def signal_rows(self, pr_id: int, key: str) -> list[dict]:
        """Every signal recorded on a defect, with its round and time, oldest first."""
        defect = self.defect(pr_id, key)
        return self._all("select * from signals where defect_id = %s order by id", [defect.id])

    def people_comments_since(self, pr_id: int, since: str) -> list[dict]:
        """People's (not the bot's) comments on the PR's defects from ``since`` on: key,
        author, body, oldest first."""
        return self._all(
            "select d.key, c.author, c.body from defect_comments c join defects d "
            "on d.id = c.defect_id where d.pr_id = %s and c.posted_by_bot = 0 "
            "and c.created_at >= %s order by c.id", [pr_id, since or ""])

    # -- live verdicts and learnings ---------------------------------------------------------

    def rule_verdicts(self, repo: str) -> list[dict]:
        """Per rule, people's verdicts on the bot's state decisions in ``repo``."""
        return self._all(RULE_VERDICTS, [repo, like_prefix(repo)])

    def verdict_counts(self, repo: str | None = None, since: str | None = None) -> list[dict]:
        """Verdicts counted per repository, kind, transition and verdict."""
        where, args = ["true"], []
        if repo:
            where.append("p.repo = %s")
            args.append(repo)
        if since:
            where.append("v.decided_at >= %s")
            args.append(since)
        return self._all(
            "select p.repo, v.kind, v.transition, v.verdict, count(*) as n from verdicts v "
            "join pull_requests p on p.id = v.pr_id where " + " and ".join(where) +
            " group by p.repo, v.kind, v.transition, v.verdict "
            "order by p.repo, v.kind, v.transition", args)

    def learnings(self, repo: str | None = None) -> list[dict]:
        where, args = (" where repo = %s", [repo]) if repo else ("", [])
        return self._all(f"select * from learnings{where} order by repo, kind", args)
