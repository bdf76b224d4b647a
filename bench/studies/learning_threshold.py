"""Benchmark: the threshold at which a kind of finding people keep dismissing is held back.

``tracker.learnings`` mutes a kind in a repository once ``dismissed >= N`` and ``dismissed /
judged >= S``. Two mistakes are possible: muting a useful kind that people sometimes dismiss
(a real bug goes unreported), and taking long to mute a kind people nearly always dismiss
(the noise users complain of). This script measures both for every (N, S) from data:

1. the base rate of dismissals of findings people *use*, from a ledger (``roundwise stats``:
   the bot's judged findings, accepted and dismissed, per kind) and from the tasks' own
   reviews (how often an author answered a reviewer's comment with "not a bug", "intended",
   "won't fix"...: ``tracker.verdicts.DISAGREE``), and, to be conservative, the reviewers'
   comments that no defect card took up (nobody acted on them); the upper end of a 95%
   interval of that rate (Wilson) is the useful kind's dismissal rate ``q``;
2. for each (N, S), the exact probability that a kind dismissed at rate ``q`` is muted within
   its first ``--horizon`` judged findings (judgements independent), and how many judged
   findings a kind dismissed at rate ``--noisy`` (0.8: "dismissed 4 of 5 times") takes to be
   muted with probability 1/2.

It prints the table and the chosen threshold: the one that mutes a noisy kind soonest while
muting a useful kind with probability under ``--risk`` (5%) within the horizon.

    python -m bench.studies.learning_threshold --ledger RUN/work/ledger.db \
        --tasks ../shared/data/...
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from functools import cache

from ..run import gather_tasks

__all__ = ["main", "mute_probability", "observed", "wilson_upper"]

MINIMUMS = (2, 3, 4, 5, 6)
SHARES = (0.5, 0.6, 0.67, 0.75, 0.8, 0.9)


def wilson_upper(k: int, n: int, z: float = 1.96) -> float:
    """The upper end of the Wilson score interval for ``k`` successes in ``n`` trials."""
    if n == 0:
        return 1.0
    p = k / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(1.0, (centre + margin) / (1 + z * z / n))


def mute_probability(q: float, minimum: int, share: float, horizon: int,
                     together: int = 1) -> float:
    """P(muted within ``horizon`` judged findings) for a kind dismissed with probability ``q``;
    ``together``: findings judged in groups sharing one outcome (one person dismissing two
    findings of one PR at once), a correlation independent judgements would understate."""

    @cache
    def p(dismissed: int, judged: int) -> float:
        if dismissed >= minimum and dismissed / judged >= share:
            return 1.0
        if judged >= horizon:
            return 0.0
        return q * p(dismissed + together, judged + together) + \
            (1 - q) * p(dismissed, judged + together)

    return p(0, 0)


def median_to_mute(q: float, minimum: int, share: float, limit: int = 60) -> int | None:
    """The fewest judged findings after which the kind is muted with probability >= 1/2."""
    for n in range(minimum, limit + 1):
        if mute_probability(q, minimum, share, n) >= 0.5:
            return n
    return None


def observed(ledger_path: str | None, task_paths: list[str]) -> dict:
    """Judged and dismissed findings: the bot's in the ledger, reviewers' in the tasks."""
    out = {"ledger": {"judged": 0, "dismissed": 0, "kinds": {}},
           "tasks": {"comments": 0, "dismissed": 0, "replies": 0, "carded": 0}}
    if ledger_path:
        from bot.store import open_ledger_store
        from tracker import learnings
        from tracker.verdicts import refresh

        with open_ledger_store(ledger_path) as ledger:
            repos = set()
            for pr in ledger.pull_requests():
                refresh(ledger, pr["id"], {"roundwise[bot]", "roundwise"})
                repos.add(learnings.learning_repo(pr["repo"]))
            kinds: Counter = Counter()
            for repo in sorted(repos):
                for row in ledger.finding_tally(repo):
                    out["ledger"]["judged"] += int(row["judged"])
                    out["ledger"]["dismissed"] += int(row["dismissed"])
                    kinds[row["kind"]] += int(row["judged"])
            out["ledger"]["kinds"] = dict(kinds.most_common())
    if task_paths:
        from tracker.discussion import raises_concern
        from tracker.verdicts import DISAGREE

        tasks, _skipped = gather_tasks(task_paths)
        t = out["tasks"]
        for task in tasks:
            events = [e for r in task.rounds for e in r.events]
            cards = {c for d in task.defects for c in (d.get("comment_ids") or [])}
            for e in events:
                if e.get("in_reply_to"):
                    t["replies"] += 1
                    continue
                if e.get("role") != "reviewer" or not raises_concern(
                        e.get("body") or "", inline=e.get("kind") == "review_comment"):
                    continue
                t["comments"] += 1
                t["carded"] += e.get("id") in cards
                answers = [x for x in events if x.get("in_reply_to") == e.get("id")
                           and x.get("role") == "author"]
                t["dismissed"] += any(DISAGREE.search(x.get("body") or "") for x in answers)
    return out


def choose(q: float, noisy: float, horizon: int, risk: float,
           together: int = 2) -> tuple[list[dict], dict]:
    """Every (N, S) with its risks, and the one chosen: among those whose share does not
    exceed the noisy rate (a kind dismissed that often must end up muted) and whose risk of
    muting a useful kind is under ``risk`` whether judgements are independent or come
    ``together``, the one that mutes a noisy kind soonest, then the safest."""
    rows = []
    for minimum in MINIMUMS:
        for share in SHARES:
            rows.append({"min_dismissed": minimum, "min_share": share,
                         "useful_muted": round(mute_probability(q, minimum, share, horizon), 4),
                         "useful_muted_together": round(mute_probability(
                             q, minimum, share, horizon, together), 4),
                         "noisy_median": median_to_mute(noisy, minimum, share)})
    safe = [r for r in rows if r["min_share"] <= noisy and r["noisy_median"] is not None
            and max(r["useful_muted"], r["useful_muted_together"]) < risk]
    best = min(safe, key=lambda r: (r["noisy_median"], max(r["useful_muted"],
                                                          r["useful_muted_together"]))) \
        if safe else {}
    return rows, best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.learning_threshold",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--ledger", help="a ledger (a bench run's RUN/work/ledger.db, a server's)")
    parser.add_argument("--tasks", nargs="*", default=[], help="task files or folders")
    parser.add_argument("--horizon", type=int, default=20,
                        help="judged findings of one kind in one repository to look over (20)")
    parser.add_argument("--noisy", type=float, default=0.8,
                        help="the dismissal rate of a kind that should be muted (0.8)")
    parser.add_argument("--risk", type=float, default=0.05,
                        help="the chance of muting a useful kind to accept (0.05)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    seen = observed(args.ledger, args.tasks)
    judged = seen["ledger"]["judged"] + seen["tasks"]["comments"]
    dismissed = seen["ledger"]["dismissed"] + seen["tasks"]["dismissed"]
    strict = wilson_upper(dismissed, judged)
    # Conservative: a reviewer's comment the tasks' annotators made no defect card of was
    # not acted on either; counting those as dismissals too bounds the rate from above.
    loose = dismissed + seen["tasks"]["comments"] - seen["tasks"]["carded"]
    q = wilson_upper(loose, judged)
    rows, best = choose(q, args.noisy, args.horizon, args.risk)
    result = {"observed": seen, "useful_dismissal_rate": round(q, 4),
              "strict_dismissal_rate": round(strict, 4), "judged": judged,
              "dismissed": dismissed, "not_acted_on": loose, "horizon": args.horizon,
              "noisy": args.noisy, "risk": args.risk, "table": rows, "chosen": best}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    led, tk = seen["ledger"], seen["tasks"]
    print(f"ledger: {led['dismissed']} of {led['judged']} judged bot findings dismissed "
          f"(kinds: {', '.join(f'{k} {n}' for k, n in led['kinds'].items()) or 'none'})")
    print(f"tasks: {tk['dismissed']} of {tk['comments']} reviewer comments answered 'not a bug' "
          f"by the author ({tk['replies']} replies; {tk['carded']} comments became defect cards)")
    print(f"useful kind's dismissal rate: at most {strict:.3f} counting dismissals "
          f"({dismissed}/{judged}); at most {q:.3f} counting also the reviewer comments "
          f"nobody acted on ({loose}/{judged}); 95% Wilson upper bounds; the table uses "
          f"{q:.3f}")
    print(f"P(useful muted): a kind dismissed at {q:.3f} muted within {args.horizon} judged "
          f"findings, judgements independent / in pairs; last column: judged findings a kind "
          f"dismissed at {args.noisy:.0%} takes to be muted (median)")
    print(f"{'N':>2} {'share':>5} {'independent':>11} {'in pairs':>8} {'to mute':>7}")
    for r in rows:
        print(f"{r['min_dismissed']:>2} {r['min_share']:>5} {r['useful_muted']:>11.4f} "
              f"{r['useful_muted_together']:>8.4f} {r['noisy_median']!s:>7}")
    if best:
        print(f"chosen: N = {best['min_dismissed']}, share = {best['min_share']} (a useful kind "
              f"muted with p = {best['useful_muted']:.4f} / {best['useful_muted_together']:.4f} "
              f"in pairs, under {args.risk}; a {args.noisy:.0%} kind muted after "
              f"{best['noisy_median']} judged findings)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
