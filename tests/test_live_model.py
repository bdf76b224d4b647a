"""One local review end to end against a live OpenAI-compatible model server, when there is one.

Runs only when ``ROUNDWISE_TEST_LLM_BASE`` names the server's base URL (for instance
``http://127.0.0.1:8090/v1`` after ``python -m bench.local_model serve``); CI has none and skips
it. ``ROUNDWISE_TEST_LLM_MODEL`` names the model (default ``openai/local``: llama.cpp serves
whatever it loaded under any name). What a real model says is not scripted, so the test asserts
what must hold whatever it answers: two rounds recorded, every finding where a comment can sit,
no prompt wording stored as evidence, and what was dropped counted by reason.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from roundwise.cli import main

BASE = os.environ.get("ROUNDWISE_TEST_LLM_BASE")
MODEL = os.environ.get("ROUNDWISE_TEST_LLM_MODEL", "openai/local")

pytestmark = pytest.mark.skipif(
    not BASE, reason="ROUNDWISE_TEST_LLM_BASE is not set (no live OpenAI-compatible server)")

BEFORE = "def share(total, parts):\n    return total / parts\n"
ROUND_1 = ("import os\n\n\ndef share(total, parts):\n    print(os.environ)\n"
           "    return total / parts\n\n\ndef load(path):\n    return open(path).read()\n")
ROUND_2 = ROUND_1.replace("    print(os.environ)\n", "").replace(
    "return open(path).read()", "with open(path) as fh:\n        return fh.read()")


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_local_review_against_a_live_model(tmp_path, capsys, monkeypatch):
    for name in ("ROUNDWISE_MODEL", "ROUNDWISE_API_BASE", "ROUNDWISE_FALLBACK_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ROUNDWISE_API_KEY", "no-key")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "money.py").write_text(BEFORE)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "feature")
    args = ["review", "--repo", str(repo), "--base", "main", "--model", MODEL, "--api-base",
            BASE, "--timeout", os.environ.get("ROUNDWISE_TEST_LLM_TIMEOUT", "300"),
            "--format", "json", "-v"]
    reports = []
    for text in (ROUND_1, ROUND_2):
        (repo / "money.py").write_text(text)
        git(repo, "commit", "-qam", "round")
        assert main(args) == 0, capsys.readouterr().err
        captured = capsys.readouterr()
        reports.append(json.loads(captured.out))
        if reports[-1]["dropped"]:
            assert "dropped this round:" in captured.err
    first, second = reports
    assert (first["round"], second["round"]) == (1, 2)
    lines = len(ROUND_2.splitlines())
    for defect in second["defects"]:
        assert defect["path"] in (None, "money.py")
        assert defect["line_start"] is None or 1 <= defect["line_start"] <= lines + 10
        assert "copied exactly" not in (defect["evidence"] or "")
        assert defect["state"] in ("New", "Open", "Resolved", "Reopened")
    for report in reports:
        assert all(isinstance(n, int) and n > 0 for n in report["dropped"].values())
        assert report["model_calls"] >= 1  # the model answered (no offline fallback)
