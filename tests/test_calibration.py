"""Calibrated confidence: the per-rule table, its shrinkage, and the figures that judge it."""

from __future__ import annotations

import json

import pytest

from bench.tune import calibration as fit_tracking
from tracker import calibration
from tracker.calibration import Calibration, unsure_label
from tracker.profile import SIGNALS


def test_a_rules_rate_is_shrunk_toward_the_pooled_rate():
    table = Calibration.fit([("a", True), ("a", False), ("a+confirmed", True), ("b", True),
                             ("b", False), ("b", False)])
    assert table.counts == {"a": (2, 3), "b": (1, 3)}
    assert table.base_rate == pytest.approx(0.5)  # 3 right of 6
    # one repository each: no spread measured, so the mean (right + 4 * 0.5) / (pairs + 4) is
    # credited less Z standard deviations of its own uncertainty
    mean = 4 / 7
    sd = (mean * (1 - mean) * (1 + 2 * 0) / 7) ** 0.5
    assert table.confidence("a", 0.9) == pytest.approx(mean - calibration.Z * sd)
    # a rule never seen: the pooled rate, with a prior's worth of uncertainty (no spread here)
    assert table.confidence("never-seen", 0.7) == pytest.approx(0.5 - calibration.Z * (0.25 * 0.25) ** 0.5)
    assert table.confidence("b+overturned", 0.8) < table.confidence("a", 0.9)
    assert Calibration().confidence("a", 0.7) == 0.7  # no table: the rule's own


def _outcomes(rule: str, per_repo: dict[str, tuple[int, int]]) -> list[tuple]:
    return [(rule, i < right, repo) for repo, (right, n) in per_repo.items() for i in range(n)]


def test_a_rule_right_in_one_repository_and_wrong_in_another_is_unsure_for_a_third():
    steady = _outcomes("steady", {"r1": (6, 7), "r2": (7, 8), "r3": (7, 8), "r4": (6, 7)})
    # the same 26 right of 30 pooled, but all wrong in one repository
    fickle = _outcomes("fickle", {"r1": (10, 10), "r2": (10, 10), "r3": (6, 6), "r4": (0, 4)})
    table = Calibration.fit(steady + fickle)
    pooled = {rule: right / n for rule, (right, n) in table.counts.items()}
    assert pooled["fickle"] == pooled["steady"]  # pooled, the two look alike
    assert not calibration.unsure(Calibration.fit([(r, ok) for r, ok, _ in steady + fickle])
                                  .confidence("fickle", 0.9))  # and one pool calls both sure
    # by repository, the fickle one is unsure on a fifth repository and the steady one is not
    assert calibration.unsure(table.confidence("fickle", 0.9))
    assert not calibration.unsure(table.confidence("steady", 0.9))


def test_signals_that_agree_raise_and_signals_that_conflict_lower_the_chance():
    table = Calibration.fit(_outcomes("anchor-untouched", {"r1": (8, 10), "r2": (8, 10)}),
                            weights={"O:near_changed": -1.2, "O:other_files": -0.4,
                                     "R:tests_changed": 0.8})
    alone = table.confidence("anchor-untouched", 0.8, {"near_changed": False}, "Open")
    against = table.confidence("anchor-untouched", 0.8, {"near_changed": True,
                                                          "other_files": True}, "Open")
    assert against < alone
    assert table.contributions({"near_changed": True, "other_files": True}, "Open")[0] == \
        ("near_changed", -1.2)
    # the same signal for the other answer carries the other answer's weight (none here)
    assert table.confidence("anchor-untouched", 0.8, {"near_changed": True}, "Resolved") == \
        pytest.approx(table.confidence("anchor-untouched", 0.8, {}, "Resolved"))
    why = table.explain("anchor-untouched", {"near_changed": True}, "Open")
    assert why.startswith("right in 16 of 20 pairs, in 2 of 2 repositories")
    assert "less sure for: an edit next to its lines" in why and "surer for" not in why


def test_unsure_labels_by_state():
    assert unsure_label("Resolved", 0.6) == "likely resolved (unverified)"
    assert unsure_label("Open", 0.6) == "likely still open"
    assert unsure_label("Reopened", 0.3) == "likely still open"
    assert unsure_label("Resolved", calibration.SURE) is None
    assert unsure_label("Open", None) is None


def test_brier_and_reliability_by_hand():
    rows = [{"right": True}, {"right": False}, {"right": True}, {"right": True}]
    predicted = [0.5, 1.0, 0.95, 0.55]
    # (0.25 + 1 + 0.0025 + 0.2025) / 4
    assert fit_tracking.brier(predicted, rows) == pytest.approx(0.36375)
    bins = {b["bin"]: b for b in fit_tracking.reliability(predicted, rows)}
    assert bins["0.5-0.6"]["decisions"] == 2 and bins["0.5-0.6"]["observed"] == 1.0
    assert bins["0.9-1.0"]["decisions"] == 2 and bins["0.9-1.0"]["observed"] == 0.5
    assert bins["0.9-1.0"]["predicted"] == pytest.approx(0.975)
    sure = fit_tracking.sure_part(predicted, rows)
    assert sure["sure"] == 2 and sure["sure_accuracy"] == 0.5 and sure["unsure_share"] == 0.5


def test_leave_one_repository_out_never_uses_the_held_out_repository():
    rows = [{"repo": "x", "rule": "r", "own": 0.5, "right": True},
            {"repo": "x", "rule": "r", "own": 0.5, "right": True},
            {"repo": "y", "rule": "r", "own": 0.5, "right": False}]
    # x's rows see only y's (0 of 1 right, so the pooled rate is 0): the floor; y's see only
    # x's two right ones (rate 1): the ceiling
    held = fit_tracking.held_out(rows)
    assert held[0] == held[1] < 0.01 and held[2] > 0.99


def test_the_table_shipped_with_the_tracker_is_the_one_the_script_writes(tmp_path):
    data = json.loads(calibration.TABLE.read_text(encoding="utf-8"))
    assert data["written_by"] == "python -m bench.tune.calibration --write"
    assert all(0 <= v["right"] <= v["pairs"] for v in data["rules"].values())
    assert "anchor-untouched" in data["rules"] and "stays-resolved" in data["rules"]
    for row in data["rules"].values():  # per repository, adding up to the pooled counts
        assert sum(r for r, _ in row["by_repository"].values()) == row["right"]
        assert sum(n for _, n in row["by_repository"].values()) == row["pairs"]
        assert len(row["by_repository"]) == row["repositories"]
    assert set(data["signals"]) and all(k.split(":")[-1] in SIGNALS or k.startswith("ans=")
                                        or k == "live" for k in data["signals"])
    assert calibration.current().weights == data["signals"]


def test_switched_off_the_rules_own_confidences_stand(monkeypatch):
    monkeypatch.setenv("ROUNDWISE_CALIBRATION", "off")
    assert calibration.current().counts == {}
    monkeypatch.delenv("ROUNDWISE_CALIBRATION")
    assert calibration.current().counts


def test_fit_tracking_runs_on_the_bundled_examples(capsys):
    assert fit_tracking.main(["--tasks", "bench/examples", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["leave_one_repository_out"]
    assert result["decisions"] > 0 and 0 <= result["brier"] <= 1


def test_tracking_scores_report_the_unsure_share_and_the_accuracy_when_sure():
    from bench.score.metrics import TrackPair, tracking_scores

    pairs = [TrackPair("t", "D1", 2, "New", "Open", "Open", 0.9),  # sure, right
             TrackPair("t", "D2", 2, "New", "Resolved", "Open", 0.4),  # unsure, wrong
             TrackPair("t", "D3", 2, "Open", "Resolved", "Resolved", 0.8),  # sure, right
             TrackPair("t", "D4", 2, "Open", "Open", "Resolved", 0.7),  # unsure, wrong
             TrackPair("t", "D5", 2, "New", "Open", "Open", None),  # not known: left out
             TrackPair("t", "D6", 3, "Resolved", "Resolved", "Resolved", 0.2)]  # settled
    scores = tracking_scores(pairs)
    assert scores["unsure_share"] == 0.5 and scores["sure_accuracy"] == 1.0
    assert scores["sure_n"] == 2
    assert "unsure_share" not in tracking_scores([TrackPair("t", "D1", 2, "New", "Open",
                                                            "Open")])


def test_a_repositorys_verdicts_update_its_rates_with_the_development_table_as_prior():
    table = Calibration.fit(_outcomes("anchor-untouched", {"r1": (9, 10), "r2": (8, 10),
                                                           "r3": (9, 10), "r4": (10, 10)}))
    unseen = table.rule_rate("anchor-untouched")
    assert not calibration.unsure(unseen)
    contradicted = [table.for_repository({"anchor-untouched": (0, n)}).rule_rate(
        "anchor-untouched") for n in (1, 4, 12)]
    assert contradicted[0] < unseen and contradicted == sorted(contradicted, reverse=True)
    assert not calibration.unsure(contradicted[0])  # one weak label does not swing it alone
    # however widely the rule's rate spread between repositories
    spread = Calibration.fit(_outcomes("fickle", {"r1": (5, 5), "r2": (0, 5), "r3": (5, 5),
                                                  "r4": (5, 5), "r5": (5, 5)}))
    one = spread.for_repository({"fickle": (0, 1)}).rule_rate("fickle")
    assert spread.rule_rate("fickle") - one < 0.1
    assert calibration.unsure(contradicted[-1])  # a dozen "wrong" there: unsure there
    confirmed = table.for_repository({"anchor-untouched": (12, 12)}).rule_rate("anchor-untouched")
    assert confirmed > unseen
    # a rule the development table never saw starts from the pooled rate
    assert table.for_repository({"new-rule": (0, 5)}).rule_rate("new-rule") < \
        table.rule_rate("new-rule")
    assert table.for_repository({}) is table
    assert "here people confirmed 0 of 4" in table.for_repository(
        {"anchor-untouched": (0, 4)}).explain("anchor-untouched")


def test_replaying_a_repositorys_tasks_in_order_feeds_its_verdicts_forward():
    from bench.score.tracking import replay_tasks, replay_with_feedback
    from bench.tasks.mcr import load_tasks
    from tests.conftest import EXAMPLES

    tasks, _ = load_tasks([EXAMPLES])
    plain = {r.task.task_id: r for r in replay_tasks(tasks)}
    fed = {r.task.task_id: r for r in replay_with_feedback(tasks)}
    assert {k: r.answers for k, r in plain.items()} == {k: r.answers for k, r in fed.items()}
    firsts, later = set(), []
    for replay in fed.values():  # the first task of each repository is judged as unseen
        repo = replay.task.repo
        if repo not in firsts:
            firsts.add(repo)
            assert replay.confidence == plain[replay.task.task_id].confidence
        else:
            later.append(replay)
    assert later  # example/shop has two tasks
    for replay in later:  # the examples' decisions are all right: confirmed, more trusted
        before = plain[replay.task.task_id].confidence
        raised = [(c, before[t][k]) for t, row in replay.confidence.items() for k, c in row.items()
                  if k in before[t]]
        assert raised and all(c >= b for c, b in raised) and any(c > b for c, b in raised)
