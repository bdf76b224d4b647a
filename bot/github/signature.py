"""GitHub's webhook signature: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>``.

The body is read by ``bot.forge.body.read_verified`` (bounded, spooled, under a deadline), the
HMAC taken as it arrives and compared in constant time once it is whole; a request without the
header is not read at all.
"""

from __future__ import annotations

import hashlib
import hmac

from aiohttp import web

from ..forge.body import MAX_BODY, read_verified, refuse_unreadable

__all__ = ["HubSignature", "read_signed"]


class HubSignature:
    """GitHub's ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>``."""

    def __init__(self, secret: str, header: str):
        self._mac = hmac.new(secret.encode(), digestmod=hashlib.sha256)
        self._header = header

    def update(self, chunk: bytes) -> None:
        self._mac.update(chunk)

    def matches(self) -> bool:
        expected = "sha256=" + self._mac.hexdigest()
        return hmac.compare_digest(expected.encode(), self._header.strip().encode())


async def read_signed(request: web.Request, secret: str, *, max_bytes: int = MAX_BODY,
                      timeout: float | None = None) -> bytes | None:
    """The body when ``X-Hub-Signature-256`` is its HMAC with ``secret``, else None.

    Raises ``BodyRefused`` for a compressed, oversized, slow or abandoned body.
    """
    refuse_unreadable(request, max_bytes)
    header = request.headers.get("X-Hub-Signature-256") or ""
    if not header.startswith("sha256="):
        return None  # nothing to check it against: read nothing
    return await read_verified(request, HubSignature(secret, header), max_bytes=max_bytes,
                               timeout=timeout)
