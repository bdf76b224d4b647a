"""What a webhook delivery asks of the bot, whichever host sent it.

Each backend's router (``bot.github.webhooks.route``, ``bot.gitlab.webhooks.route``) reads its
host's payload into a ``Route``: the job kind for one pull request (or nothing, with the reason),
with what the job needs. ``field`` reads a required field by its dotted path and type, raising
``BadPayload`` (a 400) for what is missing or of the wrong type: a payload is untrusted input.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

__all__ = ["BadPayload", "Route", "field"]


class BadPayload(ValueError):
    """A delivery body that is JSON but not what its event promises."""


@dataclass
class Route:
    """What a delivery asks of the bot: a job (``kind``) for one PR, or nothing."""

    kind: str | None
    repo: str | None = None
    number: int | None = None
    installation_id: int | None = None  # GitHub's installation; GitLab's numeric project id
    head_sha: str | None = None
    payload: dict = dataclass_field(default_factory=dict)
    reason: str = ""


def field(payload: dict, dotted: str, kind: type | None = None) -> Any:
    """The field at ``dotted`` (e.g. ``pull_request.head.sha``), of type ``kind`` if given."""
    value: Any = payload
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise BadPayload(f"missing field {dotted!r}")
        value = value[part]
    if kind is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise BadPayload(f"{dotted!r} must be {'an object' if kind is dict else kind.__name__}")
    return value
