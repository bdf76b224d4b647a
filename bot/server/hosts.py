"""The code-host backends the server knows, in one list: add a backend here.

Each entry is a ``bot.forge.host.Host`` its package defines. The list's order is the settings
table's; the first entry, GitHub, is the server's default: its App settings are required unless
another backend is configured (a server for GitLab alone), and it takes every job no later
entry owns (later entries are asked first).

The list sits in the top layer, with the composition root (``bot.server.app``), because it
imports the backends; the settings code below them (``bot.config.env``) is handed it:
``settings()`` is every variable of this server (``docs/configuration.md``'s table) and
``load_config(env)`` the checked ``Config``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..config.env import Config, read_config, settings_of
from ..forge.host import Host
from ..github.host import GITHUB
from ..gitlab.host import GITLAB

__all__ = ["HOSTS", "SETTINGS", "load_config", "settings"]

HOSTS: tuple[Host, ...] = (GITHUB, GITLAB)


def settings() -> dict[str, tuple[str, str]]:
    """Every environment variable of the server, name -> (meaning, default): each registered
    backend's, then the server's own."""
    return settings_of(HOSTS)


SETTINGS = settings()


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Read and check every setting (``os.environ`` by default); raises
    ``bot.config.env.ConfigError`` listing all problems at once."""
    return read_config(env, HOSTS)
