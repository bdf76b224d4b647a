"""Database targets through the real CLI (``python -m roundwise``, a subprocess): one line and
exit status 2 for every target that cannot be used, never a traceback, never an empty ledger
created by a typo; and ``roundwise stats`` keeps its columns for long repository names."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_startup import base_env, refused, serve


def roundwise(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roundwise", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def one_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sqlite_three_slashes_is_relative_and_the_error_says_so(tmp_path):
    line = one_line(roundwise(tmp_path, "db", "migrate", "--db", "sqlite:///tmp/x.db"))
    assert "the folder tmp does not exist" in line
    assert "sqlite:///tmp/x.db is ./tmp/x.db" in line and "sqlite:////tmp/x.db" in line
    assert not (tmp_path / "tmp").exists()  # no folder made from a typo
    (tmp_path / "tmp").mkdir()
    done = roundwise(tmp_path, "db", "migrate", "--db", "sqlite:///tmp/x.db")
    assert done.returncode == 0 and (tmp_path / "tmp" / "x.db").is_file()


def test_serve_says_the_same_for_a_missing_folder(tmp_path):
    [problem] = refused(serve(base_env(tmp_path, ROUNDWISE_DB="sqlite:///data/ledger.db"),
                              tmp_path))
    assert "the folder data does not exist" in problem
    assert "sqlite:////data/ledger.db" in problem


@pytest.mark.parametrize("command", [["db", "prune", "--db"], ["stats", "--ledger"]])
def test_prune_and_stats_refuse_a_missing_ledger(tmp_path, command):
    line = one_line(roundwise(tmp_path, *command, "typo.db"))
    assert "no ledger at typo.db" in line
    assert not (tmp_path / "typo.db").exists()  # prune used to create an empty one


@pytest.mark.parametrize("command", [["db", "migrate", "--db"], ["db", "prune", "--db"],
                                     ["stats", "--ledger"]])
def test_an_unsupported_scheme_names_the_supported_ones(tmp_path, command):
    line = one_line(roundwise(tmp_path, *command, "mysql://rw:s3cret@db.example/roundwise"))
    assert "the mysql:// scheme is not supported" in line
    assert "sqlite:///PATH" in line and "postgresql://" in line
    assert "s3cret" not in line
    assert list(tmp_path.iterdir()) == []  # nothing created ("mysql:" was read as a folder)


def test_serve_refuses_an_unsupported_scheme(tmp_path):
    [problem] = refused(serve(base_env(tmp_path, ROUNDWISE_DB="mysql://db.example/rw"),
                              tmp_path))
    assert problem.startswith("ROUNDWISE_DB: mysql://db.example/rw: the mysql:// scheme is not "
                              "supported")


@pytest.mark.parametrize("command", [["db", "migrate", "--db"], ["db", "prune", "--db"],
                                     ["stats", "--ledger"]])
def test_an_unreachable_postgresql_is_one_line(tmp_path, command):
    url = f"postgresql://rw:s3cret@127.0.0.1:{closed_port()}/roundwise"
    line = one_line(roundwise(tmp_path, *command, url))
    assert "the PostgreSQL server does not answer" in line and "PoolTimeout" not in line
    assert "s3cret" not in line


def test_stats_columns_stay_aligned_for_long_repository_names():
    from bot.cli.stats import stats_table

    long_name = "an-organisation-with-a-long-name/and-a-repository-name-longer-still"
    row = {"findings": {"accepted": 3, "dismissed": 1, "acceptance_rate": 0.75},
           "states": {"Open→Resolved": {"confirmed": 2, "contradicted": 0,
                                        "contradiction_rate": 0.0}}}
    lines = stats_table({long_name: row, "octo/widgets": row}).splitlines()[:5]
    columns = {line.index(" finding ") if " finding " in line else line.index(" state ")
               for line in lines[1:]}
    assert len(columns) == 1  # the kind column starts at the same place on every row
    assert lines[0].index(" kind ") == columns.pop()
    assert [line.split()[-1] for line in lines[1:]] == ["75.0%", "0.0%", "75.0%", "0.0%"]
