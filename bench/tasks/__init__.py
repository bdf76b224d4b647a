"""The bench's input: ``mcr-task/1`` tasks, read and made.

``mcr`` loads the task files (one multi-round review task each) and ``diffs`` builds and undoes
the unified diffs they carry; ``aacr`` converts AACR-Bench; ``export`` turns a ledger's
reviewed pull requests into tasks and ``mine`` any repository's PR history (their subcommands
are ``export_cli``'s).
"""

__all__ = ["aacr", "diffs", "export", "export_cli", "mcr", "mine"]
