"""What the bot tells about itself: the Prometheus metrics every layer counts into.

``metrics`` holds the collectors (``GET /metrics`` serves them, ``bot.server.app``). They sit
at the ground so a store, a client or the round counts without importing the server.
"""

__all__ = ["metrics"]
