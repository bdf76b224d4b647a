"""The roundwise bot: webhook server, jobs, code-host backends and review engine, in layers.

Each room (sub-package) imports only rooms in the layers below its own, never one beside or
above it; lazy imports inside functions count too (``tests/test_layers.py`` holds it). From the
ground up:

1. ``observe``: the metrics every layer counts into (nothing imports the server for a counter).
2. ``store``: the ledger and job queue engines (SQLite, PostgreSQL).
3. ``forge``: the code-host port (``Forge``, the typed errors, paths made safe, the ``Host``
   entry a backend hands the server, the app's shared-state keys and the budget of webhook
   bodies not yet verified) and the local git forge.
4. ``review``: the review engine (offline checks, the LLM reviewer, their settings).
5. ``config``: the settings, the server's (its own and the engine's and ledger's it checks;
   each backend hands in its own through the list at the top) and each repository's.
6. ``pr``: what the bot shows on a pull request (summary, comments, check run).
7. ``round``: one review round, gather → plan → publish → commit, and the surfaces that follow
   the ledger between rounds.
8. ``jobs``: the durable queue, its workers and what each kind of job does.
9. ``github``, ``gitlab``: the code-host backends, side by side (neither imports the other),
   which plug into the port and share its core (``bot.forge``: calls, body, delivery).
10. ``dashboard``: the ledger in the browser for signed-in people (read-only).
11. ``server``: the HTTP face and the composition root, with the list of backends
    (``bot.server.hosts``), which only the top layers read.
12. ``cli``: the bot's ``roundwise`` subcommands.

Data flows the other way: ``server`` takes webhooks into ``jobs``, a job runs a ``round``
through ``review`` over a ``forge`` (a backend), keeps its memory in ``store`` and shows the
result on the pull request (``pr``).
"""

#: the rooms from the ground up; a room imports only rooms of earlier layers
LAYERS: tuple[tuple[str, ...], ...] = (
    ("observe",), ("store",), ("forge",), ("review",), ("config",), ("pr",), ("round",),
    ("jobs",), ("github", "gitlab"), ("dashboard",), ("server",), ("cli",),
)

__all__ = ["LAYERS", "cli", "config", "dashboard", "forge", "github", "gitlab", "jobs", "observe",
           "pr", "review", "round", "server", "store"]
