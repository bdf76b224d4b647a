"""The honest headline: own detection apart from carried defects, the run header, tracking
beside a baseline, and the progress of a run. Expected figures are worked out by hand."""

from __future__ import annotations

import copy
import io

import pytest

from bench.cli import headline
from bench.progress import Progress
from bench.report import render_html, render_markdown
from bench.score.judge import OfflineJudge
from bench.score.scoring import score
from tests.test_scoring import (
    DOC_BOT,
    SQL_BOT,
    SQL_CARD,
    TYPO_CARD,
    card,
    comment,
    found,
    make_task,
    record,
)

# Two rounds. After round 1 a reviewer comments 501, raising K1. K2 is found by the bot in
# round 1 and fixed in round 2; K3 appears in round 2 and nobody finds it.
TWO = make_task("two", "Go", 2, [
    card("K1", "f.go", 10, 10, ["New", "Open"], "F.2", "Major", [501], TYPO_CARD),
    card("K2", "f.go", 30, 30, ["New", "Resolved"], "F.4", "Minor", [], SQL_CARD),
    card("K3", "g.go", 5, 5, [None, "New"], "E.1.1", "Minor", [], "unused import"),
], events={1: [comment(501, "f.go", 10)]})


def two_round_records(k2_round_2: str = "Resolved") -> list[dict]:
    return [
        # Round 1: B1 (own) hits K2; B2 (own) is nowhere near a card. Due K1, K2.
        record("two", 1, [found("B1", "f.go", 30, 30, "New", SQL_BOT),
                          found("B2", "g.go", 99, 99, "New", DOC_BOT)], 1, 10),
        # Round 2: H1 is the reviewer's comment 501, carried (Open); B1 turned Resolved
        # (still a finding, and the same ledger defect keeps matching K2); B2 is Resolved
        # already (not a finding). Due K1 (Open), K2 (turned Resolved), K3 (New).
        record("two", 2, [found("H1", "f.go", 10, 10, "Open", "typo", comment_ids=[501],
                                origin="human"),
                          found("B1", "f.go", 30, 30, k2_round_2, SQL_BOT, previous="New"),
                          found("B2", "g.go", 99, 99, "Resolved", DOC_BOT,
                                previous="Resolved")], 1, 10),
    ]


@pytest.fixture
def two_summary() -> dict:
    return score([TWO], two_round_records(), OfflineJudge())


def test_own_and_carried_split_by_hand(two_summary):
    s = two_summary
    # Combined (the protocol): R1 tp 1 of findings 2, due 2; R2 tp 2 (H1-K1, B1-K2) of
    # findings 2 (H1, B1), due 3. Total tp 3, findings 4, due 5: P 3/4, R 3/5, F1 6/9.
    d = s["detection"]
    assert (d["tp"], d["findings"], d["due"]) == (3, 4, 5)
    assert d["f1"] == pytest.approx(6 / 9)
    # Own: B1 in both rounds matched, B2 in round 1 not: tp 2, findings 3, due 5.
    own = s["own"]
    assert (own["tp"], own["findings"], own["due"]) == (2, 3, 5)
    assert own["precision"] == pytest.approx(2 / 3) and own["recall"] == pytest.approx(0.4)
    assert own["f1"] == pytest.approx(4 / 8)
    # Round 1 alone: tp 1 of 2 findings, 2 due.
    r1 = own["round_1"]
    assert (r1["tp"], r1["findings"], r1["due"], r1["precision"], r1["recall"]) == \
        (1, 2, 2, 0.5, 0.5)
    assert (own["per_round"]["R2"]["tp"], own["per_round"]["R2"]["due"]) == (1, 3)
    # Carried: H1 only, in round 2; own + carried = combined.
    carried = s["carried"]
    assert (carried["tp"], carried["findings"], carried["due"]) == (1, 1, 5)
    assert carried["f1"] == pytest.approx(2 / 6)
    assert own["tp"] + carried["tp"] == d["tp"]
    assert own["findings"] + carried["findings"] == d["findings"]
    # No carried findings in round 1: precision undefined, not 0 or 1.
    assert carried["per_round"]["R1"]["precision"] is None
    # Own hits per type: K2 (F.4) due and hit in both rounds, K1 (F.2) due twice, hit by
    # nobody of the bot's own, K3 (E.1.1) due once.
    assert own["per_type"]["F.4"] == {"hit_rate": 1.0, "hit": 2, "due": 2}
    assert own["per_type"]["F.2"]["hit"] == 0 and own["per_type"]["E.1.1"]["due"] == 1
    assert own["per_language"]["Go"]["tp"] == 2


def test_a_run_where_the_bot_found_nothing_has_no_own_precision():
    # Only the carried H1 in round 2 and nothing of the bot's: own precision is undefined,
    # own recall 0 of 5 due, while the combined precision is 1/1.
    records = two_round_records()
    records[0]["defects"] = []
    records[1]["defects"] = records[1]["defects"][:1]
    s = score([TWO], records, OfflineJudge())
    assert s["detection"]["precision"] == 1.0
    assert s["own"]["precision"] is None and s["own"]["recall"] == 0.0
    md = render_markdown(s)
    assert "| Own, all rounds | 2 | - | 0.000 | 0.000 | 5 | 0 | 0 |" in md
    assert "| Carried, all rounds | 2 | 1.000 | 0.200 | 0.333 | 5 | 1 | 1 |" in md


def test_headline_leads_with_own_detection_and_says_when_offline(two_summary):
    s = {**two_summary, "run": {"model": "offline", "judge": "offline"}}
    lines = headline(s).splitlines()
    assert "OFFLINE" in lines[1]
    assert lines[2] == ("own detection, round 1     precision 0.500  recall 0.500  f1 0.500  "
                        "(matched 1 of 2 due, 2 findings)")
    assert lines[3].startswith("own detection, all rounds  precision 0.667  recall 0.400")
    assert lines[4].startswith("tracking")
    assert lines[5].startswith("combined detection (protocol)  precision 0.750")
    assert lines[5].endswith("carried matched 1")
    online = headline({**two_summary, "run": {"model": "openai/x", "judge": "offline"}})
    assert "OFFLINE" not in online


def test_report_header_and_the_baseline_beside_tracking(two_summary):
    s = copy.deepcopy(two_summary)
    s["run"] = {"model": "offline", "judge": "offline", "version": "9.9.9",
                "commit": "abc123", "date": "2026-01-02 03:04 UTC"}
    # Live pairs: K1 (New -> Open, answered Open by H1) and K2 (New -> Resolved; the bot's
    # B1 matched it in round 1 and answers Resolved): both right.
    assert s["tracking"]["n"] == 2 and s["tracking"]["state_accuracy"] == 1.0
    md = render_markdown(s)
    for row in ("| roundwise | 9.9.9 (commit abc123) |", "| date | 2026-01-02 03:04 UTC |",
                "| reviewer | offline static checks (no LLM) |", "| line tolerance | 1 |",
                "| tasks | 1 (2 task-rounds scored) |",
                "| roundwise | Live | 2 | 1.000 | 1.000 | 1.000 | 1.000 | 0 |"):
        assert row in md, row
    assert "| naive baseline |" not in md and "1 of the 3 matched findings are defects people" in md
    s["tracking"]["baseline"] = {"n": 2, "state_accuracy": 0.5, "balanced_accuracy": 0.5,
                                 "recall_by_state": {"Open": 0.0, "Resolved": 1.0},
                                 "settled_n": 0, "settled_errors": 0}
    md = render_markdown(s)
    assert "| naive baseline | Live | 2 | 0.500 | 0.500 | 0.000 | 1.000 | 1 |" in md
    html = render_html(s)
    assert "<td>naive baseline</td><td>Live</td>" in html
    assert html.index("Detection: own findings") < html.index("Combined detection by language")


def test_progress_prints_a_line_per_task_in_a_log():
    log = io.StringIO()
    progress = Progress({"a": 2, "b": 3}, stream=log, terminal=False)
    progress.round_done("a", 1)
    progress.round_done("a", 2)
    progress.task_done("a", 2)
    progress.round_done("b", 1)
    progress.task_done("b", 1, "BotError: boom")
    progress.close()
    assert log.getvalue().splitlines() == [
        "[1/2 tasks, 2/5 rounds] a: 2 round(s)",
        "[2/2 tasks, 3/5 rounds] b: failed: BotError: boom",
    ]
    assert "\r" not in log.getvalue()


def test_progress_bar_counts_rounds_and_names_the_task_on_a_terminal():
    screen = io.StringIO()
    progress = Progress({"a": 2, "b": 3}, stream=screen, terminal=True)
    progress.round_done("b", 1)
    progress.round_done("b", 2)
    progress.task_done("b", 2)
    progress.close()
    text = screen.getvalue()
    assert "2/5" in text and "b R2" in text and "round" in text
    assert "tasks," not in text  # no per-task lines on a terminal
    quiet = io.StringIO()
    Progress({"a": 1}, enabled=False, stream=quiet, terminal=False).task_done("a", 1)
    assert quiet.getvalue() == ""
