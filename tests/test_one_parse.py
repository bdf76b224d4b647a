"""One parsed patch per diff per round: the tracker, the offline reviewer and the LLM share it."""

from __future__ import annotations

from collections import Counter

import unidiff

from bench.scripted_llm import ScriptedLLM
from bot.review.llm import build_llm_engine

from .test_llm_reviewer import config, second_round_with_tracked_defect


async def test_an_llm_round_parses_each_diff_once_per_shape(monkeypatch):
    parsed: Counter = Counter()
    real = unidiff.PatchSet

    class CountingPatchSet(real):
        def __init__(self, data, *args, **kwargs):
            parsed[str(data)] += 1
            super().__init__(data, *args, **kwargs)

    monkeypatch.setattr(unidiff, "PatchSet", CountingPatchSet)
    ctx = second_round_with_tracked_defect()
    assert ctx.pr_diff != ctx.round_diff
    async with ScriptedLLM() as server:
        # static checks, LLM detection, and the verifier asked about every candidate
        engine = build_llm_engine(config(server, verify_below=1.01))
        result = await engine.review(ctx)
        verified = [r for r in server.requests if "verifier" in str(r["messages"][0])]
    assert verified and result.decisions  # the verifier and the tracker both read the diffs
    # one PatchSet per diff, shared by the offline reviewer, the LLM and the tracker's DiffMap
    assert parsed[ctx.pr_diff] == 1 and parsed[ctx.round_diff] == 1
    assert ctx.patches.parses == sum(parsed.values()) == 2
