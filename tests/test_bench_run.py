"""`roundwise bench run` end to end: the real bot on loopback, scored, with reports."""

import json
import shutil

from bench.cli import headline
from roundwise.cli import main
from tests.conftest import EXAMPLES

JAVA = EXAMPLES / "example-java-order-store.json"


def run(capsys, *args):
    code = main(["bench", "run", "--quiet", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_java_example_scores_as_computed_by_hand(tmp_path, capsys):
    out = tmp_path / "run"
    code, stdout, _ = run(capsys, "--tasks", str(JAVA), "--out", str(out))
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    # Round 1: the offline reviewer raises the hard-coded password (line 8) and the
    # swallowed exception (lines 13-14); "no tests" is only a note by default. Both cards are
    # due and each matches one finding: tp 2 of 2 findings, 2 due.
    # Round 2: the reviewer's comments joined those two defects; the catch is fixed
    # (Resolved, turned this round: still a finding and due), the password is Open:
    # tp 2 of 2 findings, 2 due. Overall precision 4/4, recall 4/4, F1 1.0.
    d = summary["detection"]
    assert (d["tp"], d["findings"], d["due"]) == (4, 4, 4)
    assert d["precision"] == 1.0 and d["recall"] == 1.0 and d["f1"] == 1.0
    # the matched states: New/New in round 1, Resolved/Resolved and Open/Open in round 2
    assert summary["state_accuracy"] == 1.0 and summary["state_n"] == 4
    assert summary["state_confusion"]["Open"]["Open"] == 1
    assert summary["tracking"]["n"] == 2 and summary["tracking"]["state_accuracy"] == 1.0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["round"] for r in records] == [1, 2]
    assert sorted(map(tuple, records[1]["matches"])) == [("D1", "D2"), ("D2", "D1")]
    states = {d["key"]: d["state"] for d in records[1]["defects"]}
    assert states == {"D1": "Open", "D2": "Resolved"}
    assert "report:" in stdout and (out / "report.md").exists()
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 2
    # Own detection: both round-1 findings are the bot's (tp 2 of 2 due); in round 2 the
    # reviewer's comments joined them, but the bot raised them, so they stay its own.
    lines = headline(summary).splitlines()
    assert lines[1].startswith("the reviewer is OFFLINE")
    assert lines[2].startswith("own detection, round 1     precision 1.000  recall 1.000")
    assert summary["own"]["round_1"]["tp"] == 2 and summary["carried"]["findings"] == 0


def test_resume_keeps_finished_tasks_and_bad_files_are_skipped_by_name(tmp_path, capsys):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(JAVA, tasks / "java.json")
    (tasks / "broken.json").write_text('{"schema": "mcr-task/1", "rounds": []}')
    out = tmp_path / "run"
    code, _, err = run(capsys, "--tasks", str(tasks), "--out", str(out))
    assert code == 0
    assert "skipped:" in err and "broken.json" in err
    per_task = out / "tasks" / "example-java-order-store.jsonl"
    first = per_task.read_text()
    # mark the finished task's record: a resumed run must reuse it, not replay the task
    per_task.write_text(first.replace('"seconds": ', '"seconds": 1000.0, "was": '))
    code, _, _ = run(capsys, "--tasks", str(tasks), "--out", str(out), "--resume")
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seconds"]["total"] >= 2000.0
    assert summary["run"]["skipped_inputs"] and summary["tasks"] == 1


def test_compare_prints_signed_deltas(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    run(capsys, "--tasks", str(JAVA), "--out", str(a))
    run(capsys, "--tasks", str(EXAMPLES), "--out", str(b))
    assert main(["bench", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and ("+" in out or "-" in out)
    assert main(["bench", "compare", str(a), str(tmp_path / "missing")]) == 2


def test_no_valid_tasks_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "x.json").write_text("[]")
    code, _, err = run(capsys, "--tasks", str(tmp_path), "--out", str(tmp_path / "o"))
    assert code == 2 and "no valid tasks" in err
    assert f"{tmp_path / 'x.json'}: a task is a JSON object" in err  # and why


async def test_timeout_flag_reaches_the_bot_and_calls_without_answer_are_counted(tmp_path,
                                                                                 capsys,
                                                                                 monkeypatch):
    import asyncio

    from bench.scripted_llm import Reply, ScriptedLLM

    monkeypatch.delenv("ROUNDWISE_LLM_TIMEOUT", raising=False)  # 60 s: the flag must win
    task = EXAMPLES / "example-java-order-store.json"
    async with ScriptedLLM(lambda request: Reply('{"findings": []}', delay=2.0)) as llm:
        code = await asyncio.to_thread(
            main, ["bench", "run", "--quiet", "--tasks", str(task), "--out", str(tmp_path),
                   "--model", "openai/slow", "--api-base", llm.url, "--timeout", "0.2"])
    # the model never answered: the run fails, with one line saying why, after its report
    assert code == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["llm"]["failed"] >= 2 and summary["llm"]["dropped"]["llm_error"] >= 2
    out = capsys.readouterr()
    assert f"model      {summary['llm']['calls']} call(s), {summary['llm']['failed']} " \
           "without an answer; dropped " in out.out and "llm_error" in out.out
    [line] = [x for x in out.err.splitlines() if "never answered" in x]
    assert line.startswith(f"roundwise: the model openai/slow never answered "
                           f"({summary['llm']['failed']} calls without an answer: no answer "
                           "from openai/slow: Timeout")
    assert line.endswith("pass --offline-fallback to keep such a run")


def test_a_model_that_cannot_be_used_fails_the_run_unless_offline_fallback(tmp_path, capsys):
    code, out, err = run(capsys, "--tasks", str(JAVA), "--out", str(tmp_path / "a"),
                         "--model", "nosuchprovider/foo")
    assert (code, out) == (2, "")  # refused before anything was replayed
    assert err == ("roundwise: --model='nosuchprovider/foo': litellm does not know this model's "
                   "provider; prefix it with one, e.g. openai/, anthropic/, ollama/\n")
    assert not (tmp_path / "a").exists()
    code, out, err = run(capsys, "--tasks", str(JAVA), "--out", str(tmp_path / "b"),
                         "--model", "nosuchprovider/foo", "--offline-fallback")
    assert code == 0 and "reviewer offline" in out
    assert err.splitlines()[-1] == ("roundwise: replaying with the offline reviewer "
                                    "(--offline-fallback)")


def test_a_malformed_task_file_is_one_line_with_where_and_why_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "mcr-task/1",\n "rounds": [}')
    want = f"roundwise: {bad}: line 2, column 13: not valid JSON (Expecting value)\n"
    for argv in (["demo", "--tasks", str(bad)], ["bench", "tracking", "--tasks", str(bad)],
                 ["bench", "run", "--quiet", "--tasks", str(bad), "--out", str(tmp_path / "o")]):
        assert main(argv) == 2, argv
        printed = capsys.readouterr()
        assert (printed.out, printed.err) == ("", want), argv
    # named beside a good task, it still stops the run: the person asked for it by name
    assert main(["demo", "--tasks", str(JAVA), str(bad)]) == 2
    broken = json.loads(JAVA.read_text())
    del broken["rounds"][1]["head_sha"]
    bad.write_text(json.dumps(broken))
    assert main(["demo", "--tasks", str(bad)]) == 2
    assert capsys.readouterr().err.endswith(
        f"roundwise: {bad}: round 2: missing field 'head_sha'\n")
