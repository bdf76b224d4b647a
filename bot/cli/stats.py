"""``roundwise stats``: how people received the bot's decisions, from the ledger's verdicts.

Prints, per repository, the bot's findings people accepted or dismissed and its state
decisions they confirmed or contradicted, per transition (``Open→Resolved``...), with the
rates; ``--json`` prints the same as JSON. The verdicts are refreshed from the ledger first
(``tracker.verdicts``), so the command also works on a ledger copied from a server. The
labels come from people's actions read by rules: weak labels, and the output says so. Below
the table, the repository's learnings: per kind of finding, how often people dismissed it and
whether the bot now holds that kind back (``tracker.learnings``). Last, per repository and
rule of the bot's state decisions, the confidence the tracker now gives that rule there: the
development table's rate as the prior, updated with what people there confirmed and
contradicted (``tracker.calibration``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .printable import printable

__all__ = ["add_command", "confidence_rows", "confidence_table", "learnings_table", "stats_table"]

WEAK = ("labels are weak: they come from what people did next (resolving, unresolving, "
        "replying, ignoring, a thumbs-down), read by rules; many decisions get none")


def add_command(sub: argparse._SubParsersAction) -> None:
    stats = sub.add_parser(
        "stats", help="how people received the bot's findings and state decisions",
        description="Acceptance of the bot's findings and contradiction of its state "
                    "decisions, from people's actions recorded in the ledger. " + WEAK + ".",
    )
    stats.add_argument("--ledger", default=os.environ.get("ROUNDWISE_DB") or "roundwise.db",
                       help="the ledger: a file or postgresql://... (default $ROUNDWISE_DB or "
                            "roundwise.db)")
    stats.add_argument("--repo", help="only this repository (owner/name)")
    stats.add_argument("--since", help="only decisions taken on or after this date (YYYY-MM-DD)")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(func=cmd_stats)


def _rate(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def stats_table(summary: dict, learnt: list[dict] | None = None,
                confidence: dict[str, list[dict]] | None = None) -> str:
    """The text table ``roundwise stats`` prints; the repository column is as wide as the
    longest name, so long names never push the other columns out of line."""
    names = {repo: printable(repo) for repo in summary}
    w = max([len("repository"), *map(len, names.values())])
    lines = [f"{'repository':<{w}} {'kind':<8} {'transition':<20} {'+':>5} {'-':>5} {'rate':>7}"]
    for name, data in sorted(summary.items()):
        repo = names[name]
        f = data["findings"]
        lines.append(f"{repo:<{w}} {'finding':<8} {'raised':<20} {f['accepted']:>5} "
                     f"{f['dismissed']:>5} {_rate(f['acceptance_rate']):>7}")
        for transition, t in sorted(data["states"].items()):
            lines.append(f"{repo:<{w}} {'state':<8} {transition:<20} {t['confirmed']:>5} "
                         f"{t['contradicted']:>5} {_rate(t['contradiction_rate']):>7}")
    lines.append("finding: + accepted, - dismissed, rate = acceptance; "
                 "state: + confirmed, - contradicted, rate = contradiction")
    if learnt is not None:
        lines += ["", learnings_table(learnt), ""]
    if confidence is not None:
        lines += [confidence_table(confidence), ""]
    lines.append(f"note: {WEAK}.")
    return "\n".join(lines)


def learnings_table(rows: list[dict]) -> str:
    """Per repository and kind of finding: dismissed of judged (since the last unmute), and
    whether the bot holds that kind back there (``tracker.learnings``)."""
    from tracker.learnings import MIN_DISMISSED, MIN_SHARE

    if not rows:
        return "learnings: no finding of the bot judged yet"
    rows = [{**r, "repo": printable(r["repo"]), "kind": printable(r["kind"]),
             "unmuted_by": printable(r["unmuted_by"]) if r.get("unmuted_by") else None}
            for r in rows]
    w = max([len("repository"), *(len(r["repo"]) for r in rows)])
    k = max([len("finding kind"), *(len(r["kind"]) for r in rows)])
    lines = [f"{'repository':<{w}} {'finding kind':<{k}} {'dismissed':>9} {'judged':>6}  held back"]
    for r in rows:
        held = "yes" if r["muted"] else ("unmuted by " + r["unmuted_by"] if r.get("unmuted_by")
                                         else "no")
        lines.append(f"{r['repo']:<{w}} {r['kind']:<{k}} {r['dismissed']:>9} {r['judged']:>6}  "
                     f"{held}")
    lines.append(f"a kind is held back once dismissed at least {MIN_DISMISSED} times and in "
                 f"{MIN_SHARE:.0%} of its judged findings; /roundwise unmute KIND (or roundwise "
                 "review --unmute KIND) posts it again")
    return "\n".join(lines)


def confidence_rows(ledger, repos: list[str]) -> dict[str, list[dict]]:
    """Per repository, per rule people judged there: the development rate, the record there
    and the rate the tracker now credits the rule with in that repository."""
    from tracker import calibration
    from tracker.verdicts import rule_record

    table = calibration.current()
    out = {}
    for repo in repos:
        record = rule_record(ledger, repo)
        here = table.for_repository(record)
        out[repo] = [{"rule": rule, "development": round(table.rule_rate(rule), 3),
                      "confirmed": right, "judged": n, "here": round(here.rule_rate(rule), 3)}
                     for rule, (right, n) in sorted(record.items())]
    return out


def confidence_table(rows: dict[str, list[dict]]) -> str:
    """The per-repository confidence as text."""
    flat = [(printable(repo), r) for repo, rs in sorted(rows.items()) for r in rs]
    if not flat:
        return "confidence per repository: no state decision of the bot judged yet"
    w = max([len("repository"), *(len(repo) for repo, _ in flat)])
    k = max([len("rule"), *(len(r["rule"]) for _, r in flat)])
    head = (f"{'repository':<{w}} {'rule':<{k}} {'development':>11} {'confirmed':>9} "
            f"{'judged':>6} {'here':>6}")
    lines = [head]
    for repo, r in flat:
        lines.append(f"{repo:<{w}} {r['rule']:<{k}} {r['development']:>11.3f} "
                     f"{r['confirmed']:>9} {r['judged']:>6} {r['here']:>6.3f}")
    lines.append("the chance a decision by the rule is right: on the development tasks (an unseen "
                 "repository), and here, that prior updated with people's verdicts")
    return "\n".join(lines)


def cmd_stats(args) -> int:
    from tracker import learnings
    from tracker.verdicts import refresh, summarise

    from ..store import open_ledger_store
    from ..store.target import TargetError, check_target

    try:
        check_target(args.ledger, must_exist=True)
    except TargetError as exc:
        print(f"roundwise stats: {exc}", file=sys.stderr)
        return 2
    login = os.environ.get("ROUNDWISE_BOT_LOGIN") or "roundwise[bot]"
    base = login.removesuffix("[bot]")
    with open_ledger_store(args.ledger) as ledger:
        repos = set()
        for pr in ledger.pull_requests(args.repo or None):
            refresh(ledger, pr["id"], {login, base, f"{base}[bot]"})
            repos.add(learnings.learning_repo(pr["repo"]))
        for repo in sorted(repos):
            learnings.refresh(ledger, repo)
        summary = summarise(ledger, args.repo, args.since)
        learnt = [{k: row.get(k) for k in ("repo", "kind", "dismissed", "judged", "muted",
                                            "muted_at", "unmuted_at", "unmuted_by")}
                  for repo in sorted(repos) for row in ledger.learnings(repo)]
        confidence = confidence_rows(ledger, sorted(repos))
    for row in learnt:
        row["muted"] = bool(row["muted"])
    if args.json:
        print(json.dumps({"repos": summary, "learnings": learnt, "confidence": confidence,
                          "note": WEAK}, indent=2, ensure_ascii=False))
    else:
        print(stats_table(summary, learnt, confidence))
    return 0
