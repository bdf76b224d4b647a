"""Shared test helpers: where the shared development data lives, and throwaway ledgers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.review.llm_config import configure_litellm

configure_litellm()  # the suite is a composition root too

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("ROUNDWISE_SHARED", ROOT.parent / "shared"))
SHARED_DATA = SHARED / "data"
MCR_DEV = SHARED_DATA / "mcr-dev"
AACR_DEV = SHARED_DATA / "aacr-dev"
WEBHOOKS = SHARED / "fixtures" / "github-webhooks"
EXAMPLES = ROOT / "bench" / "examples"

needs_shared_data = pytest.mark.skipif(
    not MCR_DEV.is_dir(), reason="../shared/data is not available on this machine"
)
needs_webhook_fixtures = pytest.mark.skipif(
    not WEBHOOKS.is_dir(), reason="../shared/fixtures is not available on this machine"
)


@pytest.fixture
def ledger(tmp_path):
    from tracker.ledger import Ledger

    with Ledger(tmp_path / "ledger.db") as led:
        yield led


@pytest.fixture
def repo(tmp_path):
    """A git repository on branch ``feature``, branched from ``main``, which holds
    ``calc.py`` (for the local review and CLI-output tests)."""
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "dev@example.com")
    git("config", "user.name", "dev")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git("add", ".")
    git("commit", "-qm", "base")
    git("checkout", "-qb", "feature")
    return tmp_path
