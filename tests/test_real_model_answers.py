"""What a real small model answered (tests/fixtures/real_model/), replayed through the scripted
server: every answer goes through the same HTTP, client, parser and engine as a live model's.

Each test reproduces one thing the live model exposed (issue 25): a walkthrough asked in JSON
mode, a verifier that overturns sure rulings, prompt text pasted as evidence, paths written as
``path:line``, a model that times out.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.scripted_llm import Reply, ScriptedLLM, default_responder, system_text
from bot.review.engine import RoundContext
from bot.review.llm import build_llm_engine
from bot.round.gather import RoundInputs
from bot.round.plan import plan
from tracker.lifecycle import State
from tracker.models import DecidedBy, Defect

from .test_llm_reviewer import config, context, first_round

FIXTURES = Path(__file__).parent / "fixtures" / "real_model"


def real(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def like_llama_cpp(markdown: str, json_answer: str):
    """A server that honours ``response_format`` the way llama.cpp does: a JSON object when
    JSON mode is asked (here the model's real answer), prose otherwise."""
    def respond(request: dict) -> str | Reply:
        if "walkthrough" not in system_text(request):
            return default_responder(request)
        return json_answer if request.get("response_format") else markdown
    return respond


# --------------------------------------------------------------------------- 1. walkthrough


async def test_the_walkthrough_is_asked_without_json_mode_and_appears():
    bullets = "- Adds `OrderStore.open` in `OrderStore.java`."
    respond = like_llama_cpp(bullets, real("walkthrough_json_mode.json")["answer"])
    async with ScriptedLLM(respond) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await plan(engine, RoundInputs(first_round(), 1, 1, 1))
        [ask] = [r for r in server.requests if "walkthrough" in system_text(r)]
        others = [r for r in server.requests if "walkthrough" not in system_text(r)]
    assert "response_format" not in ask  # asked for Markdown, so no JSON mode
    assert all(r.get("response_format") == {"type": "json_object"} for r in others)
    assert result.walkthrough == bullets


# --------------------------------------------------------------------------- 2. and 3. verifier

QUOTA_FIXED = ("export async function checkQuota(store, userId) {\n"
               "  const used = await store.get(userId);\n"
               "  return used < LIMIT;\n}\n")
LEAK = '  console.log("quota check for", userId);\n'
QUOTA_BACK = QUOTA_FIXED.replace("{\n", "{\n" + LEAK, 1)


def reopened_round() -> RoundContext:
    """Round 3 of the JavaScript example: D1's logging line, removed in round 2, is back."""
    d1 = Defect(key="D1", description="logs the user id on every quota check",
                origin="human", state=State.RESOLVED, raised_round=1, state_round=2,
                path="src/quota.js", line_start=2, line_end=2,
                code="  const used = await store.get(userId);", resolved_code=LEAK.strip())
    return context({"src/quota.js": "export {};\n"}, {"src/quota.js": QUOTA_BACK},
                   previous={"src/quota.js": QUOTA_FIXED}, tracked=[d1])


def replay_verdicts(answer: str):
    def respond(request: dict) -> str:
        if "defect verifier" in system_text(request):
            return answer
        return json.dumps({"findings": []})
    return respond


async def test_a_sure_reopened_is_not_put_to_the_model_and_stays_reopened(monkeypatch):
    from tracker import calibration

    # a table in which code coming back was always a real return, in many repositories
    sure = calibration.Calibration.fit([("fingerprint-reappeared", True, f"r{i}")
                                        for i in range(40)])
    monkeypatch.setattr(calibration, "current", lambda: sure)
    respond = replay_verdicts(real("verdict_placeholder_evidence.json")["answer"])
    async with ScriptedLLM(respond) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await engine.review(reopened_round())
        asked = [r for r in server.requests if "defect verifier" in system_text(r)]
    [d1] = result.decisions
    assert (d1.state, d1.rule) == (State.REOPENED, "fingerprint-reappeared")
    assert d1.confidence >= 0.5 and asked == []  # never asked: the rule is sure


async def test_even_when_asked_an_overturn_needs_a_quote_from_the_head():
    respond = replay_verdicts(real("verdict_placeholder_evidence.json")["answer"])
    async with ScriptedLLM(respond) as server:
        engine = build_llm_engine(config(server, verify_below=1.01), static_checks=False)
        result = await engine.review(reopened_round())
    [d1] = result.decisions
    assert d1.state is State.REOPENED and "+overturned" not in d1.rule


def remark_round() -> RoundContext:
    """An unsure Open (a remark on the whole PR, calibrated about 0.6): what the verifier is for."""
    remark = Defect(key="D1", description="please fold the quota checks into one helper",
                    origin="human", state=State.NEW, raised_round=1, state_round=1)
    return context({"src/quota.js": "export {};\n"}, {"src/quota.js": QUOTA_FIXED},
                   previous={"src/quota.js": "export {};\n"}, tracked=[remark])


async def test_the_prompt_placeholder_pasted_as_evidence_is_rejected():
    respond = replay_verdicts(real("verdict_placeholder_evidence.json")["answer"])
    async with ScriptedLLM(respond) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await engine.review(remark_round())
        [asked] = [r for r in server.requests if "defect verifier" in system_text(r)]
    assert 'key="D1"' in asked["messages"][1]["content"]  # unsure: it was asked
    [d1] = result.decisions
    assert d1.state is State.OPEN and d1.decided_by is DecidedBy.RULE
    assert "copied exactly" not in d1.evidence
    assert result.dropped["verify_echoes_prompt"] == 1


async def test_an_unsure_open_is_overturned_by_a_real_quote():
    verdict = {"verdicts": [{"key": "D1", "resolved": True, "evidence": "one helper now",
                             "quote": "const used = await store.get(userId);"}]}
    async with ScriptedLLM(replay_verdicts(json.dumps(verdict))) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await engine.review(remark_round())
    [d1] = result.decisions
    assert (d1.state, d1.decided_by) == (State.RESOLVED, DecidedBy.LLM)
    assert "const used = await store.get(userId);" in d1.evidence


def test_echoes_spots_the_answer_shape_not_real_evidence():
    from bot.review.llm.parse import echoes
    from bot.review.llm.prompts import system_prompt

    prompt = system_prompt("verify_system.txt")
    assert echoes("the line(s) of current code that show it, copied exactly, or \"\" if the "
                  "code is gone", prompt)
    assert echoes("one sentence on why", prompt)
    assert not echoes("store.get(userId) is awaited now, so the count is right", prompt)
    assert not echoes("the check was removed", prompt)


# --------------------------------------------------------------------------- 5. paths and spans

EXAMPLES = Path(__file__).parent.parent / "bench" / "examples"


def quota_round_1() -> RoundContext:
    task = json.loads((EXAMPLES / "example-javascript-quota.json").read_text(encoding="utf-8"))
    first = task["rounds"][0]
    return RoundContext(repo="example/gateway", number=31, round=1, head_sha=first["head_sha"],
                        base_sha=task["pr"]["base_sha"], pr_diff=first["diff"],
                        round_diff=first["diff"], files=dict(first["files"]))


def replay_findings(answer: str):
    def respond(request: dict) -> str:
        return answer if "walkthrough" not in system_text(request) else "- x"
    return respond


async def test_a_path_written_as_path_colon_lines_is_kept_and_clamped_to_the_hunk():
    respond = replay_findings(real("findings_path_with_lines.json")["answer"])
    async with ScriptedLLM(respond) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await engine.review(quota_round_1())
    [kept] = result.findings  # was: both dropped as outside the PR
    assert (kept.path, kept.line_start, kept.line_end) == ("src/quota.js", 5, 13)
    assert "not awaited" in kept.description
    assert result.dropped == {"outside_diff": 1}  # the LEFT one: line 12 was never removed


async def test_a_whole_file_span_is_clamped_to_the_changed_lines():
    respond = replay_findings(real("findings_whole_file.json")["answer"])
    async with ScriptedLLM(respond) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        ctx = quota_round_1()
        ctx.settings.min_severity = "Trivial"  # the model called it Trivial
        result = await engine.review(ctx)
    [kept] = result.findings  # was: dropped as outside the diff (line 28 of 13)
    assert (kept.path, kept.line_start, kept.line_end) == ("src/quota.js", 1, 13)


async def test_diff_prefixes_are_dropped_from_paths():
    item = {"path": "b/src/quota.js", "line_start": 7, "line_end": 7, "description":
            "the awaited value may be undefined, not only null", "type": "F.2",
            "severity": "Major", "confidence": 0.8}
    async with ScriptedLLM(replay_findings(json.dumps({"findings": [item]}))) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await engine.review(quota_round_1())
    assert [(f.path, f.line_start) for f in result.findings] == [("src/quota.js", 7)]


def test_split_location_reads_the_forms_models_write():
    from bot.review.llm.parse import split_location

    assert split_location("app/auth.py:8") == ("app/auth.py", (8, 8))
    assert split_location("./app/auth.py:14-5") == ("app/auth.py", (5, 14))
    assert split_location("`app/auth.py`") == ("app/auth.py", None)
    assert split_location("C:/odd/name.py") == ("C:/odd/name.py", None)


# --------------------------------------------------------------------------- 4. no answer


def slow_model(seconds: float):
    """A model too slow for the client's timeout, like the 0.5B model on 2 CPU threads with a
    prompt over ~5k tokens; the walkthrough aside (it answers)."""
    def respond(request: dict) -> Reply:
        if "walkthrough" in system_text(request):
            return Reply("- Adds a profile cache.")
        return Reply(json.dumps({"findings": []}), delay=seconds)
    return respond


async def test_a_model_that_never_answers_is_said_in_the_summary_check_run_and_metrics(
        tmp_path, monkeypatch):
    from bench.replay.github import Harness, bench_repo, replay_task
    from bench.tasks.mcr import load_task

    from .conftest import EXAMPLES

    monkeypatch.setenv("ROUNDWISE_LLM_TIMEOUT", "0.3")
    task = load_task(EXAMPLES / "example-python-profile-cache.json")
    task.rounds = task.rounds[:1]
    async with ScriptedLLM(slow_model(1.5)) as llm:
        async with Harness(tmp_path / "l.db", model="openai/scripted", api_base=llm.url,
                           workers=1) as h:
            await replay_task(h, task)
            repo = bench_repo(task)
            summaries = [c["body"] for c in h.fake.issue_comments(repo, 7)
                         if c["user"]["login"] == h.fake.bot_login]
            [run] = h.fake.check_runs(repo)
            async with h.session.get(f"{h.url}/metrics") as resp:
                metrics = await resp.text()
            plan = h.ledger.plan(h.ledger.find_pull_request(repo, 7)["id"], 1)
        detect = [r for r in llm.requests if "roundwise's code reviewer" in system_text(r)]
    said = "The model did not answer in round 1"
    assert any(said in body and "tracked from the code only" in body for body in summaries)
    assert said in run["output"]["summary"]
    assert plan["usage"]["failed"] >= 1 and plan["dropped"]["llm_error"] >= 1
    failures = [ln for ln in metrics.splitlines()
                if ln.startswith("roundwise_llm_failures_total{")]
    assert failures and float(failures[0].split()[-1]) >= 1
    # each detection call: 1 + 2 retries at once, then once more after the others
    assert len(detect) == 4 * plan["usage"]["failed"]


async def test_a_call_that_failed_is_asked_once_more_later_and_its_answer_used():
    from .test_llm_reviewer import answer, finding

    async with ScriptedLLM(lambda r: answer(finding())) as server:
        server.push(delay=1.0).push(delay=1.0)  # the first call and its one retry time out
        engine = build_llm_engine(config(server, timeout=0.3, retries=1), static_checks=False)
        result = await engine.review(first_round())
    assert [(f.path, f.line_start) for f in result.findings] == [("app/cache.py", 3)]
    assert result.usage.failed == 0 and not result.notes


async def test_lines_written_into_the_path_win_over_the_shapes_example_numbers():
    answer = real("findings_lines_in_path_example_lines_in_fields.json")["answer"]
    assert '"line_start": 42' in answer  # the prompt's example, copied
    async with ScriptedLLM(replay_findings(answer)) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        result = await engine.review(quota_round_1())
    spans = {(f.path, f.line_start, f.line_end) for f in result.findings}
    assert ("src/quota.js", 8, 9) in spans and ("src/quota.js", 3, 13) in spans


def test_a_sub_type_the_taxonomy_lacks_is_read_as_its_parent():
    from bot.review.llm.parse import parse_findings

    findings, dropped = parse_findings(real("findings_sub_type.json")["answer"])
    assert [f.type for f in findings] == ["F.3", "F.3"] and not dropped  # was: both invalid
