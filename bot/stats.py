"""``roundwise stats``: how people received the bot's decisions, from the ledger's verdicts.

Prints, per repository, the bot's findings people accepted or dismissed and its state
decisions they confirmed or contradicted, per transition (``Open→Resolved``...), with the
rates; ``--json`` prints the same as JSON. The verdicts are refreshed from the ledger first
(``tracker.verdicts``), so the command also works on a ledger copied from a server. The
labels come from people's actions read by rules: weak labels, and the output says so.
"""

from __future__ import annotations

import argparse
import json
import os

__all__ = ["add_command", "stats_table"]

WEAK = ("labels are weak: they come from what people did next (resolving, unresolving, "
        "replying, ignoring), read by rules; many decisions get none")


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


def stats_table(summary: dict) -> str:
    """The text table ``roundwise stats`` prints."""
    lines = [f"{'repository':<28} {'kind':<8} {'transition':<20} {'+':>5} {'-':>5} {'rate':>7}"]
    for repo, data in sorted(summary.items()):
        f = data["findings"]
        lines.append(f"{repo:<28} {'finding':<8} {'raised':<20} {f['accepted']:>5} "
                     f"{f['dismissed']:>5} {_rate(f['acceptance_rate']):>7}")
        for transition, t in sorted(data["states"].items()):
            lines.append(f"{repo:<28} {'state':<8} {transition:<20} {t['confirmed']:>5} "
                         f"{t['contradicted']:>5} {_rate(t['contradiction_rate']):>7}")
    lines.append("finding: + accepted, - dismissed, rate = acceptance; "
                 "state: + confirmed, - contradicted, rate = contradiction")
    lines.append(f"note: {WEAK}.")
    return "\n".join(lines)


def cmd_stats(args) -> int:
    from tracker.verdicts import refresh, summarise

    from .store import is_postgres, open_ledger_store, sqlite_path

    if not is_postgres(args.ledger) and not os.path.exists(sqlite_path(args.ledger)):
        print(f"no ledger at {args.ledger}")
        return 2
    login = os.environ.get("ROUNDWISE_BOT_LOGIN") or "roundwise[bot]"
    base = login.removesuffix("[bot]")
    with open_ledger_store(args.ledger) as ledger:
        for pr in ledger.pull_requests(args.repo or None):
            refresh(ledger, pr["id"], {login, base, f"{base}[bot]"})
        summary = summarise(ledger, args.repo, args.since)
    if args.json:
        print(json.dumps({"repos": summary, "note": WEAK}, indent=2, ensure_ascii=False))
    else:
        print(stats_table(summary))
    return 0
