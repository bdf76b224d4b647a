"""People's text, quoted by the bot without pinging anyone.

When the bot shows what a person wrote (a reviewer's remark as a defect's description, a reply
quoted as evidence), GitHub would treat every ``@name``, ``@org/team`` and ``#123`` in it as the
bot's own mention or reference, notifying people who never joined the PR (a comment with 10,000
mentions made the summary re-post 160 of them). ``quiet`` puts a word joiner (U+2060, invisible)
after each ``@`` or ``#`` that would notify or cross-reference, outside code spans (GitHub does
not notify from code). The bot's own mentions (``@user`` answering a command) are written
outside this and stay live.
"""

from __future__ import annotations

import re

__all__ = ["JOINER", "quiet"]

JOINER = "\u2060"
# an @ not inside a word or an e-mail address; a # before digits, not an HTML entity (&#38;)
_PING = re.compile(r"(?<![\w@.+-])@(?=[A-Za-z0-9_])|(?<!&)#(?=\d)")
_CODE = re.compile(r"(`+)[^`]*?\1")


def quiet(text: str | None) -> str:
    """``text`` with its mentions and issue references broken, code spans left alone."""
    text = text or ""
    if "@" not in text and "#" not in text:
        return text
    out, at = [], 0
    for span in _CODE.finditer(text):
        out.append(_PING.sub(lambda m: m.group(0) + JOINER, text[at:span.start()]))
        out.append(span.group(0))
        at = span.end()
    out.append(_PING.sub(lambda m: m.group(0) + JOINER, text[at:]))
    return "".join(out)
