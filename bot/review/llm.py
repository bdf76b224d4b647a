"""The LLM reviewer: detection on this round's changes and verification of tracked defects.

Roundwise asks a model two small questions per round instead of one giant one:

- **detection** (``LLMDetector``): what is wrong in the lines this round added or changed? The
  prompt holds the round's diff (split by file, prioritised and capped to a token budget), and
  lists the ledger's tracked defects so they are not raised again;
- **verification** (``LLMVerifier``): for each tracked defect the deterministic tracker
  thinks was resolved (or came back), is it really resolved in the current code? The tracker's
  evidence goes in as a hint and people's "fixed" claims as claims to check; the engine keeps
  both pieces of evidence.

Answers are JSON, validated here; an invalid answer gets exactly one repair request, and what
is still malformed is dropped and counted, never posted. Calls go through litellm
(``LLMClient``): any litellm model string, timeouts, retries with exponential backoff, an
optional fallback model, token and cost accounting and an optional on-disk answer cache.

Everything from the pull request is untrusted: it enters prompts only inside delimited data
blocks (look-alike tags inside it are neutralised) and the instructions say to treat it as
data. No environment value, API key or token is ever put into a prompt.

``stateless_messages``/``parse_stateless`` build and read the paper's *stateless* baseline
prompt (the whole history in one prompt), which the bench compares against.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import json
import logging
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import litellm
import unidiff

from tracker.anchors import Anchor, DiffError, DiffMap, normalise
from tracker.decide import Verdict
from tracker.lifecycle import State, parse_state
from tracker.models import (
    MCR_TYPES,
    SEVERITIES,
    DecidedBy,
    Decision,
    Defect,
    Finding,
    Signal,
    SignalKind,
)
from tracker.paths import is_docs_path, is_generated_path, is_test_path

from .engine import Detection, Engine, OfflineDetector, RoundContext, Usage
from .llm_config import LLMConfig

log = logging.getLogger(__name__)
litellm.suppress_debug_info = True

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


# --------------------------------------------------------------------------- prompts


def prompt_text(name: str) -> str:
    """A prompt file from ``bot/review/prompts``."""
    return resources.files("bot.review").joinpath(f"prompts/{name}").read_text(encoding="utf-8")


def _system_prompt(name: str) -> str:
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


def _block(tag: str, content: str, **attrs: Any) -> str:
    """``<tag a="..">content</tag>``; ``content`` must already be escaped."""
    shown = "".join(f' {k}="{_attr(v)}"' for k, v in attrs.items() if v is not None)
    return f"<{tag}{shown}>\n{content.rstrip()}\n</{tag}>"


def _cap(text: str | None, limit: int) -> str:
    """At most ``limit`` characters of ``text``, saying how much was cut."""
    text = str(text or "")
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def _numbered(text: str | None, start: int, end: int) -> str:
    """Lines start..end of a file, each prefixed with its line number."""
    lines = (text or "").splitlines()
    lo = max(start, 1)
    return "\n".join(f"{n:>5} | {lines[n - 1]}" for n in range(lo, min(end, len(lines)) + 1))


# --------------------------------------------------------------------------- diffs


@dataclass
class Hunk:
    """One hunk, annotated: its header and (new-side position, text) rows."""

    header: str
    rows: list[tuple[int, str]]  # removed lines sit at the position of the line after them
    added: set[int]  # new line numbers of the lines it adds

    @property
    def lines(self) -> list[str]:
        return [self.header] + [text for _, text in self.rows]


@dataclass
class FileDiff:
    """One file of a unified diff, annotated with line numbers for the model."""

    path: str
    hunks: list[Hunk]

    @property
    def added(self) -> int:
        return sum(len(h.added) for h in self.hunks)

    def text(self) -> str:
        return "\n".join(line for hunk in self.hunks for line in hunk.lines)

    def only(self, keep: list[int]) -> FileDiff:
        """The same file with only the hunks numbered in ``keep``."""
        return FileDiff(self.path, [self.hunks[i] for i in keep])

    def around(self, start: int, end: int, context: int, limit: int) -> str:
        """The diff lines within ``context`` lines of start..end (new side), at most ``limit``."""
        out: list[str] = []
        for hunk in self.hunks:
            rows = [text for pos, text in hunk.rows if start - context <= pos <= end + context]
            if rows:
                out += [hunk.header, *rows]
        if len(out) > limit:
            out = [*out[:limit], f"[... {len(out) - limit} more diff lines cut]"]
        return "\n".join(out)


def _annotate_hunk(hunk: unidiff.Hunk) -> Hunk:
    header = (f"@@ -{hunk.source_start},{hunk.source_length} "
              f"+{hunk.target_start},{hunk.target_length} @@ {hunk.section_header}").rstrip()
    rows: list[tuple[int, str]] = []
    position = hunk.target_start
    for ln in hunk:
        value = ln.value.rstrip("\n")
        if ln.line_type == "+":
            position = ln.target_line_no
            rows.append((position, f"{position:>5} | + {value}"))
        elif ln.line_type == " ":
            position = ln.target_line_no
            rows.append((position, f"{position:>5} |   {value}"))
        elif ln.line_type == "-":
            rows.append((position + (1 if rows else 0), f"L{ln.source_line_no:>4} | - {value}"))
    added = {ln.target_line_no for ln in hunk if ln.line_type == "+"}
    return Hunk(header, rows, added)


def annotate_diff(diff_text: str) -> list[FileDiff]:
    """The files of a diff with hunks whose lines carry their numbers (added, context, removed).

    Deleted and binary files are left out: no comment can be posted on them.
    """
    try:
        patch = unidiff.PatchSet(diff_text or "")
    except unidiff.UnidiffParseError:
        return []
    return [FileDiff(patched.path, [_annotate_hunk(h) for h in patched])
            for patched in patch
            if not (patched.is_binary_file or patched.is_removed_file or not len(patched))]


def file_priority(fd: FileDiff) -> tuple[int, int, str]:
    """Sort key: source before tests, docs and generated files; more added lines first."""
    if is_generated_path(fd.path):
        kind = 3
    elif is_docs_path(fd.path):
        kind = 2
    elif is_test_path(fd.path):
        kind = 1
    else:
        kind = 0
    return kind, -fd.added, fd.path


# --------------------------------------------------------------------------- output parsing


class OutputError(ValueError):
    """A model answer that is not the JSON object asked for; the message says what is wrong."""


class ItemError(ValueError):
    """One unusable item inside an otherwise valid answer."""


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def load_json_object(text: str | None) -> dict:
    """The JSON object in a model's answer (code fences and stray prose around it tolerated)."""
    raw = _FENCE.sub("", (text or "").strip())
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        start, end = raw.find("{"), raw.rfind("}")
        if start < 0 or end <= start:
            raise OutputError(f"the answer is not valid JSON ({exc.msg})") from None
        try:
            data = json.loads(raw[start:end + 1])
        except json.JSONDecodeError as exc2:
            raise OutputError(f"the answer is not valid JSON ({exc2.msg} at character "
                              f"{exc2.pos + start})") from None
    if not isinstance(data, dict):
        raise OutputError(f"the answer must be a JSON object, not {type(data).__name__}")
    return data


def _list_field(data: dict, name: str) -> list:
    items = data.get(name)
    if not isinstance(items, list):
        raise OutputError(f'the JSON object must have a "{name}" list')
    return items


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise ItemError(f"{name} is not a line number")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        raise ItemError(f"{name} is not a line number")
    return value


_TYPE_ID = re.compile(r"^\s*([EF](?:\.\d+){1,2})", re.IGNORECASE)


def normalise_type(value: Any) -> str:
    """An MCR type id from what a model wrote ("F.2", "F.2 Logic", "logic", "E.1"...)."""
    text = str(value or "").strip()
    match = _TYPE_ID.match(text)
    if match:
        code = match.group(1).upper()
        if code in MCR_TYPES:
            return code
        nearest = [t for t in MCR_TYPES if t.startswith(code + ".")]
        if nearest:
            return nearest[0]
    lowered = text.lower()
    for key, label in MCR_TYPES.items():
        if lowered and (lowered == label.lower() or lowered in label.lower().split(" & ")):
            return key
    raise ItemError(f"unknown defect type {text!r}")


def normalise_severity(value: Any) -> str:
    text = str(value or "").strip().lower()
    for severity in SEVERITIES:
        if severity.lower() == text:
            return severity
    return "Normal"


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if 1.0 < number <= 100.0:
        number /= 100.0
    return min(max(number, 0.0), 1.0)


def finding_from_item(item: Any) -> Finding:
    """A bot Finding from one answer item; ItemError when it cannot be used."""
    if not isinstance(item, dict):
        raise ItemError("an item is not an object")
    path = item.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ItemError("missing path")
    path = path.strip().removeprefix("./")
    start = _int(item.get("line_start", item.get("line")), "line_start")
    end = _int(item["line_end"], "line_end") if item.get("line_end") is not None else start
    description = item.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ItemError("missing description")
    side = str(item.get("side") or "RIGHT").strip().upper()
    try:
        return Finding(
            description=description.strip()[:2000], path=path, line_start=start, line_end=end,
            side=side if side in ("RIGHT", "LEFT") else "RIGHT",
            type=normalise_type(item.get("type") or "F.2"),
            severity=normalise_severity(item.get("severity")),
            confidence=_confidence(item.get("confidence", 0.5)), rule=None, origin="bot",
        )
    except ValueError as exc:
        raise ItemError(str(exc)) from None


def parse_findings(text: str) -> tuple[list[Finding], Counter]:
    """Findings from a detection answer, and a count of the items that had to be dropped.

    Raises OutputError when the answer as a whole is unusable (the caller repairs once).
    """
    items = _list_field(load_json_object(text), "findings")
    findings, dropped = [], Counter()
    for item in items:
        try:
            findings.append(finding_from_item(item))
        except ItemError:
            dropped["invalid_item"] += 1
    return findings, dropped


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ItemError("resolved must be true or false")


def parse_verdicts(text: str) -> tuple[list[dict], Counter]:
    """``{"key", "resolved", "evidence", "quote"}`` items from a verification answer."""
    items = _list_field(load_json_object(text), "verdicts")
    out, dropped = [], Counter()
    for item in items:
        try:
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                raise ItemError("missing key")
            out.append({
                "key": item["key"].strip(),
                "resolved": _bool(item.get("resolved")),
                "evidence": str(item.get("evidence") or "").strip()[:600],
                "quote": str(item.get("quote") or "").strip()[:600],
            })
        except ItemError:
            dropped["invalid_item"] += 1
    return out, dropped


# --------------------------------------------------------------------------- the client


class LLMError(RuntimeError):
    """The model could not be reached (after retries and the fallback model)."""


@dataclass
class Completion:
    """One model answer: its text, the tokens and cost it took, and whether it was cached."""

    text: str
    usage: Usage
    model: str
    cached: bool = False


@dataclass
class JsonAnswer:
    """A parsed answer (None when there is none), what it cost, and what was dropped."""

    value: Any
    usage: Usage = field(default_factory=Usage)
    dropped: Counter = field(default_factory=Counter)


_RETRYABLE = (litellm.Timeout, litellm.APIConnectionError, litellm.RateLimitError,
              litellm.InternalServerError, litellm.ServiceUnavailableError,
              litellm.BadGatewayError)


def _retryable(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    return isinstance(exc, _RETRYABLE) or (isinstance(status, int) and
                                           (status >= 500 or status == 429))


def _provider(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


class LLMClient:
    """Chat completions through litellm, with retries, a fallback model and an answer cache.

    ``stats`` counts calls, cached answers, retries, fallbacks and failures.
    """

    def __init__(self, config: LLMConfig, *, cache_dir: str | Path | None = None):
        self.config = config
        cache = cache_dir or config.cache_dir
        self.cache_dir = Path(cache) if cache else None
        self.stats: Counter = Counter()
        self._repair = prompt_text("repair.txt")
        self._limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    def _limit(self) -> asyncio.Semaphore:
        """The concurrency limit of the running event loop (a client may outlive a loop)."""
        loop = asyncio.get_running_loop()
        if loop not in self._limits:
            self._limits = {k: v for k, v in self._limits.items() if not k.is_closed()}
            self._limits[loop] = asyncio.Semaphore(max(self.config.concurrency, 1))
        return self._limits[loop]

    # -- tokens

    def count_tokens(self, messages: list[dict]) -> int:
        """Prompt tokens of ``messages`` by litellm's counter (characters / 4 if it fails)."""
        try:
            return int(litellm.token_counter(model=self.config.model, messages=messages))
        except Exception:  # noqa: BLE001 - any tokenizer trouble falls back to an estimate
            return sum(len(str(m.get("content") or "")) for m in messages) // 4 + 4 * len(messages)

    def count_text(self, text: str) -> int:
        try:
            return int(litellm.token_counter(model=self.config.model, text=text))
        except Exception:  # noqa: BLE001
            return len(text) // 4 + 1

    # -- calls

    async def complete(self, messages: list[dict]) -> Completion:
        """The model's answer to ``messages``; LLMError when no model could give one."""
        messages = self._redact(messages)
        key = self._cache_key(messages)
        cached = self._cache_get(key)
        if cached is not None:
            self.stats["cached"] += 1
            return Completion(cached, Usage(cached=1), self.config.model, cached=True)
        models = [self.config.model] + ([self.config.fallback_model]
                                        if self.config.fallback_model else [])
        last: Exception | None = None
        for i, model in enumerate(models):
            if i:
                self.stats["fallbacks"] += 1
                log.warning("LLM %s failed (%s); trying fallback %s", models[0],
                            type(last).__name__, model)
            try:
                completion = await self._with_retries(model, messages)
            except Exception as exc:  # noqa: BLE001 - any failure moves on to the fallback
                last = exc
                continue
            self._cache_put(key, completion.text)
            return completion
        self.stats["failures"] += 1
        raise LLMError(f"no answer from {', '.join(models)}: {type(last).__name__}: "
                       f"{str(last)[:200]}")

    async def _with_retries(self, model: str, messages: list[dict]) -> Completion:
        attempt = 0
        while True:
            try:
                async with self._limit():
                    return await self._call(model, messages)
            except Exception as exc:
                if not _retryable(exc) or attempt >= self.config.retries:
                    raise
                self.stats["retries"] += 1
                delay = self.config.backoff * (2 ** attempt)
                log.info("LLM %s: %s, retry %d in %.2fs", model, type(exc).__name__,
                         attempt + 1, delay)
                attempt += 1
                await asyncio.sleep(delay)

    async def _call(self, model: str, messages: list[dict]) -> Completion:
        kwargs: dict[str, Any] = {
            "model": model, "messages": messages, "timeout": self.config.timeout,
            "temperature": self.config.temperature, "max_retries": 0,
        }
        if _provider(model) == _provider(self.config.model):
            # The configured endpoint and key belong to the primary model's provider.
            if self.config.api_base:
                kwargs["api_base"] = self.config.api_base
            if self.config.api_key:
                kwargs["api_key"] = self.config.api_key
            elif self.config.api_base and _provider(model) == "openai" and \
                    not os.environ.get("OPENAI_API_KEY"):
                # A local OpenAI-compatible server often wants no key, but litellm's OpenAI
                # client refuses to call without one.
                kwargs["api_key"] = "no-key"
        if self.config.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
            kwargs["drop_params"] = True
        self.stats["calls"] += 1
        response = await litellm.acompletion(**kwargs)
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        return Completion(text, Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=_cost(response), calls=1), model)

    async def complete_json(self, messages: list[dict], parse: Callable[[str], Any]) -> JsonAnswer:
        """Ask, parse with ``parse`` (raising OutputError when invalid), repair exactly once.

        The answer's value is None when the model could not be reached (``llm_error``) or its
        answer stayed invalid after the repair (``malformed``).
        """
        answer = JsonAnswer(None)
        try:
            first = await self.complete(messages)
        except LLMError as exc:
            log.warning("%s", exc)
            answer.dropped["llm_error"] += 1
            return answer
        answer.usage.add(first.usage)
        try:
            answer.value = parse(first.text)
            return answer
        except OutputError as exc:
            error = str(exc)
        repair = messages + [
            {"role": "assistant", "content": first.text[:MAX_OUTPUT_ECHO_CHARS]},
            {"role": "user", "content": Template(self._repair).substitute(error=error)},
        ]
        try:
            second = await self.complete(repair)
            answer.usage.add(second.usage)
            answer.value = parse(second.text)
        except (LLMError, OutputError) as exc:
            log.warning("LLM answer still unusable after one repair: %s", exc)
            answer.dropped["malformed"] += 1
        return answer

    # -- hygiene and cache

    def _redact(self, messages: list[dict]) -> list[dict]:
        """Belt and braces: the configured key never leaves in a message, whatever happened."""
        key = self.config.api_key
        if not key or len(key) < 8:
            return messages
        return [{**m, "content": str(m.get("content") or "").replace(key, "[redacted]")}
                for m in messages]

    def _cache_key(self, messages: list[dict]) -> str:
        blob = json.dumps({"model": self.config.model, "messages": messages}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cache_get(self, key: str) -> str | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))["text"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _cache_put(self, key: str, text: str) -> None:
        if self.cache_dir is None:
            return
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{key}.{uuid.uuid4().hex}.tmp")  # concurrent writers
            tmp.write_text(json.dumps({"model": self.config.model, "text": text}),
                           encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            log.warning("cannot write the LLM cache: %s", exc)


def _cost(response: Any) -> float:
    """The answer's cost in dollars by litellm's price list; 0.0 for models it does not know."""
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - unknown models have no price
        return 0.0


# --------------------------------------------------------------------------- detection


@dataclass
class Piece:
    """A part of the round diff small enough for one call: one file, or some of its hunks."""

    path: str
    text: str
    tokens: int
    rank: tuple


@dataclass
class DetectPlan:
    """The detection calls for one round, and what had to be left out."""

    calls: list[list[dict]]
    dropped: Counter = field(default_factory=Counter)


class LLMDetector:
    """Detection on what changed this round (implements the engine's ``Detector``)."""

    name = "llm"

    def __init__(self, client: LLMClient):
        self.client = client
        self.system = _system_prompt("detect_system.txt")

    async def detect(self, ctx: RoundContext) -> Detection:
        plan = self.plan(ctx)
        detection = Detection([], dropped=Counter(plan.dropped))
        answers = await asyncio.gather(*(self.client.complete_json(m, parse_findings)
                                         for m in plan.calls))
        floor = self.client.config.min_confidence
        for answer in answers:
            detection.usage.add(answer.usage)
            detection.dropped.update(answer.dropped)
            if answer.value is None:
                continue
            findings, item_dropped = answer.value
            detection.dropped.update(item_dropped)
            for finding in findings:
                if finding.confidence < floor:
                    detection.dropped["low_confidence"] += 1
                else:
                    detection.findings.append(finding)
        return detection

    def plan(self, ctx: RoundContext) -> DetectPlan:
        """The prompts for this round, split by file and capped to the token budget (no I/O)."""
        header = self.header(ctx)
        fixed = self.client.count_tokens(self._messages(header, []))
        room = self.client.config.max_prompt_tokens - fixed - TOKEN_MARGIN
        if room <= 0:
            files = {fd.path for fd in authored_changes(ctx)}
            log.warning("the detection prompt's header alone is over the token budget")
            return DetectPlan([], Counter({"over_budget_files": len(files)} if files else {}))
        pieces = self.pieces(ctx, room)
        batches, left_out = _pack(pieces, room, max(self.client.config.max_calls, 1))
        plan = DetectPlan([])
        for batch in batches:
            messages = self._messages(header, batch)
            while len(batch) > 1 and \
                    self.client.count_tokens(messages) > self.client.config.max_prompt_tokens:
                left_out.append(batch.pop())
                messages = self._messages(header, batch)
            plan.calls.append(messages)
        if left_out:
            plan.dropped["over_budget_files"] = len({p.path for p in left_out})
        return plan

    def _messages(self, header: str, pieces: list[Piece]) -> list[dict]:
        diff = "\n".join(p.text for p in pieces) or "(no changed files in this part)"
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": f"{header}\n\n{diff}\n\nReview the <round_diff> "
                 "blocks above and answer with the JSON object only."}]

    def header(self, ctx: RoundContext) -> str:
        """The data blocks every detection call of the round repeats: PR, ledger, discussion."""
        parts = [
            _block("pr_title", escape_data(_cap(ctx.title, 300))),
            _block("pr_body", escape_data(_cap(ctx.body, MAX_BODY_CHARS))),
        ]
        if ctx.linked_issues:
            parts.append(_block("linked_issues", "\n".join(
                _block("issue", escape_data(_cap(i.get("body"), MAX_ISSUE_CHARS)),
                       number=i.get("number"), title=i.get("title"))
                for i in ctx.linked_issues[:MAX_ISSUES])))
        parts.append(_block("tracked_defects", tracked_block(ctx) or "(none)"))
        if ctx.discussion:
            parts.append(_block("discussion", discussion_block(ctx.discussion)))
        return "\n".join(parts)

    def pieces(self, ctx: RoundContext, room: int) -> list[Piece]:
        """This round's diff as prompt pieces, highest priority first, each within ``room``."""
        ignore = ctx.settings.ignore_paths
        out: list[Piece] = []
        for fd in sorted(authored_changes(ctx), key=file_priority):
            if any(fnmatch.fnmatch(fd.path, g) for g in ignore):
                continue
            out.extend(self._split(fd, room))
        return out

    def _split(self, fd: FileDiff, room: int) -> list[Piece]:
        rank = file_priority(fd)
        whole = _block("round_diff", escape_data(fd.text()), file=fd.path)
        tokens = self.client.count_text(whole)
        if tokens <= room:
            return [Piece(fd.path, whole, tokens, rank)]
        cap = room * 0.9  # slack for the part's own tags and token-count drift
        groups: list[list[str]] = [[]]
        used = 0.0
        for hunk in fd.hunks:
            lines = hunk.lines
            size = self.client.count_text("\n".join(lines))
            # A hunk too big for one call is cut at line boundaries.
            sizes = [size] if size <= cap else [self.client.count_text(ln) + 1 for ln in lines]
            chunks = [lines] if size <= cap else [[ln] for ln in lines]
            for chunk, tokens in zip(chunks, sizes):
                if groups[-1] and used + tokens > cap:
                    groups.append([])
                    used = 0.0
                groups[-1].extend(chunk)
                used += tokens
        out = []
        for n, group in enumerate(groups, start=1):
            text = _block("round_diff", escape_data("\n".join(group)), file=fd.path,
                          part=f"{n}/{len(groups)}")
            out.append(Piece(fd.path, text, self.client.count_text(text), rank + (n,)))
        return out


def authored_changes(ctx: RoundContext) -> list[FileDiff]:
    """The round diff's hunks that belong to the pull request.

    When the branch merged its target between rounds, the diff between the two heads also
    holds the target's changes; a hunk is kept only when it adds a line the PR diff (base..head)
    also adds, or only removes lines in a file the PR touches.
    """
    if not ctx.round_diff.strip():  # a fresh review of the same head: the whole PR
        return annotate_diff(ctx.pr_diff)
    files = annotate_diff(ctx.round_diff)
    if ctx.round_diff == ctx.pr_diff:
        return files
    try:
        pr = DiffMap(ctx.pr_diff)
    except DiffError:
        return files
    out = []
    for fd in files:
        if fd.path not in pr.new_files:
            continue
        ours = {line for line, _ in pr.added_lines(fd.path)}
        keep = [i for i, hunk in enumerate(fd.hunks) if hunk.added & ours or not hunk.added]
        if keep:
            out.append(fd if len(keep) == len(fd.hunks) else fd.only(keep))
    return out


def _pack(pieces: list[Piece], room: int, max_calls: int) -> tuple[list[list[Piece]], list[Piece]]:
    """First-fit the pieces (in priority order) into at most ``max_calls`` calls."""
    batches: list[list[Piece]] = []
    sizes: list[int] = []
    left_out: list[Piece] = []
    for piece in pieces:
        if room <= 0 or piece.tokens > room:
            left_out.append(piece)
            continue
        for i, size in enumerate(sizes):
            if size + piece.tokens <= room:
                batches[i].append(piece)
                sizes[i] += piece.tokens
                break
        else:
            if len(batches) < max_calls:
                batches.append([piece])
                sizes.append(piece.tokens)
            else:
                left_out.append(piece)
    return batches, left_out


def tracked_block(ctx: RoundContext) -> str:
    """The ledger's tracked defects: key, state, location now, description, and (for unresolved
    ones in files this round touches) the current code.

    Unresolved defects and those in touched files come first; past ``MAX_TRACKED_LISTED`` the
    rest are only counted.
    """
    try:
        diff = DiffMap(ctx.round_diff)
    except DiffError:
        diff = None
    touched = diff.touched_paths() if diff else set()
    rows = []
    for defect in ctx.tracked:
        if defect.ignored:
            continue
        path, start, end = _current_anchor(defect, diff)
        rows.append((not defect.state.unresolved, path not in touched, defect, path, start, end))
    rows.sort(key=lambda r: r[:2])
    blocks = [_tracked_defect(ctx, d, p, s, e, p in touched)
              for *_, d, p, s, e in rows[:MAX_TRACKED_LISTED]]
    if len(rows) > MAX_TRACKED_LISTED:
        blocks.append(f"[... {len(rows) - MAX_TRACKED_LISTED} more tracked defects not listed]")
    return "\n".join(blocks)


def _tracked_defect(ctx: RoundContext, defect: Defect, path: str | None, start: int, end: int,
                    touched: bool) -> str:
    location = defect.location() if path is None else _location(path, start, end)
    body = [_block("description", escape_data(_cap(defect.description, MAX_DESCRIPTION_CHARS)))]
    if defect.state.unresolved and touched and start:
        code = _numbered(ctx.files.get(path), start, min(end, start + MAX_CODE_LINES - 1))
        if code:
            body.append(_block("current_code", escape_data(code)))
    return _block("defect", "\n".join(body), key=defect.key, state=defect.state,
                  location=location, type=defect.type, severity=defect.severity)


def _current_anchor(defect: Defect, diff: DiffMap | None) -> tuple[str | None, int, int]:
    """Where a tracked defect's lines stand after this round's push."""
    if not defect.anchored:
        return None, 0, 0
    start, end = defect.line_start, defect.line_end or defect.line_start
    if diff is None or defect.side == "LEFT":
        return defect.path, start, end
    try:
        mapped = diff.map(Anchor(defect.path, start, end))
    except ValueError:
        return defect.path, start, end
    if mapped.anchor is None:
        return None, 0, 0
    return mapped.anchor.path, mapped.anchor.start, mapped.anchor.end


def _location(path: str, start: int, end: int) -> str:
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


def discussion_block(discussion: list[dict]) -> str:
    """People's comments since the last round, each in a ``<comment>`` block, capped."""
    out, used = [], 0
    for item in discussion:
        body = escape_data(_cap(item.get("body"), 1200))
        if used + len(body) > MAX_DISCUSSION_CHARS:
            out.append("[... more comments left out]")
            break
        used += len(body)
        user = item.get("user")
        author = item.get("author") or (user.get("login") if isinstance(user, dict) else None)
        out.append(_block("comment", body, author=author, role=item.get("role"),
                          path=item.get("path"), line=item.get("line")))
    return "\n".join(out)


# --------------------------------------------------------------------------- verification


class LLMVerifier:
    """Confirms or overturns the tracker's candidate decisions (implements ``Verifier``).

    ``stats`` counts what could not be used: unreachable model (``llm_error``), answers still
    invalid after the repair (``malformed``), bad items, verdicts about keys that were not
    asked (``unknown_key``) and verdicts whose quote is not in the code (``quote_not_in_code``).
    In all those cases the tracker's own decision stands.
    """

    def __init__(self, client: LLMClient, batch: int | None = None):
        self.client = client
        self.batch = max(batch or client.config.verify_batch, 1)
        self.system = _system_prompt("verify_system.txt")
        self.stats: Counter = Counter()

    async def verify(self, ctx: RoundContext,
                     candidates: list[tuple[Defect, Decision]]) -> tuple[list[Verdict], Usage]:
        usage = Usage()
        calls = self.plan(ctx, candidates)
        answers = await asyncio.gather(*(self.client.complete_json(messages, parse_verdicts)
                                         for messages, _ in calls))
        verdicts: list[Verdict] = []
        for (_, group), answer in zip(calls, answers):
            usage.add(answer.usage)
            self.stats.update(answer.dropped)
            if answer.value is None:
                continue  # the rules' decisions stand
            items, dropped = answer.value
            self.stats.update(dropped)
            for item in items:
                verdict = self._verdict(ctx, group.get(item["key"]), item)
                if verdict is not None:
                    verdicts.append(verdict)
        return verdicts, usage

    def plan(self, ctx: RoundContext,
             candidates: list[tuple[Defect, Decision]]) -> list[tuple[list[dict], dict]]:
        """The verification calls: up to ``batch`` defects each, within the token budget."""
        files = {fd.path: fd for fd in annotate_diff(ctx.round_diff)}
        budget = self.client.config.max_prompt_tokens - TOKEN_MARGIN
        fixed = self.client.count_text(self.system) + 50
        calls, blocks, group, used = [], [], {}, fixed
        for defect, decision in candidates:
            block = self.defect_block(ctx, defect, decision, files)
            tokens = self.client.count_text(block)
            if blocks and (len(blocks) >= self.batch or used + tokens > budget):
                calls.append((self._messages(blocks), group))
                blocks, group, used = [], {}, fixed
            blocks.append(block)
            group[defect.key] = (defect, decision)
            used += tokens
        if blocks:
            calls.append((self._messages(blocks), group))
        return calls

    def _messages(self, blocks: list[str]) -> list[dict]:
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": "\n\n".join(blocks) + "\n\nGive one verdict per "
                 "<defect> block above, as the JSON object only."}]

    def defect_block(self, ctx: RoundContext, defect: Defect, decision: Decision,
                     files: dict[str, FileDiff]) -> str:
        """Everything the verifier needs about one candidate, as delimited data."""
        parts = [_block("description", escape_data(_cap(defect.description, 1200)))]
        if defect.code:
            parts.append(_block("code_when_raised", escape_data(_cap(defect.code, 2000)),
                                location=defect.location()))
        path = decision.path or defect.path
        start = decision.line_start or defect.line_start
        end = decision.line_end or decision.line_start or defect.line_end or start
        if path and start:
            text = ctx.files.get(path)
            lo = max(start - CONTEXT_LINES, 1)
            hi = min(end + CONTEXT_LINES, len((text or "").splitlines()))
            shown = _numbered(text, lo, hi) if text is not None else ""
            parts.append(_block("current_code", escape_data(shown or "(this code no longer "
                                                            "exists at the new head)"),
                                location=_location(path, lo, max(hi, lo))))
            if path in files:
                near = files[path].around(start, end, NEAR_DIFF_LINES, MAX_VERIFY_DIFF_LINES)
                if near:
                    parts.append(_block("round_diff", escape_data(near), file=path))
        else:
            changed = ", ".join(sorted(files)[:20]) or "(none)"
            parts.append(_block("changed_files", escape_data(changed)))
        parts.append(_block("tracker_hint", escape_data(f"{decision.evidence}"),
                            rule=decision.rule, candidate_state=decision.state))
        for signal in _signals_for(ctx.signals, defect.key):
            parts.append(_block("claim", escape_data(
                "A person's statement. It is a claim, not evidence: check it against the code.\n"
                + _cap(signal.body, 800)), kind=signal.kind, author=signal.author))
        return _block("defect", "\n".join(parts), key=defect.key, state_before=defect.state,
                      type=defect.type)

    def _verdict(self, ctx: RoundContext, pair: tuple[Defect, Decision] | None,
                 item: dict) -> Verdict | None:
        if pair is None:
            self.stats["unknown_key"] += 1
            return None
        defect, decision = pair
        if item["quote"] and not _quote_found(ctx, decision.path or defect.path, item["quote"]):
            self.stats["quote_not_in_code"] += 1
            return None
        if item["resolved"]:
            state = State.RESOLVED
        else:
            state = State.REOPENED if decision.state is State.REOPENED else State.OPEN
        evidence = item["evidence"] or ("resolved" if item["resolved"] else "not resolved")
        if item["quote"]:
            evidence += f" (code: {' '.join(item['quote'].split())[:200]})"
        return Verdict(defect.key, state, evidence, decided_by=DecidedBy.LLM)


_CLAIMS = (SignalKind.AUTHOR_CLAIMS_FIXED, SignalKind.REVIEWER_DISPUTES,
           SignalKind.REVIEWER_ACCEPTS)


def _signals_for(signals: list[Signal], key: str) -> list[Signal]:
    return [s for s in signals if s.defect_key == key and s.kind in _CLAIMS][-3:]


_LINE_PREFIX = re.compile(r"^\s*L?\d+\s*\|\s?[+\- ]?\s?")


def _quote_found(ctx: RoundContext, path: str | None, quote: str) -> bool:
    """Whether every line of a verifier's quote stands in the file's current text or the diff."""
    haystack = " ".join(normalise((ctx.files.get(path) or "") if path else "") +
                        normalise(ctx.round_diff))
    haystack = " ".join(haystack.split())
    for line in quote.splitlines():
        wanted = " ".join(_LINE_PREFIX.sub("", line).split())
        if wanted and wanted not in haystack:
            return False
    return True


# --------------------------------------------------------------------------- assembly


def build_llm_engine(config: LLMConfig, static_checks: bool = True, *,
                     cache_dir: str | Path | None = None) -> Engine:
    """The engine with the LLM detector and verifier (and the static checks when asked)."""
    client = LLMClient(config, cache_dir=cache_dir)
    detectors = ([OfflineDetector()] if static_checks else []) + [LLMDetector(client)]
    return Engine(detectors, LLMVerifier(client))


# --------------------------------------------------------------------------- stateless baseline


def stateless_messages(pr: dict, rounds: list[dict], events: list[list[dict]],
                       t: int) -> list[dict]:
    """The paper's stateless prompt for round ``t``: the whole history in one prompt.

    ``rounds[i]`` has ``diff`` (base..head of round i+1) and ``files``; ``events[i]`` are the
    people's events after round i+1. Rounds 1..t's diffs and the events of rounds 1..t-1 go in.
    """
    parts = [
        _block("pr_title", escape_data(pr.get("title"))),
        _block("pr_body", escape_data(_cap(pr.get("body"), MAX_BODY_CHARS))),
    ]
    issues = pr.get("linked_issues") or []
    if issues:
        parts.append(_block("linked_issues", "\n".join(
            _block("issue", escape_data(_cap(i.get("body"), MAX_ISSUE_CHARS)),
                   number=i.get("number"), title=i.get("title")) for i in issues[:MAX_ISSUES])))
    for i in range(1, t + 1):
        diff = "\n".join(_block("round_diff", escape_data(fd.text()), file=fd.path)
                         for fd in annotate_diff(rounds[i - 1].get("diff") or ""))
        round_parts = [diff or "(empty diff)"]
        if i < t and i - 1 < len(events) and events[i - 1]:
            round_parts.append(_block("events", "\n".join(
                _block("event", escape_data(e.get("body")), id=e.get("id"), kind=e.get("kind"),
                       author=e.get("author"), role=e.get("role"), path=e.get("path"),
                       line=e.get("line"), in_reply_to=e.get("in_reply_to"),
                       state=e.get("state"))
                for e in events[i - 1])))
        parts.append(_block("round", "\n".join(round_parts), number=i))
    user = "\n".join(parts) + (f"\n\nReview round {t} (the latest) and answer with the JSON "
                               "object only.")
    return [{"role": "system", "content": _system_prompt("stateless_system.txt")},
            {"role": "user", "content": user}]


def parse_stateless(text: str) -> tuple[list[dict], Counter]:
    """Findings with a state (New/Open/Resolved/Reopened) from a stateless answer.

    Each item is a Finding's fields plus ``state``; unusable items are dropped and counted.
    Raises OutputError when the answer as a whole is unusable.
    """
    items = _list_field(load_json_object(text), "findings")
    out, dropped = [], Counter()
    for item in items:
        try:
            finding = finding_from_item(item)
            state = parse_state(str(item.get("state") or "New"))
        except (ItemError, ValueError):
            dropped["invalid_item"] += 1
            continue
        out.append({**finding.to_dict(), "state": str(state)})
    return out, dropped


async def review_stateless(client: LLMClient, pr: dict, rounds: list[dict],
                           events: list[list[dict]], t: int) -> JsonAnswer:
    """Ask the stateless baseline about round ``t``; ``value`` is ``(items, dropped)`` or None."""
    return await client.complete_json(stateless_messages(pr, rounds, events, t), parse_stateless)
