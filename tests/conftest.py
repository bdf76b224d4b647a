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
    from bot.store.ledger_sqlite import Ledger

    with Ledger(tmp_path / "ledger.db") as led:
        yield led


#: where the PostgreSQL store tests connect (a throwaway schema per test)
PG_URL = os.environ.get("ROUNDWISE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_unreachable() -> str | None:
    """Why no PostgreSQL server answers at ``PG_URL``; None when one does."""
    import psycopg

    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:  # no server, refused, no such database...
        return f"PostgreSQL not reachable at {PG_URL} ({type(exc).__name__}: {exc})"
    return None


@pytest.fixture
def pg_schema():
    """A fresh schema name in ``PG_URL``'s database, dropped afterwards; skips (saying why)
    when no PostgreSQL server answers."""
    import secrets

    import psycopg

    reason = pg_unreachable()
    if reason:
        pytest.skip(reason)
    schema = f"rw_test_{secrets.token_hex(6)}"
    yield schema
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'drop schema if exists "{schema}" cascade')


@pytest.fixture(params=["sqlite", "postgresql"])
def make_ledger(request, tmp_path):
    """Opens ledger stores on one fresh database of either engine (a new SQLite file, or a
    fresh PostgreSQL schema); calling it twice gives two stores on the same data."""
    from bot.store import open_ledger_store

    opened = []
    if request.param == "sqlite":
        target, schema = f"sqlite:///{tmp_path / 'ledger.db'}", None
    else:
        target, schema = PG_URL, request.getfixturevalue("pg_schema")

    def open_one():
        opened.append(open_ledger_store(target, schema=schema))
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def any_ledger(make_ledger):
    """A ledger store on either engine (see ``make_ledger``)."""
    return make_ledger()


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
