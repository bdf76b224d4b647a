"""`roundwise review` on a real local git repository, run twice across new commits."""

import asyncio
import json
import socket
import subprocess

import pytest

from bot.cli.local import llm_config
from bot.review.llm_config import LLM_SETTINGS
from roundwise.cli import build_parser, main


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def commit(repo, text, message):
    (repo / "calc.py").write_text(text)
    git(repo, "commit", "-qam", message)


def review(repo, capsys, fmt="json"):
    code = main(["review", "--repo", str(repo), "--base", "main", "--format", fmt])
    assert code == 0
    out = capsys.readouterr().out
    return json.loads(out) if fmt != "text" else out


def test_second_run_reports_resolved_and_open_like_the_bot(repo, capsys):
    commit(repo, "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n"
                 "    print('dividing', a, b)\n    # TODO: handle b == 0\n    return a / b\n",
           "add div")
    first = review(repo, capsys)
    assert first["round"] == 1 and first["branch"] == "feature"
    rules = {d["rule"]: d for d in first["defects"]}
    assert rules["debug-print"]["state"] == "New" and rules["debug-print"]["line_start"] == 6
    assert rules["todo-comment"]["state"] == "New"
    # the author removes the print but keeps the TODO
    commit(repo, "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n"
                 "    # TODO: handle b == 0\n    return a / b\n", "drop print")
    second = review(repo, capsys)
    assert second["round"] == 2
    by_key = {d["key"]: d for d in second["defects"]}
    printed = by_key[rules["debug-print"]["key"]]
    todo = by_key[rules["todo-comment"]["key"]]
    assert (printed["state"], printed["previous"]) == ("Resolved", "New")
    assert todo["state"] == "Open" and todo["line_start"] == 6
    assert len(second["defects"]) == len(first["defects"])  # nothing re-raised as New
    # the same head again is not a new round
    assert review(repo, capsys)["round"] == 2
    assert (repo / ".git" / "roundwise" / "ledger.db").exists()


def test_text_and_sarif_output(repo, capsys):
    commit(repo, "def add(a, b):\n    console = 1\n    # FIXME later\n    return a + b\n", "x")
    text = review(repo, capsys, "text")
    assert text.startswith("roundwise round 1 of feature")
    assert "New" in text and "calc.py:3" in text
    sarif = review(repo, capsys, "sarif")
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    todo = [r for r in results if r["ruleId"] == "todo-comment"]
    assert todo and todo[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_unknown_ref_is_a_clear_error(repo, capsys):
    code = main(["review", "--repo", str(repo), "--base", "no-such-branch"])
    assert code == 2
    assert "roundwise:" in capsys.readouterr().err


# --- the model's settings: ROUNDWISE_* as for the server, flags over them ----------------------

DIV = ("def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n")


def _clear_llm_env(monkeypatch):
    for name in LLM_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


async def test_review_reaches_a_server_named_only_by_roundwise_api_base(repo, capsys,
                                                                        monkeypatch):
    from bench.scripted_llm import ScriptedLLM

    _clear_llm_env(monkeypatch)
    commit(repo, DIV, "add div")
    finding = json.dumps({"findings": [{
        "path": "calc.py", "line_start": 6, "line_end": 6, "side": "RIGHT",
        "description": "Division by zero is not handled.", "type": "F.1",
        "severity": "Major", "confidence": 0.9}]})
    async with ScriptedLLM(lambda request: finding) as llm:
        monkeypatch.setenv("ROUNDWISE_API_BASE", llm.url)
        code = await asyncio.to_thread(main, ["review", "--repo", str(repo), "--base", "main",
                                              "--model", "openai/x", "--format", "json"])
        requests = list(llm.requests)
    assert code == 0
    assert requests and {r["model"] for r in requests} == {"x"}
    report = json.loads(capsys.readouterr().out)
    described = [d for d in report["defects"] if d["description"].startswith("Division")]
    assert described and described[0]["state"] == "New" and described[0]["line_start"] == 6


def test_unreachable_model_exits_2_with_one_line_unless_offline_fallback(repo, capsys,
                                                                        monkeypatch):
    _clear_llm_env(monkeypatch)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ROUNDWISE_MODEL", "openai/x")
    commit(repo, DIV + "    # TODO: zero\n", "add div")
    args = ["review", "--repo", str(repo), "--base", "main", "--format", "json",
            "--api-base", f"http://127.0.0.1:{port}/v1"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "openai/x" in lines[0] and "could not be reached" in lines[0]
    # nothing was recorded: the same round is played again, with the offline reviewer
    assert main(args + ["--offline-fallback"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["round"] == 1
    assert any(d["rule"] == "todo-comment" for d in report["defects"])
    assert "offline reviewer" in captured.err


def test_a_missing_provider_key_is_named_as_serve_names_it(repo, capsys, monkeypatch):
    _clear_llm_env(monkeypatch)
    commit(repo, DIV + "    # TODO: zero\n", "add div")
    args = ["review", "--repo", str(repo), "--base", "main", "--format", "json",
            "--model", "openai/gpt-4o-mini"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("roundwise: --model='openai/gpt-4o-mini' needs OPENAI_API_KEY, "
                            "which is not set (or ROUNDWISE_API_KEY for an OpenAI-compatible "
                            "server)\n")  # without -v, and before any call is tried
    monkeypatch.setenv("ROUNDWISE_MODEL", "openai/gpt-4o-mini")
    assert main(args[:-2] + ["--offline-fallback"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        ("roundwise: ROUNDWISE_MODEL='openai/gpt-4o-mini' needs OPENAI_API_KEY, which is not "
         "set (or ROUNDWISE_API_KEY for an OpenAI-compatible server)"),
        "roundwise: reviewing with the offline reviewer (--offline-fallback)"]
    assert any(d["rule"] == "todo-comment" for d in json.loads(captured.out)["defects"])


def test_flags_override_the_environment():
    parser = build_parser()
    env = {"ROUNDWISE_MODEL": "openai/a", "ROUNDWISE_API_BASE": "http://env/v1",
           "ROUNDWISE_API_KEY": "sk-env", "ROUNDWISE_FALLBACK_MODEL": "openai/b",
           "ROUNDWISE_LLM_TIMEOUT": "5", "ROUNDWISE_MAX_PROMPT_TOKENS": "1000",
           "ROUNDWISE_LLM_CACHE": "/tmp/c"}
    plain = llm_config(parser.parse_args(["review", "--base", "main"]), env)
    assert (plain.model, plain.api_base, plain.api_key, plain.fallback_model, plain.timeout,
            plain.max_prompt_tokens, plain.cache_dir) == (
        "openai/a", "http://env/v1", "sk-env", "openai/b", 5.0, 1000, "/tmp/c")
    flagged = llm_config(parser.parse_args(
        ["review", "--base", "main", "--model", "openai/z", "--api-base", "http://flag/v1",
         "--timeout", "9", "--max-prompt-tokens", "2000"]), env)
    assert (flagged.model, flagged.api_base, flagged.api_key, flagged.timeout,
            flagged.max_prompt_tokens) == ("openai/z", "http://flag/v1", "sk-env", 9.0, 2000)
    assert llm_config(parser.parse_args(["review", "--base", "main"]), {}) is None


def test_invalid_llm_setting_is_a_clear_error(repo, capsys, monkeypatch):
    monkeypatch.setenv("ROUNDWISE_MODEL", "openai/x")
    monkeypatch.setenv("ROUNDWISE_LLM_TIMEOUT", "soon")
    assert main(["review", "--repo", str(repo), "--base", "main"]) == 2
    assert "ROUNDWISE_LLM_TIMEOUT='soon'" in capsys.readouterr().err


def test_settings_come_from_the_base_not_the_branch(tmp_path, capsys):
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "dev@example.com")
    git(tmp_path, "config", "user.name", "dev")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "roundwise.yml").write_text('ignore_paths: ["gen/*"]\n')
    (tmp_path / "calc.py").write_text("X = 1\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "checkout", "-qb", "feature")
    (tmp_path / ".github" / "roundwise.yml").write_text("ignore_paths: []\n")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "out.py").write_text("def f():\n    print('x')  # TODO\n")
    (tmp_path / "calc.py").write_text("X = 1\n# TODO: more\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "branch")
    report = review(tmp_path, capsys)
    paths = {d["path"] for d in report["defects"]}
    assert "calc.py" in paths and "gen/out.py" not in paths


def test_fail_on_exits_1_while_a_severe_defect_stands(repo, capsys):
    commit(repo, "def add(a, b):\n    breakpoint()\n    print(a)\n    return a + b\n", "debug")
    args = ["review", "--repo", str(repo), "--base", "main", "--format", "json"]
    assert main(args + ["--fail-on", "critical"]) == 0  # nothing that severe
    capsys.readouterr()
    assert main(args + ["--fail-on", "major"]) == 1  # the breakpoint is Major
    err = capsys.readouterr().err
    assert "1 open defect(s) at or above Major" in err
    commit(repo, "def add(a, b):\n    print(a)\n    return a + b\n", "no breakpoint")
    assert main(args + ["--fail-on", "Major"]) == 0  # resolved: only the Minor print stands
    capsys.readouterr()
    assert main(args + ["--fail-on", "Minor"]) == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(args + ["--fail-on", "severe"])


def test_fixes_are_printed_and_written_as_a_patch_that_applies(repo, capsys, tmp_path):
    commit(repo, "def add(a, b):\n    total = a + b\n    print(total)\n    breakpoint()\n"
                 "    return total\n", "debug")
    patch = tmp_path / "fixes.patch"
    code = main(["review", "--repo", str(repo), "--base", "main", "--format", "text",
                 "--fix-patch", str(patch)])
    out, err = capsys.readouterr()
    assert code == 0 and "fix: delete the line\n" in out
    assert "wrote 2 fix(es)" in err
    subprocess.run(["git", "-C", str(repo), "apply", str(patch)], check=True)
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    total = a + b\n    return total\n"
    git(repo, "commit", "-qam", "apply the fixes")
    second = review(repo, capsys)
    assert {d["rule"]: d["state"] for d in second["defects"]} == {
        "debug-print": "Resolved", "debugger-statement": "Resolved"}


async def test_dropped_answers_are_counted_and_v_shows_the_models_warnings(repo, capsys,
                                                                           monkeypatch):
    from bench.scripted_llm import ScriptedLLM, system_text

    _clear_llm_env(monkeypatch)
    commit(repo, DIV, "add div")
    outside = json.dumps({"findings": [{
        "path": "calc.py", "line_start": 90, "line_end": 99, "description": "x is unused",
        "type": "F.2", "severity": "Major", "confidence": 0.9}]})

    def respond(request):
        return "- adds div" if "walkthrough" in system_text(request) else outside

    args = ["review", "--repo", str(repo), "--base", "main", "--model", "openai/x",
            "--format", "json"]
    async with ScriptedLLM(respond) as llm:
        monkeypatch.setenv("ROUNDWISE_API_BASE", llm.url)
        assert await asyncio.to_thread(main, args) == 0
        quiet = capsys.readouterr().err
        commit(repo, DIV + "# more\n", "more")
        llm.responder = lambda request: "this is not JSON"
        assert await asyncio.to_thread(main, args + ["-v"]) == 0
        loud = capsys.readouterr().err
    assert "dropped this round: outside_diff 1 (-v shows each)" in quiet
    assert "dropped this round: malformed 1" in loud
    assert "still unusable after one repair" in loud  # the model's warning, shown with -v
    assert "still unusable" not in quiet
