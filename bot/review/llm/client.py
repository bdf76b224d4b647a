"""``LLMClient``: chat completions through litellm with retries, a fallback model, a concurrency
limit, token and cost accounting and an optional on-disk answer cache. The one place litellm is
called (the reviewer, the bench's stateless baseline and its judge all use it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import litellm

from ...observe import metrics
from ..engine import Usage
from ..llm_config import LLMConfig
from .parse import OutputError
from .prompts import (
    MAX_OUTPUT_ECHO_CHARS,
    prompt_text,
)

log = logging.getLogger(__name__)

litellm.suppress_debug_info = True

class LLMError(RuntimeError):
    """The model could not be reached (after retries and the fallback model).

    ``transient`` when the last failure was one a later try may not meet (a timeout, a lost
    connection, a 5xx or 429), not a request the server refuses."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


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
    transient: bool = False  # no answer, for a reason a later try may not meet


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

    async def complete(self, messages: list[dict], *, json_mode: bool | None = None,
                       retries: int | None = None) -> Completion:
        """The model's answer to ``messages``; LLMError when no model could give one.

        ``json_mode`` (default: the configuration's) asks the server for a JSON object
        (``response_format``); a caller that wants prose must say False, since servers that
        honour JSON mode answer nothing else.
        """
        messages = self._redact(messages)
        json_mode = self.config.json_mode if json_mode is None else json_mode
        key = self._cache_key(messages, json_mode)
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
                completion = await self._with_retries(model, messages, json_mode, retries)
            except Exception as exc:  # noqa: BLE001 - any failure moves on to the fallback
                last = exc
                continue
            self._cache_put(key, completion.text)
            return completion
        self.stats["failures"] += 1
        metrics.LLM_FAILURES.labels(error=type(last).__name__).inc()
        raise LLMError(f"no answer from {', '.join(models)}: {type(last).__name__}: "
                       f"{str(last)[:200]}", transient=last is not None and _retryable(last))

    async def _with_retries(self, model: str, messages: list[dict], json_mode: bool,
                            retries: int | None = None) -> Completion:
        retries = self.config.retries if retries is None else retries
        attempt = 0
        while True:
            try:
                async with self._limit():
                    return await self._call(model, messages, json_mode)
            except Exception as exc:
                if not _retryable(exc) or attempt >= retries:
                    raise
                self.stats["retries"] += 1
                delay = self.config.backoff * (2 ** attempt)
                log.info("LLM %s: %s, retry %d in %.2fs", model, type(exc).__name__,
                         attempt + 1, delay)
                attempt += 1
                await asyncio.sleep(delay)

    async def _call(self, model: str, messages: list[dict], json_mode: bool) -> Completion:
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
        if json_mode:
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

    async def complete_json(self, messages: list[dict], parse: Callable[[str], Any], *,
                            retries: int | None = None) -> JsonAnswer:
        """Ask, parse with ``parse`` (raising OutputError when invalid), repair exactly once.

        The answer's value is None when the model could not be reached (``llm_error``) or its
        answer stayed invalid after the repair (``malformed``).
        """
        answer = JsonAnswer(None)
        try:
            first = await self.complete(messages, retries=retries)
        except LLMError as exc:
            log.warning("%s", exc)
            answer.dropped["llm_error"] += 1
            answer.usage.failed += 1
            answer.transient = exc.transient
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

    async def all_json(self, calls: list[list[dict]],
                       parse: Callable[[str], Any]) -> list[JsonAnswer]:
        """``complete_json`` for every call at once; the calls that got no answer are asked
        once more after the others finished (one at a time, one attempt each), so a model
        that was only busy or slow for a moment still answers the round."""
        answers = list(await asyncio.gather(*(self.complete_json(m, parse) for m in calls)))
        for i, messages in enumerate(calls):
            if not answers[i].transient:
                continue
            self.stats["retried_later"] += 1
            log.warning("LLM call %d of %d got no answer; asking once more", i + 1, len(calls))
            answers[i] = await self.complete_json(messages, parse, retries=0)
        return answers

    # -- hygiene and cache

    def _redact(self, messages: list[dict]) -> list[dict]:
        """Belt and braces: the configured key never leaves in a message, whatever happened."""
        key = self.config.api_key
        if not key or len(key) < 8:
            return messages
        return [{**m, "content": str(m.get("content") or "").replace(key, "[redacted]")}
                for m in messages]

    def _cache_key(self, messages: list[dict], json_mode: bool = True) -> str:
        asked = {"model": self.config.model, "messages": messages}
        if not json_mode:  # a prose answer is another answer (JSON-mode keys stay as they were)
            asked["json_mode"] = False
        blob = json.dumps(asked, sort_keys=True)
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
