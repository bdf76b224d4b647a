"""The LLM judge on the reviewer's client and the one LLM configuration."""

from __future__ import annotations

import asyncio

from bench.run import RunOptions, make_judge
from bench.score.judge import LLMJudge
from bench.scripted_llm import Reply, ScriptedLLM


async def test_twin_questions_share_one_call_and_the_key_comes_from_the_config(tmp_path,
                                                                               monkeypatch):
    monkeypatch.setenv("ROUNDWISE_API_KEY", "sk-from-env-123")
    finding = {"description": "user may be None", "path": "a.py", "line_start": 3}
    card = {"description": "null user", "path": "a.py", "line_start": 3}
    async with ScriptedLLM(lambda request: Reply('{"hit": true}', delay=0.2)) as server:
        judge = make_judge(RunOptions(tasks=[], out=tmp_path, judge="openai/judge",
                                      api_base=server.url))
        assert isinstance(judge, LLMJudge) and judge.client.config.api_key == "sk-from-env-123"
        answers = await asyncio.gather(*(judge.same(finding, card) for _ in range(3)))
        assert answers == [True, True, True]
        assert len(server.requests) == 1 and judge.calls == 1 and judge.cache_hits == 2
        assert server.headers[0].get("Authorization") == "Bearer sk-from-env-123"
        assert judge.prompt_tokens > 0
