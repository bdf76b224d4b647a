"""Learning from dismissals: a kind of finding people keep dismissing in a repository is held
back there, until someone unmutes it.

A finding's *kind* is the offline rule that raised it (``debug-print``, ``ruff:F401``), or for a
model's finding its MCR type (``E.1.1``). People dismiss a bot finding by running ``/roundwise
ignore``, resolving its thread with no change to the code, giving its comment a 👎 or
replying that it is not a bug (``tracker.verdicts``, which also says when a finding was
*accepted*). ``refresh(ledger, repo)`` counts, per kind, the bot's judged findings in the
repository and the dismissed ones (those raised since the kind was last unmuted), and mutes
a kind once

    dismissed >= MIN_DISMISSED  and  dismissed / judged >= MIN_SHARE

A muted kind stays muted (its findings are no longer posted, so nothing new would be judged)
until ``unmute(ledger, repo, kind, by)``; from then on only findings raised after the unmute
count, so it takes fresh dismissals to mute it again. The thresholds are justified from data in
``bench/studies/learning_threshold.py`` (``docs/pr-face.md``, *Learnings*, says how). Everything is
stored in the ledger's ``learnings`` table; nothing here does I/O beyond the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ledger_base import now

__all__ = ["MIN_DISMISSED", "MIN_SHARE", "Learning", "kind_of", "learning_repo", "muted",
           "refresh", "should_mute", "unmute"]

# Chosen by ``python -m bench.studies.learning_threshold`` on the development tasks and a bench
# run's ledger: the fastest rule to mute a kind dismissed 80% of the time (after 3 judged findings)
# whose chance of muting a useful kind within 20 judged findings stays under 5%, with that
# kind's dismissal rate bounded from above (0.189) and judgements independent or in pairs.
MIN_DISMISSED = 3  # dismissals of one kind in one repository before it is held back ...
MIN_SHARE = 0.8  # ... and the share of its judged findings they must be


def kind_of(rule: str | None, type_: str | None) -> str:
    """The kind a finding counts under: its offline rule, else its MCR type."""
    return rule or type_ or "F.2"


def learning_repo(repo: str) -> str:
    """The repository a PR's learnings belong to: the local CLI keys its PRs by branch
    (``local:NAME:BRANCH``); what people dismiss there counts for the whole repository."""
    if repo.startswith("local:") and repo.count(":") >= 2:
        return repo.rsplit(":", 1)[0]
    return repo


def should_mute(dismissed: int, judged: int) -> bool:
    return dismissed >= MIN_DISMISSED and judged > 0 and dismissed / judged >= MIN_SHARE


@dataclass
class Learning:
    """One kind in one repository: what people did with its findings, and whether it is held
    back."""

    repo: str
    kind: str
    dismissed: int = 0
    judged: int = 0
    muted: bool = False
    muted_at: str | None = None
    unmuted_at: str | None = None
    unmuted_by: str | None = None

    @classmethod
    def from_row(cls, row: dict) -> Learning:
        return cls(row["repo"], row["kind"], int(row.get("dismissed") or 0),
                   int(row.get("judged") or 0), bool(row.get("muted")), row.get("muted_at"),
                   row.get("unmuted_at"), row.get("unmuted_by"))

    def notice(self) -> str:
        """What the summary says about it, once: what is held back, why, how to undo it."""
        return (f"🔇 Holding back `{self.kind}` findings: dismissed {self.dismissed} of "
                f"{self.judged} times in this repository; `/roundwise unmute {self.kind}` "
                "to undo.")


def refresh(ledger, repo: str) -> list[Learning]:
    """Recount every kind of ``repo`` and mute those past the thresholds; every learning."""
    repo = learning_repo(repo)
    known = {row["kind"]: Learning.from_row(row) for row in ledger.learnings(repo)}
    with ledger.transaction():
        for row in ledger.finding_tally(repo):
            kind, dismissed, judged = row["kind"], int(row["dismissed"]), int(row["judged"])
            old = known.get(kind) or Learning(repo, kind)
            mute = old.muted or should_mute(dismissed, judged)
            if (old.dismissed, old.judged, old.muted) == (dismissed, judged, mute) \
                    and kind in known:
                continue
            fields = {"dismissed": dismissed, "judged": judged, "muted": int(mute)}
            if mute and not old.muted:
                fields["muted_at"] = now()
            ledger.save_learning(repo, kind, **fields)
            known[kind] = Learning(repo, kind, dismissed, judged, mute,
                                   fields.get("muted_at", old.muted_at), old.unmuted_at,
                                   old.unmuted_by)
    return sorted(known.values(), key=lambda x: x.kind)


def muted(ledger, repo: str) -> dict[str, Learning]:
    """The kinds held back in ``repo``, by kind."""
    repo = learning_repo(repo)
    return {row["kind"]: Learning.from_row(row) for row in ledger.learnings(repo)
            if row.get("muted")}


def unmute(ledger, repo: str, kind: str, by: str | None) -> Learning | None:
    """Post ``kind`` again in ``repo``; earlier dismissals no longer count. The learning as it
    was before (None when the kind was not muted)."""
    repo = learning_repo(repo)
    was = muted(ledger, repo).get(kind)
    if was is None:
        return None
    ledger.save_learning(repo, kind, muted=0, dismissed=0, judged=0, unmuted_at=now(),
                         unmuted_by=by)
    return was
