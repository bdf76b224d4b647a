"""The review engine: LLM and offline reviewers that turn one round into findings and state decisions."""
