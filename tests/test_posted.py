"""The bench keeps what the bot posted per round and shows it as a PR conversation page."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from bench.replay.github import Harness, replay_task
from bench.replay.posted import write
from bench.tasks.mcr import load_task

from .conftest import EXAMPLES


async def test_replay_keeps_every_posted_body_and_writes_a_conversation_page(tmp_path):
    task = load_task(EXAMPLES / "example-python-profile-cache.json")
    posted: list[dict] = []
    async with Harness(Path(tmp_path) / "ledger.db") as h:
        await replay_task(h, task, posted=posted)
    assert [r["round"] for r in posted] == [r.number for r in task.rounds]
    first = posted[0]
    assert first["head"] == task.rounds[0].head_sha
    [review] = first["reviews"]
    assert review["comments"] and all("roundwise:new" in c["body"] for c in review["comments"])
    assert first["summary"].startswith("<!-- roundwise:summary -->")
    [run] = first["check_runs"]
    assert run["name"] == "roundwise" and run["status"] == "completed"
    assert len(run["annotations"]) == run["output"]["annotations_count"] > 0
    later = posted[1:]
    assert any(r["replies"] for r in later)  # state changes were answered in their threads
    assert all(r["reviews"] == [] or r["reviews"][0]["id"] != review["id"] for r in later)

    links = write(tmp_path / "run", {task.task_id: posted}, {task.task_id: "Profile cache"})
    assert links == [(task.task_id, f"conversations/{task.task_id}.html")]
    lines = (tmp_path / "run" / "posted.jsonl").read_text().splitlines()
    assert [json.loads(x)["round"] for x in lines] == [r["round"] for r in posted]
    page = (tmp_path / "run" / links[0][1]).read_text()
    assert page.count('class="round"') == len(posted)
    assert "<table>" in page and "<details>" in page and 'class="inline"' in page
    assert "check run <b>roundwise</b>" in page

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:  # the page's structure is checked above; rendering needs a browser
        return
    png = tmp_path / "page.png"
    proc = await asyncio.create_subprocess_exec(
        chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={png}",
        "--window-size=1000,1400", (tmp_path / "run" / links[0][1]).as_uri(),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    assert png.stat().st_size > 20_000  # a rendered page, not a blank one
