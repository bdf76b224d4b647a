"""What a pull request reads, replayed through the real server and the fake GitHub: the
bundled examples' summaries, thread replies, inline comments, review bodies and check runs
speak a reviewer's language. The tracker's rule names stay in the ledger and in a folded
"why"; places read ``src/quota.js:6``; counts have proper plurals; the commands line offers
only what applies; a check run annotates every open defect, people's included."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.replay.github import Harness, replay_task
from bench.tasks.mcr import load_task

from .conftest import EXAMPLES, ROOT
from .test_surface import ruling_names

RULES = ruling_names((ROOT / "tracker" / "rules.py").read_text(encoding="utf-8")) | {
    "fingerprint-reappeared", "fix-undone", "stays-resolved", "check-silent"}


def _unfolded(text: str) -> str:
    """``text`` without its ``<details>`` blocks (what shows before anything is unfolded)."""
    return re.sub(r"<details>.*?</details>", "", text, flags=re.DOTALL)


async def _posted(tmp_path: Path) -> dict[str, list[dict]]:
    out = {}
    async with Harness(tmp_path / "ledger.db") as h:
        for name in ("example-javascript-quota", "example-java-order-store",
                     "example-python-profile-cache"):
            posted: list[dict] = []
            await replay_task(h, load_task(EXAMPLES / f"{name}.json"), posted=posted)
            out[name] = posted
    return out


def _texts(rnd: dict) -> list[tuple[str, str]]:
    return ([("summary", rnd["summary"])] + [("reply", c["body"]) for c in rnd["replies"]]
            + [("review", r["body"]) for r in rnd["reviews"]]
            + [("inline", c["body"]) for r in rnd["reviews"] for c in r["comments"]]
            + [("check", json.dumps(run["output"], ensure_ascii=False))
               for run in rnd["check_runs"]])


async def test_the_examples_read_as_a_reviewer_writes(tmp_path):
    posted = await _posted(tmp_path)
    for task, rounds in posted.items():
        for rnd in rounds:
            for kind, text in _texts(rnd):
                shown = _unfolded(text)
                where = (task, rnd["round"], kind)
                assert not [r for r in RULES if r in shown], (where, shown)
                assert "(s)" not in shown and not re.search(r"\bE\.\d", shown), (where, shown)
                assert not re.search(r":(\d+)-\1\b", shown), (where, shown)  # no "6-6"
    quota = posted["example-javascript-quota"]
    r1, r2, r3 = quota
    # the rule names are kept, folded, for the curious and for bug reports
    assert "<summary>Why: the tracker's rules</summary>" in r2["summary"]
    assert "- D1: `subject-removed` (checked from the code" in r2["summary"]
    # and what made the rule's decision as sure as it is: its record across repositories
    why = next(line for line in r2["summary"].splitlines() if line.startswith("- D1: "))
    assert re.search(r"\): right in \d+ of \d+ pairs, in \d+ of \d+ repositories", why), why
    d1 = next(c["body"] for c in r2["replies"] if "D1" in c["body"].splitlines()[0])
    assert "Evidence (checked from the code): `console.log` is gone from line 6\n" in d1
    assert "The tracker's rule `subject-removed`" in d1.split("<details>")[1]
    assert "the code it was about came back at src/quota.js:6\n" in \
        next(c["body"] for c in r3["replies"] if "D1 is back" in c["body"])
    java = posted["example-java-order-store"]
    assert any("a line was added to it (now src/main/java/shop/orders/OrderStore.java:13-15)"
               in c["body"] for c in java[1]["replies"])
    [review] = r1["reviews"]
    assert review["body"].startswith("roundwise round 1: 1 new defect. ")
    [inline] = review["comments"]
    assert inline["body"].startswith("**D1** · Minor · Organization · `debug-print`\n")
    # commands: resolve/ignore only with an open defect's key (D3 is resolved in round 2)
    assert "`/roundwise resolve D2`, `/roundwise ignore D2`" in r2["summary"]
    assert "D3`" not in r2["summary"].rsplit("<sub>Commands:", 1)[1]
    assert "`/roundwise resolve D1`" in r3["summary"]
    # the reviewer's two comments came after round 1's check was completed: annotated too
    [run] = r1["check_runs"]
    assert run["output"]["title"] == "3 open"
    assert run["output"]["annotations_count"] == len(run["annotations"]) == 3
    assert sorted(a["title"].split(" · ")[0] for a in run["annotations"]) == ["D1", "D2", "D3"]
