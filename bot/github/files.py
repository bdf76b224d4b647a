"""A pull request too large for GitHub's diff, read from its files list one page at a time.

GitHub refuses the diff media type past 300 files or 20,000 lines (406); the list-files API
(``GET /repos/{o}/{r}/pulls/{n}/files``) gives up to 3,000 files, 100 a page, each with its own
``patch``, left out for a binary file and for a file whose diff is too large to show.
``listed_pull_diff`` asks for the diff first and, when GitHub refuses it as too large, walks the
pages, turning each entry into its section of a unified diff as it arrives (a page is dropped
once read, so a 3,000-file list is never held whole), and says which files it has no patch for
(binary, none sent) or left out past the bot's read cap (``MAX_DIFF_BYTES``), and how many
changed files GitHub did not list (``changed_files`` beyond what the pages held). Each page is
one call with the client's retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
from gidgethub import sansio

from ..forge.coverage import BINARY, CAPS, NO_PATCH, ListedDiff, Unreviewed
from .client import DIFF, MAX_DIFF_BYTES, OVER_CAP, RepoClient, files_to_diff
from .errors import NotAcceptable

__all__ = ["MAX_PAGES", "PER_PAGE", "file_pages", "listed_pull_diff"]

PER_PAGE = 100  # GitHub's largest page
MAX_PAGES = 31  # 3,000 files at 100 a page, and one more: a Link chain never runs on


async def file_pages(client: RepoClient, number: int) -> AsyncIterator[list[dict]]:
    """The pull request's files list, one page (a list of DiffEntry objects) at a time,
    following GitHub's ``Link: rel="next"``; at most ``MAX_PAGES`` pages."""
    url: str | None = client._url(f"/pulls/{int(number)}/files?per_page={PER_PAGE}")
    for _ in range(MAX_PAGES):
        if not url:
            return

        async def get(url: str = url) -> tuple[object, str | None]:
            token = await client.app.installation_token(client.installation_id)
            api = client.app._api(token)
            headers = sansio.create_headers(api.requester, accept=sansio.accept_format(),
                                            oauth_token=token)
            answer = await api._request(
                "GET", sansio.format_url(url, {}, base_url=api.base_url), headers, b"")
            return await asyncio.to_thread(_page, *answer)

        page, url = await client.app._with_retries("GET", url, get,
                                                   installation_id=client.installation_id)
        yield [entry for entry in page if isinstance(entry, dict)] \
            if isinstance(page, list) else []


def _page(status: int, headers, body: bytes) -> tuple[object, str | None]:
    """One answer of the files list: its entries and the next page's URL. Called in a
    worker thread: a page of 100 patches is megabytes of JSON, and a decoder holds the GIL
    (so the loop) while it runs: ``orjson``, about three times ``json``'s pace. gidgethub
    reads the status, rate limit and Link header (and raises for an error answer)."""
    if status != 200:
        data, _limit, more = sansio.decipher_response(status, headers, body)
        return data, more
    _none, _limit, more = sansio.decipher_response(status, headers, b"")
    return orjson.loads(body), more


def _why_no_patch(entry: dict) -> str | None:
    """Why a DiffEntry has no patch to review (None: it needs none, a pure rename)."""
    changes = entry.get("changes")
    changes = changes if isinstance(changes, int) and not isinstance(changes, bool) else 0
    if entry.get("status") == "renamed" and not changes:
        return None
    return NO_PATCH if changes else BINARY


async def listed_pull_diff(client: RepoClient, number: int,
                           changed_files: int | None = None) -> ListedDiff:
    """The pull request's diff: GitHub's own when it makes one, else rebuilt from the files
    list (see the module's docstring). ``NotAcceptable`` when the diff is over the bot's
    read cap: its files list would be as large."""
    try:  # an empty diff comes back as an empty body: the empty text, not None
        text = await client._call("GET", client._url(f"/pulls/{int(number)}"), accept=DIFF)
        return ListedDiff(text or "")
    except NotAcceptable as exc:
        if OVER_CAP in str(exc):
            raise
    parts: list[str] = []
    size = listed = 0
    unreviewed: list[Unreviewed] = []
    async for page in file_pages(client, number):
        for entry in page:
            path = entry.get("filename")
            if not isinstance(path, str) or not path:
                continue
            listed += 1
            section = files_to_diff([entry])
            if size + len(section) > MAX_DIFF_BYTES:
                unreviewed.append(Unreviewed(path, CAPS))
                continue
            if not isinstance(entry.get("patch"), str):
                why = _why_no_patch(entry)
                if why is not None:
                    unreviewed.append(Unreviewed(path, why))
            parts.append(section)
            size += len(section)
    unlisted = max((changed_files or 0) - listed, 0)
    return ListedDiff("".join(parts), tuple(unreviewed), unlisted)
