"""What every ledger engine does the same way, written once over a few primitives.

The SQLite ``Ledger`` and the PostgreSQL store differ in their SQL, not in what setting a
thread, ignoring a defect or reading a round's plan means. Those operations live here, over
what each engine provides: ``transaction``, ``close``, ``round``, ``defect``, ``comments``,
``_update(table, id, fields)`` and ``_history(...)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Self

from . import keys
from .models import DecidedBy, Defect

__all__ = ["TALLY", "LedgerBase", "LedgerError", "dump_defects", "like_prefix", "now"]


#: per kind of the bot's findings in a repository (the kind: its offline rule, else its MCR
#: type), how many were judged and dismissed since the kind was last unmuted (written with
#: %s placeholders; each engine swaps in its own)
TALLY = """
    select coalesce(d.rule, d.type) as kind,
           sum(case when v.verdict = 'dismissed' then 1 else 0 end) as dismissed,
           count(*) as judged
    from verdicts v join defects d on d.id = v.defect_id
    join pull_requests p on p.id = v.pr_id
    left join learnings l on l.repo = %s and l.kind = coalesce(d.rule, d.type)
    where (p.repo = %s or p.repo like %s escape '!')
      and v.kind = 'finding' and d.origin = 'bot'
      and v.decided_at > coalesce(l.unmuted_at, '')
    group by coalesce(d.rule, d.type)
    order by coalesce(d.rule, d.type)
"""

#: per rule of the bot's state decisions in a repository, how many people confirmed and
#: contradicted (``tracker.verdicts``): that repository's own record, which
#: ``tracker.calibration`` weighs against the development table (%s placeholders)
RULE_VERDICTS = """
    select v.rule as rule,
           sum(case when v.verdict = 'confirmed' then 1 else 0 end) as confirmed,
           sum(case when v.verdict = 'contradicted' then 1 else 0 end) as contradicted
    from verdicts v join pull_requests p on p.id = v.pr_id
    where (p.repo = %s or p.repo like %s escape '!') and v.kind = 'state' and v.rule is not null
    group by v.rule
    order by v.rule
"""


def like_prefix(repo: str) -> str:
    """A LIKE pattern (escape ``!``) for ``repo:anything``: the local CLI's per-branch PRs."""
    return repo.replace("!", "!!").replace("%", "!%").replace("_", "!_") + ":%"


def now() -> str:
    """The time stamps the ledger writes: UTC, ISO 8601, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class LedgerBase:
    """Engine-independent ledger operations (see the module docstring)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update_round(self, round_id: int, **fields) -> None:
        """Set a round's columns (its check run, what the check shows)."""
        self._update("rounds", round_id, fields)

    def plan(self, pr_id: int, number: int) -> dict | None:
        row = self.round(pr_id, number)
        return json.loads(row["plan"]) if row and row.get("plan") else None

    def set_ignored(self, pr_id: int, key: str, by: str, round_number: int) -> Defect:
        """Stop reporting a defect (``/roundwise ignore``); its history stays."""
        defect = self.defect(pr_id, key)
        with self.transaction():
            self._update("defects", defect.id, {"ignored": 1, "updated_at": now()})
            self._history(defect.id, round_number, defect.state, "ignored",
                          f"ignored by {by}", DecidedBy.HUMAN)
        return self.defect(pr_id, key)

    def set_description(self, pr_id: int, key: str, description: str) -> Defect:
        """A person edited the comment that raised a defect: its description follows."""
        defect = self.defect(pr_id, key)
        self._update("defects", defect.id, {"description": description})
        return self.defect(pr_id, key)

    def thread_root(self, pr_id: int, key: str) -> dict | None:
        """The top-level review comment of a defect's thread, if it has one (a comment's later
        requests, ``D3b``..., share the thread its first one, ``D3a``, keeps)."""
        for row in self.comments(pr_id, key):
            if row["kind"] == "review_comment" and not row["in_reply_to"]:
                return row
        if keys.part(key) not in ("", "a"):
            return self.thread_root(pr_id, keys.part_key(key, 0))
        return None

    def set_thread(self, pr_id: int, key: str, node_id: str) -> None:
        defect = self.defect(pr_id, key)
        self._update("defects", defect.id, {"thread_node_id": node_id})


class LedgerError(Exception):
    """A request the ledger cannot honour (unknown PR, unknown defect, ...)."""


def dump_defects(store, pr_id: int) -> Iterator[dict]:
    """Every defect of a PR as a plain dict with its history, for JSON output."""
    for defect in store.defects(pr_id):
        yield {
            "key": defect.key, "state": str(defect.state), "origin": str(defect.origin),
            "location": defect.location(), "type": defect.type, "severity": defect.severity,
            "description": defect.description,
            "history": [
                {k: h[k] for k in ("round", "state", "rule", "decided_by", "evidence")}
                for h in store.history(pr_id, defect.key)
            ],
        }
