"""What the bot tells about itself: the Prometheus metrics every layer counts into, and text
from pull requests made safe to show.

``metrics`` holds the collectors (``GET /metrics`` serves them, ``bot.server.app``). They sit
at the ground so a store, a client or the round counts without importing the server.
``printable`` escapes control characters for terminals and logs (the server's log lines, the
CLI's outputs).
"""

__all__ = ["metrics", "printable"]
