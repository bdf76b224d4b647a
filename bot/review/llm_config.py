"""The one LLM configuration: ``LLMConfig``, read once from ``ROUNDWISE_*``, and litellm's setup.

The server (``Config.llm``), ``roundwise review``, the bench and the judge all take an
``LLMConfig``; nothing else reads the LLM variables. The module does not import litellm, so
``bot.config.env`` can parse and check the settings without paying for litellm's import.

``configure_litellm()`` is called once by each composition root (the ``roundwise`` command, the
bench scripts, the test suite) before anything imports litellm: machines running roundwise may
be offline, so litellm must use its bundled price list instead of downloading one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["LLM_SETTINGS", "LLMConfig", "configure_litellm", "quiet_litellm"]

#: every environment variable this module reads, its meaning and default (docs/configuration.md)
LLM_SETTINGS: dict[str, tuple[str, str]] = {
    "ROUNDWISE_MODEL": ("a litellm model string; unset = offline reviewer", "unset"),
    "ROUNDWISE_API_BASE": ("base URL for the model's API (OpenAI-compatible servers)", "unset"),
    "ROUNDWISE_API_KEY": ("key for that server (providers' keys: their own variables)",
                          "unset"),
    "ROUNDWISE_FALLBACK_MODEL": ("a second model tried when the first keeps failing", "unset"),
    "ROUNDWISE_LLM_TIMEOUT": ("seconds per LLM call", "60"),
    "ROUNDWISE_MAX_PROMPT_TOKENS": ("prompt budget per call; larger diffs are split by file",
                                    "24000"),
    "ROUNDWISE_LLM_CACHE": ("folder for an on-disk cache of LLM answers", "unset"),
    "ROUNDWISE_VERIFY_BELOW": (("the model verifies only the tracker's decisions less sure "
                                "than this (calibrated confidence, 0..1; above 1 = all of "
                                "them; default: the unsure ones)"), "0.75"),
}


def configure_litellm() -> None:
    """Set litellm up for roundwise; call once at start, before litellm is imported."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def quiet_litellm():
    """litellm, imported with its debug output off: it prints banners to stdout ("Provider
    List: ..." in red, for a model it does not know) ahead of roundwise's own one-line
    messages."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@dataclass(frozen=True)
class LLMConfig:
    """How to reach the model. ``api_key`` is never logged and never enters a prompt.

    ``api_base`` and ``api_key`` belong to the primary model; the fallback model gets them too
    only when it has the same litellm provider prefix (``openai/...``), so a fallback to another
    provider uses that provider's own endpoint and key variable.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    fallback_model: str | None = None
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 1.0
    max_prompt_tokens: int = 24000
    temperature: float = 0.0
    json_mode: bool = True  # ask for response_format={"type": "json_object"}
    max_calls: int = 4  # detection calls per round at most (the diff is split by file)
    verify_batch: int = 5  # tracked defects per verification call at most
    min_confidence: float = 0.5  # findings the model is less sure of are dropped
    # Only the tracker's candidate decisions whose calibrated confidence is below this go to
    # the verifier: the unsure ones (tracker.calibration.SURE); a model may not overturn a
    # sure, evidence-backed ruling.
    verify_below: float = 0.75
    concurrency: int = 4
    cache_dir: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str],
                 **overrides: Any) -> LLMConfig | None:
        """The configuration from ``ROUNDWISE_*`` variables, then ``overrides`` (flags).

        None when no model is set by either. Overrides that are None are ignored, so
        command-line flags that were not given leave the environment's value. Raises
        ValueError naming the variable when a number is invalid.

        The provider's key is read by litellm from the provider's usual variable
        (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``...); ``ROUNDWISE_API_KEY`` is passed as the
        key explicitly, for OpenAI-compatible servers.
        """
        values: dict[str, Any] = {
            "model": (environ.get("ROUNDWISE_MODEL") or "").strip() or None,
            "api_base": environ.get("ROUNDWISE_API_BASE") or None,
            "api_key": environ.get("ROUNDWISE_API_KEY") or None,
            "fallback_model": environ.get("ROUNDWISE_FALLBACK_MODEL") or None,
            "cache_dir": environ.get("ROUNDWISE_LLM_CACHE") or None,
            "timeout": _env_number(environ, "ROUNDWISE_LLM_TIMEOUT", float),
            "max_prompt_tokens": _env_number(environ, "ROUNDWISE_MAX_PROMPT_TOKENS", int),
            "verify_below": _env_number(environ, "ROUNDWISE_VERIFY_BELOW", float),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values["model"]:
            return None
        return cls(**{k: v for k, v in values.items() if v is not None})

    def with_(self, **changes: Any) -> LLMConfig:
        """A copy with ``changes`` (None values ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _env_number(environ: Mapping[str, str], name: str, kind: type) -> Any:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name}={raw!r} must be {what}") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be greater than zero")
    return value
