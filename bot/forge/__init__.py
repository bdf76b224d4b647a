"""The forge port and what every code-host backend shares; the small backend beside it.

``port`` (what a review round needs from a code host: ``ForgeReader``, ``Forge``, the typed
errors; re-exported here, so ``from bot.forge import Forge`` reads as the port), ``confine``
(paths and line numbers from outside made safe, for every backend), ``coverage`` (a diff
with the changed files it leaves out, and why) and ``localgit``
(``LocalGitForge``, the read side over a local git repository, for ``roundwise review``). The
GitHub and GitLab backends are the packages ``bot.github`` and ``bot.gitlab``; ``host`` says
what a backend hands the settings and the server (a ``Host`` entry; the list of them is the
server's, ``bot.server.hosts``), ``appkeys`` the typed keys of the server's shared state its
routes read, and ``unverified`` the budget of webhook bodies read before their signature can
be checked, which every backend's webhook route draws on. What the backends share, sans I/O but
the request they hand in: ``body`` (a webhook body read bounded and checked against the host's
signature as it arrives), ``delivery`` (what a delivery asks: ``Route``, ``BadPayload``, the
typed field reader) and ``calls`` (the retry policy, rate-limit waits, typed errors and the
retry loop).
"""

from .port import (
    Comment,
    Forbidden,
    Forge,
    ForgeError,
    ForgeReader,
    InlineComment,
    NotAcceptable,
    NotFound,
    PullRequest,
    RateLimited,
    Review,
    Thread,
    Unauthorized,
    Unavailable,
    Unprocessable,
)

__all__ = ["Comment", "Forbidden", "Forge", "ForgeError", "ForgeReader", "InlineComment",
           "NotAcceptable", "NotFound", "PullRequest", "RateLimited", "Review", "Thread",
           "Unauthorized", "Unavailable", "Unprocessable", "appkeys", "body", "calls", "confine",
           "coverage", "delivery", "host", "localgit", "port", "unverified"]
