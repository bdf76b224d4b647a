"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and overhead benchmarks.

No LLM service is needed to exercise the LLM path: this server speaks just enough of the
OpenAI chat-completions API (``POST /v1/chat/completions``, also ``/chat/completions``) for
litellm to talk to it over real HTTP. Point litellm at it with::

    async with ScriptedLLM() as server:
        await litellm.acompletion(model="openai/scripted", api_base=server.url,
                                  api_key="sk-test", messages=[...])

(any name after ``openai/`` works; ``LLMConfig(model="openai/scripted", api_base=server.url,
api_key="sk-test")`` does the same for roundwise's client).

What it answers, in order of precedence:

1. the next queued ``Reply`` (``server.push("text")``, ``server.push(status=500)``,
   ``server.push("late", delay=2.0)`` to force a client timeout);
2. otherwise the ``responder`` callable given to the constructor, called with the request
   JSON and returning text (or a ``Reply``);
3. otherwise ``default_responder``: ``{"findings": []}`` for detection and stateless prompts,
   and a "resolved" verdict for every ``key="..."`` in a verification prompt, so the server
   doubles as an instant LLM when the bench measures the bot's own overhead.

``nitpick_responder`` is a deterministic noisy reviewer (findings on about one added line in
seven, mostly Minor), for measuring what later rounds add (``bench.studies.convergence``).

Every request is recorded (``server.requests``: parsed JSON bodies, ``server.bodies``: raw
text, ``server.headers``) so tests can assert on what was sent. The usage in responses is a
rough estimate (characters / 4).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from aiohttp import web


@dataclass
class Reply:
    """One scripted answer: message text, or an HTTP error (``status`` and ``body``)."""

    text: str | None = None
    status: int = 200
    body: dict | str | None = None
    delay: float = 0.0


Responder = Callable[[dict], "str | Reply"]

_KEY = re.compile(r'<defect key="([^"]+)"')


def message_text(request: dict) -> str:
    """All the text of a chat request's messages, joined."""
    parts = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):  # OpenAI content parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


def system_text(request: dict) -> str:
    """The text of the request's system messages."""
    return "\n".join(str(m.get("content") or "") for m in request.get("messages") or []
                     if m.get("role") == "system")


def default_responder(request: dict) -> str:
    """An instant, harmless answer: no findings; every verified defect resolved.

    Verification prompts are told apart by their system prompt ("defect verifier").
    """
    if "defect verifier" in system_text(request):
        user = message_text(request)
        verdicts = [{"key": key, "resolved": True, "evidence": "scripted verdict", "quote": ""}
                    for key in dict.fromkeys(_KEY.findall(user))]
        return json.dumps({"verdicts": verdicts})
    return json.dumps({"findings": []})


_DIFF_BLOCK = re.compile(r'<round_diff file="([^"]+)"[^>]*>\n(.*?)\n</round_diff>', re.DOTALL)
_ADDED = re.compile(r"^\s*(\d+) \| \+ (.*)$", re.MULTILINE)
_NITPICK_SEVERITY = ("Minor", "Minor", "Minor", "Minor", "Trivial", "Trivial", "Normal",
                     "Normal", "Major", "Blocker")


def nitpick_responder(request: dict) -> str:
    """A noisy reviewer, deterministic: about one added line in seven of every round diff it
    is shown gets a finding, most of them Minor or Trivial, one in five Major or worse (chosen
    by a hash of the path and the line's text, so the same line always gets the same answer).
    Verification is ``default_responder``'s. The bench measures with it what a chatty model
    posts round after round, and what ``converge`` holds back (``bench.studies.convergence``)."""
    import hashlib

    if "defect verifier" in system_text(request):
        return default_responder(request)
    findings = []
    for path, block in _DIFF_BLOCK.findall(message_text(request)):
        for line, text in _ADDED.findall(block):
            if not text.strip():
                continue
            h = int(hashlib.sha256(f"{path}\0{text.strip()}".encode()).hexdigest()[:8], 16)
            if h % 7:
                continue
            severity = _NITPICK_SEVERITY[(h // 7) % len(_NITPICK_SEVERITY)]
            findings.append({
                "path": path, "line_start": int(line), "line_end": int(line), "side": "RIGHT",
                "description": f"Nitpick {h % 9973}: `{text.strip()[:40]}` could be clearer.",
                "type": "E.3.1" if severity in ("Minor", "Trivial") else "F.2",
                "severity": severity, "confidence": 0.8})
    return json.dumps({"findings": findings})


class ScriptedLLM:
    """The server. Use ``async with ScriptedLLM() as server`` or ``await start()``/``stop()``."""

    def __init__(self, responder: Responder | None = None, *, host: str = "127.0.0.1"):
        self.responder = responder
        self.host = host
        self.queue: deque[Reply] = deque()
        self.requests: list[dict] = []
        self.bodies: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def url(self) -> str:
        """The base URL to give litellm as ``api_base``."""
        if self._port is None:
            raise RuntimeError("the scripted LLM server is not started")
        return f"http://{self.host}:{self._port}/v1"

    def push(self, text: str | None = None, *, status: int = 200, body: dict | str | None = None,
             delay: float = 0.0) -> ScriptedLLM:
        """Queue one answer; queued answers are used before the responder."""
        self.queue.append(Reply(text, status, body, delay))
        return self

    def clear(self) -> None:
        """Forget recorded requests (the queue is kept)."""
        self.requests.clear()
        self.bodies.clear()
        self.headers.clear()

    async def start(self) -> ScriptedLLM:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for path in ("/v1/chat/completions", "/chat/completions"):
            app.router.add_post(path, self._chat)
        self._runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True,
                                     shutdown_timeout=0.1, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    async def _chat(self, request: web.Request) -> web.Response:
        raw = await request.text()
        self.bodies.append(raw)
        self.headers.append(dict(request.headers))
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            return web.json_response({"error": {"message": "invalid JSON body"}}, status=400)
        self.requests.append(data)
        reply = self._next(data)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            body = reply.body if reply.body is not None else {
                "error": {"message": f"scripted error {reply.status}", "type": "server_error"}}
            if isinstance(body, str):
                return web.Response(text=body, status=reply.status)
            return web.json_response(body, status=reply.status)
        return web.json_response(self._completion(data, reply.text or ""))

    def _next(self, data: dict) -> Reply:
        if self.queue:
            return self.queue.popleft()
        answer = (self.responder or default_responder)(data)
        return answer if isinstance(answer, Reply) else Reply(str(answer))

    def _completion(self, data: dict, text: str) -> dict:
        prompt = max(len(message_text(data)) // 4, 1)
        completion = max(len(text) // 4, 1)
        return {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": data.get("model") or "scripted",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }
