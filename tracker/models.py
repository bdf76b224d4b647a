"""The values that flow into and out of the tracker: findings, tracked defects, signals, decisions.

These are plain dataclasses with no I/O. A *finding* is something a reviewer (the bot's engine
or a human) raises in one round; a *defect* is a finding the ledger tracks across rounds under
a stable per-PR key (``D1``, ``D2``...); a *signal* is something people did between rounds
(resolving a thread, claiming a fix); a *decision* is the state the tracker gives a defect at a
round, with the evidence behind it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

from .lifecycle import State, parse_state
from .suggestions import suggestion

MCR_TYPES = {
    "E.1.1": "Textual",
    "E.1.2": "Language-supported docs",
    "E.2": "Visual representation",
    "E.3.1": "Organization",
    "E.3.2": "Solution approach",
    "E.4": "Verification/test",
    "F.1": "Interface",
    "F.2": "Logic",
    "F.3": "Resource",
    "F.4": "Check",
    "F.5": "Support",
    "F.6": "Performance",
    "F.7": "Security & privacy",
}

SEVERITIES = ("Trivial", "Minor", "Normal", "Major", "Blocker", "Critical")


def severity_rank(severity: str | None) -> int:
    """Trivial=0 ... Critical=5; unknown severities rank as Normal."""
    try:
        return SEVERITIES.index(severity or "Normal")
    except ValueError:
        return SEVERITIES.index("Normal")


def check_type(value: str | None) -> str:
    if value not in MCR_TYPES:
        raise ValueError(f"unknown MCR defect type {value!r}; expected one of {', '.join(MCR_TYPES)}")
    return value


def check_severity(value: str | None) -> str:
    if value not in SEVERITIES:
        raise ValueError(f"unknown severity {value!r}; expected one of {', '.join(SEVERITIES)}")
    return value


class Origin(str, Enum):
    BOT = "bot"
    HUMAN = "human"

    def __str__(self) -> str:
        return self.value


class DecidedBy(str, Enum):
    RULE = "rule"
    LLM = "llm"
    HUMAN = "human"

    def __str__(self) -> str:
        return self.value


@dataclass
class Finding:
    """One problem raised in one round, by the engine or by a person.

    ``path`` is None for a remark about the whole pull request (a review body, a PR comment).
    ``line_start``/``line_end`` are on the new side (``side="RIGHT"``) unless the finding is
    about deleted lines (``side="LEFT"``).
    """

    description: str
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    side: str = "RIGHT"
    type: str = "F.2"
    severity: str = "Normal"
    confidence: float = 0.5
    rule: str | None = None  # the offline rule that produced it, when any
    origin: Origin = Origin.BOT
    author: str | None = None
    comment_id: int | None = None  # the GitHub comment that raised it (human findings)
    # The replacement for lines line_start..line_end (new side), when the fix is local and
    # certain; "" deletes them. Posted as a ```suggestion block the author can commit.
    fix: str | None = None
    # The code a model quoted as the problem (lines line_start..line_end as it read them): a
    # fix becomes a suggestion only when those lines really hold it (``bot.review.llm.fixes``).
    quote: str | None = None

    def __post_init__(self):
        self.origin = Origin(self.origin)
        check_type(self.type)
        check_severity(self.severity)
        if self.line_start is not None and self.line_end is None:
            self.line_end = self.line_start
        if self.line_end is not None and self.line_start is None:
            self.line_start = self.line_end
        if self.line_start is not None and self.line_end < self.line_start:
            self.line_start, self.line_end = self.line_end, self.line_start
        if self.side not in ("RIGHT", "LEFT"):
            raise ValueError(f"side must be RIGHT or LEFT, not {self.side!r}")

    @property
    def anchored(self) -> bool:
        return self.path is not None and self.line_start is not None and \
            1 <= self.line_start <= (self.line_end or self.line_start)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["origin"] = str(self.origin)
        return d

    def recorded_description(self) -> str:
        """The description as the ledger keeps it: with the fix as a ```suggestion block, as a
        reviewer would write it, so the ``suggestion-applied`` rule sees it once committed."""
        if self.fix is None or self.side != "RIGHT":
            return self.description
        return suggestion_block(self.description, self.fix)


def suggestion_block(description: str, fix: str) -> str:
    ticks = "````" if "```" in fix else "```"
    body = fix if fix.endswith("\n") or not fix else fix + "\n"
    return f"{description.rstrip()}\n\n{ticks}suggestion\n{body}{ticks}"


def split_suggestion(description: str) -> tuple[str, str | None]:
    """A description without its trailing ```suggestion block, and the block's text."""
    lines = suggestion(description)
    if lines is None:
        return description, None
    cut = description.lower().rfind("```suggestion")
    head = description[:cut].rstrip().rstrip("`").rstrip() if cut >= 0 else description
    return head, "\n".join(lines)


@dataclass
class Defect:
    """A defect as the ledger tracks it. ``state`` is its state at ``state_round``."""

    key: str
    description: str
    origin: Origin
    state: State
    raised_round: int
    state_round: int
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    side: str = "RIGHT"
    fingerprint: str | None = None
    code: str | None = None  # the anchored lines as they stood when last seen
    type: str = "F.2"
    severity: str = "Normal"
    confidence: float = 0.5
    rule: str | None = None
    author: str | None = None
    ignored: bool = False
    resolved_code: str | None = None  # the code as it was when the defect was resolved
    id: int | None = None  # ledger row id
    comment_ids: list[int] = field(default_factory=list)
    thread_node_id: str | None = None
    anchor_sha: str | None = None  # the commit the anchor's line numbers refer to

    def __post_init__(self):
        self.origin = Origin(self.origin)
        self.state = parse_state(self.state)

    @property
    def anchored(self) -> bool:
        return self.path is not None and self.line_start is not None and \
            1 <= self.line_start <= (self.line_end or self.line_start)

    @property
    def fix(self) -> str | None:
        """The replacement its ```suggestion block proposes (bot or reviewer), if any."""
        return split_suggestion(self.description)[1]

    @property
    def text(self) -> str:
        """The description without the suggestion block, for tables and prompts."""
        return split_suggestion(self.description)[0]

    def location(self) -> str:
        if not self.path:
            return "(whole PR)"
        if self.line_start is None:
            return self.path
        if self.line_start == self.line_end:
            return f"{self.path}:{self.line_start}"
        return f"{self.path}:{self.line_start}-{self.line_end}"


class SignalKind(str, Enum):
    THREAD_RESOLVED = "thread_resolved"  # a person resolved the defect's review thread
    THREAD_UNRESOLVED = "thread_unresolved"
    AUTHOR_CLAIMS_FIXED = "author_claims_fixed"  # a reply saying "fixed", "done"...: not proof
    REVIEWER_DISPUTES = "reviewer_disputes"  # a reviewer says it is still not right
    REVIEWER_ACCEPTS = "reviewer_accepts"  # a reviewer says the fix is fine
    COMMAND_RESOLVE = "command_resolve"  # `/roundwise resolve D3` by someone with write access
    COMMAND_IGNORE = "command_ignore"
    THUMBS_DOWN = "thumbs_down"  # a 👎 on the bot's comment (read at the next round)
    REVIEWER_APPROVES = "reviewer_approves"  # the remark's reviewer approved, or opened a
    # later remark with thanks ("looks good, only ..."), after a push: their remark was met
    REVIEWER_MOVED_ON = "reviewer_moved_on"  # the remark's reviewer commented elsewhere after
    # a push without coming back to it: weak evidence it was met
    REVIEWER_REPEATS = "reviewer_repeats"  # the reviewer raised it again after a push
    AUTHOR_PROMISES = "author_promises"  # the author says it will be done ("will do")

    def __str__(self) -> str:
        return self.value


@dataclass
class Signal:
    """Something a person did about a tracked defect between two rounds."""

    kind: SignalKind
    defect_key: str
    author: str | None = None
    body: str = ""
    comment_id: int | None = None

    def __post_init__(self):
        self.kind = SignalKind(self.kind)


@dataclass
class Decision:
    """The state a tracked defect gets at one round, and why.

    ``candidate`` marks a decision a verifier may overturn: a Resolved (or Reopened) one the
    rules reached from code changes, or an Open one they were not sure of (low ``confidence``,
    such as a remark that names no code after a push). A verifier (the LLM engine) sees the
    least sure first and may confirm or overturn them before they are recorded.
    """

    key: str
    state: State
    rule: str
    evidence: str
    decided_by: DecidedBy = DecidedBy.RULE
    candidate: bool = False
    path: str | None = None  # the defect's anchor as mapped to the new head
    line_start: int | None = None
    line_end: int | None = None
    code: str | None = None  # the anchored code at the new head
    signals: list[str] = field(default_factory=list)
    confidence: float = 1.0  # how sure the rule is; low-confidence candidates are verified first
    profile: dict[str, bool] = field(default_factory=dict)  # tracker.profile's signals

    def __post_init__(self):
        self.state = parse_state(self.state)
        self.decided_by = DecidedBy(self.decided_by)
