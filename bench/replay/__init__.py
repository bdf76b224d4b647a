"""Tasks played through the real bot over HTTP, as each code host would drive it.

One harness per code host (``github`` against ``bench.fake_github``, ``gitlab`` against
``bench.fake_gitlab``) on what they share (``rounds``: the bot on loopback, the round loop, the
ledger read), the webhook deliveries they sign (``payloads``) and what the bot posted, kept per
round (``posted``) and laid out as a pull request page (``conversation``). ``REPLAYS`` names
each host's replay for ``roundwise bench run --forge``: a new host's replay is its module and
one entry there.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["REPLAYS", "conversation", "github", "gitlab", "payloads", "posted", "replay_for",
           "rounds"]

#: ``--forge`` name -> (the module of the host's replay, its harness class); the module also
#: holds ``replay_task``. Imported only when chosen.
REPLAYS: dict[str, tuple[str, str]] = {
    "github": ("bench.replay.github", "Harness"),
    "gitlab": ("bench.replay.gitlab", "GitLabHarness"),
}


def replay_for(forge: str) -> tuple[Any, Any]:
    """The harness class and ``replay_task`` of the host named ``forge``."""
    module_name, harness = REPLAYS[forge]
    module = importlib.import_module(module_name)
    return getattr(module, harness), module.replay_task
