"""The compose files agree with the server: settings it reads, commands it has, ports it serves.

The images cannot be pulled here, so nothing is started: the files are parsed and checked
against ``bot.server.hosts.SETTINGS``, the ``roundwise`` command line and the Dockerfile.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from bot.config.env import LOG_FORMATS, retention_days
from bot.server.hosts import SETTINGS
from bot.store import is_postgres
from roundwise.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SINGLE = ROOT / "docker-compose.yml"
SCALE = ROOT / "deploy" / "docker-compose.scale.yml"
NGINX = ROOT / "deploy" / "nginx.conf"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:?message}`` and ``${NAME:-default}``, from ``env``."""
    def one(match: re.Match) -> str:
        name, op, rest = match.group(1), match.group(2), match.group(3)
        if name in env:
            return env[name]
        if op == ":-":
            return rest
        raise KeyError(f"{name} is required: {rest}")
    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, str(value))


def roundwise_services(compose: dict) -> dict[str, dict]:
    """The services that run the roundwise image."""
    return {name: s for name, s in compose["services"].items()
            if str(s.get("image", "")).startswith("roundwise") or "build" in s}


def served_port() -> int:
    entry = re.search(r"ENTRYPOINT\s+(\[.*\])", (ROOT / "Dockerfile").read_text()).group(1)
    args = yaml.safe_load(entry)
    return int(args[args.index("--port") + 1])


@pytest.mark.parametrize("path", [SINGLE, SCALE], ids=["single", "scale"])
def test_every_server_variable_a_compose_file_sets_is_a_setting(path):
    services = roundwise_services(load(path))
    assert services, f"{path.name} runs no roundwise service"
    for name, service in services.items():
        env = service.get("environment") or {}
        assert isinstance(env, dict), f"{name}: environment as a mapping, please"
        for key in env:
            if key.startswith(("ROUNDWISE_", "GITHUB_")):
                assert key in SETTINGS, f"{path.name}: {name} sets {key}, which no setting reads"


@pytest.mark.parametrize("path", [SINGLE, SCALE], ids=["single", "scale"])
def test_the_values_set_are_ones_the_server_accepts(path):
    for name, service in roundwise_services(load(path)).items():
        env = {k: interpolate(v, {"POSTGRES_PASSWORD": "pw"})
               for k, v in (service.get("environment") or {}).items()}
        assert env.get("ROUNDWISE_DB"), f"{name} must name its database"
        if "ROUNDWISE_WORKERS" in env:
            assert int(env["ROUNDWISE_WORKERS"]) >= 1
        if "ROUNDWISE_RETENTION_DAYS" in env:
            assert retention_days(env["ROUNDWISE_RETENTION_DAYS"]) > 0
        if "ROUNDWISE_LOG_FORMAT" in env:
            assert env["ROUNDWISE_LOG_FORMAT"] in LOG_FORMATS


def test_the_single_server_keeps_its_sqlite_file_on_the_volume():
    service = load(SINGLE)["services"]["roundwise"]
    db = service["environment"]["ROUNDWISE_DB"]
    assert not is_postgres(db)
    mounts = [v.split(":")[1] for v in service["volumes"]]
    assert any(db.startswith(m.rstrip("/") + "/") for m in mounts), (db, mounts)


def test_the_replicas_share_the_postgres_service_and_start_after_the_migration():
    compose = load(SCALE)
    services = compose["services"]
    pg = services["postgres"]["environment"]
    db = interpolate(services["roundwise"]["environment"]["ROUNDWISE_DB"],
                     {"POSTGRES_PASSWORD": "pw"})
    assert is_postgres(db)
    url = urlsplit(db)
    assert (url.hostname, url.port, url.username, url.path.lstrip("/")) == (
        "postgres", 5432, pg["POSTGRES_USER"], pg["POSTGRES_DB"])
    assert services["roundwise"]["deploy"]["replicas"] >= 2
    migrate = services["migrate"]
    assert migrate["environment"]["ROUNDWISE_DB"] == services["roundwise"]["environment"][
        "ROUNDWISE_DB"]
    command = migrate["entrypoint"]
    assert command[0] == "roundwise"
    args = build_parser().parse_args(command[1:])  # a command the CLI really has
    assert (args.command, args.db_command) == ("db", "migrate")
    assert services["roundwise"]["depends_on"]["migrate"]["condition"] == \
        "service_completed_successfully"
    with pytest.raises(KeyError):  # no password, no start
        interpolate(services["roundwise"]["environment"]["ROUNDWISE_DB"], {})


def test_nginx_sends_to_the_replicas_on_the_port_they_serve():
    services = load(SCALE)["services"]
    conf = NGINX.read_text()
    port = served_port()
    assert str(port) in [str(p) for p in services["roundwise"]["expose"]]
    targets = re.findall(r"http://([\w.-]+):(\d+)", conf)
    assert targets and all((host, int(p)) == ("roundwise", port) for host, p in targets)
    listen = int(re.search(r"listen\s+(\d+);", conf).group(1))
    published = [shlex.split(p.replace(":", " ")) for p in services["proxy"]["ports"]]
    assert any(int(inner) == listen for _, inner in published)
    mounted = services["proxy"]["volumes"][0].split(":")[0]
    assert (SCALE.parent / mounted).resolve() == NGINX
    body = re.search(r"client_max_body_size\s+(\d+)m;", conf).group(1)
    from bot.forge.body import MAX_BODY

    assert int(body) * 1024 * 1024 == MAX_BODY
