"""Calibrated confidence: the per-rule table, its shrinkage, and the figures that judge it."""

from __future__ import annotations

import json

import pytest

from bench.tune import calibration as fit_tracking
from tracker import calibration
from tracker.calibration import Calibration, unsure_label


def test_a_rules_rate_is_shrunk_toward_the_pooled_rate():
    table = Calibration.fit([("a", True), ("a", False), ("a+confirmed", True), ("b", True),
                             ("b", False), ("b", False)])
    assert table.counts == {"a": (2, 3), "b": (1, 3)}
    assert table.base_rate == pytest.approx(0.5)  # 3 right of 6
    # (right + 4 * 0.5) / (pairs + 4): (2 + 2) / 7 and (1 + 2) / 7, whatever the own confidence
    assert table.confidence("a", 0.9) == pytest.approx(4 / 7)
    assert table.confidence("b+overturned", 0.8) == pytest.approx(3 / 7)
    assert table.confidence("never-seen", 0.7) == pytest.approx(0.5)  # (0 + 2) / 4
    assert Calibration().confidence("a", 0.7) == 0.7  # no table: the rule's own


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
    # x's rows see only y's (0 of 1, pooled rate 0): 0 / 5; y's see x's two right (rate 1):
    # (2 + 4) / 6
    assert fit_tracking.held_out(rows) == pytest.approx([0.0, 0.0, 1.0])


def test_the_table_shipped_with_the_tracker_is_the_one_the_script_writes(tmp_path):
    data = json.loads(calibration.TABLE.read_text(encoding="utf-8"))
    assert data["written_by"] == "python -m bench.tune.calibration --write"
    assert all(0 <= v["right"] <= v["pairs"] for v in data["rules"].values())
    assert "anchor-untouched" in data["rules"] and "stays-resolved" in data["rules"]


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
