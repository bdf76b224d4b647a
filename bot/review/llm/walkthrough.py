"""The model-written walkthrough at the top of the first round's summary: one call per head.

A short, factual description of what the pull request changes helps a reviewer more than the
file table alone. It is asked for once, on the first round (the round's saved plan keeps it,
so a resumed round does not ask again, and the client's answer cache keys it by the same
prompt), from the title, the description and the diff capped to a token budget. Its tokens are
added to the round's usage like the review's. A failed call leaves the walkthrough out; it
never fails the round.

It asks for Markdown, so it is asked without the client's JSON mode (a server that honours
``response_format`` answers a JSON object and nothing else: a small local model in JSON mode
answered ``{"added": [...], "modified": [...]}``, which has no walkthrough in it).
"""

from __future__ import annotations

import logging
import re

from ..engine import RoundContext, Usage
from .client import LLMClient, LLMError
from .prompts import cap_text, escape_data, prompt_text

__all__ = ["LLMWalkthrough"]

log = logging.getLogger(__name__)

MAX_DIFF_CHARS = 24000  # about 6,000 tokens of diff: enough to say what a PR does
MAX_ANSWER = 1200


class LLMWalkthrough:
    """Writes the walkthrough with the review's model client."""

    def __init__(self, client: LLMClient):
        self.client = client

    async def write(self, ctx: RoundContext) -> tuple[str | None, Usage]:
        messages = [
            {"role": "system", "content": prompt_text("walkthrough_system.txt")},
            {"role": "user", "content": (
                f"<pr_title>{escape_data(ctx.title)}</pr_title>\n"
                f"<pr_body>{escape_data(cap_text(ctx.body, 2000))}</pr_body>\n"
                f"<diff>\n{escape_data(cap_text(ctx.pr_diff, MAX_DIFF_CHARS))}\n</diff>")},
        ]
        try:
            answer = await self.client.complete(messages, json_mode=False)
        except LLMError as exc:
            log.warning("no walkthrough: %s", exc)
            return None, Usage(failed=1)
        usage = answer.usage
        return _bullets(answer.text), usage


def _bullets(text: str) -> str | None:
    """The answer's bullet lines only (a model may wrap them in prose or a fence)."""
    lines = [ln.rstrip() for ln in (text or "").splitlines()]
    bullets = [re.sub(r"^\s*[*•]\s+", "- ", ln) for ln in lines
               if re.match(r"^\s*([-*•]|\d+\.)\s+\S", ln)]
    out = "\n".join(bullets).strip()
    return out[:MAX_ANSWER] if out else None
