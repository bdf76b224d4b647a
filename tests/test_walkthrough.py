"""The model-written walkthrough: asked once on the first round, its tokens counted with the
review's, shown before the files at a glance; never asked again for later pushes."""

from __future__ import annotations

from bench.scripted_llm import ScriptedLLM, default_responder, system_text
from bot.pr.summary import Row, render
from bot.review.llm import build_llm_engine
from bot.round.gather import RoundInputs
from bot.round.plan import RoundPlan, plan

from .test_llm_reviewer import CACHE_HEAD, SETTINGS_HEAD, config, context, first_round

BULLETS = "- Adds a TTL to `ProfileCache` in `app/cache.py`.\n- Reads the TTL from settings."


def responder(request: dict) -> str:
    if "walkthrough" in system_text(request):
        return "Here is the walkthrough:\n" + BULLETS.replace("- Reads", "* Reads") + "\nThanks"
    return default_responder(request)


async def test_first_round_asks_once_and_counts_the_tokens():
    async with ScriptedLLM(responder) as server:
        engine = build_llm_engine(config(server), static_checks=False)
        first = await plan(engine, RoundInputs(first_round(title="Cache TTL"), 1, 1, 1))
        asks = [r for r in server.requests if "walkthrough" in system_text(r)]
        assert len(asks) == 1 and "Cache TTL" in asks[0]["messages"][1]["content"]
        assert "app/cache.py" in asks[0]["messages"][1]["content"]
        assert first.walkthrough == BULLETS  # bullets only, the chatter dropped
        assert first.usage.calls == len(server.requests)  # the walkthrough call is counted
        assert RoundPlan.from_json(first.to_json()).walkthrough == BULLETS  # kept with the plan
        later_ctx = context({}, {"app/cache.py": CACHE_HEAD, "app/settings.py": SETTINGS_HEAD},
                            previous={"app/cache.py": CACHE_HEAD})
        later_ctx.previous_head = "a" * 40
        second = await plan(engine, RoundInputs(later_ctx, 1, 2, 1))
        assert second.walkthrough is None
        assert len([r for r in server.requests if "walkthrough" in system_text(r)]) == 1


async def test_no_model_answer_means_no_walkthrough_and_the_round_goes_on():
    async with ScriptedLLM(responder) as server:
        for _ in range(10):
            server.push(status=500)
        engine = build_llm_engine(config(server, retries=0), static_checks=False)
        result = await plan(engine, RoundInputs(first_round(), 1, 1, 1))
        assert result.walkthrough is None


def test_the_walkthrough_comes_before_the_files_at_a_glance():
    from bot.pr.overview import FileStat, glance

    rows = [Row("D1", "New", "Minor", "F.2", "x", "app/cache.py", 3, 3, raised=1)]
    lead = ["**Walkthrough** (written by the model):", "", BULLETS, ""]
    body = render(rows, [], repo="o/r", number=7, round_number=1, head="h" * 40,
                  overview=lead + glance([FileStat("app/cache.py", 10, 2)], rows))
    assert body.index("Walkthrough") < body.index("at a glance") < body.index("#### Open")
