"""The container files: a small build context, dependencies cached apart from the code, the
server's dependencies only, an unprivileged numeric user, and a compose file with a volume.

These read the files as Docker would (the build itself needs a base image, which the test
machines cannot pull); ``hadolint`` (in the test extra) lints the Dockerfile.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT


def instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def ignored(path: str) -> bool:
    """Whether .dockerignore leaves ``path`` out of the build context (last match wins)."""
    result = False
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        rule = raw.strip()
        if not rule or rule.startswith("#"):
            continue
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        matched = any(fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(p, pattern.replace(
            "**/", "*/")) or (pattern.startswith("**/") and fnmatch.fnmatch(
                p.rsplit("/", 1)[-1], pattern[3:])) for p in prefixes)
        if matched:
            result = not negate
    return result


def test_the_build_context_holds_only_what_the_image_copies():
    for path in (".venv/bin/python", ".git/HEAD", "bench-out/index.html", "tests/test_image.py",
                 "bot/__pycache__/app.cpython-311.pyc", ".env", "roundwise.db"):
        assert ignored(path), path
    for path in ("pyproject.toml", "README.md", "bot/server/app.py", "bot/store/ledger_sqlite.py",
                 "bench/examples/__init__.py", "roundwise/cli.py"):
        assert not ignored(path), path


def test_dependencies_are_installed_before_the_code_and_without_the_bench_extra():
    steps = instructions()
    froms = [i for i, (w, _) in enumerate(steps) if w == "FROM"]
    assert len(froms) == 2  # a build stage and a clean run stage
    build = steps[froms[0]:froms[1]]
    copies = [i for i, (w, a) in enumerate(build) if w == "COPY"]
    installs = [i for i, (w, a) in enumerate(build) if w == "RUN" and "pip install" in a]
    assert build[copies[0]][1] == "pyproject.toml ./"  # the dependency layer sees only this
    assert installs[0] < copies[1], "the dependencies must be installed before the code is copied"
    assert "-r requirements.txt" in build[installs[0]][1]
    assert "--no-deps ." in build[installs[-1]][1]
    text = (ROOT / "Dockerfile").read_text()
    assert not re.search(r"\[(bench|test)\]", text)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    from bench.cli import BENCH_EXTRA  # jinja2 is the server's too now: the dashboard's pages

    assert not set(BENCH_EXTRA) & {re.match(r"[\w.-]+", d).group(0).lower()
                                   for d in project["dependencies"]}


def test_the_server_runs_as_a_numeric_user_on_a_pinned_base_with_a_data_volume():
    steps = dict(reversed(instructions()))  # the first of each kind
    assert re.fullmatch(r"PYTHON_BASE=python:3\.11-slim-bookworm(@sha256:[0-9a-f]{64})?",
                        steps["ARG"])
    words = [w for w, _ in instructions()]
    final = instructions()[len(words) - 1 - words[::-1].index("FROM"):]
    user = [a for w, a in final if w == "USER"]
    assert user and re.fullmatch(r"\d+(:\d+)?", user[-1])
    assert any(w == "VOLUME" and "/data" in a for w, a in final)
    assert any(w == "ENV" and "ROUNDWISE_DB=/data/roundwise.db" in a for w, a in final)


def test_compose_runs_one_server_with_a_named_volume():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    (service,) = compose["services"].values()
    volume, _, target = service["volumes"][0].partition(":")
    assert volume in compose["volumes"] and target == "/data"
    assert service["env_file"] == ".env" and "8080:8080" in service["ports"]


def hadolint() -> str | None:
    """hadolint from the test extra (next to this interpreter), else from PATH."""
    local = Path(sys.executable).parent / "hadolint"
    return str(local) if local.is_file() else shutil.which("hadolint")


@pytest.mark.skipif(hadolint() is None, reason="hadolint is not installed (pip install "
                                               "-e '.[test]' brings it)")
def test_hadolint_finds_nothing():
    done = subprocess.run([hadolint(), str(ROOT / "Dockerfile")], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout
