"""The GitHub backend: the App's client, its errors, webhooks and the forge over them.

``client`` (App JWTs, installation tokens, REST and GraphQL with retries on
``bot.forge.calls``), ``files`` (a pull request too large for GitHub's diff, from its files
list page by page), ``errors`` (the typed tree), ``webhooks`` (``POST /webhook``: signature,
routing, durable jobs), ``signature`` (the HMAC checked as ``bot.forge.body`` reads the body),
``forge`` (``GitHubForge``, the round's port) and
``host`` (the App's settings and what the server mounts: ``bot.server.hosts``'s entry).
"""

from .client import GitHubApp, RepoClient, RetryPolicy, files_to_diff, graphql_endpoint
from .errors import GitHubError
from .forge import GitHubForge

__all__ = ["GitHubApp", "GitHubError", "GitHubForge", "RepoClient", "RetryPolicy", "client",
           "errors", "files", "files_to_diff", "forge", "graphql_endpoint", "host", "signature",
           "webhooks"]
