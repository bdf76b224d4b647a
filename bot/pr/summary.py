"""The sticky summary comment, laid out for reading on GitHub.

What a person opening the pull request needs first is a verdict, then what this push changed
and why, then what is still open, with links into the head. So: a one-line verdict; "This
round" (each change of state in words, with its evidence in full, and how many new findings
were held back); the open defects (short description, severity, type by name, a short location
linking to the file at the head); a line per kind of finding the bot holds back in this
repository and the round's held-back findings, folded (``Held``); the resolved and ignored
ones folded in ``<details>``; a "Fix with your coding agent" block holding
a ready prompt that lists every open defect; notes; the commands.

GitHub refuses comments over 65,536 characters. A pull request with hundreds of defects is
fitted by giving up detail in a fixed order (the history first, then the length of evidence
and descriptions, then links, then the agent prompt), and never a row of the open list.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from tracker import calibration
from tracker import keys as defect_keys
from tracker.calibration import unsure_label
from tracker.models import MCR_TYPES, severity_rank

from .hedge import hedged
from .quiet import quiet

__all__ = ["MAX_BODY", "Change", "Held", "Row", "open_keys", "render"]

MAX_BODY = 65536  # GitHub's limit for a comment body, in characters
_BUDGET = MAX_BODY - 1536  # room for the marker, notes and the commands line
OPEN = ("New", "Open", "Reopened")
_ICON = {"Resolved": "✅", "Open": "⏳", "Reopened": "🔁", "New": "🆕"}
CORRECTIONS = ("reviewer-repeats", "reviewer-disputes", "author-promises")  # later evidence
_WHO = {"rule": "checked from the code", "llm": "verified against the code",
        "human": "a person's action"}


@dataclass
class Row:
    """One defect as the summary shows it (this round's decision laid over the ledger)."""

    key: str
    state: str
    severity: str
    type: str
    description: str
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    origin: str = "bot"
    raised: int = 0
    last_change: int = 0
    ignored: bool = False
    fix: str | None = None  # replacement text for the anchored lines, when known
    confidence: float | None = None  # of the decision that set ``state`` (None: not known)
    hedged: bool = False  # Resolved on an unsure ruling nobody confirmed (``bot.pr.hedge``)

    @property
    def shown_state(self) -> str:
        """The state, with "likely resolved (unverified)" / "likely still open" when the
        decision behind it was unsure."""
        label = unsure_label(self.state, self.confidence)
        return f"{self.state} ({label})" if label else self.state

    @property
    def open(self) -> bool:
        return not self.ignored and self.state in OPEN

    @property
    def to_confirm(self) -> bool:
        """Resolved by an unsure ruling: a person is asked to confirm the fix."""
        return self.hedged and not self.ignored and self.state == "Resolved"


@dataclass
class Change:
    """A tracked defect whose state changed this round, and why."""

    key: str
    before: str
    after: str
    rule: str
    evidence: str
    decided_by: str = "rule"
    confidence: float | None = None
    hedged: bool = False  # a Resolved the reviewer is asked to confirm
    why: str = ""  # where the confidence comes from (``tracker.calibration.explain``)


@dataclass
class Held:
    """A new finding the round held back (not posted, not tracked), and why."""

    severity: str
    type: str
    description: str
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    why: str = ""  # e.g. "below Major after round 2", "`debug-print` held back"


@dataclass
class _Detail:
    """How much to show; ``render`` lowers it step by step until the body fits."""

    history: str = "table"  # table, keys, count
    desc: int = 180  # characters of a description in the open table
    evidence: int | None = None  # None: in full
    prompt_desc: int | None = 600
    changes: str = "full"  # full (with evidence) or keys (grouped by new state)
    overview: bool = True
    links: bool = True
    prompt: bool = True


_LEVELS = [
    _Detail(),
    _Detail(history="keys"),
    _Detail(history="count", desc=100, evidence=400, prompt_desc=240),
    _Detail(history="count", desc=60, evidence=160, prompt_desc=100, overview=False),
    _Detail(history="count", desc=60, changes="keys", prompt_desc=100, overview=False),
    _Detail(history="count", desc=40, changes="keys", prompt_desc=60, overview=False),
    _Detail(history="count", desc=40, changes="keys", prompt=False, overview=False),
    _Detail(history="count", desc=40, changes="keys", prompt_desc=60, links=False,
            overview=False),
    _Detail(history="count", desc=40, changes="keys", links=False, prompt=False,
            overview=False),
]


def _escape(text: str) -> str:
    """PR text made safe inside our markdown: no closing our markers, and outside code spans
    no raw HTML (``List<String>`` would vanish as a tag)."""
    text = quiet((text or "").replace("<!--", "&lt;!--").replace("-->", "--&gt;"))
    parts = re.split(r"(`[^`\n]*`)", text)
    return "".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1
                   else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)


def _cell(text: str, limit: int | None) -> str:
    """One line for a table cell: whitespace folded, pipes escaped, cut at a word."""
    text = " ".join(_escape(text).split()).replace("|", "\\|")
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    text = first if 20 <= len(first) < len(text) and (limit is None or len(first) <= limit) \
        else text
    if limit is None or len(text) <= limit:
        return text
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    """``text`` cut at a word to at most ``limit`` characters, closing an open code span."""
    cut = text[: limit - 2].rsplit(" ", 1)[0]
    cut = cut.removesuffix("\\")
    return cut + ("`" if cut.count("`") % 2 else "") + "…"


def _short_path(path: str) -> str:
    parts = path.split("/")
    return path if len(parts) <= 2 else "…/" + "/".join(parts[-2:])


def location(row: Row) -> str:
    if not row.path:
        return "whole PR"
    if row.line_start is None:
        return row.path
    if row.line_end and row.line_end != row.line_start:
        return f"{row.path}:{row.line_start}-{row.line_end}"
    return f"{row.path}:{row.line_start}"


def link(row: Row, repo: str, head: str, links: bool = True) -> str:
    """The location as a link to the file at the head, with a short path as its text."""
    if not row.path:
        return "whole PR"
    text = _short_path(row.path) + (f":{row.line_start}" if row.line_start else "")
    if not links:
        return f"`{text}`"
    anchor = f"#L{row.line_start}" if row.line_start else ""
    if row.line_start and row.line_end and row.line_end != row.line_start:
        anchor += f"-L{row.line_end}"
    url = f"https://github.com/{repo}/blob/{head}/{row.path}{anchor}".replace(" ", "%20")
    return f"[`{text}`]({url.replace(')', '%29')})"


def _type(type_id: str) -> str:
    return MCR_TYPES.get(type_id, type_id)


def verdict(rows: list[Row]) -> str:
    open_ = [r for r in rows if r.open]
    severe = [r for r in open_ if severity_rank(r.severity) >= severity_rank("Major")]
    confirm = sum(1 for r in rows if r.to_confirm)
    resolved = sum(1 for r in rows if not r.ignored and r.state == "Resolved") - confirm
    ignored = sum(1 for r in rows if r.ignored)
    rest = "".join([f" · {confirm} fix{'es' * (confirm != 1)} to confirm"
                    if confirm and open_ else "",
                    f" · {resolved} resolved" if resolved else "",
                    f" · {ignored} ignored" if ignored else ""])
    if not open_ and confirm:
        return f"❔ **{confirm} fix{'es' * (confirm != 1)} to confirm**, no other open defect{rest}."
    if not open_:
        return f"✅ **No open defects**{rest}." if rows else "✅ **No defects found.**"
    worst = max(open_, key=lambda r: severity_rank(r.severity)).severity
    if severe:
        return (f"🔴 **{len(open_)} open defect{'s' * (len(open_) != 1)}, {len(severe)} "
                f"{worst if len(severe) == 1 else 'Major or worse'}**{rest}.")
    return f"🟡 **{len(open_)} open defect{'s' * (len(open_) != 1)}** (at most {worst}){rest}."


def _this_round(changes: list[Change], new: list[Row], d: _Detail) -> list[str]:
    if not changes and not new:
        return []
    out = ["#### This round", ""]
    if d.changes == "keys":
        by: dict[str, list[str]] = {}
        for c in changes:
            by.setdefault(c.after, []).append(c.key)
        for state, keys in by.items():
            out.append(f"- {_ICON.get(state, '•')} {len(keys)} now **{state}**: "
                       f"{', '.join(keys)}.")
        changes = []
    aging = [c for c in changes if (c.before, c.after) == ("New", "Open")
             and c.rule == "anchor-untouched"]
    if aging:  # a defect left alone since it was raised: one line, not one each
        out.append(f"- ⏳ Still open, code untouched: {', '.join(c.key for c in aging)}.")
        changes = [c for c in changes if c not in aging]
    for c in changes:
        icon = _ICON.get(c.after, "•")
        evidence = " ".join(_escape(c.evidence).split())
        if d.evidence is not None and len(evidence) > d.evidence:
            evidence = _cut(evidence, d.evidence)
        who = _WHO.get(c.decided_by, c.decided_by)
        if c.rule in CORRECTIONS and c.before == "Resolved":
            out.append(f"- ↩️ **{c.key}** back to **{c.after}** (was Resolved by the code): "
                       f"{evidence}")
            continue
        if c.hedged:  # not sure it is fixed: the reviewer is asked, nothing is claimed
            out.append(f"- ❔ **{c.key}** may be fixed ({who}, not sure): {evidence}. "
                       "**Resolve its thread if this is fixed.**")
            continue
        label = unsure_label(c.after, c.confidence)
        out.append(f"- {icon} **{c.key}** {c.before} → **{c.after}**"
                   f"{f', {label}' if label else ''} ({who}): {evidence}")
    if new:
        keys = ", ".join(r.key for r in new)
        out.append(f"- 🆕 {len(new)} new: {keys} (below).")
    return out + [""]


def _sureness_of(rule: str, decided_by: str) -> str:
    """For a rule's decision: the rule's record across repositories, which made it as sure as
    it is; nothing for a person's or a verifier's. Read from the rule alone, so a summary
    rendered again from the ledger's history says the same as the round's own."""
    if str(decided_by) != "rule":
        return ""
    return calibration.current().explain(rule)


def _why(changes: list[Change]) -> list[str]:
    """The tracker's rule behind each change and how sure it was, folded: for the curious and
    for bug reports, not for reading the round."""
    if not changes:
        return []
    out = ["<details>", "<summary>Why: the tracker's rules</summary>", ""]
    for c in changes:
        sure = "" if c.confidence is None else f", {round(100 * c.confidence)}% likely right"
        why = f": {c.why}" if c.why else ""
        out.append(f"- {c.key}: `{c.rule}` ({_WHO.get(c.decided_by, c.decided_by)}{sure}){why}")
    return out + ["", "</details>", ""]


def _open_rows(rows: list[Row]) -> list[Row]:
    """The open rows as the summary lists them: most severe first, then by key."""
    return sorted((r for r in rows if r.open),
                  key=lambda r: (-severity_rank(r.severity), defect_keys.order(r.key)))


def open_keys(rows: list[Row]) -> list[str]:
    return [r.key for r in _open_rows(rows)]


def _open_table(rows: list[Row], repo: str, head: str, d: _Detail) -> list[str]:
    open_ = _open_rows(rows)
    if not open_:
        return []
    out = [f"#### Open ({len(open_)})", "",
           "| id | state | severity | type | where | what |", "|---|---|---|---|---|---|"]
    for r in open_:
        out.append(f"| {r.key} | {r.shown_state} | {r.severity} | {_type(r.type)} | "
                   f"{link(r, repo, head, d.links)} | {_cell(r.description, d.desc)} |")
    return out + [""] + _requests_note(rows, open_)


def _requests_note(rows: list[Row], open_: list[Row]) -> list[str]:
    """One line saying what ``D3a``, ``D3b`` are, when an open defect is one of several
    requests of one comment (``tracker.keys``)."""
    groups: dict[str, list[str]] = {}
    for r in sorted(rows, key=lambda r: defect_keys.order(r.key)):
        if defect_keys.part(r.key):
            groups.setdefault(defect_keys.group(r.key), []).append(r.key)
    shown = [g for g in dict.fromkeys(defect_keys.group(r.key) for r in open_)
             if len(groups.get(g, ())) > 1]
    if not shown:
        return []
    group = shown[0]
    parts = " and ".join(groups[group]) if len(groups[group]) == 2 else \
        ", ".join(groups[group])
    note = (f"<sub>{parts} are the requests of one comment, tracked apart; a reply or a "
            f"resolved thread there speaks for all of them, and `/roundwise resolve {group}` "
            f"resolves them together.</sub>")
    return [note, ""]


def _confirm_table(rows: list[Row], repo: str, head: str, d: _Detail) -> list[str]:
    """The Resolved defects roundwise is not sure of, for the reviewer to confirm."""
    confirm = [r for r in rows if r.to_confirm]
    if not confirm:
        return []
    out = [f"#### To confirm ({len(confirm)})", "",
           ("The code changed, but roundwise is not sure it fixed these: resolve a thread if it "
            "is fixed, or reply there. Until then a `fail_on` check counts them as open."), "",
           "| id | severity | type | where | what |", "|---|---|---|---|---|"]
    for r in sorted(confirm, key=lambda r: (-severity_rank(r.severity), int(r.key[1:] or 0))):
        out.append(f"| {r.key} | {r.severity} | {_type(r.type)} | "
                   f"{link(r, repo, head, d.links)} | {_cell(r.description, d.desc)} |")
    return out + [""]


def _history(rows: list[Row], d: _Detail) -> list[str]:
    done = [r for r in rows if not r.open and not r.to_confirm]
    if not done:
        return []
    resolved = sum(1 for r in done if not r.ignored)
    ignored = len(done) - resolved
    title = " and ".join(p for p in (f"{resolved} resolved" if resolved else "",
                                     f"{ignored} ignored" if ignored else "") if p)
    out = ["<details>", f"<summary>{title.capitalize()}</summary>", ""]
    if d.history == "table":
        out += ["| id | state | severity | type | where | what | raised | last change |",
                "|---|---|---|---|---|---|---|---|"]
        for r in done:
            # a Resolved here is sure or confirmed: the unsure ones are under "To confirm"
            state = f"{r.state} (ignored)" if r.ignored else \
                r.state if r.state == "Resolved" else r.shown_state
            out.append(f"| {r.key} | {state} | {r.severity} | {_type(r.type)} | "
                       f"`{_cell(_short_path(location(r)), 80)}` | {_cell(r.description, 100)} | "
                       f"R{r.raised} | R{r.last_change} |")
    elif d.history == "keys":
        out.append(", ".join(f"{r.key}{' (ignored)' if r.ignored else ''}" for r in done) + ".")
    else:
        out.append("Too many to list here: `/roundwise status` posts the whole ledger.")
    return out + ["", "</details>", ""]


def _held(held: list[Held], notices: list[str], repo: str, head: str,
          d: _Detail) -> list[str]:
    """What the round held back: each muted kind's notice, then the findings, folded."""
    out = [n for notice in notices for n in (notice, "")]
    if not held:
        return out
    n = len(held)
    out += ["<details>", (f"<summary>🔕 {n} finding{'s' * (n != 1)} held back this round "
                          "(not posted inline, not tracked)</summary>"), ""]
    if d.history == "count":
        reasons: dict[str, int] = {}
        for h in held:
            reasons[h.why] = reasons.get(h.why, 0) + 1
        out += [f"- {why}: {count}" for why, count in reasons.items()]
    else:
        out += ["| severity | where | what | why held back |", "|---|---|---|---|"]
        for h in sorted(held, key=lambda h: (-severity_rank(h.severity), h.path or "",
                                              h.line_start or 0)):
            row = Row("", "New", h.severity, h.type, h.description, h.path, h.line_start,
                      h.line_end)
            out.append(f"| {h.severity} | {link(row, repo, head, d.links)} | "
                       f"{_cell(h.description, 100)} | {h.why} |")
    return out + ["", "</details>", ""]


def _held_line(held: list[Held]) -> list[str]:
    """This round's line about what it held back, so the count shows without unfolding."""
    if not held:
        return []
    reasons: dict[str, int] = {}
    for h in held:
        reasons[h.why] = reasons.get(h.why, 0) + 1
    why = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
    return [(f"- 🔕 {len(held)} new finding{'s' * (len(held) != 1)} held back, not posted: "
             f"{why}.")]


def agent_prompt(rows: list[Row], repo: str, number: int | None, head: str,
                 limit: int | None = None) -> str:
    """A prompt for a coding agent (Copilot, Claude Code...) listing every open defect."""
    open_ = sorted((r for r in rows if r.open),
                   key=lambda r: (-severity_rank(r.severity), defect_keys.order(r.key)))
    pr = f" pull request #{number}" if number else ""
    intro = (f"Fix these open review findings in {repo}{pr} (head {head[:7]}). For each one, "
             "read the code at the location, make the smallest change that fixes it, and keep "
             "the rest of the behaviour unchanged. Skip any you judge wrong and say why.")
    # Wrapped: GitHub shows a code block without wrapping, and the reader scrolls sideways.
    lines = textwrap.wrap(intro, 96) + [""]
    for i, r in enumerate(open_, 1):
        desc = " ".join((r.description or "").split())
        if limit is not None and len(desc) > limit:
            desc = desc[: limit - 1].rsplit(" ", 1)[0] + "…"
        lines += textwrap.wrap(f"{i}. {r.key} {location(r)} ({r.severity}, {_type(r.type)}): "
                               f"{desc}", 96, subsequent_indent="   ", break_long_words=False,
                               break_on_hyphens=False)
        if r.fix is not None and not r.fix.strip():
            lines.append("   Suggested fix: delete those lines.")
        elif r.fix is not None:
            lines.append("   Suggested replacement for those lines:")
            lines += [f"   | {line}" for line in r.fix.splitlines()]
    return "\n".join(lines)


def _fence(text: str) -> str:
    ticks = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{ticks}text\n{text}\n{ticks}"


def _prompt_block(rows: list[Row], repo: str, number: int | None, head: str,
                  d: _Detail) -> list[str]:
    if not any(r.open for r in rows):
        return []
    if not d.prompt:
        return ["<details>", "<summary>🤖 Fix with your coding agent</summary>", "",
                ("Too many open defects for one prompt here: run `roundwise review` in your "
                 "checkout and give its report to the agent."), "", "</details>", ""]
    prompt = agent_prompt(rows, repo, number, head, d.prompt_desc)
    return ["<details>", "<summary>🤖 Fix with your coding agent</summary>", "",
            ("Copy this into Copilot, Claude Code or another coding agent working on the "
             "branch:"), "", _fence(_escape_fence(prompt)), "", "</details>", ""]


def _escape_fence(text: str) -> str:
    return text.replace("<!--", "< !--").replace("-->", "-- >")


def render(rows: list[Row], changes: list[Change], *, repo: str, number: int | None,
           round_number: int, head: str, notes: list[str] = (), marker: str = "",
           commands: str = "", overview: list[str] = (), held: list[Held] = (),
           notices: list[str] = ()) -> str:
    """The whole summary comment, within GitHub's size limit. ``held``: the round's findings
    held back; ``notices``: one line per kind of finding the bot holds back here."""
    new = [r for r in rows if r.state == "New" and r.raised == round_number and not r.ignored]
    body = ""
    for d in _LEVELS:
        parts = [marker, f"### roundwise · round {round_number} · `{head[:7]}`", "",
                 verdict(rows), ""]
        parts += list(overview) if d.overview else []
        this_round = _this_round(changes, new, d)
        if held:  # "This round" also says what it held back
            this_round = (this_round[:-1] if this_round else ["#### This round", ""]) \
                + _held_line(list(held)) + [""]
        parts += this_round
        parts += _why(changes) if d.changes == "full" else []
        parts += _open_table(rows, repo, head, d)
        parts += _confirm_table(rows, repo, head, d)
        parts += _held(list(held), list(notices), repo, head, d)
        parts += _history(rows, d)
        parts += _prompt_block(rows, repo, number, head, d)
        parts += [n for note in notes for n in (note, "")]
        parts += [commands]
        body = "\n".join(p for p in parts if p is not None).strip() + "\n"
        if len(body) <= _BUDGET:
            return body
    return body[: MAX_BODY - 200].rsplit("\n", 1)[0] + "\n\n…(cut: over GitHub's size limit)\n"


# --------------------------------------------------------------------------- from the ledger


def _last_change(states: dict[int, str]) -> int:
    last, previous = 0, None
    for rnd in sorted(states):
        if states[rnd] != previous:
            last, previous = rnd, states[rnd]
    return last


def gather(store, pr_id: int, number: int, plan) -> tuple[list[Row], list[Change]]:
    """Rows and this round's changes: round ``number``'s plan laid over the ledger, or with no
    plan (the round is in the ledger: a person's action re-renders the summary) the ledger
    alone, this round's changes read from its history (people's since the push included)."""
    history = store.states_by_round(pr_id)
    decisions = {d.key: d for d in (plan.decisions if plan else [])}
    sureness = _stored_confidences(store, pr_id)
    unsure_fixes = hedged(store, pr_id, plan.decisions if plan else (),
                          number if plan else None)
    rows, changes = [], []
    for d in store.defects(pr_id):
        row = Row(d.key, str(d.state), d.severity, d.type, d.text, d.path, d.line_start,
                  d.line_end, d.origin.value, d.raised_round,
                  _last_change(history.get(d.key, {})), d.ignored, d.fix,
                  sureness.get((d.key, str(d.state))))
        if plan is None:
            change = _recorded_change(store, pr_id, d.key, number, history.get(d.key, {}),
                                      sureness)
            if change is not None:
                changes.append(change)
        decision = decisions.get(d.key)
        if decision is not None:
            if str(decision.state) != row.state:
                changes.append(Change(d.key, row.state, str(decision.state), decision.rule,
                                      decision.evidence, str(decision.decided_by),
                                      decision.confidence,
                                      why=_sureness_of(decision.rule, decision.decided_by)))
                row.state, row.last_change = str(decision.state), number
            row.confidence = decision.confidence
            if decision.path and decision.line_start:
                row.path, row.line_start, row.line_end = (decision.path, decision.line_start,
                                                          decision.line_end)
        row.hedged = d.key in unsure_fixes
        rows.append(row)
    for change in changes:
        change.hedged = change.key in unsure_fixes and change.after == "Resolved"
    for item in (plan.new if plan else []):
        f = item.finding
        rows.append(Row(item.key, "New", f.severity, f.type, f.description, f.path,
                        f.line_start, f.line_end, f.origin.value, number, number, False,
                        f.fix if f.side == "RIGHT" else None))
    return rows, changes


def _stored_confidences(store, pr_id: int) -> dict[tuple[str, str], float]:
    """(key, state) -> the confidence of the last stored round decision that gave it, read
    from the rounds' plans (a person's later action, with no confidence, replaces it)."""
    import json

    out: dict[tuple[str, str], float] = {}
    for rnd in store.rounds(pr_id):
        for d in (json.loads(rnd["plan"]).get("decisions") or []) if rnd.get("plan") else []:
            if d.get("confidence") is not None:
                out[(d["key"], d["state"])] = float(d["confidence"])
    return out


def _recorded_change(store, pr_id: int, key: str, number: int,
                     states: dict[int, str],
                     sureness: dict[tuple[str, str], float]) -> Change | None:
    """The last change of state the ledger recorded for ``key`` in round ``number``, if any:
    from the state just before it (a person correcting the round's own decision counts)."""
    if number not in states:
        return None
    rows = store.history(pr_id, key)
    at = max(i for i, h in enumerate(rows) if h["round"] == number)
    last = rows[at]
    before = rows[at - 1]["state"] if at > 0 else "New"  # else raised this round
    if last["state"] == before:
        return None
    return Change(key, before, last["state"], last["rule"], last["evidence"] or "",
                  last["decided_by"] or "rule",
                  None if (last["decided_by"] or "rule") == "human" else
                  sureness.get((key, last["state"])),
                  why=_sureness_of(last["rule"], last["decided_by"] or "rule"))


def notes_to_show(store, pr_id: int, number: int, notes: list[str], rows: list[Row]) -> list[str]:
    """The engine's notes, each shown in the first round that made it only, and none while a
    tracked open defect already says it (a reviewer asking for tests covers "no tests")."""
    import json

    earlier = set()
    for rnd in store.rounds(pr_id):
        if rnd["number"] < number and rnd.get("plan"):
            earlier.update(json.loads(rnd["plan"]).get("notes") or [])
    covered_tests = any(r.open and r.type == "E.4" for r in rows)
    return [n for n in notes if n not in earlier and not covered_tests]


def overview(store, pr_id: int, number: int, plan, rows: list[Row]) -> list[str]:
    """The PR at a glance (first round) or what this push changed (later), from the round's
    plan, or from the plan saved for the round when a command re-renders the summary."""
    from .overview import FileStat, glance, this_push

    if plan is None:
        saved = store.plan(pr_id, number) or {}
        files, scope, words = saved.get("files"), saved.get("scope"), saved.get("walkthrough")
    else:
        files, scope, words = plan.files, plan.scope, plan.walkthrough
    if files is None:
        return []
    stats = [FileStat(*f) for f in files]
    if scope != "pr":
        return this_push(stats)
    lead = ["**Walkthrough** (written by the model):", "", _escape(words), ""] if words else []
    return lead + glance(stats, rows)
