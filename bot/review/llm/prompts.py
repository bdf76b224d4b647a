"""Prompt text and the data blocks untrusted PR text goes into (tags neutralised, capped).

Everything from the pull request enters a prompt only through ``data_block`` after ``escape_data``;
the caps keep one huge PR body from eating the budget.
"""

from __future__ import annotations

import re
from importlib import resources
from string import Template
from typing import Any

from tracker.lines import split_lines
from tracker.models import (
    MCR_TYPES,
    SEVERITIES,
)

# Caps on untrusted text, so that one huge PR body cannot eat the whole budget.
MAX_BODY_CHARS = 3000
MAX_ISSUES = 5
MAX_ISSUE_CHARS = 1500
MAX_DISCUSSION_CHARS = 4000
MAX_DESCRIPTION_CHARS = 400
MAX_CODE_LINES = 12
MAX_TRACKED_LISTED = 60
MAX_VERIFY_DIFF_LINES = 40
MAX_OUTPUT_ECHO_CHARS = 8000
CONTEXT_LINES = 5  # lines of current code shown around a defect's anchor when verifying
NEAR_DIFF_LINES = 10  # diff lines this close to a defect's anchor are shown to the verifier
TOKEN_MARGIN = 64  # slack kept under the budget for the chat format's own tokens



def prompt_text(name: str) -> str:
    """A prompt file from ``bot/review/prompts``."""
    return resources.files("bot.review").joinpath(f"prompts/{name}").read_text(encoding="utf-8")


def system_prompt(name: str) -> str:
    taxonomy = "\n".join(f"- {key}: {label}" for key, label in MCR_TYPES.items())
    return Template(prompt_text(name)).substitute(taxonomy=taxonomy,
                                                  severities=", ".join(SEVERITIES))


_TAGS = ("pr_title", "pr_body", "linked_issues", "issue", "tracked_defects", "defect",
         "description", "current_code", "code_when_raised", "round_diff", "discussion",
         "comment", "tracker_hint", "claim", "rounds", "round", "events", "event",
         "changed_files", "system", "instructions")
_TAG_LOOKALIKE = re.compile(r"<(\s*/?\s*)(" + "|".join(_TAGS) + r")\b", re.IGNORECASE)


def escape_data(text: str | None) -> str:
    """Untrusted text made safe to put inside a data block: tag look-alikes are neutralised."""
    return _TAG_LOOKALIKE.sub(lambda m: "&lt;" + m.group(1) + m.group(2), str(text or ""))


def _attr(value: Any) -> str:
    """An attribute value: one line, no quotes or angle brackets to break out of the tag."""
    text = str(value).replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.split())[:300]


def data_block(tag: str, content: str, **attrs: Any) -> str:
    """``<tag a="..">content</tag>``; ``content`` must already be escaped."""
    shown = "".join(f' {k}="{_attr(v)}"' for k, v in attrs.items() if v is not None)
    return f"<{tag}{shown}>\n{content.rstrip()}\n</{tag}>"


def cap_text(text: str | None, limit: int) -> str:
    """At most ``limit`` characters of ``text``, saying how much was cut."""
    text = str(text or "")
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def _numbered(text: str | None, start: int, end: int) -> str:
    """Lines start..end of a file, each prefixed with its line number."""
    lines = split_lines(text)
    lo = max(start, 1)
    return "\n".join(f"{n:>5} | {lines[n - 1]}" for n in range(lo, min(end, len(lines)) + 1))
