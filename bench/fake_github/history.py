"""What mining a repository's PR history needs from the fake GitHub, as a mixin.

``roundwise bench mine`` lists a repository's pull requests (``GET /repos/{o}/{r}/pulls``,
GitHub's ``state``/``sort``/``direction`` parameters, paginated with ``Link``) and reads
repositories where the App was never installed, with a personal access token
(``Authorization: token ...``). ``add_personal_token`` gives such a token, valid for one
repository; everything else mining reads (reviews, review comments, commits, compare,
contents, GraphQL ``reviewThreads``) the fake already serves.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from .rest import _REPO, _ROUTES, _Call, _Route
from .state import _Token

_ROUTES.append(_Route("GET", re.compile(_REPO + r"/pulls"), "list_pulls", "token"))


class HistoryApi:
    """``GET /pulls`` and personal access tokens (mixed into ``FakeGitHub``)."""

    def add_personal_token(self, value: str, repo: str) -> None:
        """A token that reads ``repo`` (like a fine-grained personal access token)."""
        the_repo = self._repos[repo.lower()]
        self._tokens[value] = _Token(the_repo.installation_id, float("inf"),
                                     {the_repo.name.lower()})

    async def _h_list_pulls(self, call: _Call) -> web.Response:
        query = call.request.query
        state = query.get("state", "open")
        sort = query.get("sort", "created")
        key = "updated_at" if sort in ("updated", "long-running", "popularity") else "created_at"
        direction = query.get("direction", "desc" if sort == "created" else "asc")
        prs = [pr for pr in call.repo.prs.values()
               if state == "all" or (pr.state == state)]
        prs.sort(key=lambda pr: (getattr(pr, key), pr.number), reverse=direction == "desc")
        items: list[dict[str, Any]] = [self.pr_json(call.repo.full_name, pr.number)
                                       for pr in prs]
        return self._paginate(call, items)
