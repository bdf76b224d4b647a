"""The server's HTTP face: what ``roundwise serve`` runs in front of the job queue.

``app`` (the aiohttp application, its routes, start-up and shutdown), ``serving`` (connection
limits no single client can get round), ``unverified`` (the budget of webhook bodies not yet
verifiable), ``disconnects`` (a client hanging up is one log line), ``appkeys`` (the app's typed
shared state), ``home`` (``GET /``), ``health`` (``GET /healthz`` and the one-server-per-file
lock), ``metrics`` (``GET /metrics``), ``logs`` (plain or JSON log lines), ``startup`` (start-up
checks of the outside world) and ``tempclean`` (start-up clean-up of a killed server's folders).

Nothing is imported here: a module that only needs ``metrics`` or ``appkeys`` must not pull in
the whole application (``bot.server.app`` imports every layer below it).
"""

__all__ = ["app", "appkeys", "disconnects", "health", "home", "logs", "metrics", "serving",
           "startup", "tempclean", "unverified"]
