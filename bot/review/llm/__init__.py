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

The package follows those steps: ``prompts`` (data blocks and caps), ``diffs`` (annotated
diffs), ``parse`` (answers), ``client`` (litellm), ``detect`` and ``verify``; the settings are
``bot.review.llm_config`` (no litellm import, so the server's configuration can be checked
without it). The paper's *stateless* baseline lives in the bench (``bench.score.stateless``).
"""

from __future__ import annotations

from pathlib import Path

from ..engine import Engine, OfflineDetector
from ..llm_config import LLMConfig
from .client import Completion, JsonAnswer, LLMClient, LLMError
from .detect import LLMDetector
from .diffs import FileDiff, Hunk, annotate_diff, authored_changes, file_priority
from .parse import OutputError, finding_from_item, parse_findings, parse_verdicts
from .prompts import escape_data, prompt_text
from .verify import LLMVerifier
from .walkthrough import LLMWalkthrough

__all__ = [
    "Completion", "FileDiff", "Hunk", "JsonAnswer", "LLMClient", "LLMConfig", "LLMDetector",
    "LLMError", "LLMVerifier", "LLMWalkthrough", "OutputError", "annotate_diff", "authored_changes",
    "build_llm_engine", "client", "detect", "diffs", "escape_data", "file_priority",
    "finding_from_item", "fixes", "parse", "parse_findings", "parse_verdicts", "prompt_text", "prompts",
    "verify", "walkthrough",
]


def build_llm_engine(config: LLMConfig, static_checks: bool = True, *,
                     cache_dir: str | Path | None = None) -> Engine:
    """The engine with the LLM detector and verifier (and the static checks when asked)."""
    client = LLMClient(config, cache_dir=cache_dir)
    detectors = ([OfflineDetector()] if static_checks else []) + [LLMDetector(client)]
    return Engine(detectors, LLMVerifier(client), walkthrough=LLMWalkthrough(client))
