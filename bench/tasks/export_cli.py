"""The ``roundwise bench export``, ``bench build`` and ``bench mine`` subcommands.

See ``bench.tasks.export`` (a ledger's PRs as tasks) and ``bench.tasks.mine`` (any repository's PR
history as tasks, through the GitHub API).
"""

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
    mine = bsub.add_parser(
        "mine", help="build tasks from any repository's PR history through the GitHub API",
        description="Read each finished pull request (REST: commits, reviews, review comments; "
                    "GraphQL: review threads) and write an mcr-task/1 file: rounds from the "
                    "reviewed heads, defect cards from review threads, weak labels from thread "
                    "resolution and replies. Resumable; PRs skipped are listed with the reason "
                    "in OUT/mine-skipped.json. Authenticates with GITHUB_TOKEN (a personal "
                    "access token), or as the App's installation with --installation.",
    )
    mine.add_argument("--repo", required=True, help="owner/name")
    which = mine.add_mutually_exclusive_group()
    which.add_argument("--prs", help="a PR number or an inclusive range, e.g. 100-200")
    which.add_argument("--since", help="every PR created on or after this date (YYYY-MM-DD)")
    mine.add_argument("--out", required=True, help="folder for the task files")
    mine.add_argument("--installation", type=int,
                      help="read as this App installation (GITHUB_APP_ID and the App's key "
                           "from the environment) instead of GITHUB_TOKEN")
    mine.add_argument("--page-size", type=int, default=100, help="items per API page")
    mine.add_argument("--quiet", action="store_true", help="no progress bar")
    mine.set_defaults(func=cmd_mine)


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


def cmd_mine(args) -> int:
    import asyncio

    key = os.environ.get("GITHUB_PRIVATE_KEY")
    if not key and os.environ.get("GITHUB_PRIVATE_KEY_PATH"):
        with open(os.environ["GITHUB_PRIVATE_KEY_PATH"]) as fh:
            key = fh.read()
    return asyncio.run(_mine(args, key))


async def _mine(args, key: str | None) -> int:
    import aiohttp

    from bot.github.client import GitHubApp

    from .mine import Miner, TokenApp, parse_prs

    api_url = os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    async with aiohttp.ClientSession() as session:
        if args.installation is not None:
            if not os.environ.get("GITHUB_APP_ID") or not key:
                print("--installation needs GITHUB_APP_ID and GITHUB_PRIVATE_KEY(_PATH)")
                return 2
            app = GitHubApp(session, os.environ["GITHUB_APP_ID"], key, api_url)
            client = app.repo(args.installation, args.repo)
        else:
            token = os.environ.get("GITHUB_TOKEN")
            if not token:
                print("set GITHUB_TOKEN (a token that can read the repository), or use "
                      "--installation")
                return 2
            client = TokenApp(session, token, api_url).repo(0, args.repo)
        miner = Miner(client, args.out, page_size=args.page_size, progress=not args.quiet)
        numbers = await miner.numbers(parse_prs(args.prs) if args.prs else None, args.since)
        result = await miner.run(numbers)
    print(f"{len(result['written'])} task(s) written to {args.out}, "
          f"{len(result['resumed'])} already done")
    for number, reason in sorted(result["skipped"].items(), key=lambda kv: int(kv[0])):
        print(f"skipped #{number}: {reason}")
    return 0
