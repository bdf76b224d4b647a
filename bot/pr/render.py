"""What the bot writes on a pull request: inline comments, thread replies and the summary.

Every body carries a hidden marker (``<!-- roundwise:... -->``) naming what it is, the defect
and the round, so a job that runs again after a crash can see what it already posted, and the
sticky summary can be found and edited in place. PR text quoted back is escaped so it cannot
close our markers or inject markup.
"""

from __future__ import annotations

import re

from tracker.models import MCR_TYPES, Decision, Defect, Finding, suggestion_block

from .quiet import quiet

SUMMARY_MARKER = "<!-- roundwise:summary -->"
_MARKER = re.compile(r"<!-- roundwise:(\w+):(D\d+[a-z]?|-):r(\d+) -->")


def marker(kind: str, key: str, round_number: int) -> str:
    return f"<!-- roundwise:{kind}:{key}:r{round_number} -->"


def read_marker(body: str | None) -> tuple[str, str, int] | None:
    """(kind, defect key, round) from a body the bot wrote, or None."""
    match = _MARKER.search(body or "")
    return (match.group(1), match.group(2), int(match.group(3))) if match else None


def _clean(text: str, limit: int = 1500) -> str:
    """Text that may be a person's, cut to ``limit`` and quoted without pinging anyone."""
    text = (text or "").replace("<!--", "&lt;!--").replace("-->", "--&gt;").strip()
    return quiet(text if len(text) <= limit else text[: limit - 1] + "…")


def _kind(type_id: str | None) -> str:
    """The type by its name ("Organization"), the id only for a type the taxonomy lacks."""
    return MCR_TYPES.get(type_id or "", type_id or "")


def inline_comment(key: str, finding: Finding, round_number: int) -> str:
    """The body of a new defect's inline review comment."""
    source = f" · `{finding.rule}`" if finding.rule else ""
    fix = ""
    if finding.fix is not None and finding.side == "RIGHT":
        what = "delete these lines" if not finding.fix.strip() else "commit this change"
        fix = suggestion_block(f"Suggested fix ({what}):", finding.fix) + "\n\n"
    return (
        f"**{key}** · {finding.severity}{f' · {_kind(finding.type)}' if finding.type else ''}"
        f"{source}\n\n"
        f"{_clean(finding.description)}\n\n{fix}"
        f"<sub>roundwise tracks this as {key}; it will check your next push. Reply here if "
        f"you disagree.</sub>\n{marker('new', key, round_number)}"
    )


def state_reply(defect: Defect, decision: Decision, round_number: int,
                hedged: bool = False) -> str:
    """A reply in a tracked defect's thread when its state changed this round. ``hedged``: a
    Resolved roundwise is not sure of (``bot.pr.hedge``), which asks instead of claiming."""
    head = {
        "Resolved": f"✅ **{defect.key} looks resolved** in round {round_number}.",
        "Open": f"⏳ **{defect.key} is still open** in round {round_number}.",
        "Reopened": f"🔁 **{defect.key} is back** in round {round_number}.",
    }.get(str(decision.state), f"**{defect.key}**: {decision.state}")
    if hedged:
        head = (f"❔ **{defect.key} may be fixed** in round {round_number}: the code changed, "
                "but roundwise is not sure that fixes it. **Resolve this thread if this is "
                "fixed**, or reply here if it is not.")
    who = {"rule": "checked from the code", "llm": "verified against the code",
           "human": "a person's action"}[str(decision.decided_by)]
    sure = "" if decision.confidence is None or str(decision.decided_by) == "human" else \
        f", {round(100 * decision.confidence)}% likely right"
    return (f"{head}\n\n{'What changed' if hedged else 'Evidence'} ({who}): "
            f"{_clean(decision.evidence, 800)}\n\n"
            f"<details><summary>Why</summary>\n\nThe tracker's rule `{decision.rule}`{sure}."
            f"\n\n</details>\n"
            f"{marker('state', defect.key, round_number)}{_BECAME.format(decision.state)}")


# What a state reply said the defect became: a round after a crash tells by it whether the
# crashed round already said the same (``bot.round.publish``).
_BECAME = "<!-- roundwise:became:{} -->"
_BECAME_RE = re.compile(r"<!-- roundwise:became:(\w+) -->")


def read_became(body: str | None) -> str | None:
    """The state a state reply announced ("Resolved", "Open", "Reopened"), or None."""
    match = _BECAME_RE.search(body or "")
    return match.group(1) if match else None


# A blank line must come before it, or GitHub glues it to the paragraph above.
COMMANDS = ("<sub>Commands: `/roundwise review`, `/roundwise status`, "
            "`/roundwise resolve D3`, `/roundwise ignore D3`, `/roundwise help`.</sub>")


def commands(open_keys: list[str]) -> str:
    """The commands line, suggesting only what applies: ``resolve`` and ``ignore`` with an
    open defect's key (the first of ``open_keys``), and not at all when none is open."""
    also = (f"`/roundwise resolve {open_keys[0]}`, `/roundwise ignore {open_keys[0]}`, "
            if open_keys else "")
    return (f"<sub>Commands: `/roundwise review`, `/roundwise status`, {also}"
            "`/roundwise help`.</sub>")


HELP = """**roundwise commands** (in a comment on the pull request):

- `/roundwise review`: review the latest push now
- `/roundwise status`: post the ledger of every tracked defect
- `/roundwise resolve D3`: mark D3 resolved (needs write access); `D3` also names every
  request of a comment tracked as `D3a`, `D3b`..., and `D3b` one of them
- `/roundwise ignore D3`: stop reporting D3 (needs write access)
- `/roundwise unmute debug-print`: post that kind of finding again in this repository, after
  people dismissed it often enough that roundwise held it back (needs write access)
- `/roundwise help`: this message"""


def status_table(rows: list[dict]) -> str:
    if not rows:
        return "roundwise tracks no defects on this pull request yet."
    out = ["| id | state | where | description |", "|---|---|---|---|"]
    for row in rows:
        desc = _clean(row["description"], 140).replace("\n", " ").replace("|", "\\|")
        out.append(f"| {row['key']} | {row['state']} | `{row['location']}` | {desc} |")
    return "\n".join(out)
