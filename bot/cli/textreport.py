"""The text report of ``roundwise review``: fixed columns, nothing cut without saying so.

One header row per defect in fixed-width columns (key, state, state before this round,
severity, place), so a state change never shifts the columns and ``grep``/``awk`` can read
them; the description follows, wrapped and indented, in full. Evidence that is longer than a
few lines is cut at a word boundary and ends with "…", so a cut is always visible. Every
text from the code under review (names, descriptions, evidence, fixes) has its control
characters escaped (``bot.cli.printable``): a file name cannot move the cursor of the terminal
or CI log that shows the report.
"""

from __future__ import annotations

import shutil
import textwrap

from .printable import printable

__all__ = ["as_text", "shorten", "tally"]

INDENT = " " * 6
EVIDENCE_CHARS = 320
STATE_WIDTH = 9  # "Resolved", "Reopened" and a space
SEVERITY_WIDTH = 9  # "Critical" and a space


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at the last word boundary before ``limit`` with "…"."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit - 1]
    if " " in cut and not flat[limit - 1].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.") + "…"


def _width() -> int:
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))


def as_text(report: dict, width: int | None = None) -> str:
    width = width or _width()
    title = (f"roundwise round {report['round']} of {printable(report['branch'])} "
             f"({report['base'][:7]}...{report['head'][:7]})")
    shown = [d for d in report["defects"] if not d["ignored"]]
    lines = [title]
    if not report["defects"]:
        lines.append("no defects found")
        return "\n".join(lines + _held(report))
    if not shown:
        return "\n".join(lines + [tally(report["defects"])] + _held(report))
    key_width = max(4, *(len(d["key"]) for d in shown)) + 2
    row = f"{{:<{key_width}}}{{:<{STATE_WIDTH}}}{{:<{STATE_WIDTH}}}{{:<{SEVERITY_WIDTH}}}{{}}"
    lines.append(row.format("KEY", "STATE", "WAS", "SEVERITY", "WHERE"))
    wrap = textwrap.TextWrapper(width=width, initial_indent=INDENT, subsequent_indent=INDENT,
                                break_long_words=False, break_on_hyphens=False)
    for d in shown:
        where = _where(d)
        was = "-" if d["previous"] in (None, d["state"]) else d["previous"]
        lines.append(row.format(d["key"], d["state"], was, d["severity"], where).rstrip())
        for paragraph in (d["description"] or "").split("\n"):
            lines.extend(wrap.wrap(printable(paragraph.removesuffix("\r"))) or [""])
        if d["state"] != "New" and d.get("evidence"):
            evidence = printable(shorten(d["evidence"], EVIDENCE_CHARS))
            lines.extend(textwrap.wrap(evidence, width=width, initial_indent=INDENT + "evidence: ",
                                       subsequent_indent=INDENT, break_long_words=False))
        if d.get("fix") is not None and d["state"] != "Resolved":  # the suggested fix
            if d["fix"].strip():
                lines.append(INDENT + "fix: replace with:")
                lines.extend(INDENT + "  " + printable(ln.removesuffix("\r"), lines=True)
                             for ln in d["fix"].removesuffix("\n").split("\n"))
            else:
                lines.append(INDENT + "fix: delete the line" + "s" * (
                    (d.get("line_end") or d["line_start"] or 0) != d["line_start"]))
    return "\n".join(lines + [tally(report["defects"])] + _held(report))


def tally(defects: list[dict]) -> str:
    """The branch's defects counted as the App's summary counts them: "1 open defect, 2
    resolved, 1 ignored (D6)"; the ignored ones, which the table leaves out, by key."""
    counted = [d for d in defects if not d["ignored"]]
    standing = sum(d["state"] in ("New", "Open", "Reopened") for d in counted)
    resolved = sum(d["state"] == "Resolved" for d in counted)
    ignored = [d["key"] for d in defects if d["ignored"]]
    parts = [f"{standing} open defect{'s' * (standing != 1)}" if standing else "no open defects"]
    parts += [f"{resolved} resolved"] if resolved else []
    parts += [f"{len(ignored)} ignored ({', '.join(ignored)})"] if ignored else []
    return ", ".join(parts)


def _held(report: dict) -> list[str]:
    """One line per finding the round held back (not tracked), and how to get them back."""
    held = report.get("held") or []
    if not held:
        return []
    out = [f"held back: {len(held)} finding{'s' * (len(held) != 1)}, not tracked"]
    for h in held:
        where = _where(h)
        kind = printable(h.get("kind"))
        why = (f"{kind} is muted (roundwise review --unmute {kind})"
               if h["why"] == "muted" else "converge")
        out.append(f"{INDENT}{h['severity']:<{SEVERITY_WIDTH}}{where}  [{why}]")
    return out


def _where(item: dict) -> str:
    """``path:line`` of a defect or finding, its name escaped; the whole change without one."""
    if not item.get("path"):
        return "(whole change)"
    return f"{printable(item['path'])}:{item['line_start']}"
