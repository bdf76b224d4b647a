"""``ROUNDWISE_DB=postgresql://...`` for the server: start-up checks and what is logged.

A server that cannot reach its PostgreSQL server stops at start-up with one line, and neither
that line nor the ready line shows the URL's password.
"""

from __future__ import annotations

from bot.config.env import Config
from bot.server.startup import check_ledger, ready_line
from bot.store.queue_base import redact


def test_an_unreachable_postgres_ledger_is_one_start_up_line_without_the_password():
    problem = check_ledger("postgresql://rw:s3cret@127.0.0.1:1/test?schema=rw_a")
    assert problem.startswith("ROUNDWISE_DB: the PostgreSQL server does not answer")
    assert "s3cret" not in problem


def test_the_ready_line_names_a_postgres_ledger_without_its_password():
    config = Config(app_id="1", private_key="k", webhook_secret="s",
                    db_path="postgresql://rw:s3cret@db.internal:5432/roundwise?schema=prod")
    line = ready_line(config, "127.0.0.1", 8080)
    assert "ledger postgresql://rw@db.internal:5432/roundwise?schema=prod," in line
    assert "s3cret" not in line
    assert redact("/var/lib/roundwise.db") == "/var/lib/roundwise.db"


def test_stats_reads_a_postgres_ledger_as_it_reads_a_file(pg_schema, tmp_path, capsys):
    import json

    from bot.store import open_ledger_store
    from roundwise.cli import main
    from tracker.lifecycle import State
    from tracker.models import DecidedBy, Decision, Finding

    from .conftest import PG_URL

    out = []
    for url in (f"{PG_URL}?schema={pg_schema}", str(tmp_path / "ledger.db")):
        with open_ledger_store(url) as ledger:
            pr = ledger.pull_request("o/r", 1)["id"]
            ledger.begin_round(pr, "h1")
            d = ledger.add_defect(pr, Finding("bug", path="a.py", line_start=1), 1)
            ledger.attach_comment(d.id, 5, author="roundwise[bot]", posted_by_bot=True)
            ledger.finish_round(pr, 1)
            ledger.begin_round(pr, "h2")
            ledger.record_decision(pr, 2, Decision("D1", State.RESOLVED, "command_resolve",
                                                   "ann ran /roundwise resolve",
                                                   decided_by=DecidedBy.HUMAN))
        assert main(["stats", "--ledger", url, "--json"]) == 0
        out.append(json.loads(capsys.readouterr().out))
    assert set(out[0]["repos"]) == {"o/r"}
    assert out[0] == out[1]
