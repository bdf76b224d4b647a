"""Choose the tracker's rule switches by leave-one-repository-out cross-validation.

The development tasks come from a few dozen repositories; the tracker is used on code it has
never seen. So a choice (a rule on or off) is judged the way it will be used: for each
repository, pick the switches that score best on the *other* repositories' tasks, and score
the held-out repository's pairs with them. The pooled held-out answers give the
cross-validated figures, which are the ones to report; the fitted figures (best switches on
all tasks) are printed beside them only to show how much fitting would flatter.

    python -m bench.tune.rules --tasks ../shared/data/mcr-dev ../shared/data/mcr-dev-extra
    python -m bench.tune.rules --tasks ... --bar   # which switches clear the 3-repository bar
    python -m bench.tune.rules --tasks ... --thresholds   # the rules' numeric thresholds

Thresholds (``THRESHOLDS``: how wide a selection is a region, how near an edit is "next to"
the anchor, how alike two files are one file renamed, ...) are chosen the same way: each
candidate value is replayed once, and each held-out repository is scored with the value that
is best on the others (a tie keeps the default, then the value nearest it).

A rule found by reading errors goes on only when it is right in at least ``BAR`` repositories
and raises balanced accuracy (``--bar``): flipped one at a time from the defaults, the pairs
whose answer a switch changes are counted, and the switch's "on" is backed by the repositories
where it turns answers right. Cross-validation alone cannot see a rule fitted to one
repository: with that repository held out, the other folds tie, and the tie keeps the default.

Measured with the deterministic tracker alone (``bench.score.tracking``), no LLM.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import Counter, defaultdict
from fractions import Fraction

from tracker import anchors, decide, rules

from ..score.metrics import TrackPair, live_class, tracking_scores
from ..score.tracking import naive_decide, replay_tasks
from ..tasks.mcr import load_tasks


def _pairs_by_repo(tasks, **kwargs) -> dict[str, list[TrackPair]]:
    out: dict[str, list[TrackPair]] = defaultdict(list)
    for replay in replay_tasks(tasks, **kwargs):
        out[replay.task.repo or replay.task.task_id].extend(replay.pairs())
    return out


def _score(pairs: list[TrackPair]) -> float:
    return tracking_scores(pairs)["balanced_accuracy"] if pairs else 0.0


def _kept(combo: tuple[bool, ...], names: list[str], defaults: dict[str, bool]) -> int:
    """How many switches a combination leaves at their defaults: on a tie in score, the data
    gives no reason to move a switch, so the combination that moves fewest wins."""
    return sum(value == defaults[name] for name, value in zip(names, combo))


def _loro(runs: dict, prefer) -> tuple[list[TrackPair], dict, object]:
    """Leave-one-repository-out over candidate settings, ``runs[setting][repo]`` being the
    pairs of a repository under a setting: each repository gets the setting that scores best
    on the others (ties go to the greatest ``prefer(setting)``). Returns the held-out pairs,
    the setting chosen per repository, and the setting best on all of them (the fitted one)."""
    repos = sorted(next(iter(runs.values())))

    def best(held_out_repo=None):
        return max(runs, key=lambda v: (_score([p for r, ps in runs[v].items()
                                                if r != held_out_repo for p in ps]), prefer(v)))

    chosen = {repo: best(repo) for repo in repos}
    return [p for repo in repos for p in runs[chosen[repo]][repo]], chosen, best()


def cross_validate(tasks, names: list[str]) -> dict:
    """Held-out and fitted tracking scores over every combination of the named switches."""
    saved = dict(rules.SWITCHES)
    runs: dict[tuple[bool, ...], dict[str, list[TrackPair]]] = {}
    try:
        for combo in itertools.product((False, True), repeat=len(names)):
            rules.SWITCHES.update(dict(zip(names, combo)))
            runs[combo] = _pairs_by_repo(tasks)
    finally:
        rules.SWITCHES.clear()
        rules.SWITCHES.update(saved)
    held_out, picks, fitted = _loro(runs, lambda c: _kept(c, names, saved))
    chosen = {repo: dict(zip(names, combo)) for repo, combo in picks.items()}
    repos = sorted(picks)
    votes = {n: sum(c[n] for c in chosen.values()) for n in names}
    return {
        "cross_validated": tracking_scores(held_out),
        "fitted": tracking_scores([p for ps in runs[fitted].values() for p in ps]),
        "fitted_switches": dict(zip(names, fitted)),
        "switch_votes": {n: f"{v}/{len(repos)} folds on" for n, v in votes.items()},
        "repositories": len(repos),
    }


#: the thresholds the rules decide by: name -> (module, attribute, candidate values)
THRESHOLDS: dict[str, tuple[object, str, tuple]] = {
    "WIDE_RANGE": (rules, "WIDE_RANGE", (3, 4, 5, 6, 8, 10, 10**6)),
    "ENOUGH_OF_WIDE": (rules, "ENOUGH_OF_WIDE",
                       (Fraction(1, 5), Fraction(1, 4), Fraction(1, 3), Fraction(1, 2),
                        Fraction(2, 3))),
    "SUGGESTION_WINDOW": (rules, "SUGGESTION_WINDOW", (3, 5, 10, 20, 50)),
    "MAX_SCOPE_LINES": (rules, "MAX_SCOPE_LINES", (100, 200, 400, 800, 10**6)),
    "NEARBY_LINES": (anchors, "NEARBY_LINES", (0, 1, 2, 3)),
    "RENAME_SIMILARITY": (anchors, "RENAME_SIMILARITY", (0.3, 0.4, 0.5, 0.6, 0.7)),
    "UNDO_SIMILARITY": (decide, "UNDO_SIMILARITY", (0.4, 0.5, 0.6, 0.7, 0.8)),
}


def tune_threshold(tasks, name: str) -> dict:
    """Leave-one-repository-out choice of one threshold among its candidate values."""
    module, attribute, values = THRESHOLDS[name]
    default = getattr(module, attribute)
    runs: dict = {}
    try:
        for value in values:
            setattr(module, attribute, value)
            runs[value] = _pairs_by_repo(tasks)
    finally:
        setattr(module, attribute, default)
    return choose_by_fold(runs, default)


def choose_by_fold(runs: dict, default) -> dict:
    """From the pairs by repository under each candidate value (``runs[value][repo]``): the
    held-out scores when each repository gets the value best on the others, how many folds
    chose each value, and the pooled balanced accuracy of each. A tie keeps the default, then
    the value nearest it."""
    values = list(runs)
    rank = sorted(values, key=lambda v: (v != default, abs(float(v) - float(default))))
    held_out, chosen, fitted = _loro(runs, lambda v: -rank.index(v))
    votes = Counter(chosen.values())
    return {
        "default": _shown(default),
        "cross_validated": tracking_scores(held_out),
        "fitted": _shown(fitted),
        "balanced_by_value": {_shown(v): round(_score([p for ps in runs[v].values()
                                                       for p in ps]), 4) for v in values},
        "votes": {_shown(v): votes[v] for v in values if votes[v]},
        "repositories": len(chosen),
    }


def _shown(value) -> str | float | int:
    return str(value) if isinstance(value, Fraction) else value


def _print_thresholds(results: dict[str, dict]) -> None:
    for name, r in results.items():
        s = r["cross_validated"]
        by_value = ", ".join(f"{v}: {b:.3f}" for v, b in r["balanced_by_value"].items())
        votes = ", ".join(f"{v} in {n}" for v, n in r["votes"].items())
        print(f"{name}: default {r['default']}; held-out folds chose {votes} (of "
              f"{r['repositories']}); cross-validated balanced {s['balanced_accuracy']:.3f}")
        print(f"    pooled balanced by value: {by_value}")


BAR = 3  # a rule must be right in this many repositories before it is on by default


def switch_effect(on: dict[str, list[TrackPair]], off: dict[str, list[TrackPair]]) -> dict:
    """What turning one switch on does, from the pairs by repository with it on and off:
    the pairs whose answer changes, how many of them it turns right and wrong, the
    repositories in which it turns at least one right (``repos_right``) or wrong, and the
    change in balanced accuracy (``gain``). It clears the bar when it turns answers right in
    ``BAR`` repositories and raises balanced accuracy: more right than wrong is not enough,
    as an Open pair weighs more than a Resolved one where Open is the rarer state."""
    right, wrong, repos_right, repos_wrong = 0, 0, set(), set()
    for repo, pairs in on.items():
        before = {(p.task, p.defect, p.round): p for p in off.get(repo, [])}
        for p in pairs:
            q = before.get((p.task, p.defect, p.round))
            if q is None or live_class(q.answer) == live_class(p.answer):
                continue
            if live_class(p.answer) == live_class(p.gold):
                right += 1
                repos_right.add(repo)
            else:
                wrong += 1
                repos_wrong.add(repo)
    gain = _score([p for ps in on.values() for p in ps]) - \
        _score([p for ps in off.values() for p in ps])
    return {"changed": right + wrong, "right": right, "wrong": wrong, "gain": round(gain, 4),
            "repos_right": sorted(repos_right), "repos_wrong": sorted(repos_wrong),
            "clears_bar": len(repos_right) >= BAR and gain > 0}


def bar(tasks, names: list[str]) -> dict[str, dict]:
    """Each named switch's effect, flipped alone from the defaults (``switch_effect``)."""
    saved = dict(rules.SWITCHES)
    out = {}
    try:
        for name in names:
            runs = {}
            for value in (False, True):
                rules.SWITCHES.clear()
                rules.SWITCHES.update(saved)
                rules.SWITCHES[name] = value
                runs[value] = _pairs_by_repo(tasks)
            out[name] = switch_effect(runs[True], runs[False]) | {"default": saved[name]}
    finally:
        rules.SWITCHES.clear()
        rules.SWITCHES.update(saved)
    return out


def _print_bar(effects: dict[str, dict]) -> None:
    print(f"{'switch':<30} default  changed right wrong    gain  repos right  verdict")
    for name, e in effects.items():
        verdict = "clears the bar" if e["clears_bar"] else f"below the bar of {BAR}" \
            if len(e["repos_right"]) < BAR else "no gain in balanced accuracy"
        if not e["changed"]:
            verdict = "changes no answer here"
        if name in rules.BY_DESIGN:
            verdict += "; on by design"
        elif e["default"] != e["clears_bar"]:
            verdict += " (default disagrees)"
        print(f"{name:<30} {'on' if e['default'] else 'off':<8} {e['changed']:>7} "
              f"{e['right']:>5} {e['wrong']:>5} {e['gain']:>+7.3f}  {len(e['repos_right']):>11}  "
              f"{verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tune.rules", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", required=True)
    parser.add_argument("--switches", nargs="*", default=sorted(rules.SWITCHES),
                        help="switches to tune (default: all)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bar", action="store_true",
                        help=f"instead of tuning: each switch's effect alone, and whether it is "
                             f"right in at least {BAR} repositories")
    parser.add_argument("--thresholds", nargs="*", default=None, metavar="NAME",
                        help=f"instead of switches: choose these thresholds (default: all of "
                             f"{', '.join(THRESHOLDS)})")
    args = parser.parse_args(argv)
    if args.thresholds is not None:
        unknown = set(args.thresholds) - set(THRESHOLDS)
        if unknown:
            parser.error(f"unknown thresholds: {', '.join(sorted(unknown))}")
    unknown = set(args.switches) - set(rules.SWITCHES)
    if unknown:
        parser.error(f"unknown switches: {', '.join(sorted(unknown))}")
    tasks, errors = load_tasks(args.tasks)
    for error in errors:
        print(f"skipped: {error}")
    if args.thresholds is not None:
        results = {n: tune_threshold(tasks, n) for n in args.thresholds or THRESHOLDS}
        if args.json:
            print(json.dumps(results, indent=2))
        else:
            _print_thresholds(results)
        return 0
    if args.bar:
        effects = bar(tasks, args.switches)
        if args.json:
            print(json.dumps(effects, indent=2))
        else:
            _print_bar(effects)
        return 0
    result = cross_validate(tasks, args.switches)
    naive = [p for ps in _pairs_by_repo(tasks, decide=naive_decide).values() for p in ps]
    result["naive"] = tracking_scores(naive)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name in ("cross_validated", "fitted", "naive"):
        s = result[name]
        print(f"{name:<16} balanced {s['balanced_accuracy']:.3f}  accuracy "
              f"{s['state_accuracy']:.3f}  recall Open {s['recall_by_state'].get('Open', 0):.3f}"
              f"  Resolved {s['recall_by_state'].get('Resolved', 0):.3f}  settled errors "
              f"{s['settled_errors']}/{s['settled_n']}  (live {s['n']})")
    print(f"repositories {result['repositories']}; fitted switches {result['fitted_switches']}")
    print(f"switch chosen on, per held-out fold: {result['switch_votes']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
