"""The bot with a model configured: the real server, the fake GitHub and a scripted LLM."""

import json
import re

from bench.replay.github import Harness, bench_repo, replay_task
from bench.scripted_llm import ScriptedLLM, message_text, system_text
from bench.tasks.mcr import load_task
from tests.conftest import EXAMPLES

TASK = EXAMPLES / "example-python-profile-cache.json"


def responder(request: dict) -> str:
    """Detection: one finding on the cache line. Verification: nothing is resolved, quoting
    the line the cache is read on."""
    text = message_text(request)
    if "defect verifier" in system_text(request):
        keys = dict.fromkeys(re.findall(r'<defect key="([^"]+)"', text))
        return json.dumps({"verdicts": [
            {"key": k, "resolved": False, "evidence": "the query still runs before the cache",
             "quote": 'profile = query_one("select * from profiles where user_id = ?", '
                      'user_id)'} for k in keys]})
    if "cached = cache.get" in text and "R1-marker" not in text:
        return json.dumps({"findings": [{
            "path": "app/users.py", "line_start": 14, "line_end": 14, "side": "RIGHT",
            "description": "The cache is read after the database query, so every call pays "
                           "for the query.", "type": "F.6", "severity": "Major",
            "confidence": 0.9}]})
    return json.dumps({"findings": []})


async def test_llm_findings_and_verdicts_flow_through_the_bot(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUNDWISE_API_KEY", "sk-secret-test-key")
    monkeypatch.setenv("ROUNDWISE_VERIFY_BELOW", "1.01")  # the rules' sure ones asked too
    task = load_task(TASK)
    async with ScriptedLLM(responder) as llm:
        async with Harness(tmp_path / "l.db", model="openai/scripted", api_base=llm.url,
                           workers=1) as h:
            records = await replay_task(h, task)
            repo = bench_repo(task)
            reviews = [c for c in h.fake.review_comments(repo, 7)
                       if c["user"]["login"] == h.fake.bot_login and "**D" in c["body"]]
            pr = h.ledger.find_pull_request(repo, 7)
            rounds = h.ledger.rounds(pr["id"])
            histories = {d.key: h.ledger.history(pr["id"], d.key)
                         for d in h.ledger.defects(pr["id"])}
        bodies = llm.bodies
    # round 1: the model's finding is raised and posted inline on line 14
    r1 = {d["key"]: d for d in records[0]["defects"]}
    llm_defects = [d for d in r1.values() if d["rule"] is None and d["origin"] == "bot"]
    assert len(llm_defects) == 1 and llm_defects[0]["line_start"] == 14
    assert any(c["original_line"] == 14 and "cache is read after" in c["body"] for c in reviews)
    # round 2: the fix moved the cache read; the rules call it resolved, but the scripted
    # verifier says it is not (quoting the code): the LLM's verdict stands, evidence kept
    r2 = {d["key"]: d for d in records[1]["defects"]}
    key = llm_defects[0]["key"]
    assert r2[key]["state"] == "Open"
    decided = [row for row in histories[key] if row["round"] == 2][-1]
    assert decided["decided_by"] == "llm" and decided["rule"].endswith("+overturned")
    assert "verifier:" in decided["evidence"] and "query still runs" in decided["evidence"]
    # tokens were counted per round, and the key never went into a prompt
    assert rounds[0]["prompt_tokens"] > 0 and rounds[1]["prompt_tokens"] > 0
    assert not any("sk-secret-test-key" in body for body in bodies)
