"""What each dashboard page shows, built from the ledger's rows (``bot.store.ledger_reads``).

Pure shaping, no I/O: the live quality rates (acceptance of findings: accepted over accepted
and dismissed; contradiction of state decisions: contradicted over confirmed and
contradicted) by repository, by ISO week and by kind of decision, and a pull request's
timeline: one row per defect, one cell per round with the state the ledger holds for it then,
the rule, the evidence, who decided, the calibrated confidence (a decision under
``tracker.calibration.SURE`` is hedged, shown as unsure) and people's verdicts on it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from tracker.calibration import SURE

__all__ = ["Cell", "Rates", "TimelineRow", "confidence_rows", "rates", "thread_url", "timeline", "week_of",
           "weekly"]

GITLAB_NOTE_BASE = 1 << 52  # bot.gitlab.ids.NOTE_BASE: GitLab note ids are kept above it


@dataclass
class Rates:
    accepted: int = 0
    dismissed: int = 0
    confirmed: int = 0
    contradicted: int = 0

    def add(self, verdict: str, n: int) -> None:
        if verdict in ("accepted", "dismissed", "confirmed", "contradicted"):
            setattr(self, verdict, getattr(self, verdict) + n)

    @property
    def acceptance(self) -> float | None:
        judged = self.accepted + self.dismissed
        return self.accepted / judged if judged else None

    @property
    def contradiction(self) -> float | None:
        judged = self.confirmed + self.contradicted
        return self.contradicted / judged if judged else None


def confidence_rows(verdicts: list[dict]) -> list[dict]:
    """The per-repository confidence table (as ``roundwise stats`` shows it): per rule people
    judged here, the chance a decision by it is right on the development tasks, the record
    here, and the development rate updated with that record (``tracker.calibration``)."""
    from tracker import calibration

    record = {row["rule"]: (int(row["confirmed"] or 0),
                            int(row["confirmed"] or 0) + int(row["contradicted"] or 0))
              for row in verdicts}
    if not record:
        return []
    table = calibration.current()
    here = table.for_repository(record)
    return [{"rule": rule, "development": table.rule_rate(rule), "confirmed": right,
             "judged": n, "here": here.rule_rate(rule)}
            for rule, (right, n) in sorted(record.items())]


def week_of(day: str) -> str:
    """``2026-12-06`` -> ``2026-W49`` (ISO week)."""
    try:
        year, week, _ = date.fromisoformat(day[:10]).isocalendar()
    except ValueError:
        return "?"
    return f"{year}-W{week:02d}"


def rates(rows: list[dict], key: str | tuple[str, ...] | None = None) -> dict:
    """Verdict rows (``verdicts_by_day``) summed into ``Rates`` by ``key`` (None: one)."""
    out: dict = defaultdict(Rates)
    for row in rows:
        k = None if key is None else (row[key] if isinstance(key, str)
                                      else tuple(row[part] for part in key))
        out[k].add(row["verdict"], int(row["n"]))
    return dict(out)


def weekly(rows: list[dict], weeks: int = 16) -> tuple[list[str], dict[str, list]]:
    """The last ``weeks`` ISO weeks with verdicts, and the two rates for each."""
    by_week: dict[str, Rates] = defaultdict(Rates)
    for row in rows:
        by_week[week_of(row["day"] or "")].add(row["verdict"], int(row["n"]))
    names = sorted(w for w in by_week if w != "?")[-weeks:]
    return names, {"acceptance of findings": [by_week[w].acceptance for w in names],
                   "contradiction of states": [by_week[w].contradiction for w in names]}


def thread_url(repo: str, number: int, comment: dict | None, github_web: str,
               gitlab_web: str) -> str:
    """Where a defect's thread is on its host (the PR itself without a comment)."""
    if repo.startswith("gitlab:"):
        base = f"{gitlab_web}/{repo.removeprefix('gitlab:')}/-/merge_requests/{number}"
        if comment and comment["id"] >= GITLAB_NOTE_BASE:
            return f"{base}#note_{comment['id'] - GITLAB_NOTE_BASE}"
        return base
    base = f"{github_web}/{repo}/pull/{number}"
    if not comment:
        return base
    anchor = {"review_comment": "discussion_r", "issue_comment": "issuecomment-",
              "review": "pullrequestreview-"}.get(comment.get("kind") or "", "discussion_r")
    return f"{base}#{anchor}{comment['id']}"


@dataclass
class Cell:
    round: int
    state: str | None = None  # None: the defect did not exist yet
    rule: str | None = None
    evidence: str | None = None
    decided_by: str | None = None
    confidence: float | None = None
    carried: bool = False  # no decision recorded this round: the state stood
    verdicts: list[dict] = field(default_factory=list)

    @property
    def hedged(self) -> bool:
        """An unsure state decision (a new finding's confidence is not one)."""
        return (self.confidence is not None and self.confidence < SURE and not self.carried
                and self.state != "New")

    @property
    def css(self) -> str:
        return (self.state or "none").lower()


@dataclass
class TimelineRow:
    defect: dict
    cells: list[Cell]
    url: str


def _plan_confidences(rounds: list[dict]) -> dict[tuple[int, str], float]:
    """(round, defect key) -> the decision's confidence, from each round's saved plan."""
    out = {}
    for row in rounds:
        try:
            plan = json.loads(row.get("plan") or "{}")
        except ValueError:
            continue
        for decision in plan.get("decisions") or []:
            if isinstance(decision, dict) and isinstance(decision.get("confidence"),
                                                         (int, float)):
                out[(row["number"], str(decision.get("key")))] = float(decision["confidence"])
    return out


def timeline(pr: dict, rounds: list[dict], defects: list[dict], history: list[dict],
             verdicts: list[dict], comments: dict[int, dict], github_web: str,
             gitlab_web: str) -> tuple[list[int], list[TimelineRow]]:
    """The round numbers and one row per defect (see the module docstring)."""
    numbers = sorted({r["number"] for r in rounds} | {h["round"] for h in history})
    confidence = _plan_confidences(rounds)
    by_defect: dict[int, dict[int, dict]] = defaultdict(dict)
    for row in history:  # the last decision of each round stands (a person's revision)
        by_defect[row["defect_id"]][row["round"]] = row
    judged: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for row in verdicts:
        judged[(row["defect_id"], row["round"])].append(row)
    out = []
    for defect in defects:
        decided = by_defect.get(defect["id"], {})
        cells, last = [], None
        for number in numbers:
            row = decided.get(number)
            if row is not None:
                conf = confidence.get((number, defect["key"]))
                if conf is None and row["state"] == "New":
                    conf = defect.get("confidence")
                last = Cell(number, row["state"], row["rule"], row["evidence"],
                            row["decided_by"], conf)
                cell = last
            elif last is not None:
                cell = Cell(number, last.state, last.rule, None, None, None, carried=True)
            else:
                cell = Cell(number)
            cell.verdicts = judged.get((defect["id"], number), [])
            cells.append(cell)
        out.append(TimelineRow(defect, cells, thread_url(pr["repo"], pr["number"],
                                                         comments.get(defect["id"]),
                                                         github_web, gitlab_web)))
    return numbers, out
