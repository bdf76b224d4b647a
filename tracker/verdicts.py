"""Live quality signals: what people did after each of the bot's decisions, as weak verdicts.

The ledger already holds every decision the bot made (``state_history``) and what people did
between rounds (``signals``, replies in ``defect_comments``). This module reads both, in the
order they happened, and classifies the people's actions as verdicts on the bot:

- a bot **finding** is *accepted* when the author changed the anchored code and the thread was
  resolved (by a person, or by the bot after it saw the change), or a suggestion was committed;
  it is *dismissed* when a person resolved its thread with no change, ran ``/roundwise
  ignore``, gave its comment a 👎, or replied disagreeing ("not a bug", "intended", "won't
  fix"...);
- a bot **state** decision is *contradicted* when a person unresolves a thread the bot called
  Resolved, or a reviewer replies "still ..." after it; when a person resolves a thread the bot
  kept Open for two rounds in a row; it is *confirmed* when a reviewer accepts or resolves the
  thread after the bot's Resolved, or replies "still ..." while the bot says Open.

Only the bot's own judgements are judged: a state a person set (or the bot merely carried
forward from a person's action, ``stays-resolved``) is not the bot's. Every verdict is a weak
label, and says which action it came from. ``refresh`` rewrites one PR's rows in the ledger's
``verdicts`` table; nothing here changes how the bot decides.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from .ledger_base import now
from .store import LedgerStore

__all__ = ["DISAGREE", "Verdict", "classify", "refresh", "rule_record", "summarise"]

BOT_DECIDERS = {"rule", "llm"}
OPENISH = {"Open", "Reopened"}
CARRIED = {"stays-resolved"}
# Decisions a person's signal causes at once (tracker.intake), stored right after it.
CAUSED = {"thread_resolved", "thread_unresolved", "reviewer-disputes", "command_resolve"}  # the bot carrying a state forward, not judging it anew
# A reply saying the finding is wrong or not worth fixing.
DISAGREE = re.compile(
    r"\b(not a (?:real )?(?:bug|problem|issue)|false positive|won'?t fix|wontfix|disagree|"
    r"(?:is |was |it'?s )?intended|intentional|by design|as designed|not needed|"
    r"not necessary|unnecessary|does(?:n'?t| not) apply|not applicable|fine as is|"
    r"ignore (?:this|it))\b",
    re.IGNORECASE,
)


@dataclass
class Verdict:
    """One verdict: people's action ``signal`` on the bot's decision at ``round``."""

    defect_key: str
    round: int  # the round of the judged decision
    kind: str  # finding or state
    transition: str  # "raised" for findings, "Open→Resolved" for states
    rule: str | None  # the rule that took the judged decision
    verdict: str  # accepted, dismissed, confirmed, contradicted
    signal: str  # what people did
    signal_round: int
    by: str | None
    evidence: str
    decided_at: str


def _events(ledger: LedgerStore, defect_id: int, bot_logins: set[str]) -> list[dict]:
    """The defect's decisions, signals and people's replies, oldest first.

    Each kind keeps its own stored order (row ids); the three are merged by time. Times are
    milliseconds, so ties happen: a person's action is stored just before the decision it
    causes (``CAUSED``), in the same job, and no other decision is caused by an action of the
    same millisecond. On equal times: other decisions, then signals, then replies, then the
    decisions people's actions caused.
    """
    activity = ledger.defect_activity(defect_id)
    streams = [
        [{"type": "decision", "_at": r["at"] or "", **r} for r in activity["state_history"]],
        [{"type": "signal", "_at": r["at"] or "", **r} for r in activity["signals"]
         if r["author"] not in bot_logins],
        [{"type": "reply", "_at": r["created_at"] or "", **r}
         for r in activity["defect_comments"]
         if r["in_reply_to"] and not r["posted_by_bot"] and r["author"] not in bot_logins],
    ]
    # ``/roundwise resolve`` is stored as a decision only: it is also a person's action.
    streams[1] += [{"type": "signal", "_at": d["_at"], "kind": "command_resolve",
                    "author": (d["evidence"] or "").split(" ran ")[0] or None,
                    "round": d["round"], "id": 0}
                   for d in streams[0] if d["rule"] == "command_resolve"]
    streams[1].sort(key=lambda e: e["_at"])

    def rank(event: dict) -> tuple[str, int]:
        if event["type"] == "decision":
            return event["_at"], 3 if event["rule"] in CAUSED else 0
        return event["_at"], 1 if event["type"] == "signal" else 2

    out = []
    heads = [0, 0, 0]
    while True:
        ready = [(rank(stream[i]), n) for n, (stream, i) in enumerate(zip(streams, heads,
                                                                          strict=True))
                 if i < len(stream)]
        if not ready:
            return out
        _, n = min(ready)
        out.append(streams[n][heads[n]])
        heads[n] += 1


def classify(ledger: LedgerStore, pr_id: int, bot_logins: set[str] = frozenset()) -> list[Verdict]:
    """Every verdict people's actions give on the bot's decisions on one PR."""
    out: list[Verdict] = []
    for defect in ledger.defects(pr_id):
        out.extend(_defect_verdicts(ledger, defect, set(bot_logins)))
    return out


def _defect_verdicts(ledger: LedgerStore, defect, bot_logins: set[str]) -> list[Verdict]:
    verdicts: list[Verdict] = []
    is_bot_finding = defect.origin.value == "bot"
    raise_row = None
    finding_done = False
    owner = None  # the bot decision the defect's current state stands on (None: a person's)
    previous_state = None
    owner_from = None  # the state before the owner decision
    open_rounds: list[int] = []  # rounds of consecutive bot Open decisions, up to the owner
    code_changed = False  # a bot Resolved decision saw the author change the code
    last_round = defect.raised_round

    def finding(verdict: str, signal: str, by, round_: int, evidence: str) -> None:
        nonlocal finding_done
        if is_bot_finding and not finding_done and raise_row is not None:
            verdicts.append(Verdict(defect.key, raise_row["round"], "finding", "raised",
                                    raise_row["rule"] or defect.rule, verdict, signal, round_,
                                    by, evidence, raise_row["at"]))
            finding_done = True

    states: dict[int, Verdict] = {}  # one per judged decision: people's latest word stands

    def state(verdict: str, signal: str, by, round_: int, evidence: str) -> None:
        states[owner["id"]] = (Verdict(defect.key, owner["round"], "state",
                                f"{owner_from}→{owner['state']}", owner["rule"], verdict, signal,
                                round_, by, evidence, owner["at"]))

    for ev in _events(ledger, defect.id, bot_logins):
        if ev["type"] == "decision":
            last_round = max(last_round, ev["round"])
            if raise_row is None:
                raise_row = ev
                previous_state = ev["state"]
                continue
            if ev["rule"] == "ignored":
                if ev["decided_by"] == "human":
                    by = (ev["evidence"] or "").removeprefix("ignored by ") or None
                    finding("dismissed", "command_ignore", by, ev["round"], ev["evidence"])
                continue
            if ev["decided_by"] in BOT_DECIDERS and ev["rule"] not in CARRIED:
                owner_from, owner = previous_state, ev
                if ev["state"] in OPENISH:
                    if not open_rounds or open_rounds[-1] != ev["round"]:
                        open_rounds.append(ev["round"])
                else:
                    open_rounds = []
                if ev["state"] == "Resolved":
                    code_changed = True
                    if ev["rule"] == "suggestion-applied":
                        finding("accepted", "suggestion-committed", None, ev["round"],
                                "the suggestion now stands in the code")
                    else:
                        finding("accepted", "code-changed", None, ev["round"],
                                f"the author changed the anchored code ({ev['rule']}) and "
                                "the thread was resolved")
            elif ev["decided_by"] == "human":
                owner, open_rounds = None, []
            previous_state = ev["state"]
            continue
        if ev["type"] == "signal":
            kind, by, rnd = ev["kind"], ev["author"], ev["round"]
            who = by or "a person"
            if kind in ("thread_resolved", "command_resolve"):
                what = "resolved the thread" if kind == "thread_resolved" else \
                    "ran /roundwise resolve"
                if code_changed:
                    finding("accepted", kind, by, rnd, f"{who} {what} after the code changed")
                else:
                    finding("dismissed", kind, by, rnd, f"{who} {what} with no change to the "
                            "anchored code")
                if owner is not None and owner["state"] == "Resolved":
                    state("confirmed", kind, by, rnd, f"{who} {what} after the bot's Resolved")
                elif owner is not None and owner["state"] in OPENISH and len(open_rounds) >= 2:
                    state("contradicted", kind, by, rnd,
                          f"{who} {what} the bot kept Open in rounds "
                          f"{', '.join(map(str, open_rounds))}")
            elif kind == "thread_unresolved":
                if owner is not None and owner["state"] == "Resolved":
                    state("contradicted", kind, by, rnd,
                          f"{who} unresolved the thread the bot resolved")
            elif kind == "reviewer_disputes":
                if owner is not None and owner["state"] == "Resolved":
                    state("contradicted", kind, by, rnd,
                          f"{who} replied it is still not right after the bot's Resolved")
                elif owner is not None and owner["state"] in OPENISH:
                    state("confirmed", kind, by, rnd,
                          f"{who} replied it is still not right; the bot said Open")
            elif kind == "reviewer_accepts":
                if owner is not None and owner["state"] == "Resolved":
                    state("confirmed", kind, by, rnd, f"{who} accepted the fix")
            elif kind == "command_ignore":
                finding("dismissed", kind, by, rnd, f"{who} ran /roundwise ignore")
            elif kind == "thumbs_down":
                finding("dismissed", kind, by, rnd, f"{who} gave its comment a 👎")
            continue
        if ev["type"] == "reply" and DISAGREE.search(ev["body"] or ""):
            text = " ".join((ev["body"] or "").split())[:100]
            finding("dismissed", "reply-disagrees", ev["author"], last_round, f'{ev["author"] or "a person"} replied "{text}"')
    return verdicts + list(states.values())


def refresh(ledger: LedgerStore, pr_id: int, bot_logins: set[str] = frozenset()) -> list[Verdict]:
    """Recompute one PR's verdicts and store them (replacing its earlier rows)."""
    verdicts = classify(ledger, pr_id, bot_logins)
    keys = {d.key: d.id for d in ledger.defects(pr_id)}
    stamp = now()
    ledger.replace_verdicts(pr_id, [{"pr_id": pr_id, "defect_id": keys[v.defect_key],
                                     **asdict(v), "at": stamp} for v in verdicts])
    return verdicts


def summarise(ledger: LedgerStore, repo: str | None = None, since: str | None = None) -> dict:
    """Counts and rates per repository: findings accepted/dismissed, states per transition."""
    rows = ledger.verdict_counts(repo, since)
    out: dict[str, dict] = {}
    for row in rows:
        repo_out = out.setdefault(row["repo"], {"findings": {"accepted": 0, "dismissed": 0},
                                                "states": {}})
        if row["kind"] == "finding":
            repo_out["findings"][row["verdict"]] = repo_out["findings"].get(row["verdict"], 0) \
                + row["n"]
        else:
            t = repo_out["states"].setdefault(row["transition"],
                                              {"confirmed": 0, "contradicted": 0})
            t[row["verdict"]] = t.get(row["verdict"], 0) + row["n"]
    for repo_out in out.values():
        f = repo_out["findings"]
        judged = f["accepted"] + f["dismissed"]
        f["acceptance_rate"] = round(f["accepted"] / judged, 4) if judged else None
        for t in repo_out["states"].values():
            judged = t["confirmed"] + t["contradicted"]
            t["contradiction_rate"] = round(t["contradicted"] / judged, 4) if judged else None
    return out


def rule_record(ledger: LedgerStore, repo: str) -> dict[str, tuple[int, int]]:
    """Per rule, ``(confirmed, judged)``: how people received the bot's state decisions in
    ``repo`` (its local branches included), for ``tracker.calibration``'s per-repository rates."""
    base = repo.rsplit(":", 1)[0] if repo.startswith("local:") and repo.count(":") >= 2 else repo
    return {row["rule"]: (int(row["confirmed"] or 0),
                          int(row["confirmed"] or 0) + int(row["contradicted"] or 0))
            for row in ledger.rule_verdicts(base)}
