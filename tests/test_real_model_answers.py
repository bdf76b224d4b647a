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
from bot.review.llm import build_llm_engine
from bot.round.gather import RoundInputs
from bot.round.plan import plan

from .test_llm_reviewer import config, first_round

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
