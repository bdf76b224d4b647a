"""A fake GitHub REST and GraphQL API served over real HTTP on 127.0.0.1.

The bot's tests and the offline bench point the bot at ``FakeGitHub.url`` instead of
api.github.com, so what passes here is what runs in production. The fake follows the contract in
the shared GitHub API notes: App JWTs and installation tokens, pull request reads (JSON, git
diffs, files, compare, contents, commits), reviews and comments with GitHub's all-or-nothing line
validation, GraphQL review threads, absolute ``Link`` pagination and scripted faults. Its
answers take the full shapes of GitHub's published schemas (``tests/test_github_contract.py``
checks them with githubkit); rate limits are budgets per installation, for the App's JWT calls
and for unauthenticated calls, as GitHub keeps them (``usage`` says what each spent); every GET
carries an ``ETag`` and a conditional GET that matches gets a free 304. State lives in memory and is set up (or acted on as a human) through plain methods. The
fake never sends webhooks; ``bench.replay.payloads`` builds them from its state.

The package: ``state`` (records, setup, JSON shapes), ``rest`` (HTTP, auth, REST handlers),
``graphql`` (the GraphQL subset), ``checks`` (check runs), ``history`` (PR history for
``bench mine``), ``manifests`` (the App-manifest flow) and ``oauth`` (the OAuth web flow and the
user-token calls the dashboard's sign-in makes); ``FakeGitHub`` joins them.
"""

from __future__ import annotations

from .checks import ChecksApi
from .graphql import GraphQLApi, GraphQLSyntaxError, parse_graphql, validate_graphql
from .history import HistoryApi
from .manifests import ManifestApi
from .oauth import OAuthApi
from .rest import RestApi
from .state import ApiError, FakeState, RecordedRequest, basic_error

__all__ = ["ApiError", "FakeGitHub", "GraphQLSyntaxError", "RecordedRequest", "basic_error",
           "graphql", "history", "manifests", "oauth", "parse_graphql", "rest", "state",
           "validate_graphql"]


class FakeGitHub(ChecksApi, HistoryApi, OAuthApi, RestApi, GraphQLApi, ManifestApi, FakeState):
    """In-memory GitHub serving the REST and GraphQL calls the bot makes, over real HTTP.

    ``app_id`` and the App's RSA public key PEM verify App JWTs. ``token_ttl`` sets how long
    installation tokens live; ``clock`` (epoch seconds) lets tests move time. With
    ``repository_id_links`` (default, like GitHub) pagination links use the
    ``/repositories/{id}/...`` shape rather than the request's path.
    """
