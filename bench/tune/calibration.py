"""Measure, and write, the tracker's calibrated confidence: how often each rule is right.

The tracker's rules decide every state; ``tracker.calibration`` turns the rule behind a
decision into the chance that decision is right. This script replays the dev tasks through the
tracker alone (no LLM, the rules' own confidences) and, leave-one-repository-out, fits the
table on the other repositories and predicts each held-out decision's chance of being right.
It prints what tells whether those chances can be trusted on code never seen:

- the Brier score (mean squared gap between the chance and what happened; lower is better)
  beside the rules' own confidences and a constant (the base rate of right answers);
- a reliability table: in bins of predicted chance, the decisions, the mean prediction and the
  share that was right;
- the unsure share (below ``tracker.calibration.SURE``) and the accuracy on the sure part.

    python -m bench.tune.calibration --tasks ../shared/data/mcr-dev ../shared/data/mcr-dev-extra \\
        ../shared/data/mcr-dev-2            # leave-one-repository-out figures
    python -m bench.tune.calibration --tasks ... --write   # also write tracker/calibration.json

``--train`` names folders to fit on and scores the others (the transfer figure).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from collections import defaultdict
from datetime import date

from tracker import calibration
from tracker.calibration import Calibration

from ..score.metrics import live_class
from ..score.tracking import replay_tasks
from ..tasks.mcr import load_tasks

BINS = [0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001]


def outcomes(tasks) -> list[dict]:
    """One row per decided pair: repository, rule, the rule's own confidence, right or not."""
    saved = os.environ.get("ROUNDWISE_CALIBRATION")
    os.environ["ROUNDWISE_CALIBRATION"] = "off"
    try:
        replays = replay_tasks(tasks)
    finally:
        if saved is None:
            os.environ.pop("ROUNDWISE_CALIBRATION", None)
        else:
            os.environ["ROUNDWISE_CALIBRATION"] = saved
    rows = []
    for replay in replays:
        repo = replay.task.repo or replay.task.task_id
        for pair, rule, own, profile in replay.decisions():
            rows.append({"repo": repo, "rule": rule, "own": own, "live": pair.live,
                         "answer": pair.answer, "profile": profile,
                         "right": live_class(pair.answer) == live_class(pair.gold),
                         "task": pair.task, "defect": pair.defect, "round": pair.round})
    return rows


SIGNAL_PENALTY = 3.0  # L2 weight on the signals' log-odds (chosen leave-one-repository-out)


def _features(row: dict) -> dict[str, float]:
    """The model's inputs for one row, named as ``Calibration.contributions`` reads them."""
    profile = row.get("profile") or {}
    if not profile:
        return {}
    side = "R" if row.get("answer") == "Resolved" else "O"
    out = {"live": 1.0, f"ans={side}": 1.0}
    out.update({f"{side}:{name}": 1.0 for name, on in profile.items() if on})
    return out


def fit_table(rows: list[dict], penalty: float = SIGNAL_PENALTY) -> Calibration:
    """The rule rates by repository, then the signals' weights by penalised logistic
    regression (Newton steps) with each row's credited rule rate as its offset."""
    import numpy as np

    rates = Calibration.fit([(r["rule"], r["right"], r["repo"]) for r in rows])
    feats = [_features(r) for r in rows]
    names = sorted({k for f in feats for k in f})
    if not names:
        return rates
    col = {n: i for i, n in enumerate(names)}
    x = np.zeros((len(rows), len(names)))
    for i, f in enumerate(feats):
        for k, v in f.items():
            x[i, col[k]] = v
    p0 = np.clip([rates.rule_rate(r["rule"]) for r in rows], 1e-4, 1 - 1e-4)
    offset = np.log(p0 / (1 - p0))
    y = np.array([float(r["right"]) for r in rows])
    w = np.zeros(len(names))
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ w + offset)))
        grad = x.T @ (p - y) + penalty * w
        hess = x.T @ (x * (p * (1 - p))[:, None]) + penalty * np.eye(len(names))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return Calibration(rates.by_repo, {n: round(float(v), 4) for n, v in zip(names, w)})


def predict(table: Calibration, row: dict) -> float:
    return table.confidence(row["rule"], row["own"], row.get("profile"), row.get("answer"))


def held_out(rows: list[dict], scored: list[dict] | None = None) -> list[float]:
    """Each scored row's predicted chance, from a model fitted without its repository
    (``scored`` None: leave-one-repository-out over ``rows``); with ``scored``, a model fitted
    on all of ``rows`` predicts ``scored``."""
    if scored is not None:
        table = fit_table(rows)
        return [predict(table, r) for r in scored]
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_repo[r["repo"]].append(r)
    tables = {repo: fit_table([r for r in rows if r["repo"] != repo]) for repo in by_repo}
    return [predict(tables[r["repo"]], r) for r in rows]


def held_out_records(records: list[dict]) -> list[dict]:
    """Pair records (``bench.score.tracking.pair_records``) with each confidence predicted by
    a model fitted on the other repositories' records only (for ``bench.score.risk``)."""
    decided = [dict(r, own=r["confidence"]) for r in records if r.get("confidence") is not None]
    for r, p in zip(decided, held_out(decided)):
        r["confidence"] = round(p, 3)
    return decided


def brier(predicted: list[float], rows: list[dict]) -> float:
    return sum((p - r["right"]) ** 2 for p, r in zip(predicted, rows)) / max(len(rows), 1)


def reliability(predicted: list[float], rows: list[dict]) -> list[dict]:
    out = []
    for lo, hi in itertools.pairwise(BINS):
        inside = [(p, r["right"]) for p, r in zip(predicted, rows) if lo <= p < hi]
        if inside:
            out.append({"bin": f"{lo:.1f}-{min(hi, 1.0):.1f}", "decisions": len(inside),
                        "predicted": sum(p for p, _ in inside) / len(inside),
                        "observed": sum(ok for _, ok in inside) / len(inside)})
    return out


def sure_part(predicted: list[float], rows: list[dict]) -> dict:
    sure = [r["right"] for p, r in zip(predicted, rows) if not calibration.unsure(p)]
    return {"unsure_share": 1 - len(sure) / max(len(rows), 1),
            "sure_accuracy": sum(sure) / len(sure) if sure else None, "sure": len(sure)}


def report(rows: list[dict], predicted: list[float]) -> dict:
    base = sum(r["right"] for r in rows) / max(len(rows), 1)
    return {
        "decisions": len(rows), "live": sum(r["live"] for r in rows),
        "repositories": len({r["repo"] for r in rows}),
        "brier": brier(predicted, rows),
        "brier_own_confidences": brier([r["own"] for r in rows], rows),
        "brier_constant": brier([base] * len(rows), rows),
        "accuracy": base,
        "reliability": reliability(predicted, rows),
        **sure_part(predicted, rows),
    }


def table_json(rows: list[dict], folders: list[str]) -> dict:
    table = fit_table(rows)
    repos = defaultdict(set)
    for r in rows:
        repos[r["rule"]].add(r["repo"])
    return {
        "written_by": "python -m bench.tune.calibration --write",
        "date": date.today().isoformat(),
        "folders": folders,
        "model": {"z": calibration.Z, "prior_weight": calibration.PRIOR_WEIGHT,
                  "spread_repositories": calibration.SPREAD_REPOSITORIES,
                  "signal_penalty": SIGNAL_PENALTY},
        "rules": {rule: {"right": right, "pairs": n, "repositories": len(repos[rule]),
                         "by_repository": {k: list(v) for k, v in
                                           sorted(table.by_repo[rule].items())}}
                  for rule, (right, n) in sorted(table.counts.items())},
        "signals": dict(sorted(table.weights.items())),
    }


def _print(name: str, result: dict) -> None:
    print(f"{name}: {result['decisions']} decisions ({result['live']} live) in "
          f"{result['repositories']} repositories")
    print(f"  Brier {result['brier']:.4f}  (rules' own confidences "
          f"{result['brier_own_confidences']:.4f}, constant {result['brier_constant']:.4f})")
    sure = result["sure_accuracy"]
    print(f"  unsure share {result['unsure_share']:.3f} (below {calibration.SURE}); accuracy on "
          f"the sure part {sure:.3f} of {result['sure']}" if sure is not None else "  no sure part")
    print(f"  {'bin':<9} {'decisions':>9} {'predicted':>9} {'observed':>9}")
    for b in result["reliability"]:
        print(f"  {b['bin']:<9} {b['decisions']:>9} {b['predicted']:>9.3f} {b['observed']:>9.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tune.calibration", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", required=True, help="task folders or files")
    parser.add_argument("--train", nargs="*", default=None,
                        help="fit on these of --tasks only and score the rest (transfer)")
    parser.add_argument("--write", action="store_true",
                        help=f"write the table fitted on all --tasks to {calibration.TABLE}")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tasks, errors = load_tasks(args.tasks)
    for error in errors:
        print(f"skipped: {error}")
    if not tasks:
        parser.error("no tasks loaded")
    rows = outcomes(tasks)
    results = {"leave_one_repository_out": report(rows, held_out(rows))}
    if args.train:
        train, _ = load_tasks(args.train)
        ids = {t.task_id for t in train}
        fit = [r for r in rows if r["task"] in ids]
        test = [r for r in rows if r["task"] not in ids]
        results["transfer"] = report(test, held_out(fit, test))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, result in results.items():
            _print(name, result)
    if args.write:
        calibration.TABLE.write_text(json.dumps(table_json(rows, args.tasks), indent=1) + "\n",
                                     encoding="utf-8")
        print(f"wrote {calibration.TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
