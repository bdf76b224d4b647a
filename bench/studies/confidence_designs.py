"""Which confidence ranks the tracker's decisions best on repositories it has not seen?

The tracker's answers are fixed by its rules; this study only varies how sure each decision is
said to be (``tracker.calibration``) and scores the ranking that gives, leave-one-repository-out
over ``--tasks`` (each repository predicted by a model fitted on the others) and, with
``--train``, as a transfer figure (fitted on those folders, scored on the rest):

- ``pooled``: each rule's rate over every pair, shrunk toward all rules' rate (the design
  before issue 36);
- ``by-repository``: the rule's rate by repository, credited ``Z`` standard deviations below
  its mean where its rate spreads between repositories (beta-binomial);
- ``by-repository+signals``: that, plus the round's other signals (``tracker.profile``)
  weighed by a penalised logistic model (the shipped design).

For each: accuracy of the most confident 50% and 100% of the live decisions, the sure share,
the precision of sure Resolved answers, and the Brier score over every decided pair.

    python -m bench.studies.confidence_designs --tasks ../shared/data/mcr-dev \\
        ../shared/data/mcr-dev-extra ../shared/data/mcr-dev-2 ../shared/data/mcr-dev-3 \\
        [--train ../shared/data/mcr-dev ../shared/data/mcr-dev-extra ../shared/data/mcr-dev-2]
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager

from tracker import calibration

from ..score.risk import figures
from ..tasks.mcr import load_tasks
from ..tune import calibration as fit

DESIGNS = {  # name -> (Z, whether a rule's spread between repositories counts, signal penalty)
    "pooled": (0.0, False, None),
    "by-repository": (calibration.Z, True, None),
    "by-repository+signals": (calibration.Z, True, fit.SIGNAL_PENALTY),
}


@contextmanager
def design(z: float, spread: bool):
    saved = calibration.Z, calibration.Calibration.spread
    calibration.Z = z
    if not spread:  # one repository's worth of data per rule: no spread to measure
        calibration.Calibration.spread = property(lambda self: 0.0)
    calibration._rule_rates.cache_clear()
    try:
        yield
    finally:
        calibration.Z, calibration.Calibration.spread = saved
        calibration._rule_rates.cache_clear()


def _fit(rows: list[dict], spread: bool, penalty: float | None):
    rows = rows if spread else [dict(r, repo="") for r in rows]
    if penalty is None:
        return calibration.Calibration.fit([(r["rule"], r["right"], r["repo"]) for r in rows])
    return fit.fit_table(rows, penalty)


def score(rows: list[dict], scored: list[dict] | None, spread: bool,
          penalty: float | None) -> dict:
    """Leave-one-repository-out over ``rows`` (``scored`` None), or fitted on ``rows`` and
    scoring ``scored``."""
    if scored is None:
        scored, predicted = rows, []
        for r in rows:
            table = _fit([o for o in rows if o["repo"] != r["repo"]], spread, penalty)
            predicted.append(fit.predict(table, r))
    else:
        table = _fit(rows, spread, penalty)
        predicted = [fit.predict(table, r) for r in scored]
    records = [dict(r, confidence=p, gold=r["gold"]) for r, p in zip(scored, predicted)]
    out = figures(records)
    cover = {c["coverage"]: c["accuracy"] for c in out["coverage"]}
    return {"top_half": cover[0.5], "all": cover[1.0], "sure_share": out["sure_share"],
            "sure_resolved": out["sure_resolved"], "brier": out["brier"]}


def rows_of(tasks) -> list[dict]:
    out = fit.outcomes(tasks)
    for r in out:
        r["gold"] = r.pop("gold", None) or ("Resolved" if (r["answer"] == "Resolved")
                                            == r["right"] else "Open")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.confidence_designs",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", required=True)
    parser.add_argument("--train", nargs="*", default=None,
                        help="also fit on these folders of --tasks and score the rest")
    args = parser.parse_args(argv)
    tasks, _ = load_tasks(args.tasks)
    rows = rows_of(tasks)
    train_ids = None
    if args.train:
        train, _ = load_tasks(args.train)
        train_ids = {t.task_id for t in train}
    print(f"{'design':<24} {'figure':<9} {'top 50%':>7} {'all':>6} {'sure':>6} "
          f"{'sure Resolved':>15} {'Brier':>7}")
    for name, (z, spread, penalty) in DESIGNS.items():
        with design(z, spread):
            results = {"LORO": score(rows, None, spread, penalty)}
            if train_ids is not None:
                fitted = [r for r in rows if r["task"] in train_ids]
                held = [r for r in rows if r["task"] not in train_ids]
                results["transfer"] = score(fitted, held, spread, penalty)
        for figure, s in results.items():
            sr = s["sure_resolved"]
            print(f"{name:<24} {figure:<9} {s['top_half']:>7.3f} {s['all']:>6.3f} "
                  f"{s['sure_share']:>6.3f} {sr['precision']:>8.3f} of {sr['n']:<3} "
                  f"{s['brier']:>7.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
