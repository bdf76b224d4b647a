"""Reading a webhook delivery's body without trusting it first, for every code host.

Anyone can POST to a webhook route; until the signature checks out, a request must cost little.
``read_verified`` refuses compressed bodies (no host sends them, and a 200 KB gzip bomb inflates
to gigabytes), refuses a ``Content-Length`` over 25 MB (GitHub's cap; GitLab's is lower) before
reading a byte, and reads the body under a deadline (a slow sender is cut off). A body of at most 256 KB with a declared
length (every delivery GitHub sends, nearly) is read in one go, the parser stopping at that
length; a larger or chunked one is hashed as it arrives and spooled to a temporary file past
256 KB, so twenty 24 MB bodies at once do not sit in memory: only a correctly signed large
body is ever held whole. A client that goes away is one log line. The signature is the
host's (a ``Signature`` fed as the body arrives: ``bot.github.signature``, GitLab's Standard
Webhooks one, or ``Authenticated`` for a request its headers already authenticated); the
budget of bodies read before their signature is known is ``bot.forge.unverified``'s.

``parse_payload`` is for signed bodies that are still hostile: JSON nested too deep, or
integers no 64-bit column can hold, are a 400 and not a 500 with a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from typing import Protocol

import aiohttp
import orjson
from aiohttp import web

__all__ = [
    "MAX_BODY",
    "MAX_DEPTH",
    "READ_TIMEOUT",
    "Authenticated",
    "BodyRefused",
    "Signature",
    "parse_payload",
    "read_verified",
    "refuse_unreadable",
    "still_arriving",
]

log = logging.getLogger(__name__)

MAX_BODY = 25 * 1024 * 1024  # GitHub does not send payloads over 25 MB (GitLab: 25 MB either)
READ_TIMEOUT = 10.0  # seconds to receive a whole body (GitHub and GitLab give up after 10 s)
IN_MEMORY = 256 * 1024  # bodies past this size are spooled to a temporary file while read
CHUNK = 64 * 1024
MAX_DEPTH = 64  # nesting of JSON objects and arrays in a payload (GitHub's are far shallower)
INT_RANGE = (-(2 ** 63), 2 ** 63 - 1)  # what SQLite's INTEGER holds


class BodyRefused(Exception):
    """A body the server will not read: ``status`` and a reason for the client."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Signature(Protocol):
    """A body's signature, checked as the body arrives: ``update`` with each piece, then
    ``matches`` (in constant time)."""

    def update(self, chunk: bytes) -> None: ...

    def matches(self) -> bool: ...


class Authenticated:
    """A request already authenticated by its headers (GitLab's secret token): nothing to
    check in the body, which is still read under the same bounds."""

    def update(self, chunk: bytes) -> None:
        pass

    def matches(self) -> bool:
        return True


def refuse_unreadable(request: web.Request, max_bytes: int = MAX_BODY) -> None:
    """``BodyRefused`` for a body refused from its headers alone: compressed or too large."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise BodyRefused(415, f"compressed bodies ({encoding}) are not accepted")
    if request.content_length is not None and request.content_length > max_bytes:
        raise BodyRefused(413, f"bodies over {max_bytes} bytes are not accepted")


def still_arriving(request: web.Request, max_bytes: int = MAX_BODY) -> bool:
    """Whether reading the body means waiting for it: not all here yet, and not refused from
    its headers alone (compressed, too large)."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    return not request.content.is_eof() and encoding in ("", "identity") \
        and (request.content_length or 0) <= max_bytes


async def read_verified(request: web.Request, signature: Signature, *,
                        max_bytes: int = MAX_BODY, timeout: float | None = None
                        ) -> bytes | None:
    """The body when ``signature`` matches it once read, else None; bounded as the module
    says (``BodyRefused`` for a compressed, oversized, slow or abandoned body)."""
    refuse_unreadable(request, max_bytes)
    timeout = timeout or READ_TIMEOUT
    small = request.content_length is not None and request.content_length <= IN_MEMORY
    with (contextlib.nullcontext() if small
          else tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)) as spool:
        try:
            if spool is None and request.content.is_eof():
                # small and already all here (it came with the headers): nothing to wait for
                body = await request.content.read()
                signature.update(body)
            else:
                async with asyncio.timeout(timeout):
                    if spool is None:  # small, its length known: the parser stops there
                        body = await request.content.read()
                        signature.update(body)
                    else:
                        await _spool(request, signature, max_bytes, spool)
        except TimeoutError:
            raise BodyRefused(408, f"the body did not arrive within {timeout:g}s") from None
        except (ConnectionError, aiohttp.ClientError, RuntimeError) as exc:
            # (aiohttp raises RuntimeError("Connection closed.") for a read after the
            # client hung up)
            delivery = (request.headers.get("X-GitHub-Delivery")
                        or request.headers.get("X-Gitlab-Event-UUID") or "-")
            log.warning("client %s disconnected during %s %s (delivery %s, %s); nothing was "
                        "recorded", request.remote, request.method, request.path,
                        delivery[:100], type(exc).__name__)
            raise BodyRefused(400, "the body was cut off") from None
        if not signature.matches():
            return None
        if spool is None:
            return body
        spool.seek(0)
        return spool.read()


async def _spool(request: web.Request, signature: Signature, max_bytes: int, spool) -> None:
    """Read a large or chunked body into ``spool`` (on disk past ``IN_MEMORY``), checking its
    signature as it arrives and refusing it past ``max_bytes``."""
    size = 0
    async for chunk in request.content.iter_chunked(CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise BodyRefused(413, f"bodies over {max_bytes} bytes are not accepted")
        signature.update(chunk)
        spool.write(chunk)


def parse_payload(body: bytes) -> object:
    """JSON from a signed body; ValueError for what is not JSON a column can hold."""
    try:
        payload = orjson.loads(body)  # about 2.5x json.loads on GitHub's 20 KB payloads
    except orjson.JSONDecodeError as exc:  # a ValueError; also past orjson's own depth limit
        raise ValueError(f"not JSON: {exc}") from None
    _check(payload)
    return payload


def _check(payload: object) -> None:
    """Walk the payload without recursion: depth and integer range. Only containers go on the
    stack; the parser makes exact types, so ``type(...) is`` tells ints from bools."""
    low, high = INT_RANGE
    if type(payload) is int:
        if not low <= payload <= high:
            raise ValueError("an integer is out of the 64-bit range")
        return
    if type(payload) not in (dict, list):
        return
    stack = [(payload, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        for item in (value.values() if type(value) is dict else value):
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1))
            elif kind is int and not low <= item <= high:
                raise ValueError("an integer is out of the 64-bit range")
