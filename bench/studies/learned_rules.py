"""Would a model over the rules' evidence transfer better than the ordered rule table?

The tracker decides a live defect by the first rule of ``tracker.rules`` that rules. The issue
on tracking asked whether weights learned over the rules' evidence would carry to repositories
never seen better than the hand-set order. This study answers it on the development tasks:
every rule of the table is run on every live decision (not only up to the first that rules),
each rule name it gives becomes a 0/1 feature, and a class-balanced logistic regression (plain
numpy, L2) is fitted leave-one-repository-out and scored on the held-out repository. It prints
the table's balanced accuracy on the same decisions beside the model's, for each feature set
and regularisation strength.

    python -m bench.studies.learned_rules --tasks ../shared/data/mcr-dev \\
        ../shared/data/mcr-dev-extra ../shared/data/mcr-dev-2 [--json]

Measured with the deterministic tracker alone (``bench.score.tracking``), no LLM. Observing the
rules means wrapping ``tracker.decide.rule`` for the run; the tracker's decisions are unchanged.
"""

from __future__ import annotations

import argparse
import json
from contextlib import contextmanager

import numpy as np

from tracker import decide

from ..score import tracking
from ..score.metrics import live_class
from ..tasks.mcr import load_tasks

__all__ = ["balanced", "fit_logistic", "main", "observed_decisions"]

STRENGTHS = (0.1, 1.0, 10.0)  # inverse L2 strength, as scikit-learn's C


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float = 1.0,
                 steps: int = 3000, rate: float = 0.5) -> tuple[np.ndarray, float]:
    """Weights and bias of a logistic regression with classes weighted to balance, an L2
    penalty of 1/(2c) on the weights (not the bias), by gradient descent on the mean loss."""
    n, k = x.shape
    weight = np.where(y == 1, n / (2 * max(y.sum(), 1)), n / (2 * max((1 - y).sum(), 1)))
    w, b = np.zeros(k), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        g = weight * (p - y)
        w -= rate * (x.T @ g / n + w / (c * n))
        b -= rate * g.mean()
    return w, b


def balanced(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean of the recall of each class present (1 = Resolved, 0 = Open)."""
    recalls = [float((pred[y == k] == k).mean()) for k in (0, 1) if (y == k).any()]
    return sum(recalls) / len(recalls)


@contextmanager
def _observing(record: dict, where: dict):
    """Every rule's ruling for each live decision, keyed by (task, round, defect key)."""
    first_rule, replay_task = decide.rule, tracking.replay_task

    def every_rule(case, table):
        fired = {}
        for candidate in table:
            ruling = candidate(case)
            if ruling is not None:
                fired.setdefault(ruling.rule, ruling.state.value)
        chosen = first_rule(case, table)
        record[(where["task"], where["round"], case.defect.key)] = (fired, chosen.rule,
                                                                    chosen.state.value)
        return chosen

    def decide_round(defects, rnd):
        where["round"] = rnd.number
        return tracking.decide_round(defects, rnd)

    def replay(task, ledger, decide_fn=None):
        where["task"] = task.task_id
        return replay_task(task, ledger, decide_round)

    decide.rule, tracking.replay_task = every_rule, replay
    try:
        yield
    finally:
        decide.rule, tracking.replay_task = first_rule, replay_task


def observed_decisions(tasks) -> list[dict]:
    """One row per live pair the rules decided: repository, gold class, the table's answer,
    the first rule and every rule name that fired."""
    record: dict = {}
    with _observing(record, {}):
        replays = tracking.replay_tasks(tasks)
    rows = []
    for replay in replays:
        cards = {c["id"]: c for c in replay.task.defects}
        for pair in replay.pairs():
            key = replay.key_for(cards[pair.defect])
            seen = record.get((replay.task.task_id, pair.round, key))
            if not pair.live or seen is None:
                continue
            fired, first, state = seen
            rows.append({"repo": replay.task.repo or replay.task.task_id,
                         "gold": live_class(pair.gold), "table": live_class(state),
                         "first": first, "fired": sorted(fired)})
    return rows


def _features(rows: list[dict], which: str) -> np.ndarray:
    fired = sorted({n for r in rows for n in r["fired"]})
    firsts = sorted({r["first"] for r in rows})
    cols = []
    for r in rows:
        v = [float(n in r["fired"]) for n in fired] if which != "first" else []
        if which != "fired":
            v += [float(r["first"] == n) for n in firsts]
        cols.append(v)
    return np.array(cols)


def study(rows: list[dict]) -> dict:
    """The table's balanced accuracy and the held-out model's, per feature set and strength."""
    y = np.array([r["gold"] == "Resolved" for r in rows], dtype=float)
    table = np.array([r["table"] == "Resolved" for r in rows], dtype=float)
    repos = sorted({r["repo"] for r in rows})
    out = {"decisions": len(rows), "repositories": len(repos),
           "table": round(balanced(table, y), 4), "model": {}}
    for which in ("fired", "first", "both"):
        x = _features(rows, which)
        for c in STRENGTHS:
            pred = np.zeros(len(rows))
            for repo in repos:
                held = np.array([r["repo"] == repo for r in rows])
                w, b = fit_logistic(x[~held], y[~held], c)
                pred[held] = (x[held] @ w + b) > 0
            out["model"][f"{which} C={c}"] = round(balanced(pred, y), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.learned_rules",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tasks, errors = load_tasks(args.tasks)
    for error in errors:
        print(f"skipped: {error}")
    result = study(observed_decisions([t for t in tasks if t.multi_round]))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['decisions']} live decisions, {result['repositories']} repositories; "
          f"balanced accuracy, leave-one-repository-out for the model")
    print(f"  rule table (first rule that rules)   {result['table']:.3f}")
    for name, score in result["model"].items():
        print(f"  logistic regression, {name:<14} {score:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
