"""What a replay is worth: the MCR-Bench scoring of each round and the figures beside it.

``scoring`` scores a run's records with ``metrics`` and a ``judge`` (does a finding name a
defect card?), splitting what the bot found itself from what people told it (``provenance``);
``tracking`` replays the human review through the tracker alone and scores its states
(``card_requests``: which request of a comment a defect card is, for both);
``stateless`` is the paper's pure-LLM baseline; ``context`` measures what the LLM's prompt shows.
"""

__all__ = ["card_requests", "context", "judge", "metrics", "provenance", "risk", "scoring",
           "stateless", "tracking"]
