"""Start-up checks beyond parsing: the model's key, an optional probe call, the ledger's folder.

``bot.config.env`` checks each setting on its own; this module checks what needs the outside world:
that the provider key a model needs is in the environment (litellm knows which variable each
provider reads), that the model answers (``ROUNDWISE_CHECK_MODEL=1``), and that the ledger file
can be created where ``ROUNDWISE_DB`` says (or, for a ``postgresql://`` URL, that its server
answers); ``host_problems`` then asks each configured code host whether it answers and takes its
credentials (``Host.check``: GitLab's instance and token), over the network, once the local
checks pass. Each problem is one line saying how to fix it, so a
mistake stops ``roundwise serve`` at start-up instead of failing the first round. It also says
which version is running and writes the "ready" line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..config.env import Config
from ..review.llm_config import LLMConfig, quiet_litellm
from ..store.engines import POSTGRES, engine_of
from ..store.queue_base import redact
from . import hosts

__all__ = ["check_ledger", "check_model", "host_problems", "probe_model", "project_url",
           "ready_line", "startup_problems", "version"]


def version() -> str:
    """The installed roundwise's version (``0+unknown`` when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("roundwise")
    except PackageNotFoundError:
        return "0+unknown"


def project_url() -> str | None:
    """The package's home page from its metadata (``[project.urls]``), when it declares one."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        meta = metadata("roundwise")
    except PackageNotFoundError:
        return None
    for entry in meta.get_all("Project-URL") or []:
        _, _, url = entry.partition(",")
        if url.strip().startswith("https://"):
            return url.strip()
    home = meta.get("Home-page")
    return home if home and home.startswith("https://") else None


def _provider(model: str) -> str | None:
    try:
        return quiet_litellm().get_llm_provider(model=model)[1]
    except Exception:  # noqa: BLE001 - litellm raises its own classes for unknown providers
        return None


def check_model(llm: LLMConfig | None, environ: Mapping[str, str] | None = None, *,
                names: tuple[str, str] = ("ROUNDWISE_MODEL", "ROUNDWISE_FALLBACK_MODEL"),
                keyless_local: bool = False) -> list[str]:
    """One line per model whose provider key is missing (empty when all is well).

    ``ROUNDWISE_API_KEY`` counts as the primary model's key (and the fallback's, when it has the
    same provider prefix), as it does when the engine calls the model. ``names``: what the
    lines call the model and the fallback (a command's flags, say). ``keyless_local``: an
    ``openai/`` model at an ``api_base`` needs no key, as the engine calls such a local server
    with a stand-in one (the server insists on a key all the same: ``roundwise serve``).
    """
    if llm is None:
        return []
    litellm = quiet_litellm()
    environ = os.environ if environ is None else environ
    problems = []
    models = [(names[0], llm.model, llm.api_key, llm.api_base)]
    if llm.fallback_model:
        same = _prefix(llm.fallback_model) == _prefix(llm.model)
        models.append((names[1], llm.fallback_model,
                       llm.api_key if same else None, llm.api_base if same else None))
    for name, model, api_key, api_base in models:
        if keyless_local and api_base and _prefix(model) == "openai":
            api_key = api_key or "no-key"
        if _provider(model) is None:
            problems.append(f"{name}={model!r}: litellm does not know this model's provider; "
                            "prefix it with one, e.g. openai/, anthropic/, ollama/")
            continue
        found = litellm.validate_environment(model=model, api_key=api_key, api_base=api_base)
        missing = [k for k in found.get("missing_keys", []) if not environ.get(k)]
        if missing:
            hint = " (or ROUNDWISE_API_KEY for an OpenAI-compatible server)" \
                if name == names[0] else ""
            problems.append(f"{name}={model!r} needs {', '.join(missing)}, which "
                            f"{'is' if len(missing) == 1 else 'are'} not set{hint}")
    return problems


def _prefix(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


def probe_model(llm: LLMConfig) -> str | None:
    """One one-token call to the model; the problem as a line, or None when it answered."""
    litellm = quiet_litellm()

    try:
        litellm.completion(model=llm.model, api_base=llm.api_base, api_key=llm.api_key,
                           messages=[{"role": "user", "content": "Reply with: ok"}],
                           max_tokens=1, timeout=min(llm.timeout, 30.0), num_retries=0)
    except Exception as exc:  # noqa: BLE001 - litellm maps each provider failure to its own
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        where = f" at {llm.api_base}" if llm.api_base else ""
        return (f"ROUNDWISE_CHECK_MODEL: the model {llm.model}{where} did not answer a "
                f"one-token call ({type(exc).__name__}: {first})")
    return None


def check_ledger(db_path: str) -> str | None:
    """Whether the ledger can be opened for writing at ``db_path`` (a SQLite file's folder and
    mode; a PostgreSQL server's answer): its engine's ``ready`` (``bot.store.engines``); the
    problem as a line."""
    return engine_of(db_path).ready(db_path)


def check_postgres(target: str) -> str | None:
    """Whether the PostgreSQL server of ``target`` answers; the problem as a line."""
    return POSTGRES.ready(target)


def startup_problems(config: Config) -> list[str]:
    """Every start-up problem ``bot.config.env`` cannot see, each as one line."""
    problems = check_model(config.llm)
    ledger = check_ledger(config.db_path)
    if ledger:
        problems.append(ledger)
    if config.check_model and config.llm is not None and not problems:
        probe = probe_model(config.llm)
        if probe:
            problems.append(probe)
    return problems


def host_problems(config: Config) -> list[str]:
    """Each configured code host's start-up problems (``Host.check``: GitLab's instance
    unreachable, its token refused), each as one line; asked over the network by ``serve``
    once the local checks (``startup_problems``) pass."""
    return [problem for host in hosts.HOSTS if host.configured(config)
            for problem in host.check(config)]


def ready_line(config: Config, host: str, port: int) -> str:
    """The line saying the server is up, where it listens, and with what."""
    shown = f"[{host}]" if ":" in host else host
    reviewer = "llm" if config.llm else "offline"
    model = config.model or "none"
    if config.llm and config.llm.fallback_model:
        model += f" (fallback {config.llm.fallback_model})"
    served = ", ".join(f"{host.describe(config)} ({host.route})" for host in hosts.HOSTS
                       if host.configured(config))
    return (f"roundwise {version()} ready on http://{shown}:{port}: {served}; ledger "
            f"{redact(config.db_path)}, {reviewer} reviewer, model {model}, "
            f"{config.workers} worker(s)")
