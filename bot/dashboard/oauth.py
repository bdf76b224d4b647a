"""GitHub sign-in for the dashboard: the OAuth web flow with the App's client id and secret.

``authorize_url`` sends the browser to GitHub with a random ``state``; the callback's ``code``
is exchanged (``exchange``) for a user access token, which reads who the person is (``GET
/user``) and which repositories they may see: the repositories of every installation of the
App their account can access (``GET /user/installations``, then ``GET
/user/installations/{id}/repositories``), as GitHub answers for that person. GitHub answers a
bad or expired code with 200 and an ``error`` body, and a refused authorisation with a redirect
carrying ``error=access_denied``; both end in ``SignInError`` with GitHub's description. Lists
are read page by page and bounded (``MAX_PAGES``), so a huge account cannot stall a sign-in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

import aiohttp

__all__ = ["MAX_PAGES", "Person", "SignInError", "authorize_url", "exchange", "person"]

MAX_PAGES = 10  # of 100 installations, and of 100 repositories per installation
TIMEOUT = aiohttp.ClientTimeout(total=20)
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "roundwise-dashboard"}


class SignInError(RuntimeError):
    """GitHub refused the sign-in, or could not be asked; the message is safe to show."""


class Expired(SignInError):
    """The user access token no longer works: the person signs in again."""


@dataclass(frozen=True)
class Person:
    login: str
    repos: frozenset[str]


def authorize_url(web_url: str, client_id: str, redirect_uri: str, state: str) -> str:
    query = urlencode({"client_id": client_id, "redirect_uri": redirect_uri, "state": state,
                       "allow_signup": "false"})
    return f"{web_url}/login/oauth/authorize?{query}"


async def exchange(session: aiohttp.ClientSession, web_url: str, client_id: str,
                   client_secret: str, code: str, redirect_uri: str) -> str:
    """The user access token for ``code``."""
    form = {"client_id": client_id, "client_secret": client_secret, "code": code,
            "redirect_uri": redirect_uri}
    try:
        async with session.post(f"{web_url}/login/oauth/access_token", data=form,
                                headers={"Accept": "application/json"}, timeout=TIMEOUT) as resp:
            body = await resp.json(content_type=None)
            status = resp.status
    except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
        raise SignInError(f"GitHub could not be asked for the sign-in ({type(exc).__name__})"
                          ) from None
    if status != 200 or not isinstance(body, dict):
        raise SignInError(f"GitHub answered the sign-in with HTTP {status}")
    if body.get("error"):  # bad_verification_code, incorrect_client_credentials...
        raise SignInError(f"GitHub refused the sign-in: {body.get('error_description') or ''} "
                          f"({body['error']})")
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise SignInError("GitHub's answer to the sign-in holds no access token")
    return token


async def _get(session: aiohttp.ClientSession, url: str, token: str) -> tuple[object, str | None]:
    try:
        async with session.get(url, headers={**_HEADERS, "Authorization": f"Bearer {token}"},
                               timeout=TIMEOUT) as resp:
            if resp.status == 401:
                raise Expired("your GitHub sign-in has expired: sign in again")
            if resp.status != 200:
                raise SignInError(f"GitHub answered {resp.status} to {url.split('?')[0]}")
            match = _NEXT.search(resp.headers.get("Link", ""))
            return await resp.json(content_type=None), match.group(1) if match else None
    except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
        raise SignInError(f"GitHub could not be asked who you are ({type(exc).__name__})"
                          ) from None


async def _pages(session: aiohttp.ClientSession, url: str, token: str, key: str) -> list[dict]:
    out: list[dict] = []
    next_url: str | None = url
    for _ in range(MAX_PAGES):
        if next_url is None:
            break
        body, next_url = await _get(session, next_url, token)
        items = body.get(key) if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise SignInError(f"GitHub's answer lacks {key}")
        out.extend(item for item in items if isinstance(item, dict))
    return out


async def person(session: aiohttp.ClientSession, api_url: str, token: str) -> Person:
    """Who holds ``token`` and every repository they may see through the App."""
    api = api_url.rstrip("/")
    user, _ = await _get(session, f"{api}/user", token)
    if not isinstance(user, dict) or not isinstance(user.get("login"), str):
        raise SignInError("GitHub's answer about you lacks a login")
    repos: set[str] = set()
    for inst in await _pages(session, f"{api}/user/installations?per_page=100", token,
                             "installations"):
        if not isinstance(inst.get("id"), int):
            continue
        for repo in await _pages(
                session, f"{api}/user/installations/{inst['id']}/repositories?per_page=100",
                token, "repositories"):
            if isinstance(repo.get("full_name"), str):
                repos.add(repo["full_name"])
    return Person(login=user["login"], repos=frozenset(repos))
