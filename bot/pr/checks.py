"""The merge gate: one ``roundwise`` check run per reviewed head, from the ledger's open defects.

A team makes "no open Major defect" a required status check with it. A round's check run is
``in_progress`` while the round runs and ``completed`` once it is posted; its conclusion comes
from the repository's ``fail_on`` setting (``failure`` while a New, Open or Reopened defect at
or above that severity stands; otherwise ``neutral`` while any defect is open, ``success`` when
none is). Open defects anchored on the head become annotations, 50 per request as GitHub
demands. A failed round completes its check as ``neutral`` with the reason, so no check is left
spinning; a person resolving or ignoring a defect between pushes updates the check in place.
A round that could not review every changed file never concludes ``success``, nor passes a
``fail_on`` gate: the check concludes the repository's ``partial_review`` and lists those files
(``bot.pr.unreviewed``).

Check-run calls never fail a round: a repository that has not granted ``checks: write`` still
gets its review, and the error is logged.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from tracker.calibration import unsure_label
from tracker.lifecycle import State
from tracker.models import MCR_TYPES, SEVERITIES, Defect, severity_rank
from tracker.store import LedgerStore

from ..forge import Forge, ForgeError, NotFound, Unprocessable
from ..forge.coverage import holds_gate
from ..store.offload import off_loop
from . import unreviewed as partial_files
from .hedge import hedged

__all__ = ["NAME", "blocking", "complete", "conclusion", "fail", "output", "refresh",
           "standing", "start", "supersede"]

log = logging.getLogger(__name__)

NAME = "roundwise"
MAX_ANNOTATIONS = 50  # GitHub's limit per create/update request
MAX_TEXT = 65535  # GitHub's limit for output.summary and output.text
OPEN_STATES = (State.NEW, State.OPEN, State.REOPENED)
_LEVEL = {"Trivial": "notice", "Minor": "notice", "Normal": "warning", "Major": "failure",
          "Blocker": "failure", "Critical": "failure"}


def standing(defects: list[Defect]) -> list[Defect]:
    """The defects still to be dealt with: New, Open or Reopened, and not ignored."""
    return [d for d in defects if not d.ignored and d.state in OPEN_STATES]


def to_confirm(defects: list[Defect], unsure: set[str] = frozenset()) -> list[Defect]:
    """The Resolved defects a person is asked to confirm (``bot.pr.hedge``): ``unsure``."""
    return [d for d in defects if not d.ignored and d.state is State.RESOLVED
            and d.key in unsure]


def blocking(defects: list[Defect], threshold: str | None,
             unsure: set[str] = frozenset()) -> list[Defect]:
    """The standing defects at or above ``threshold`` (none when there is no threshold), a
    Resolved nobody is sure of (``unsure``) among them: the gate does not take it as fixed."""
    if not threshold:
        return []
    return [d for d in standing(defects) + to_confirm(defects, unsure)
            if severity_rank(d.severity) >= severity_rank(threshold)]


def blocking_keys(report_defects: list[dict], threshold: str) -> list[str]:
    """The keys of a ``roundwise review`` report's defects that fail ``--fail-on threshold``."""
    states = {str(s) for s in OPEN_STATES}
    return [d["key"] for d in report_defects
            if not d.get("ignored") and d["state"] in states
            and severity_rank(d.get("severity")) >= severity_rank(threshold)]


def conclusion(defects: list[Defect], fail_on: str | None,
               unsure: set[str] = frozenset()) -> str:
    if blocking(defects, fail_on, unsure):
        return "failure"
    return "neutral" if standing(defects) or to_confirm(defects, unsure) else "success"


def title(defects: list[Defect], fail_on: str | None, unsure: set[str] = frozenset()) -> str:
    """E.g. ``2 open (1 Major), 1 to confirm, 3 resolved``: the open count with its severe
    part, then the fixes a person is asked to confirm."""
    open_ = standing(defects)
    severe = blocking(defects, fail_on or "Major")
    confirm = len(to_confirm(defects, unsure))
    parts = []
    if open_:
        by = {s: sum(d.severity == s for d in severe) for s in reversed(SEVERITIES)}
        detail = ", ".join(f"{n} {s}" for s, n in by.items() if n)
        parts.append(f"{len(open_)} open" + (f" ({detail})" if detail else ""))
    else:
        parts.append("no open defects")
    if confirm:
        parts.append(f"{confirm} to confirm")
    resolved = sum(1 for d in defects if not d.ignored and d.state is State.RESOLVED) - confirm
    if resolved:
        parts.append(f"{resolved} resolved")
    ignored = sum(1 for d in defects if d.ignored)
    if ignored:
        parts.append(f"{ignored} ignored")
    return ", ".join(parts)


def _verdict(defects: list[Defect], fail_on: str | None, unsure: set[str] = frozenset()) -> str:
    gate = blocking(defects, fail_on, unsure)
    if gate:
        confirm = [d.key for d in gate if d.key in unsure]
        line = (f"**Failing:** {len(gate)} open defect{'s' * (len(gate) != 1)} at or above "
                f"{fail_on} (`fail_on: {fail_on}` in `.github/roundwise.yml`).")
        if confirm:
            line += (f" {', '.join(confirm)} may be fixed, but roundwise is not sure: resolve "
                     f"{'its thread' if len(confirm) == 1 else 'their threads'} if so.")
        return line
    open_ = standing(defects) + to_confirm(defects, unsure)
    if open_:
        # Say what would fail the check now: the most severe open defects' severity.
        worst = max((d.severity for d in open_), key=severity_rank)
        n = sum(d.severity == worst for d in open_)
        rule = f"none is at or above {fail_on}" if fail_on else "the check is not set to fail"
        return (f"Open defects stand, but {rule}: `fail_on: {worst}` in "
                f"`.github/roundwise.yml` would fail it while the {n} {worst} "
                f"defect{'s' * (n != 1)} stand{'s' * (n == 1)}.")
    return "No open defects."


def _link(repo: str, head: str, d: Defect) -> str:
    if not d.path:
        return "(whole PR)"
    short = d.path if len(d.path) <= 48 else "…/" + "/".join(d.path.split("/")[-2:])
    anchor = f"#L{d.line_start}" if d.line_start else ""
    if d.line_start and d.line_end and d.line_end != d.line_start:
        anchor += f"-L{d.line_end}"
    where = f"{short}:{d.line_start}" if d.line_start else short
    return f"[`{where}`](https://github.com/{repo}/blob/{head}/{d.path}{anchor})"


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|").replace("<", "&lt;")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unsure_lines(decisions: list[dict]) -> list[str]:
    """The round's decisions the tracker was unsure of (``tracker.calibration``), in words:
    the evidence, not the rule's name."""
    out = []
    for d in sorted(decisions, key=lambda d: d.get("confidence") or 0):
        label = unsure_label(d.get("state", ""), d.get("confidence"))
        if label and d.get("decided_by") == "rule":
            evidence = _cell(d.get("evidence") or "", 200)
            out.append(f"- **{d['key']}** {label}, {round(100 * d['confidence'])}% likely "
                       f"right{f': {evidence}' if evidence else ''}")
    return ["Unsure this round (no verifier confirmed them):", "", *out, ""] if out else []


def output(defects: list[Defect], fail_on: str | None, repo: str, head: str,
           summary_url: str | None = None, decisions: list[dict] = (),
           left_out: tuple[list, int] = ([], 0), result: str | None = None,
           unsure: set[str] = frozenset()) -> dict:
    """The check run's ``output`` without annotations: title, summary and the defect table;
    ``decisions``: the round's decisions (as its plan stores them), for the unsure ones;
    ``left_out``: the changed files the round did not review and how many were not listed
    (``bot.pr.unreviewed``), and ``result`` the conclusion they led to; ``unsure``: the
    Resolved defects a person is asked to confirm."""
    unreviewed, unlisted = left_out
    lines = partial_files.check_lines(unreviewed, unlisted, result or "neutral")
    lines += [_verdict(defects, fail_on, unsure), ""]
    if summary_url:
        lines += [f"The full ledger is in the [roundwise summary]({summary_url}).", ""]
    lines += unsure_lines(list(decisions))
    rows = sorted(standing(defects) + to_confirm(defects, unsure),
                  key=lambda d: -severity_rank(d.severity))
    text = []
    if rows:
        text += ["| id | severity | type | where | what |", "|---|---|---|---|---|"]
        for d in rows:
            what = ("**To confirm:** may be fixed, resolve its thread if so. "
                    if d.key in unsure else "") + _cell(d.text)
            text.append(f"| {d.key} | {d.severity} | {MCR_TYPES.get(d.type, d.type)} | "
                        f"{_link(repo, head, d)} | {what} |")
    shown = title(defects, fail_on, unsure)
    if holds_gate(unreviewed, unlisted):  # binary files alone are named below, not here
        n = len(unreviewed) + unlisted
        shown = f"{n} file{'s' * (n != 1)} not reviewed · {shown}"
    out = {"title": shown, "summary": "\n".join(lines).strip()[:MAX_TEXT]}
    body = "\n".join(text)
    if len(body) > MAX_TEXT:
        cut = body[: MAX_TEXT - 200].rsplit("\n", 1)[0]
        body = cut + f"\n\n…and more: {len(rows)} open defects in all."
    if body:
        out["text"] = body
    return out


def annotations(defects: list[Defect], fail_on: str | None = None,
                unsure: set[str] = frozenset()) -> list[dict]:
    """One annotation per open defect (and fix to confirm) anchored on lines of the head (the
    new side): level ``failure`` only for those that fail the check, so a passing check
    shows no red marks."""
    return [note for _, note in _annotations(defects, fail_on, unsure)]


def _annotations(defects: list[Defect], fail_on: str | None,
                 unsure: set[str]) -> list[tuple[str, dict]]:
    """``annotations`` with the key of each one's defect."""
    gate = {d.key for d in blocking(defects, fail_on, unsure)}
    out = []
    for d in sorted(standing(defects) + to_confirm(defects, unsure),
                    key=lambda d: -severity_rank(d.severity)):
        if not d.path or d.line_start is None or d.side != "RIGHT":
            continue
        ask = "May be fixed: resolve its thread if so. " if d.key in unsure else ""
        out.append((d.key, {
            "path": d.path, "start_line": d.line_start, "end_line": d.line_end or d.line_start,
            "annotation_level": "failure" if d.key in gate else (
                "notice" if _LEVEL.get(d.severity) == "notice" else "warning"),
            "title": f"{d.key} · {d.severity} · {MCR_TYPES.get(d.type, d.type)}",
            # shown as plain text: Markdown's backticks would show as they are
            "message": (ask + (d.text or d.key)).replace("`", "")[:4000]}))
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _saved_plan(row: dict) -> dict:
    """The round's saved plan from its row ({} when there is none or it cannot be read)."""
    plan = row.get("plan") or {}
    try:
        plan = json.loads(plan) if isinstance(plan, str | bytes) else plan
    except ValueError:
        return {}
    return plan if isinstance(plan, dict) else {}


def _with_notice(out: dict, row: dict) -> dict:
    """``out`` led by what the round's saved plan says went wrong: model calls that got no
    answer (a round tracked from the code only must not look like any other)."""
    usage = _saved_plan(row).get("usage") or {}
    if not usage.get("failed"):
        return out
    from ..review.engine import Usage, model_silence_note

    known = {k: v for k, v in usage.items() if k in Usage.__dataclass_fields__}
    note = model_silence_note(row["number"], Usage(**known))
    return {**out, "summary": f"{note}\n\n{out['summary']}"}


async def _round(store: LedgerStore, pr_id: int, number: int) -> dict | None:
    return await off_loop(store, store.round, pr_id, number)


def external_id(pr_id: int, number: int) -> str:
    """The check run's own id for round ``number`` of a PR (GitHub's ``external_id``)."""
    return f"roundwise:{pr_id}:r{number}"


async def start(forge: Forge, store: LedgerStore, pr_id: int, number: int, head: str,
                *, resumed: bool = False, details_url: str | None = None) -> int | None:
    """Mark round ``number``'s check ``in_progress`` (creating it the first time); its id.
    ``resumed``: the round ran before (a crash may have come between creating its check run
    and recording its id), so the run is looked for on GitHub before one is created.
    ``details_url``: where the check's Details link goes (the PR's dashboard page)."""
    row = await _round(store, pr_id, number)
    # the run's own id, so a create whose answer was lost is found, not made twice
    fields = {"name": NAME, "status": "in_progress", "started_at": _now(),
              "external_id": external_id(pr_id, number),
              "output": {"title": "Reviewing…",
                         "summary": f"roundwise is reviewing `{head[:7]}` (round {number})."}}
    if details_url:
        fields["details_url"] = details_url
    try:
        known = row.get("check_run_id") if row else None
        if known is None and resumed:
            known = await forge.find_check_run(head, NAME, fields["external_id"])
        if known is not None:
            await forge.update_check_run(known, {k: v for k, v in fields.items()
                                                 if k not in ("name", "external_id")})
            if row and not row.get("check_run_id"):
                await off_loop(store, store.update_round, row["id"], check_run_id=known)
            return known
        check_id = await forge.create_check_run(head, fields)
    except ForgeError as exc:
        log.warning("could not start the check run of round %d: %s", number, exc)
        return None
    if check_id is not None and row:
        await off_loop(store, store.update_round, row["id"], check_run_id=check_id)
    return check_id


async def complete(forge: Forge, store: LedgerStore, pr: dict, number: int, head: str,
                   fail_on: str | None, partial: str | None = None) -> str | None:
    """Complete round ``number``'s check from the ledger; the conclusion given. ``partial``:
    the repository's ``partial_review`` (``bot.pr.unreviewed``)."""
    row = await _round(store, pr["id"], number)
    if not row or not row.get("check_run_id"):
        return None
    defects = await off_loop(store, store.defects, pr["id"])
    unsure = await off_loop(store, hedged, store, pr["id"])
    left_out = partial_files.read(_saved_plan(row))
    result = partial_files.gate(conclusion(defects, fail_on, unsure), fail_on, *left_out,
                                partial)
    out = _with_notice(output(defects, fail_on, pr["repo"], head,
                              decisions=_saved_plan(row).get("decisions") or [],
                              left_out=left_out, result=result, unsure=unsure), row)
    keyed = _annotations(defects, fail_on, unsure)
    notes = [note for _, note in keyed]
    try:
        await forge.update_check_run(row["check_run_id"], {
            "status": "completed", "conclusion": result, "completed_at": _now(),
            "output": {**out, "annotations": notes[:MAX_ANNOTATIONS]}})
        for i in range(MAX_ANNOTATIONS, len(notes), MAX_ANNOTATIONS):
            await forge.update_check_run(row["check_run_id"], {
                "output": {**out, "annotations": notes[i:i + MAX_ANNOTATIONS]}})
    except ForgeError as exc:
        log.warning("could not complete the check run of round %d: %s", number, exc)
        return None
    await _remember(store, row, out["title"], result, fail_on, partial,
                    [key for key, _ in keyed])
    return result


async def fail(forge: Forge, store: LedgerStore, pr_id: int, number: int, reason: str) -> None:
    """Complete a failed round's check as ``neutral`` with the reason."""
    row = await _round(store, pr_id, number)
    if not row or not row.get("check_run_id"):
        return
    try:
        await forge.update_check_run(row["check_run_id"], {
            "status": "completed", "conclusion": "neutral", "completed_at": _now(),
            "output": {"title": "The review did not finish",
                       "summary": f"Round {number} failed: {_cell(reason, 1000)}\n\n"
                                  "roundwise tries again; comment `/roundwise review` or re-run "
                                  "this check to start it now."}})
    except ForgeError as exc:
        log.warning("could not complete the failed check run of round %d: %s", number, exc)
        return
    await _remember(store, row, "failed", "neutral")


async def supersede(forge: Forge, store: LedgerStore, pr_id: int, number: int, head: str) -> None:
    """Complete the check of round ``number``, which a push of ``head`` overtook, as
    ``neutral``: the newer head has its own check, and this one must not spin for ever."""
    row = await _round(store, pr_id, number)
    if not row:
        return
    try:
        check_id = row.get("check_run_id") or await forge.find_check_run(
            row["head_sha"], NAME, external_id(pr_id, number))  # created, not recorded
        if check_id is None:
            return
        await forge.update_check_run(check_id, {
            "status": "completed", "conclusion": "neutral", "completed_at": _now(),
            "output": {"title": "Superseded by a newer push",
                       "summary": f"Round {number} was overtaken by a push of `{head[:7]}`, "
                                  "which roundwise reviews instead."}})
    except ForgeError as exc:
        log.warning("could not complete the superseded check run of round %d: %s", number, exc)
        return
    await _remember(store, row, "superseded", "neutral")


async def refresh(forge: Forge, store: LedgerStore, pr: dict) -> str | None:
    """After a person resolved, ignored or raised a defect: update the last round's completed
    check when its title or conclusion changed, with the ``fail_on`` it was completed under,
    and annotate the defects raised since (GitHub only appends annotations). The new
    conclusion, or None."""
    row = await off_loop(store, store.last_round, pr["id"])
    if not row or not row.get("check_run_id") or not row.get("check_shown"):
        return None
    shown_title, shown, fail_on, partial, annotated = \
        (json.loads(row["check_shown"]) + [None, None, None])[:5]
    if shown_title == "failed":
        return None
    defects = await off_loop(store, store.defects, pr["id"])
    unsure = await off_loop(store, hedged, store, pr["id"])
    left_out = partial_files.read(_saved_plan(row))
    result = partial_files.gate(conclusion(defects, fail_on, unsure), fail_on, *left_out,
                                partial)
    now = {d.key: str(d.state) for d in defects}
    standing_decisions = [d for d in _saved_plan(row).get("decisions") or []
                          if now.get(d.get("key")) == d.get("state")]  # none a person changed
    out = _with_notice(output(defects, fail_on, pr["repo"], row["head_sha"],
                              decisions=standing_decisions, left_out=left_out,
                              result=result, unsure=unsure), row)
    # GitHub only appends annotations: the defects people raised since get theirs
    fresh = [] if annotated is None else [
        (key, note) for key, note in _annotations(defects, fail_on, unsure)
        if key not in annotated]
    if (out["title"], result) == (shown_title, shown) and not fresh:
        return None
    try:
        for i in range(0, max(len(fresh), 1), MAX_ANNOTATIONS):
            batch = [note for _, note in fresh[i:i + MAX_ANNOTATIONS]]
            await forge.update_check_run(row["check_run_id"], {
                "status": "completed", "conclusion": result, "completed_at": _now(),
                "output": {**out, "annotations": batch} if batch else out})
    except ForgeError as exc:
        log.warning("could not update the check run of round %d: %s", row["number"], exc)
        return None
    await _remember(store, row, out["title"], result, fail_on, partial,
                    None if annotated is None else [*annotated, *(key for key, _ in fresh)])
    return result


VERDICT_MARKER = "<!-- roundwise:verdict -->"


async def verdict(forge: Forge, store: LedgerStore, pr: dict, number: int, head: str,
                  fail_on: str | None, bot_logins: set[str]) -> str | None:
    """``review_event: request_changes``: request changes while blocking defects (at or above
    ``fail_on``, else Major) stand; once none does, dismiss the bot's reviews that did. Never
    approves. What it did: ``requested``, ``dismissed`` or None."""
    gate = blocking(await off_loop(store, store.defects, pr["id"]), fail_on or "Major",
                    await off_loop(store, hedged, store, pr["id"]))
    try:
        mine = [r for r in await forge.reviews(pr["number"]) if r.author in bot_logins]
        requesting = [r for r in mine if r.state == "CHANGES_REQUESTED"]
        if gate:
            if requesting and mine[-1].state == "CHANGES_REQUESTED" and \
                    f"r{number}:" in mine[-1].body:
                return None  # posted before a crash
            keys = ", ".join(f"{d.key} ({d.severity})" for d in gate[:20])
            more = f" and {len(gate) - 20} more" if len(gate) > 20 else ""
            await forge.request_changes(pr["number"], head, (
                f"roundwise requests changes: {len(gate)} blocking "
                f"defect{'s stand' if len(gate) != 1 else ' stands'}: {keys}{more}. "
                f"See the summary comment.\n{VERDICT_MARKER}<!-- r{number}: -->"))
            return "requested"
        dismissed = 0
        for review in requesting:
            try:
                await forge.dismiss_review(pr["number"], review.id,
                                           f"No blocking defect stands after round {number}.")
                dismissed += 1
            except (Unprocessable, NotFound) as exc:  # dismissed meanwhile, or gone: go on
                log.info("review %s of round %d not dismissed: %s", review.id, number, exc)
        return "dismissed" if dismissed else None
    except ForgeError as exc:
        log.warning("could not post the review verdict of round %d: %s", number, exc)
        return None


async def _remember(store: LedgerStore, row: dict, shown_title: str, result: str,
                    fail_on: str | None = None, partial: str | None = None,
                    annotated: list[str] | None = None) -> None:
    """What the check shows: its title, conclusion, the ``fail_on`` and ``partial_review`` it
    was completed under and the defects it has annotations for (None: not known, for a check
    completed before they were remembered)."""
    shown = [shown_title, result, fail_on, partial] + ([annotated] if annotated is not None
                                                         else [])
    await off_loop(store, store.update_round, row["id"], check_shown=json.dumps(shown))
