"""The ``roundwise bench export`` and ``roundwise bench build`` subcommands (see ``bench.export``)."""

from __future__ import annotations

import argparse
import os

__all__ = ["add_commands"]


def add_commands(bsub: argparse._SubParsersAction) -> None:
    export = bsub.add_parser(
        "export", help="write each finished PR of a ledger as an mcr-task/1 task",
        description="Write every merged or closed pull request of the ledger as an mcr-task/1 "
                    "file: rounds with shas and people's events, defect cards with states "
                    "labelled only where people's actions imply them (label_sources), and the "
                    "bot's own decisions for comparison.",
    )
    export.add_argument("--ledger", default=os.environ.get("ROUNDWISE_DB") or "roundwise.db",
                        help="the ledger file (default $ROUNDWISE_DB or roundwise.db)")
    export.add_argument("--repo", help="only this repository (owner/name)")
    export.add_argument("--pr", type=int, help="only this pull request number")
    export.add_argument("--out", required=True, help="folder for the task files")
    export.add_argument("--git-dir", help="a local clone: fill each round's diff, files and "
                                          "commits so the task is self-contained")
    export.add_argument("--include-open", action="store_true",
                        help="also export pull requests still open (e.g. a bench run's ledger)")
    export.set_defaults(func=cmd_export)
    build = bsub.add_parser(
        "build", help="fill exported tasks' diffs and files from a local clone",
        description="Fill every mcr-task/1 file under --tasks with each round's diff, changed "
                    "files and commits from the clone at --git-dir, in place.",
    )
    build.add_argument("--tasks", required=True, help="folder of task files")
    build.add_argument("--git-dir", required=True, help="a local clone holding the shas")
    build.set_defaults(func=cmd_build)


def cmd_export(args) -> int:
    from .export import export_tasks

    if not os.path.exists(args.ledger):
        print(f"no ledger at {args.ledger}")
        return 2
    login = os.environ.get("ROUNDWISE_BOT_LOGIN") or "roundwise[bot]"
    base = login.removesuffix("[bot]")
    paths = export_tasks(args.ledger, args.out, repo=args.repo, number=args.pr,
                         include_open=args.include_open, git_dir=args.git_dir,
                         bot_logins={login, base, f"{base}[bot]"})
    print(f"{len(paths)} task(s) written to {args.out}")
    return 0


def cmd_build(args) -> int:
    from .export import build_tasks

    paths = build_tasks(args.tasks, args.git_dir)
    print(f"{len(paths)} task(s) filled from {args.git_dir}")
    return 0
