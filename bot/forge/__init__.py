"""The forge port and what every code-host backend shares; the small backend beside it.

``port`` (what a review round needs from a code host: ``ForgeReader``, ``Forge``, the typed
errors; re-exported here, so ``from bot.forge import Forge`` reads as the port), ``confine``
(paths and line numbers from outside made safe, for every backend) and ``localgit``
(``LocalGitForge``, the read side over a local git repository, for ``roundwise review``). The
GitHub and GitLab backends are the packages ``bot.github`` and ``bot.gitlab``; ``host`` says
what a backend hands the settings and the server (a ``Host`` entry) and ``hosts`` lists them
(not imported here: it imports the backends, which import this port).
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
           "Unauthorized", "Unavailable", "Unprocessable", "confine", "host", "hosts", "localgit",
           "port"]
