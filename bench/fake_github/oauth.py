"""The fake's side of GitHub's OAuth web flow for a GitHub App, so the dashboard's sign-in is
tested end to end.

GitHub's flow: the browser is sent to ``GET /login/oauth/authorize`` with the App's
``client_id``, a ``redirect_uri`` and a ``state``; once the person signed in to GitHub
authorises, GitHub redirects to ``redirect_uri?code=...&state=...`` (or, refused, to
``redirect_uri?error=access_denied&error_description=...&error_uri=...&state=...``); the app
then POSTs ``client_id``, ``client_secret``, ``code`` (and ``redirect_uri``) to ``POST
/login/oauth/access_token``, which answers **200 even when it fails**, with an ``error`` body
(``bad_verification_code`` for a wrong, used or expired code, ``incorrect_client_credentials``,
``redirect_uri_mismatch``); with ``Accept: application/json`` as JSON, else form-encoded. A
GitHub App's user access token (``ghu_``) lasts eight hours and reads ``GET /user``, ``GET
/user/installations`` and ``GET /user/installations/{id}/repositories``: only the
installations of this App the person can access, and in each only the repositories they can
access (404 for another installation); a bad or expired token is 401 ``Bad credentials``.

Nobody clicks here: ``signed_in`` names the person whose browser is signed in to GitHub (None:
GitHub would ask them to sign in, which the fake answers as a refusal), and ``deny_next``
makes the next authorisation a refusal. ``add_person`` says which installations and
repositories a person can access; ``revoke`` takes some away (the dashboard re-checks).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from aiohttp import web

from .state import ApiError, basic_error

__all__ = ["CODE_TTL", "USER_TOKEN_TTL", "OAuthApi"]

CODE_TTL = 600  # GitHub: an authorisation code expires after ten minutes
USER_TOKEN_TTL = 28800  # eight hours
ERRORS_DOCS = "https://docs.github.com/apps/managing-oauth-apps/"
_TOKEN_ERRORS = "troubleshooting-oauth-app-access-token-request-errors/"
_ERRORS = {
    "bad_verification_code": ("The code passed is incorrect or expired.",
                              _TOKEN_ERRORS + "#bad-verification-code"),
    "incorrect_client_credentials": ("The client_id and/or client_secret passed are incorrect.",
                                     _TOKEN_ERRORS + "#incorrect-client-credentials"),
    "redirect_uri_mismatch": (("The redirect_uri MUST match the registered callback URL for "
                               "this application."),
                              "troubleshooting-authorization-request-errors/#redirect-uri-mismatch2"),
}


@dataclass
class _UserToken:
    login: str
    expires_at: float


class OAuthApi:
    """The OAuth web flow's two web endpoints and the user-token API calls."""

    # -- setup (tests) ----------------------------------------------------------------------

    def _oauth(self) -> dict[str, Any]:
        return self.__dict__.setdefault("_oauth_state", {
            "secret": None, "callback": None, "people": {}, "codes": {}, "tokens": {},
            "signed_in": None, "deny_next": False})

    def oauth_app(self, client_id: str, client_secret: str, callback: str | None = None) -> None:
        """Give the App an OAuth client (GitHub shows both on the App's page); ``callback``:
        the registered callback URL a ``redirect_uri`` must start with."""
        self.client_id = client_id
        self._oauth().update(secret=client_secret, callback=callback)

    def add_person(self, login: str, access: dict[int, list[str] | None]) -> None:
        """A GitHub account that can access, per installation of the App, these repositories
        (None: every repository of that installation)."""
        self._user(login)
        self._oauth()["people"][login] = {int(i): (None if repos is None else
                                                   {r.lower() for r in repos})
                                          for i, repos in access.items()}

    def revoke(self, login: str, installation_id: int) -> None:
        """The person loses access to an installation (removed from the organisation...)."""
        self._oauth()["people"].get(login, {}).pop(int(installation_id), None)

    @property
    def signed_in(self) -> str | None:
        return self._oauth()["signed_in"]

    @signed_in.setter
    def signed_in(self, login: str | None) -> None:
        self._oauth()["signed_in"] = login

    def deny_next(self) -> None:
        self._oauth()["deny_next"] = True

    def expire_user_tokens(self) -> None:
        for token in self._oauth()["tokens"].values():
            token.expires_at = self._now() - 1

    # -- the web flow -------------------------------------------------------------------------

    def _who(self, request: web.Request) -> str:
        value = self._credential(request, ("token", "bearer"))
        token = self._oauth()["tokens"].get(value) if value else None
        if token is not None:
            return f"user:{token.login}"
        return super()._who(request)

    async def _h_oauth_authorize(self, call) -> web.StreamResponse:
        """``GET /login/oauth/authorize``: the person authorises at once (or refuses)."""
        query = call.request.query
        state = self._oauth()
        if not self.client_id or query.get("client_id") != self.client_id:
            return web.Response(status=404, text="Not Found", content_type="text/html")
        redirect = query.get("redirect_uri") or state["callback"] or ""
        if urlsplit(redirect).scheme not in ("http", "https") or (
                state["callback"] and not redirect.startswith(state["callback"])):
            return web.Response(status=400, content_type="text/html",
                                text="The redirect_uri is not associated with this application.")
        back: dict[str, str] = {}
        login = state["signed_in"]
        if state["deny_next"] or login is None:
            state["deny_next"] = False
            back = {"error": "access_denied",
                    "error_description": "The user has denied your application access.",
                    "error_uri": ERRORS_DOCS + "troubleshooting-authorization-request-errors/"
                                              "#access-denied"}
        else:
            code = secrets.token_hex(10)
            state["codes"][code] = {"login": login, "redirect_uri": redirect,
                                    "expires": self._now() + CODE_TTL}
            back = {"code": code}
        if query.get("state"):
            back["state"] = query["state"]
        sep = "&" if "?" in redirect else "?"
        raise web.HTTPFound(f"{redirect}{sep}{urlencode(back)}")

    def _oauth_answer(self, call, body: dict[str, Any]) -> web.Response:
        if "json" in call.request.headers.get("Accept", ""):
            return self._json(body)
        return web.Response(text=urlencode({k: str(v) for k, v in body.items()}),
                            content_type="application/x-www-form-urlencoded")

    def _oauth_error(self, call, error: str) -> web.Response:
        description, uri = _ERRORS[error]
        return self._oauth_answer(call, {"error": error, "error_description": description,
                                         "error_uri": ERRORS_DOCS + uri})

    async def _h_oauth_access_token(self, call) -> web.Response:
        """``POST /login/oauth/access_token``: a code for a user access token, once."""
        if isinstance(call.body, dict):
            form = {k: str(v) for k, v in call.body.items()}
        else:
            text = call.body if isinstance(call.body, str) else ""
            form = {k: v[0] for k, v in parse_qs(text).items()}
        form = {**{k: v for k, v in call.request.query.items()}, **form}
        state = self._oauth()
        if form.get("client_id") != self.client_id or not state["secret"] or \
                not secrets.compare_digest(form.get("client_secret", ""), state["secret"]):
            return self._oauth_error(call, "incorrect_client_credentials")
        pending = state["codes"].pop(form.get("code", ""), None)
        if pending is None or pending["expires"] <= self._now():
            return self._oauth_error(call, "bad_verification_code")
        if form.get("redirect_uri") and form["redirect_uri"] != pending["redirect_uri"]:
            return self._oauth_error(call, "redirect_uri_mismatch")
        token = "ghu_" + secrets.token_urlsafe(27)
        state["tokens"][token] = _UserToken(pending["login"], self._now() + USER_TOKEN_TTL)
        return self._oauth_answer(call, {
            "access_token": token, "expires_in": USER_TOKEN_TTL,
            "refresh_token": "ghr_" + secrets.token_urlsafe(55),
            "refresh_token_expires_in": 15897600, "scope": "", "token_type": "bearer"})

    # -- the user-token API -----------------------------------------------------------------

    def _check_user_token(self, request: web.Request) -> str:
        value = self._credential(request, ("token", "bearer"))
        token = self._oauth()["tokens"].get(value) if value else None
        if token is None or token.expires_at <= self._now():
            raise ApiError(401, basic_error(401, "Bad credentials",
                                            "https://docs.github.com/rest"))
        return token.login

    def _access(self, login: str) -> dict[int, set[str] | None]:
        return {i: repos for i, repos in self._oauth()["people"].get(login, {}).items()
                if i in self._installations}

    async def _h_user(self, call) -> web.Response:
        login = call.params["user_login"]
        return self._json({**self.user_json(login), "name": login, "company": None,
                           "blog": "", "location": None, "email": None, "hireable": None,
                           "bio": None, "twitter_username": None, "public_repos": 0,
                           "public_gists": 0, "followers": 0, "following": 0,
                           "created_at": "2020-01-01T00:00:00Z",
                           "updated_at": "2024-01-01T00:00:00Z"})

    def _wrapped_page(self, call, items: list[Any], key: str, **extra) -> web.Response:
        """A list GitHub wraps in an object (``total_count`` and the items), paginated."""
        page = self._paginate(call, items)
        import json

        listed = json.loads(page.body)
        return self._json({"total_count": len(items), **extra, key: listed},
                          headers={k: v for k, v in page.headers.items() if k == "Link"})

    def _full_installation(self, installation_id: int) -> dict[str, Any]:
        """GitHub's full ``installation`` schema, as ``GET /user/installations`` lists it."""
        return {**self.installation_json(installation_id),
                "repositories_url": f"{self._api()}/installation/repositories",
                "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
                "single_file_name": None, "suspended_by": None}

    async def _h_user_installations(self, call) -> web.Response:
        ids = sorted(self._access(call.params["user_login"]))
        return self._wrapped_page(call, [self._full_installation(i) for i in ids],
                                  "installations")

    async def _h_user_installation_repos(self, call) -> web.Response:
        access = self._access(call.params["user_login"])
        installation = int(call.params["installation_id"])
        if installation not in access:
            raise ApiError(404, basic_error(404, "Not Found", "https://docs.github.com/rest"))
        allowed = access[installation]
        names = sorted(repo.full_name for repo in self._repos.values()
                       if repo.installation_id == installation
                       and (allowed is None or repo.full_name.lower() in allowed))
        return self._wrapped_page(call, [self.repo_json(n) for n in names], "repositories",
                                  repository_selection="all" if allowed is None else "selected")
