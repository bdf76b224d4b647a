"""Replaying human review through the tracker alone, and the tracking metrics."""

import json

import pytest

from bench.score.metrics import TrackPair, tracking_scores
from bench.score.tracking import naive_decide, replay_tasks, score_replays
from bench.tasks.mcr import TaskError, load_task, load_tasks
from roundwise.cli import main
from tests.conftest import EXAMPLES, MCR_DEV, needs_shared_data


def pair(before, gold, answer, defect="D1", round=2):
    return TrackPair("t", defect, round, before, gold, answer)


def test_tracking_scores_by_hand():
    pairs = [
        pair("New", "Open", "Open"),  # live, right
        pair("New", "Open", "Resolved", "D2"),  # live, wrong
        pair("Open", "Resolved", "Resolved", "D3"),  # live, right
        pair("New", "Resolved", "Resolved", "D4"),  # live, right
        pair("Reopened", "Resolved", None, "D5"),  # live, untracked -> wrong
        pair("Resolved", "Resolved", "Resolved", "D6"),  # settled, right
        pair("Resolved", "Resolved", "New", "D7"),  # settled, re-raised -> error
        pair("Resolved", "Reopened", "Resolved", "D8"),  # settled, missed the comeback -> error
        pair("Resolved", "Reopened", "Reopened", "D9"),  # settled, right
    ]
    s = tracking_scores(pairs)
    assert s["n"] == 5 and s["state_accuracy"] == pytest.approx(3 / 5)
    # Open recall 1/2, Resolved recall 2/3 -> balanced (1/2 + 2/3) / 2 = 7/12
    assert s["recall_by_state"] == {"Open": 0.5, "Resolved": pytest.approx(2 / 3)}
    assert s["balanced_accuracy"] == pytest.approx(7 / 12)
    assert s["untracked"] == 1
    assert (s["settled_n"], s["settled_errors"]) == (4, 2)


def test_always_resolved_scores_half_on_balanced_accuracy():
    pairs = [pair("New", g, "Resolved", f"D{i}") for i, g in
             enumerate(["Open", "Resolved", "Resolved", "Resolved"])]
    s = tracking_scores(pairs)
    assert s["state_accuracy"] == 0.75 and s["balanced_accuracy"] == 0.5


def test_bundled_examples_replay_with_the_labelled_states():
    tasks, errors = load_tasks([EXAMPLES])
    assert errors == [] and len(tasks) == 3
    replays = {r.task.task_id: r for r in replay_tasks(tasks)}
    fig1 = replays["example-python-profile-cache"]
    assert fig1.answers[2] == {"D1": "Resolved", "D2": "Open"}
    assert fig1.answers[3] == {"D1": "Resolved", "D2": "Resolved"}
    assert fig1.evidence[3]["D2"].startswith("tests-added")
    quota = replays["example-javascript-quota"]
    assert quota.answers[3]["D1"] == "Reopened"
    s = score_replays(list(replays.values()))
    assert s["balanced_accuracy"] == 1.0 and s["settled_errors"] == 0


def test_task_loader_reports_bad_files_by_name(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text(json.dumps({"schema": "other/1"}))
    good = json.loads((EXAMPLES / "example-java-order-store.json").read_text())
    good["defects"][0]["states"] = ["New"]
    (tmp_path / "short.json").write_text(json.dumps(good))
    tasks, errors = load_tasks([tmp_path])
    assert tasks == []
    assert any("bad.json: line 1, column 2: not valid JSON" in e for e in errors)
    assert any("wrong.json: schema is 'other/1'" in e for e in errors)
    assert any("short.json: defect D1: 1 states for 2 rounds" in e for e in errors)
    with pytest.raises(TaskError, match="no such file"):
        load_tasks([tmp_path / "missing"])


def test_snapshots_and_inter_round_diffs_of_a_bundled_task():
    task = load_task(EXAMPLES / "example-python-profile-cache.json")
    base = task.base_files()
    assert "def get_user_profile" not in base["app/users.py"]
    assert base["tests/test_users.py"] is None  # the PR adds it in round 3
    snap2 = task.snapshot(2)
    assert snap2["tests/test_users.py"] is None and "cached = cache.get" in snap2["app/users.py"]
    diff = task.diff_between(2, 3)
    assert "+++ b/tests/test_users.py" in diff and "app/users.py" not in diff


def test_demo_prints_every_round(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "example-python-profile-cache" in out
    assert "D2   Resolved  tests-added" in out
    assert "balanced accuracy 1.000" in out


@needs_shared_data
def test_real_tasks_replay_through_the_tracker():
    tasks, errors = load_tasks([MCR_DEV])
    assert errors == []
    by_id = {t.task_id: t for t in tasks}
    # osu-framework 2020: a suggestion nobody applied stays Open for four rounds
    osu = replay_tasks([by_id["ppy__osu-framework-2020"]])[0]
    key = osu.key_for(osu.task.defects[0])
    assert [osu.answers[t][key] for t in (2, 3, 4, 5)] == ["Open"] * 4
    # pytest 11160: untouched in round 2 (Open), docstring rewritten in round 3 (Resolved)
    pyt = replay_tasks([by_id["pytest-dev__pytest-11160"]])[0]
    key = pyt.key_for(pyt.task.defects[0])
    assert (pyt.answers[2][key], pyt.answers[3][key]) == ("Open", "Resolved")
    assert pyt.evidence[2][key].startswith("anchor-untouched")
    assert pyt.evidence[3][key].startswith("anchor-deleted")
    # type-fest 447: a readme fix undone in round 3 is Reopened, then fixed again
    tf = replay_tasks([by_id["sindresorhus__type-fest-447"]])[0]
    keys = [tf.key_for(card) for card in tf.task.defects]
    assert [tf.answers[t][keys[0]] for t in (2, 3, 4)] == ["Resolved", "Reopened", "Resolved"]
    assert [tf.answers[t][keys[1]] for t in (2, 3, 4)] == ["Open", "Resolved", "Resolved"]


@needs_shared_data
def test_tracking_over_all_real_tasks_beats_the_naive_tracker_and_re_raises_nothing():
    tasks, _ = load_tasks([MCR_DEV])
    replays = replay_tasks(tasks)
    s = score_replays(replays)
    naive = score_replays(replay_tasks(tasks, decide=naive_decide))
    assert s["tasks"] == naive["tasks"] == 35 and s["n"] == naive["n"] >= 80
    assert s["balanced_accuracy"] > naive["balanced_accuracy"] + 0.1
    assert s["recall_by_state"]["Open"] > 0.75
    # A defect the tracker itself called Resolved is never re-raised while it stays Resolved.
    re_raised = [
        p for r in replays for p in r.pairs()
        if p.settled and p.gold == "Resolved" and p.answer != "Resolved"
        and r.answers[p.round - 1].get(r.key_for(next(c for c in r.task.defects
                                                     if c["id"] == p.defect))) == "Resolved"
    ]
    assert re_raised == []


def test_tracking_prints_the_naive_baseline_side_by_side(capsys):
    assert main(["bench", "tracking", "--tasks", str(EXAMPLES), "--baseline", "naive"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "roundwise" in line)
    assert header.split() == ["roundwise", "naive"]
    balanced = next(line for line in out.splitlines() if line.startswith("balanced accuracy"))
    ours, naive = map(float, balanced.split()[-2:])
    assert ours == 1.0 and naive < ours  # the examples' suggestion and tests defeat the naive
    assert main(["bench", "tracking", "--tasks", str(EXAMPLES), "--baseline", "naive",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"]["n"] == data["n"] == 9


def test_tuning_reports_held_out_figures_per_repository():
    from bench.tune.rules import cross_validate
    from tracker import rules

    tasks, _ = load_tasks([EXAMPLES])
    before = dict(rules.SWITCHES)
    result = cross_validate(tasks, ["tests_cover_subject"])
    assert rules.SWITCHES == before  # the tuner leaves the switches as it found them
    assert result["repositories"] == 2  # example/shop (Python, Java) and example/gateway (JS)
    # Holding out example/gateway, the switch is chosen on example/shop, whose Python task's
    # "add tests" only it resolves: on. Holding out example/shop, gateway cannot tell (no
    # test request there) and the default (on) stands. So both folds keep it on.
    assert result["switch_votes"] == {"tests_cover_subject": "2/2 folds on"}
    assert result["cross_validated"]["balanced_accuracy"] == 1.0


def test_the_bar_counts_the_answers_a_switch_changes_and_where_it_turns_them_right():
    from bench.score.metrics import TrackPair
    from bench.tune.rules import bar, switch_effect

    def pair(task, gold, answer):
        return TrackPair(task, "D1", 2, "New", gold, answer)

    # Off: three answers Open. On: a/ and b/ turn Resolved (gold Resolved: right), c/ turns
    # Resolved too (gold Open: wrong); d/ is unchanged. Right 2, wrong 1, but in only two
    # repositories: below the bar of 3 although more right than wrong.
    off = {"a": [pair("a-1", "Resolved", "Open")], "b": [pair("b-1", "Resolved", "Open")],
           "c": [pair("c-1", "Open", "Open")], "d": [pair("d-1", "Open", "Open")]}
    on = {"a": [pair("a-1", "Resolved", "Resolved")], "b": [pair("b-1", "Resolved", "Resolved")],
          "c": [pair("c-1", "Open", "Resolved")], "d": [pair("d-1", "Open", "Open")]}
    effect = switch_effect(on, off)
    assert (effect["changed"], effect["right"], effect["wrong"]) == (3, 2, 1)
    assert effect["repos_right"] == ["a", "b"] and effect["repos_wrong"] == ["c"]
    assert effect["clears_bar"] is False
    on["d"] = [pair("d-1", "Open", "Reopened")]  # Reopened is Open: no change in d/
    assert switch_effect(on, off)["changed"] == 3
    off["e"], on["e"] = [pair("e-1", "Resolved", "Open")], [pair("e-1", "Resolved", "Resolved")]
    # balanced accuracy off: Open recall 2/2, Resolved 0/3 -> 0.5; on: 1/2 and 3/3 -> 0.75
    assert switch_effect(on, off)["gain"] == 0.25
    assert switch_effect(on, off)["clears_bar"] is True  # right in a, b, e, and a gain
    # Six more Resolved pairs, already right and unchanged: the three flips to Resolved now
    # gain less (Resolved recall 6/9 -> 9/9) than the wrong flip of c/ costs (Open 2/2 -> 1/2):
    # balanced 0.833 -> 0.75. Right in three repositories, more right than wrong, yet not on.
    off["g"] = on["g"] = [pair(f"g-{i}", "Resolved", "Resolved") for i in range(6)]
    effect = switch_effect(on, off)
    assert (effect["right"], effect["wrong"], len(effect["repos_right"])) == (3, 1, 3)
    assert effect["gain"] == round(0.75 - (6 / 9 + 1) / 2, 4) and effect["clears_bar"] is False

    from tracker import rules
    tasks, _ = load_tasks([EXAMPLES])
    before = dict(rules.SWITCHES)
    effects = bar(tasks, ["tests_cover_subject", "claimed_and_scope_changed"])
    assert rules.SWITCHES == before
    # only example/shop's Python task asks for tests that only this rule resolves
    assert effects["tests_cover_subject"]["repos_right"] == ["example/shop"]
    assert effects["tests_cover_subject"]["right"] >= 1
    assert effects["tests_cover_subject"]["wrong"] == 0


def test_rule_usage_counts_live_pairs_per_deciding_rule_and_repository(capsys):
    from bench.score.tracking import rule_usage

    tasks, _ = load_tasks([EXAMPLES])
    usage = rule_usage(replay_tasks(tasks))
    assert sum(r["pairs"] for r in usage.values()) == 9  # every live pair, once
    assert (usage["anchor-modified"]["pairs"], usage["anchor-modified"]["right"],
            len(usage["anchor-modified"]["repos"])) == (4, 4, 2)
    naive_replays = replay_tasks(tasks, decide=naive_decide)
    naive = rule_usage(naive_replays)
    scores = score_replays(naive_replays)
    assert set(naive) == {"naive"} and naive["naive"]["pairs"] == 9
    assert naive["naive"]["right"] == round(scores["state_accuracy"] * 9) < 9
    assert main(["bench", "tracking", "--tasks", str(EXAMPLES), "--by-rule"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("anchor-modified"))
    assert row.split()[1:] == ["4", "4", "2", "2"]


def test_a_threshold_is_chosen_per_held_out_repository_by_hand():
    from bench.score.metrics import TrackPair
    from bench.tune.rules import choose_by_fold

    def pair(task, gold, answer):
        return TrackPair(task, "D1", 2, "New", gold, answer)

    # Value 6 (the default) answers every pair Open; value 3 resolves a/ (gold Resolved) and
    # b/ (gold Resolved) but also c/ (gold Open). Pooled: with 6, Open 1/1, Resolved 0/2 ->
    # 0.5; with 3, Open 0/1, Resolved 2/2 -> 0.5: a tie, so the fitted value is the default.
    six = {"a": [pair("a", "Resolved", "Open")], "b": [pair("b", "Resolved", "Open")],
           "c": [pair("c", "Open", "Open")]}
    three = {"a": [pair("a", "Resolved", "Resolved")], "b": [pair("b", "Resolved", "Resolved")],
             "c": [pair("c", "Open", "Resolved")]}
    result = choose_by_fold({6: six, 3: three}, 6)
    assert result["balanced_by_value"] == {6: 0.5, 3: 0.5} and result["fitted"] == 6
    # Holding out a/: on b/ and c/, 6 scores 0.5 (Open 1/1, Resolved 0/1) and 3 scores 0.5
    # (0/1, 1/1): tie, the default 6; a/ is then wrong. Same for b/. Holding out c/: on a/
    # and b/ (no Open pair) 6 scores 0.0 and 3 scores 1.0, so 3; c/ is then wrong too.
    assert result["votes"] == {6: 2, 3: 1}
    assert result["cross_validated"]["state_accuracy"] == 0.0


def test_threshold_tuning_replays_each_value_and_restores_the_default():
    from bench.tune.rules import THRESHOLDS, tune_threshold
    from tracker import rules

    tasks, _ = load_tasks([EXAMPLES])
    result = tune_threshold(tasks, "WIDE_RANGE")
    assert rules.WIDE_RANGE == 6 and result["default"] == 6
    assert set(result["balanced_by_value"]) == set(THRESHOLDS["WIDE_RANGE"][2])
    assert sum(result["votes"].values()) == result["repositories"] == 2


def test_every_scored_pair_is_written_as_a_record(tmp_path, capsys):
    out = tmp_path / "deep" / "pairs.jsonl"
    assert main(["bench", "tracking", "--tasks", str(EXAMPLES), "--pairs", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    live = [r for r in records if r["live"]]
    assert len(live) == 9 and all(r["right"] for r in records)  # the examples score 1.0
    tests_added = next(r for r in records if r["task"] == "example-python-profile-cache"
                       and r["defect"] == "D2" and r["round"] == 3)
    assert (tests_added["gold"], tests_added["answer"], tests_added["rule"]) == \
        ("Resolved", "Resolved", "tests-added")
    assert tests_added["comment"] and 0 < tests_added["confidence"] <= 1
    assert f"wrote {len(records)} pairs" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit, match="cannot write"):
        main(["bench", "tracking", "--tasks", str(EXAMPLES), "--pairs",
              str(blocker / "pairs.jsonl")])


def test_an_untracked_open_defect_is_a_wrong_record_as_the_scores_count_it():
    from bench.score.tracking import pair_records

    tasks, _ = load_tasks([EXAMPLES])
    replay = next(r for r in replay_tasks(tasks) if r.task.task_id ==
                  "example-python-profile-cache")
    key = replay.key_for(next(c for c in replay.task.defects if c["id"] == "D2"))
    del replay.answers[2][key]  # gold Open at round 2: no answer is wrong, not "not Resolved"
    record = next(r for r in pair_records(replay) if r["defect"] == "D2" and r["round"] == 2)
    assert (record["gold"], record["answer"], record["right"]) == ("Open", None, False)
    assert score_replays([replay])["untracked"] == 1


def test_tracking_json_carries_risk_and_coverage_fitted_and_leave_one_repository_out(capsys):
    assert main(["bench", "tracking", "--tasks", str(EXAMPLES), "--json"]) == 0
    risk = json.loads(capsys.readouterr().out)["risk"]
    assert set(risk) == {"shipped_table", "leave_one_repository_out"}
    for figures in risk.values():
        assert figures["live"] == 9 and figures["decisions"] >= figures["live"]
        cover = {c["coverage"]: c for c in figures["coverage"]}
        assert list(cover) == [0.5, 0.7, 0.9, 1.0]
        assert cover[1.0]["decisions"] == 9 and cover[0.5]["decisions"] in (4, 5)
        assert cover[1.0]["accuracy"] == 1.0  # the examples' answers are all right
        assert 0 <= figures["brier"] <= 1 and 0 <= figures["sure_share"] <= 1
        assert figures["sure_resolved"]["n"] + figures["sure_open"]["n"] == \
            round(figures["sure_share"] * 9)
        assert sum(b["decisions"] for b in figures["reliability"]) == figures["decisions"]
        assert sum(r["pairs"] for r in figures["rules"]) == 9
        assert all(r["repositories_right"] <= r["repositories"] for r in figures["rules"])
    # held out, each repository is predicted by the other's rules only: another model
    assert risk["shipped_table"]["brier"] != risk["leave_one_repository_out"]["brier"]


def test_coverage_ranks_by_confidence_and_scores_the_most_confident_share():
    from bench.score.risk import figures

    records = [{"live": True, "right": i < 6, "answer": "Resolved", "gold": "Resolved",
                "confidence": 0.9 - i * 0.05, "rule": "r", "repo": f"x{i % 2}"}
               for i in range(10)]
    out = figures(records, sure=0.75)
    cover = {c["coverage"]: c["accuracy"] for c in out["coverage"]}
    assert cover[0.5] == 1.0 and cover[1.0] == 0.6  # the five most confident are the right ones
    assert out["sure_share"] == 0.4 and out["sure_resolved"] == {"n": 4, "precision": 1.0}
    assert out["rules"][0]["repositories"] == 2 and out["rules"][0]["spread"] == 0.0
