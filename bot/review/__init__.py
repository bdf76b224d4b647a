"""The review engine: LLM and offline reviewers that turn one round into findings and state decisions."""

__all__ = ["engine", "llm", "llm_config", "offline", "patch", "paths", "recheck"]
