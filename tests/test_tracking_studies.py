"""The two tracking studies' arithmetic, on cases small enough to compute by hand.

``bench.studies.learned_rules`` (a model over the rules' evidence against the rule table) and
``bench.studies.semantic_signal`` (a sentence model's similarity as evidence) report figures
in the tracking issue's note; what they compute is checked here. The learned-rules study also
runs end to end on the bundled example tasks; the semantic one needs a sentence model that is
not a dependency, so only its model-free parts run.
"""

from pathlib import Path

import numpy as np

from bench.studies.learned_rules import balanced, fit_logistic, observed_decisions, study
from bench.studies.semantic_signal import added_since, auroc
from bench.tasks.mcr import load_tasks

EXAMPLES = Path(__file__).resolve().parent.parent / "bench" / "examples"


def test_auroc_counts_wins_and_half_ties():
    # pairs (positive, negative): (0.9,0.1) win, (0.9,0.5) win, (0.5,0.1) win, (0.5,0.5) tie
    assert auroc([0.9, 0.5], [0.1, 0.5]) == (3 + 0.5) / 4
    assert auroc([0.2], [0.8]) == 0.0
    assert auroc([], [0.3]) is None


def test_added_since_keeps_only_lines_the_earlier_round_did_not_add():
    earlier = "+++ b/a.py\n+x = 1\n+y = 2\n"
    later = "+++ b/a.py\n+x = 1\n+y = 3\n-y = 2\n+\n"
    assert added_since(later, earlier) == ["y = 3"]  # header, kept line and blank line dropped
    assert added_since(later, None) == ["x = 1", "y = 3"]


def test_balanced_is_the_mean_of_per_class_recall():
    y = np.array([1, 1, 1, 0])
    # Resolved recall 2/3, Open recall 1/1 -> (2/3 + 1) / 2
    assert balanced(np.array([1, 1, 0, 0]), y) == (2 / 3 + 1) / 2
    assert balanced(np.array([1, 1, 1, 1]), y) == 0.5  # "always Resolved" scores half


def test_the_logistic_fit_learns_a_separating_feature_and_balances_classes():
    # feature 0 decides the class, feature 1 is noise; 6 of one class, 2 of the other
    x = np.array([[1, 0], [1, 1], [1, 0], [1, 1], [1, 0], [1, 1], [0, 1], [0, 0]], float)
    y = np.array([1, 1, 1, 1, 1, 1, 0, 0], float)
    w, b = fit_logistic(x, y, c=10.0)
    assert ((x @ w + b) > 0).tolist() == [True] * 6 + [False] * 2
    assert abs(w[1]) < abs(w[0])
    # a feature that fires on every row gives no evidence: with balanced class weights and no
    # other feature, the fit cannot prefer either class (score near 0, not tilted to the 6)
    w, b = fit_logistic(np.ones((8, 1)), y, c=0.1)
    assert abs(float(np.ones(1) @ w + b)) < 0.05


def test_the_learned_rules_study_runs_on_the_examples():
    tasks, _ = load_tasks([EXAMPLES])
    rows = observed_decisions(tasks)
    assert rows and all(r["first"] in r["fired"] for r in rows)  # the first rule is among those
    result = study(rows)
    assert result["decisions"] == len(rows)
    assert result["table"] == 1.0  # the table gets every example pair right (bench tracking)
    assert set(result["model"]) == {f"{w} C={c}" for w in ("fired", "first", "both")
                                    for c in (0.1, 1.0, 10.0)}


def test_the_confidence_designs_study_scores_each_design_and_restores_the_model(capsys):
    from bench.studies import confidence_designs
    from tracker import calibration

    z, spread = calibration.Z, calibration.Calibration.spread
    assert confidence_designs.main(["--tasks", str(EXAMPLES)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == list(confidence_designs.DESIGNS)
    assert all(line.split()[1] == "LORO" for line in lines[1:])
    assert calibration.Z == z and calibration.Calibration.spread is spread
    with confidence_designs.design(0.0, False):  # the pooled design: no spread, no discount
        table = calibration.Calibration.fit([("r", True, "a"), ("r", False, "b")])
        assert table.rule_rate("r") == table.base_rate == 0.5
