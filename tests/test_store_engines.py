"""A database target's engine is one call (``bot.store.engines.engine_of``), and one entry adds one.

The real engines answer what their callers used to read from the URL's scheme (SQLite: one file,
one server; PostgreSQL: a server replicas share). A fake engine, registered in-process for one
test and backed by a real SQLite file, must then be accepted everywhere a target goes: by
``check_target`` (which refuses unknown schemes), by ``load_config``, by the start-up checks,
by the openers, and by the real server on 127.0.0.1, which as for any shared engine takes no
one-server file lock and gives the queue a connection of its own.
"""

from __future__ import annotations

import sqlite3

import aiohttp
import pytest
from aiohttp import web

from bot.config.env import ConfigError
from bot.server.app import create_app
from bot.server.hosts import load_config
from bot.server.serving import GuardedRunner
from bot.server.startup import startup_problems
from bot.store import engines, open_ledger_store
from bot.store.engines import POSTGRES, SQLITE, Engine, TargetError, engine_of
from bot.store.target import check_target


@pytest.mark.parametrize(("target", "engine"), [
    ("roundwise.db", SQLITE), ("sqlite:///data/r.db", SQLITE), ("/abs/r.db", SQLITE),
    ("postgresql://u@h/db", POSTGRES), ("postgres://u@h/db?schema=a", POSTGRES),
    ("mysql://u@h/db", SQLITE),  # the default answers; check_target refuses it
])
def test_each_target_names_its_engine(target, engine):
    assert engine_of(target) is engine
    assert engine_of(target).shared is (engine is POSTGRES)


def test_an_unclaimed_scheme_is_refused_with_every_engine_named():
    with pytest.raises(TargetError, match=r"mysql:// scheme is not supported; use a SQLite path"
                       r".* or postgresql://USER"):
        check_target("mysql://u@h/db")


def test_without_reach_a_postgres_target_is_checked_for_its_form_only():
    check_target("postgresql://u@127.0.0.1:1/db", reach=False)  # nobody listens there
    with pytest.raises(TargetError, match="schema name"):
        check_target("postgresql://u@127.0.0.1:1/db?schema=a;b", reach=False)


calls: list[str] = []


def _path(target: str) -> str:
    return target.removeprefix("memo://")


def _check(target, must_exist, reach, folder):
    calls.append(f"check {reach}")
    if "refused" in target:
        raise TargetError("memo refuses this one")


def _queue(target, ledger, schema):
    from bot.store.queue_sqlite import SqliteQueueStore

    assert ledger is None  # shared: the queue on a connection of its own
    return SqliteQueueStore(SQLITE.open_ledger(_path(target), None))


MEMO = Engine(name="memo", forms="memo://PATH", shared=True,
              claims=lambda target: target.startswith("memo://"),
              open_ledger=lambda target, schema: SQLITE.open_ledger(_path(target), schema),
              open_queue=_queue, check=_check,
              ready=lambda target: calls.append("ready") or
              ("memo is not ready" if "late" in target else None))


@pytest.fixture
def memo_registered(monkeypatch):
    monkeypatch.setattr(engines, "ENGINES", (*engines.ENGINES, MEMO))
    calls.clear()


GITLAB_ONLY = {"GITLAB_TOKEN": "glpat-x", "GITLAB_WEBHOOK_SECRET": "s"}


def test_a_registered_engine_is_accepted_checked_and_opened(memo_registered, tmp_path):
    target = f"memo://{tmp_path / 'm.db'}"
    check_target(target)
    config = load_config({**GITLAB_ONLY, "ROUNDWISE_DB": target})
    assert config.db_path == target and calls == ["check True", "check False"]
    with pytest.raises(ConfigError, match="ROUNDWISE_DB: memo refuses this one"):
        load_config({**GITLAB_ONLY, "ROUNDWISE_DB": "memo://refused.db"})
    assert startup_problems(config) == [] and calls[-1] == "ready"
    late = load_config({**GITLAB_ONLY, "ROUNDWISE_DB": f"memo://{tmp_path / 'late.db'}"})
    assert startup_problems(late) == ["memo is not ready"]
    with open_ledger_store(target) as ledger:
        assert ledger.path == str(tmp_path / "m.db")


async def test_two_servers_run_on_one_registered_shared_engine(memo_registered, tmp_path):
    config = load_config({**GITLAB_ONLY, "ROUNDWISE_DB": f"memo://{tmp_path / 'm.db'}"})
    runners = []
    try:
        for _ in range(2):  # a shared engine: no one-server lock (SQLite's would refuse one)
            runner = GuardedRunner(create_app(config, poll=0.05), access_log=None)
            runners.append(runner)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
        async with aiohttp.ClientSession() as session:
            for runner in runners:
                url = f"http://127.0.0.1:{runner.addresses[0][1]}/healthz"
                async with session.get(url) as response:
                    assert (response.status, (await response.json())["status"]) == (200, "ok")
    finally:
        for runner in runners:
            await runner.cleanup()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        tables = {row[0] for row in conn.execute("select name from sqlite_master")}
    assert {"jobs", "pull_requests"} <= tables
