"""Step one of a round: gather what the engine will look at, from the forge and the ledger.

``gather(forge, store, ...)`` is the only step that reads both: the PR's whole diff, the diff
since the last reviewed head (and from commits people commented on), the text of changed and
tracked files at the head, and the ledger's tracked defects, signals and discussion. Everything
after it works on the ``RoundInputs`` it returns.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from tracker import learnings
from tracker.interdiff import interdiff
from tracker.models import Defect
from tracker.store import LedgerStore
from tracker.verdicts import rule_record

from ..config.bounds import DEFAULT as DEFAULT_LIMITS
from ..config.bounds import ReviewLimits, binary_paths, bound_diff, bound_listed, too_large_note
from ..config.repo_settings import PATH as SETTINGS_PATH
from ..config.repo_settings import SettingsError, parse_settings
from ..forge import ForgeReader, NotAcceptable, NotFound, PullRequest, Unprocessable
from ..forge.coverage import BINARY, CAPS, ListedDiff, Unreviewed
from ..review.engine import DiffLines, RoundContext, Settings
from ..review.patch import Patches
from ..store.offload import off_loop

__all__ = ["MAX_FILES", "RoundInputs", "gather", "read_settings"]

log = logging.getLogger(__name__)

MAX_FILES = 300  # changed files whose text is fetched for one round
SETTINGS_TIMEOUT = 5.0  # seconds to parse the repository's settings file


@dataclass
class RoundInputs:
    """The engine's context for one round, and where the round sits in the ledger."""

    context: RoundContext
    pr_id: int
    number: int  # the round's number
    first_key: int  # the key number the round's first new defect gets (D<first_key>)


async def read_settings(forge: ForgeReader, default_drafts: bool = False
                        ) -> tuple[Settings, str | None]:
    """The repository's settings from the default branch (never the PR's head), and any error."""
    text = await forge.file_text(SETTINGS_PATH)
    try:  # off the loop: the file is the repository's, webhooks must not wait for it
        parsing = asyncio.to_thread(parse_settings, text, default_drafts=default_drafts)
        return await asyncio.wait_for(parsing, SETTINGS_TIMEOUT), None
    except SettingsError as exc:
        return Settings(review_drafts=default_drafts), str(exc)
    except TimeoutError:
        return Settings(review_drafts=default_drafts), \
            f"{SETTINGS_PATH} took over {SETTINGS_TIMEOUT:g}s to read"


async def gather(forge: ForgeReader, store: LedgerStore, pr: dict, pull: PullRequest, number: int,
                 settings: Settings, limits: ReviewLimits = DEFAULT_LIMITS) -> RoundInputs:
    """Everything round ``number`` of ledger PR ``pr`` needs, read from ``forge`` and ``store``.
    The diffs are cut to ``limits`` (``bot.config.bounds``); what was left out is noted."""
    head = pull.head_sha
    previous = await off_loop(store, store.last_round, pr["id"])
    skipped: list[str] = []
    try:
        listed = await _pr_diff(forge, pull)
    except NotAcceptable as exc:
        log.warning("the diff of %s#%s is too large to review: %s", pr["repo"], pr["number"],
                    exc)
        listed = ListedDiff("", unlisted=max(pull.changed_files or 0, 1))
        skipped.append(too_large_note("the host would not give its diff, nor its files"))
    pr_diff, note, unreviewed = await asyncio.to_thread(_bounded, listed, limits)
    skipped += [note] if note else []
    if previous is None:
        round_diff = pr_diff  # the first round: the whole PR is new
    elif previous["head_sha"] == head:
        round_diff = ""  # a review of the same head again: nothing moved
    known = await off_loop(store, store.defects, pr["id"])
    tracked = [d for d in known if not d.ignored]
    upstream_diff = ""
    if previous is not None and previous["head_sha"] != head:
        try:
            round_diff, upstream_diff = await _round_diff(forge, previous, head, pr_diff,
                                                          tracked)
        except NotAcceptable:  # the push alone is too large: take it as the bounded PR diff
            round_diff, upstream_diff = pr_diff, ""
        round_diff = (await asyncio.to_thread(bound_diff, round_diff, limits))[0]
    messages = await forge.commit_messages(previous["head_sha"], head) \
        if previous is not None and previous["head_sha"] != head else []
    anchor_diffs = await _anchor_diffs(forge, tracked, previous, head)
    patches = Patches()  # the round's one parse of each diff, shared by every reader
    lines = await asyncio.to_thread(  # the round's one parse of a diff of many files
        lambda: DiffLines(pr_diff, diff_map=patches.map(pr_diff)))
    changed = lines.paths()
    paths = _text_worth(lines)
    paths += sorted({d.path for d in tracked if d.path and d.path not in changed})
    files = {p: await forge.file_text(p, head) for p in paths}
    signals = await off_loop(store, store.signals, pr["id"], previous["number"] if previous else 0)
    discussion = await off_loop(store, _discussion, store, pr["id"], previous)
    next_key = await off_loop(store, store.next_key, pr["id"])
    muted = await off_loop(store, learnings.muted, store, pr["repo"])
    record = await off_loop(store, rule_record, store, pr["repo"])
    ctx = RoundContext(
        repo=pr["repo"], number=pr["number"], round=number, head_sha=head,
        base_sha=pull.base_sha, pr_diff=pr_diff, round_diff=round_diff, files=files,
        title=pull.title, body=pull.body, tracked=tracked,
        signals=signals, discussion=discussion, settings=settings,
        previous_head=previous["head_sha"] if previous else None, anchor_diffs=anchor_diffs,
        patches=patches, upstream_diff=upstream_diff, muted=muted, messages=messages,
        ignored=[d for d in known if d.ignored], skipped=skipped, verdicts=record,
        unreviewed=unreviewed, unlisted=listed.unlisted,
    )
    return RoundInputs(ctx, pr["id"], number, int(next_key[1:]))


async def _pr_diff(forge: ForgeReader, pull: PullRequest) -> ListedDiff:
    """The PR's diff pinned to the head under review (``base...head``), never "the PR's diff
    now": a push while the round runs must not give it a diff of another head. Only when the
    forge will not give so large a comparison does the round take the PR's own diff, with the
    files it holds no patch for (``ForgeReader.listed_pull_diff``)."""
    if pull.base_sha:
        try:
            return ListedDiff(await forge.compare_diff(pull.base_sha, pull.head_sha))
        except NotAcceptable:
            log.info("the comparison is too large; using the pull request's files")
    return await forge.listed_pull_diff(pull)


def _bounded(listed: ListedDiff, limits: ReviewLimits
             ) -> tuple[str, str | None, list[Unreviewed]]:
    """The part of the diff the round reviews (``bot.config.bounds``), the note on what the
    caps left out, and every changed file not reviewed with why: the forge's, those the caps
    cut, and the binary ones the diff shows (once each)."""
    text, note, cut = bound_listed(listed.text, limits)
    out = list(listed.unreviewed)
    named = {u.path for u in out}
    for path in cut:
        if path not in named:
            out.append(Unreviewed(path, CAPS))
            named.add(path)
    out += [Unreviewed(p, BINARY) for p in binary_paths(text) if p not in named]
    return text, note, out


def _text_worth(lines: DiffLines) -> list[str]:
    """The changed files whose head text the round fetches (for whole-file checks such as
    ruff), in path order: all of them, or past ``MAX_FILES`` those with the most changed lines
    (not the first by name: files that sort first must not push the one that matters out)."""
    changed = lines.paths()
    if len(changed) <= MAX_FILES:
        return sorted(changed)
    size = {p: len(lines.right[p]) + len(lines.left[p]) for p in changed}
    return sorted(sorted(changed, key=lambda p: (-size[p], p))[:MAX_FILES])


async def _round_diff(forge: ForgeReader, previous: dict, head: str, pr_diff: str,
                      tracked: list[Defect]) -> tuple[str, str]:
    """The author's change since the last review, and the upstream changes to set aside.

    A push on top of the reviewed head: compare(old, new), nothing upstream. A rebase or
    force-push (the old head is no ancestor of the new one): the interdiff of the PR's diffs
    at both heads (``tracker.interdiff``), so upstream edits move no defect and resolve none.
    """
    old = previous["head_sha"]
    if await forge.compare_status(old, head) in ("ahead", "identical", ""):
        return await forge.compare_diff(old, head), ""
    old_pr_diff = await forge.compare_diff(previous["base_sha"] or old, old)
    paths = sorted(DiffLines(old_pr_diff).paths() | DiffLines(pr_diff).paths()
                   | {d.path for d in tracked if d.path})[:MAX_FILES]
    before = {p: await forge.file_text(p, old) for p in paths}
    after = {p: await forge.file_text(p, head) for p in paths}
    moved = interdiff(old_pr_diff, pr_diff, before, after)
    log.info("%s is not an ancestor of %s: reviewing the interdiff", old[:7], head[:7])
    return moved.round, moved.upstream


async def _anchor_diffs(forge: ForgeReader, tracked: list[Defect], previous: dict | None,
                        head: str) -> dict[str, str]:
    """Diffs to the head from the commits people commented on that the bot never reviewed
    (a failed round, a comment on a push still queued)."""
    reviewed = previous["head_sha"] if previous else None
    out: dict[str, str] = {}
    for sha in sorted({d.anchor_sha for d in tracked if d.anchor_sha} - {reviewed}):
        if sha == head:
            out[sha] = ""
            continue
        try:
            out[sha] = await forge.compare_diff(sha, head)
        except (NotFound, Unprocessable) as exc:
            log.info("cannot compare %s...%s (%s); mapping from the last review", sha, head,
                     exc.status)
    return out


def _discussion(store: LedgerStore, pr_id: int, previous: dict | None) -> list[dict]:
    since = previous["finished_at"] if previous else ""
    return store.people_comments_since(pr_id, since or "")
