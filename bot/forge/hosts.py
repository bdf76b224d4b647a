"""The code-host backends the server knows, in one list: add a backend here.

Each entry is a ``bot.forge.host.Host`` its package defines. The list's order is the settings
table's; the first entry, GitHub, is the server's default: its App settings are required unless
another backend is configured (a server for GitLab alone), and it takes every job no later
entry owns (later entries are asked first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..github.host import GITHUB
from ..gitlab.host import GITLAB
from .host import Host

__all__ = ["HOSTS", "config_fields", "read_forges", "settings"]

HOSTS: tuple[Host, ...] = (GITHUB, GITLAB)


def settings() -> dict[str, tuple[str, str]]:
    """Every backend's settings, in the list's order."""
    return {name: meaning for host in HOSTS for name, meaning in host.settings.items()}


def read_forges(env: Mapping[str, str], problems: list[str]) -> dict[str, Any]:
    """Each backend's settings by name (None: not configured). The later entries are read
    first, so the first knows whether it is required; problems are appended in that order."""
    first, *others = HOSTS
    found = {host.name: host.read(env, problems, False) for host in others}
    found[first.name] = first.read(env, problems,
                                   all(value is None for value in found.values()))
    return {host.name: found[host.name] for host in HOSTS}


def config_fields(forges: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Config`` fields the backends' settings fill (GitHub's App, ``gitlab``)."""
    return {key: value for host in HOSTS for key, value in host.fields(forges[host.name]).items()}
