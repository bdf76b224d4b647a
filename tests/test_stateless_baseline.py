"""`bench run --baseline stateless`: the whole-history protocol through a scripted model."""

import json

import pytest

from bench.run import RunOptions, run
from bench.scripted_llm import ScriptedLLM, message_text
from tests.conftest import EXAMPLES

JAVA = EXAMPLES / "example-java-order-store.json"


def stateless_answer(request: dict) -> str:
    """Round 1: the password only, as New. Round 2: the password Open, the catch Resolved."""
    text = message_text(request)
    round2 = "round 2" in text.lower() or 'round="2"' in text
    password = {"path": "src/main/java/shop/orders/OrderStore.java", "line_start": 8,
                "line_end": 8, "description": "A production password is hard-coded in the "
                "source; read it from configuration.", "type": "F.7", "severity": "Critical",
                "state": "Open" if round2 else "New"}
    items = [password]
    if round2:
        items.append({"path": "src/main/java/shop/orders/OrderStore.java", "line_start": 13,
                      "line_end": 14, "description": "The SQLException is swallowed and null "
                      "returned.", "type": "F.4", "severity": "Major", "state": "Resolved"})
    return json.dumps({"findings": items})


async def test_stateless_baseline_is_scored_like_the_bot(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    async with ScriptedLLM(stateless_answer) as llm:
        summary = await run(RunOptions(
            tasks=[str(JAVA)], out=tmp_path / "s", model="openai/scripted", api_base=llm.url,
            baseline="stateless", progress=False))
        assert len(llm.requests) == 2  # one prompt per round, no bot, no verifier
        second = message_text(llm.requests[1])
        assert "Hard-coded production password" in second  # round 1's review is in the history
    # Round 1: 1 finding (password) matches 1 of 2 due cards. Round 2: 2 findings match both
    # due cards (password Open, catch turned Resolved). tp 3, findings 3, due 4.
    d = summary["detection"]
    assert (d["tp"], d["findings"], d["due"]) == (3, 3, 4)
    assert d["precision"] == 1.0 and d["recall"] == pytest.approx(0.75)
    assert summary["state_accuracy"] == 1.0
    assert summary["run"]["baseline"] == "stateless"


async def test_stateless_baseline_needs_a_model(tmp_path):
    with pytest.raises(ValueError, match="needs --model"):
        await run(RunOptions(tasks=[str(JAVA)], out=tmp_path, baseline="stateless"))
