"""The fake's side of GitHub's App-manifest flow, so ``roundwise setup`` is tested end to end.

GitHub's flow has three steps: the user's browser POSTs a form with a ``manifest`` (JSON) to
``/settings/apps/new`` (or ``/organizations/{org}/settings/apps/new``) with an optional
``state`` query parameter; after the user confirms, GitHub redirects the browser to the
manifest's ``redirect_url`` with a temporary ``code`` and the ``state``; the app then exchanges
the code, within an hour and once, with ``POST /app-manifests/{code}/conversions`` (no
authentication) for the new App's id, slug, client id and secret, webhook secret and PEM key.

The fake confirms at once (there is no person to click) and, as GitHub would, becomes that new
App: App JWTs are then checked against the new key and id. The conversion's response follows
GitHub's documented shape (201, the App's fields plus the credentials).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .state import ApiError, basic_error

__all__ = ["CODE_TTL", "ManifestApi"]

CODE_TTL = 3600  # GitHub: all three steps within one hour
DOCS_URL = ("https://docs.github.com/rest/apps/apps"
            "#create-a-github-app-from-a-manifest")
PERMISSION_VALUES = {"read", "write", "admin"}


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class ManifestApi:
    """The form GitHub's web UI receives, and the code-for-credentials conversion."""

    def _manifest_codes(self) -> dict[str, dict[str, Any]]:
        return self.__dict__.setdefault("_pending_manifests", {})

    def _manifest_problem(self, manifest: Any) -> str | None:
        if not isinstance(manifest, dict):
            return "the manifest must be a JSON object"
        if not isinstance(manifest.get("url"), str) or not manifest["url"].startswith("http"):
            return "url is required and must be a URL"
        hook = manifest.get("hook_attributes")
        if hook is not None and (not isinstance(hook, dict) or "url" not in hook):
            return "hook_attributes.url is required when hook_attributes is given"
        permissions = manifest.get("default_permissions") or {}
        if not isinstance(permissions, dict) or not set(permissions.values()) <= \
                PERMISSION_VALUES:
            return "default_permissions values must be read, write or admin"
        events = manifest.get("default_events") or []
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            return "default_events must be a list of event names"
        return None

    async def _h_manifest_form(self, call) -> web.StreamResponse:
        """``POST /settings/apps/new``: a browser's form post; answers with the redirect."""
        raw = None
        if isinstance(call.body, str):  # the form, urlencoded (not JSON: kept as text)
            raw = (parse_qs(call.body).get("manifest") or [None])[0]
        try:
            manifest = json.loads(raw) if raw else None
        except ValueError:
            manifest = None
        problem = self._manifest_problem(manifest)
        if problem:
            return web.Response(status=422, text=f"Invalid GitHub App configuration: {problem}")
        redirect = manifest.get("redirect_url")
        if not redirect or urlsplit(redirect).scheme not in ("http", "https"):
            return web.Response(status=422, text="the manifest has no redirect_url")
        code = secrets.token_hex(10)
        owner = call.params.get("org") or "octocat"
        self._manifest_codes()[code] = {"manifest": manifest, "owner": owner,
                                        "org": bool(call.params.get("org")),
                                        "expires": self._now() + CODE_TTL}
        query = {"code": code}
        if call.request.query.get("state"):
            query["state"] = call.request.query["state"]
        sep = "&" if "?" in redirect else "?"
        raise web.HTTPFound(f"{redirect}{sep}{urlencode(query)}")

    async def _h_manifest_conversion(self, call) -> web.Response:
        """``POST /app-manifests/{code}/conversions``: the new App's configuration, once."""
        pending = self._manifest_codes().pop(call.params["code"], None)
        if pending is None or pending["expires"] <= self._now():
            raise ApiError(404, basic_error(404, "Not Found", DOCS_URL))
        manifest = pending["manifest"]
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
        app_id = 1000 + len(self.__dict__.setdefault("_manifest_apps", [])) + 1
        name = manifest.get("name") or "roundwise"
        slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
        client_id = "Iv23li" + secrets.token_hex(7)
        client_secret = secrets.token_hex(20)
        # from now on the fake is this App (GitHub knows the new App's key and id)
        self._public_key = key.public_key()
        self.app_id, self.app_slug, self.client_id = app_id, slug, client_id
        self.__dict__["_manifest_apps"].append(app_id)
        if hasattr(self, "oauth_app"):  # the new App's OAuth client (``oauth``)
            self.oauth_app(client_id, client_secret)
        now = _stamp(self._now())
        hook = manifest.get("hook_attributes") or {}
        owner = pending["owner"]
        body = {
            "id": app_id,
            "slug": slug,
            "node_id": f"A_kwDO{app_id:08d}",
            "client_id": client_id,
            "owner": {"login": owner, "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
                      "type": "Organization" if pending["org"] else "User",
                      "site_admin": False},
            "name": name,
            "description": manifest.get("description") or "",
            "external_url": manifest["url"],
            "html_url": f"https://github.com/apps/{slug}",
            "created_at": now,
            "updated_at": now,
            "permissions": {"metadata": "read", **(manifest.get("default_permissions") or {})},
            "events": list(manifest.get("default_events") or []),
            "installations_count": 0,
            "client_secret": client_secret,
            "webhook_secret": secrets.token_hex(20) if hook.get("active", True) else None,
            "pem": pem,
        }
        return self._json(body, 201)
