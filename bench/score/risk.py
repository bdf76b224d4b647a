"""Risk and coverage: whether the tracker's confidence tells its right decisions from its wrong.

Accuracy over every decision says how often the tracker is right; what a reviewer reading the
summary needs is that its *sure* answers can be trusted and its unsure ones are flagged. So the
decisions are sorted by confidence and scored at 50/70/90/100% coverage (the most confident
half, and so on), the sure Resolved and sure Open answers get their own precision, and the
probabilities themselves are judged by the Brier score and a reliability table. Each rule's
accuracy is also given per repository: a rule right in one repository and wrong in the next is
what a pooled rate hides.

``figures(records)`` scores pair records (``bench.tracking.pair_records``) with the confidence
they carry (the shipped table: fitted on the dev folders, so *fitted* figures on them);
``bench.tune.calibration.held_out_records(records)`` first replaces each confidence by one
from a model fitted without the record's repository: the honest figure.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict

from tracker.calibration import SURE

COVERAGE = (0.5, 0.7, 0.9, 1.0)
BINS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)


def _accuracy(rows: list[dict]) -> float | None:
    return round(sum(r["right"] for r in rows) / len(rows), 4) if rows else None


def _balanced(rows: list[dict]) -> float | None:
    recalls = [_accuracy([r for r in rows if (r["gold"] == "Resolved") == resolved])
               for resolved in (True, False)]
    recalls = [x for x in recalls if x is not None]
    return round(sum(recalls) / len(recalls), 4) if recalls else None


def coverage(live: list[dict]) -> list[dict]:
    """Accuracy and balanced accuracy of the most confident share of the live decisions."""
    ranked = sorted(live, key=lambda r: -r["confidence"])
    out = []
    for share in COVERAGE:
        top = ranked[:max(1, round(len(ranked) * share))] if ranked else []
        out.append({"coverage": share, "decisions": len(top), "accuracy": _accuracy(top),
                    "balanced_accuracy": _balanced(top)})
    return out


def reliability(rows: list[dict]) -> list[dict]:
    """In bins of predicted chance: the decisions, the mean prediction, the share right."""
    out = []
    for lo, hi in itertools.pairwise(BINS):
        inside = [r for r in rows if lo <= r["confidence"] < hi]
        if inside:
            out.append({"bin": f"{lo:.1f}-{min(hi, 1.0):.1f}", "decisions": len(inside),
                        "predicted": round(statistics.fmean(r["confidence"] for r in inside), 4),
                        "observed": _accuracy(inside)})
    return out


def rules_by_repository(live: list[dict]) -> list[dict]:
    """Per rule: live pairs, right, repositories used in and right in (most of its pairs
    there), and the spread (min, max, standard deviation) of its per-repository accuracy."""
    per: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in live:
        row = per[r["rule"] or "?"][r["repo"]]
        row[0] += bool(r["right"])
        row[1] += 1
    out = []
    for rule, repos in per.items():
        rates = [right / n for right, n in repos.values()]
        out.append({"rule": rule, "pairs": sum(n for _, n in repos.values()),
                    "right": sum(right for right, _ in repos.values()),
                    "repositories": len(repos),
                    "repositories_right": sum(1 for right, n in repos.values() if 2 * right > n),
                    "min": round(min(rates), 3), "max": round(max(rates), 3),
                    "spread": round(statistics.pstdev(rates), 3)})
    return sorted(out, key=lambda r: (-r["pairs"], r["rule"]))


def figures(records: list[dict], sure: float = SURE) -> dict:
    """The risk and coverage figures of pair records (those with a known confidence)."""
    decided = [r for r in records if r.get("confidence") is not None]
    live = [r for r in decided if r["live"]]
    confident = [r for r in live if r["confidence"] >= sure]
    sure_resolved = [r for r in confident if r["answer"] == "Resolved"]
    sure_open = [r for r in confident if r["answer"] != "Resolved"]
    return {
        "decisions": len(decided), "live": len(live), "sure_threshold": sure,
        "coverage": coverage(live),
        "sure_share": round(len(confident) / len(live), 4) if live else None,
        "sure_resolved": {"n": len(sure_resolved), "precision": _accuracy(sure_resolved)},
        "sure_open": {"n": len(sure_open), "precision": _accuracy(sure_open)},
        "brier": round(statistics.fmean((r["confidence"] - r["right"]) ** 2 for r in decided), 4)
        if decided else None,
        "reliability": reliability(decided),
        "rules": rules_by_repository(live),
    }


def table(result: dict, title: str) -> str:
    """The figures as lines a person reads."""
    lines = [f"{title}: {result['live']} live of {result['decisions']} decided pairs"]
    cov = "  ".join(f"{int(c['coverage'] * 100)}% {c['accuracy']:.3f}/{c['balanced_accuracy']:.3f}"
                    for c in result["coverage"] if c["accuracy"] is not None)
    lines.append(f"  accuracy/balanced by coverage  {cov}")
    sr, so = result["sure_resolved"], result["sure_open"]
    fmt = lambda s: f"{s['precision']:.3f} of {s['n']}" if s["n"] else "none"
    if result["sure_share"] is not None:
        lines.append(f"  sure (>= {result['sure_threshold']}) share {result['sure_share']:.3f}; "
                     f"sure Resolved right {fmt(sr)}; sure Open right {fmt(so)}")
    if result["brier"] is not None:
        lines.append(f"  Brier {result['brier']:.4f}; reliability "
                     + ", ".join(f"{b['bin']}: {b['decisions']} predicted {b['predicted']:.2f} "
                                 f"observed {b['observed']:.2f}" for b in result["reliability"]))
    return "\n".join(lines)


def rules_table(result: dict) -> str:
    head = (f"  {'rule':<26} {'pairs':>5} {'right':>5} {'repos':>5} {'right in':>8} "
            f"{'min':>5} {'max':>5} {'spread':>6}")
    out = [head]
    for r in result["rules"]:
        out.append(f"  {r['rule']:<26} {r['pairs']:>5} {r['right']:>5} {r['repositories']:>5} "
                   f"{r['repositories_right']:>8} {r['min']:>5.2f} {r['max']:>5.2f} "
                   f"{r['spread']:>6.3f}")
    return "\n".join(out)
