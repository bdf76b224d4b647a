"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine.

Its rooms follow the data flow: ``server`` (the HTTP face) takes webhooks into ``jobs`` (the
durable queue and what each job does), a job runs a ``round`` through ``review`` (the engine)
over a forge (``forge``: the port; ``github``, ``gitlab``: the backends), keeps its memory in
``store`` (the ledger and queue engines) and shows the result on the pull request (``pr``);
``config`` holds the settings, ``cli`` the bot's ``roundwise`` subcommands.
"""

__all__ = ["cli", "config", "forge", "github", "gitlab", "jobs", "pr", "review", "round", "server",
           "store"]
