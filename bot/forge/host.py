"""What a code-host backend hands the server and the settings: one ``Host`` entry.

``bot.server.hosts`` lists the entries; ``bot.config.env`` and ``bot.server.app`` loop over
them, so adding a backend is its package plus one line there, never a change to the settings
code or the composition root. An entry says: the backend's settings (the settings table
lists them), how they are read from the environment (each problem one line, as every setting's),
which ``Config`` fields they fill (GitHub's App and ``gitlab`` have their own; a backend added
later reads ``Config.forges[name]``), and how the server mounts it (its webhook route) and then
asks it, per job, whether the job is its own, for the job's forge and for the job's handler;
and, for ``roundwise serve``, its name and route (``--help``), a start-up check of its
credentials against the host, and what the ready line says of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Handle", "Host", "Service"]

#: the worker pool's job handler (``bot.jobs.handlers.Handlers.handle`` and its wrappers)
Handle = Callable[[Any], Awaitable[None]]


class Service(Protocol):
    """A backend mounted in one server (``Host.mount`` returns it)."""

    async def start(self, session: Any, retry: Any) -> None:
        """Open the backend's client on the server's HTTP session (at start-up)."""

    def owns(self, job: Any) -> bool:
        """Whether ``job`` (a ``bot.jobs.Job``) is on this backend's host."""

    def forge(self, job: Any) -> Any:
        """The ``bot.forge.Forge`` a round of ``job`` works through."""

    def jobs(self, handlers: Any, rest: Handle) -> Handle:
        """The handler for every job: this backend's own kinds here, the rest to ``rest``."""


def _no_fields(settings: Any) -> dict[str, Any]:
    return {}


def _no_problems(config: Any) -> list[str]:
    return []


@dataclass(frozen=True)
class Host:
    """One code-host backend, as the settings and the server see it."""

    name: str
    #: environment variable -> (meaning, default), as ``bot.server.hosts.SETTINGS``
    settings: Mapping[str, tuple[str, str]]
    #: ``read(env, problems, required)``: the backend's settings, None when not configured;
    #: appends one line per problem. ``required``: no other backend is configured.
    read: Callable[[Mapping[str, str], list[str], bool], Any]
    #: ``mount(app, config)``: add its routes to the aiohttp app; None when not configured
    mount: Callable[[Any, Any], Service | None]
    #: the ``Config`` fields of its own its settings fill (``Config.forges`` holds them all)
    fields: Callable[[Any], dict[str, Any]] = _no_fields
    #: what people call it ("GitHub") and the webhook route it serves (``serve --help``)
    title: str = ""
    route: str = ""
    #: ``configured(config)``: whether this server serves it (its route is mounted)
    configured: Callable[[Any], bool] = lambda config: False
    #: ``check(config)``: start-up problems only the host can tell (it cannot be reached, it
    #: refuses the credentials), one line each; run before the server listens
    check: Callable[[Any], list[str]] = _no_problems
    #: ``describe(config)``: what the ready line says of it when configured ("GitLab at URL")
    describe: Callable[[Any], str] = lambda config: ""
