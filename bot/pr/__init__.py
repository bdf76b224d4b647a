"""The pull request face: everything the bot shows on a pull request, from the ledger's state.

``render`` (inline comments, thread replies, hidden markers), ``summary`` (the sticky summary
comment), ``overview`` (the changed files at a glance, at the summary's top), ``quiet`` (people's
text quoted without pinging anyone), ``checks`` (the merge gate's check run) and ``unreviewed``
(what the summary and the check run say of the files a round could not review). The round
(``bot.round``) posts them, and keeps them in step between rounds (``bot.round.surfaces``).

Nothing is imported here: the round's publish step needs ``render`` and ``summary`` without the
check run's imports.
"""

__all__ = ["checks", "overview", "quiet", "render", "summary", "unreviewed"]
