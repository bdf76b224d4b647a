"""Dashboard sessions: a signed cookie naming a session kept in this server's memory.

The cookie (``roundwise_session``; ``HttpOnly``, ``Secure``, ``SameSite=Lax``, path
``/dashboard``) holds a random session id signed with itsdangerous and a time stamp: a cookie
whose signature does not verify, or older than ``MAX_AGE``, or naming a session this server
does not hold, is refused. What the session knows (who, which repositories, the GitHub user
token used to check that again) stays on the server, never in the browser; the key is random
per process, so a restart signs everyone out. ``RECHECK`` after the last check, a GitHub
session's repositories are read again from GitHub (``bot.dashboard.access``). The store is
bounded (``MAX_SESSIONS``; the oldest go first).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from itsdangerous import BadSignature, URLSafeTimedSerializer

__all__ = ["COOKIE", "MAX_AGE", "RECHECK", "Session", "Sessions"]

COOKIE = "roundwise_session"
STATE_COOKIE = "roundwise_oauth_state"
MAX_AGE = 8 * 3600  # a GitHub App's user access token lasts eight hours
RECHECK = 3600  # the repositories a person may see are asked again after an hour
MAX_SESSIONS = 10_000
STATE_AGE = 600  # seconds a sign-in may take on GitHub's side


@dataclass
class Session:
    id: str
    kind: str  # "github" or "token"
    login: str
    repos: frozenset[str] | None  # lower-case full names; None: every repository
    checked: float
    github_token: str | None = field(default=None, repr=False)


class _Serializer(URLSafeTimedSerializer):
    """itsdangerous's timed serializer on the dashboard's clock (tests move it)."""

    def __init__(self, key: str, salt: str, clock: Callable[[], float]):
        super().__init__(key, salt=salt)
        self.clock = clock

    def make_signer(self, salt=None):
        signer = super().make_signer(salt)
        signer.get_timestamp = lambda: int(self.clock())
        return signer


class Sessions:
    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock  # tests move it: the signatures' time stamps follow

        def now() -> float:
            return self.clock()

        key = secrets.token_urlsafe(32)
        self._cookies = _Serializer(key, "roundwise-dashboard-session", now)
        self._states = _Serializer(key, "roundwise-dashboard-oauth-state", now)
        self._held: OrderedDict[str, Session] = OrderedDict()

    def start(self, kind: str, login: str, repos: frozenset[str] | None,
              github_token: str | None = None) -> tuple[Session, str]:
        """A new session and its cookie's value."""
        session = Session(secrets.token_urlsafe(24), kind, login, repos, self.clock(),
                          github_token)
        self._held[session.id] = session
        while len(self._held) > MAX_SESSIONS:
            self._held.popitem(last=False)
        return session, self._cookies.dumps(session.id)

    def find(self, cookie: str | None) -> Session | None:
        """The session a cookie names, or None when it is forged, expired or unknown."""
        if not cookie or len(cookie) > 512:
            return None
        try:
            sid = self._cookies.loads(cookie, max_age=MAX_AGE)
        except BadSignature:  # SignatureExpired is one too
            return None
        return self._held.get(sid) if isinstance(sid, str) else None

    def end(self, session: Session) -> None:
        self._held.pop(session.id, None)

    def new_state(self) -> tuple[str, str]:
        """An OAuth ``state`` and the signed cookie that must come back with it."""
        state = secrets.token_urlsafe(24)
        return state, self._states.dumps(state)

    def state_matches(self, state: str | None, cookie: str | None) -> bool:
        if not state or not cookie or len(cookie) > 512:
            return False
        try:
            expected = self._states.loads(cookie, max_age=STATE_AGE)
        except BadSignature:
            return False
        return isinstance(expected, str) and secrets.compare_digest(expected, state)
