"""The bot's settings: the server's (environment, ``.env``) and each repository's, and the review's bounds.

``env`` (the server's configuration from the environment, checked at start-up; with the
code-host backends' settings, which ``bot.server.hosts`` hands in, it is the settings
table), ``envfile`` (the ``.env`` file ``roundwise setup`` writes and
``roundwise serve`` reads), ``repo_settings`` (per-repository settings from
``.github/roundwise.yml`` on the default branch), ``bounds`` (how much of a pull request one
round reviews) and ``dashboard`` (who may sign in to the dashboard, the public URL).

Nothing is imported here: ``env`` reads the engine's and the ledger's settings, and the round
that needs only ``bounds`` or ``repo_settings`` must not import them through this package.
"""

__all__ = ["bounds", "dashboard", "env", "envfile", "repo_settings"]
