"""``roundwise bench run``: replay tasks through the real bot, score them, write the reports.

A run loads ``mcr-task/1`` files and folders (and AACR-Bench folders through ``bench.tasks.aacr``),
plays every task through one ``Harness`` (fake GitHub + real server on loopback; tasks run
concurrently, each on its own repository), writes each finished task's records to
``OUT/tasks/<task_id>.jsonl`` (so ``--resume`` skips them), then scores all records and writes
``summary.json``, ``results.jsonl``, ``report.md`` and ``report.html`` into ``OUT``; the
summary's ``github`` block holds the bot's GitHub requests per round (each task replays on its
own installation of the App, with its own rate-limit budget).

LLM answers are cached on disk (``--cache``, default ``OUT/llm-cache``), so running the same
tasks again costs nothing; the offline reviewer and the offline judge need no network at all.
With ``--baseline stateless`` the bot is not used: the same model answers each round from one
prompt holding the whole history (the paper's pure-LLM protocol), for comparison.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bot.review.llm_config import LLMConfig

from .progress import Progress
from .replay import replay_for
from .replay.posted import write as write_posted
from .replay.rounds import BotError
from .report import write_reports
from .score.judge import LLMJudge, OfflineJudge
from .score.scoring import ascore
from .score.tracking import naive_decide, replay_tasks, score_replays
from .tasks.aacr import is_aacr_folder, load_aacr
from .tasks.mcr import Task, TaskError, load_tasks

log = logging.getLogger(__name__)


@dataclass
class RunOptions:
    tasks: list[str]
    out: Path
    model: str | None = None
    api_base: str | None = None
    judge: str = "offline"
    concurrency: int = 2
    baseline: str | None = None
    limit: int | None = None
    resume: bool = False
    cache: Path | None = None
    tolerance: int = 1
    progress: bool = True
    skipped: list[str] = field(default_factory=list)
    repo_settings: str | None = None  # .github/roundwise.yml for every task's repository
    forge: str = "github"  # a host of bench.replay.REPLAYS: "gitlab" is the fake GitLab
    timeout: float | None = None  # seconds per model call (else ROUNDWISE_LLM_TIMEOUT)
    round_timeout: float = 300.0  # seconds the bench waits for one round


def gather_tasks(paths: list[str], limit: int | None = None) -> tuple[list[Task], list[str]]:
    """Every task under ``paths`` (task files, folders of them, AACR folders), sorted by id;
    one message per file or PR that had to be skipped."""
    tasks: list[Task] = []
    skipped: list[str] = []
    plain = []
    for path in paths:
        if Path(path).is_dir() and is_aacr_folder(path):
            found, errors = load_aacr(path)
            tasks.extend(found)
            skipped.extend(errors)
        else:
            plain.append(path)
    if plain:
        found, errors = load_tasks(plain)
        tasks.extend(found)
        skipped.extend(errors)
    seen: dict[str, Task] = {}
    for task in tasks:
        if task.task_id in seen:
            skipped.append(f"{task.path}: task id {task.task_id} already loaded from "
                           f"{seen[task.task_id].path}")
            continue
        seen[task.task_id] = task
    ordered = sorted(seen.values(), key=lambda t: t.task_id)
    return (ordered[:limit] if limit else ordered), skipped


def _task_file(out: Path, task_id: str) -> Path:
    return out / "tasks" / f"{task_id}.jsonl"


def _posted_file(out: Path, task_id: str) -> Path:
    return out / "tasks" / f"{task_id}.posted.jsonl"


def _read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _play_all(opts: RunOptions, tasks: list[Task], errors: dict[str, str]) -> None:
    work = opts.out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cache = opts.cache or opts.out / "llm-cache"
    harness_class, replay = replay_for(opts.forge)  # bench.replay.REPLAYS
    async with harness_class(work / "ledger.db", model=opts.model, api_base=opts.api_base,
                       llm_cache=str(cache) if opts.model else None,
                       workers=max(opts.concurrency, 1),
                       repo_settings=opts.repo_settings, llm_timeout=opts.timeout,
                       timeout=opts.round_timeout) as harness:
        gate = asyncio.Semaphore(max(opts.concurrency, 1))
        progress = Progress({t.task_id: len(t.rounds) for t in tasks}, enabled=opts.progress)

        async def play(task: Task) -> None:
            async with gate:
                played = []

                def on_round(number: int) -> None:
                    played.append(number)
                    progress.round_done(task.task_id, number)

                posted: list[dict] = []
                try:
                    records = await replay(harness, task, on_round, posted)
                except (BotError, TaskError, ValueError, KeyError) as exc:
                    errors[task.task_id] = f"{type(exc).__name__}: {exc}"
                    log.warning("task %s failed: %s", task.task_id, exc)
                else:
                    path = _task_file(opts.out, task.task_id)
                    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n"
                                            for r in records))
                    _posted_file(opts.out, task.task_id).write_text(
                        "".join(json.dumps(r, sort_keys=True) + "\n" for r in posted))
                progress.task_done(task.task_id, len(played), errors.get(task.task_id))

        await asyncio.gather(*(play(t) for t in tasks))
        progress.close()


async def _stateless_all(opts: RunOptions, tasks: list[Task], errors: dict[str, str]) -> None:
    from .score.stateless import stateless_records

    progress = Progress({t.task_id: len(t.rounds) for t in tasks}, enabled=opts.progress)
    for task in tasks:
        try:
            records = await stateless_records(task, opts.model, api_base=opts.api_base,
                                              cache_dir=opts.cache or opts.out / "llm-cache")
        except (OSError, ValueError, RuntimeError) as exc:  # this task fails, not the run
            errors[task.task_id] = f"{type(exc).__name__}: {exc}"
            progress.task_done(task.task_id, 0, errors[task.task_id])
            continue
        for record in records:
            progress.round_done(task.task_id, record["round"])
        progress.task_done(task.task_id, len(records))
        _task_file(opts.out, task.task_id).write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    progress.close()


def provenance_of_run() -> dict:
    """roundwise's version, the git commit of its source (None outside a checkout) and the
    date, for the reports' header."""
    try:
        version = importlib.metadata.version("roundwise")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    try:
        done = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse",
                               "--short=12", "HEAD"], capture_output=True, text=True, timeout=10,
                              check=False)
        commit = done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"version": version, "commit": commit or None,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}


def make_judge(opts: RunOptions):
    if opts.judge == "offline":
        return OfflineJudge()
    config = LLMConfig.from_env(os.environ, model=opts.judge, api_base=opts.api_base)
    return LLMJudge.from_config(config, cache_dir=str(opts.cache or opts.out / "llm-cache"))


def naive_tracking(tasks: list) -> dict:
    """The trivial tracker's figures on the same tasks (``bench.score.tracking.naive_decide``),
    replayed through the tracker alone, so every run shows what tracking adds over it."""
    scores = score_replays(replay_tasks([t for t in tasks if t.multi_round],
                                        decide=naive_decide))
    scores["name"] = "naive: Open while the commented lines' text still stands"
    return scores


def github_usage(records: list[dict]) -> dict:
    """The bot's GitHub requests per round over the replayed rounds (``bench.replay.github`` counts
    them on the fake, per task installation): totals, mean, median, p95 and max per round of
    every request, of those charged to the rate limit, and the share answered 304."""
    rows = [r["github"] for r in records if isinstance(r.get("github"), dict)]
    out: dict = {"rounds": len(rows)}
    for name in ("requests", "charged", "not_modified", "app_jwt"):
        values = sorted(row.get(name, 0) for row in rows)
        out[name] = {"total": sum(values),
                     "per_round_mean": round(sum(values) / len(values), 2) if values else 0.0,
                     "per_round_median": values[len(values) // 2] if values else 0,
                     "per_round_p95": values[min(len(values) - 1, int(len(values) * 0.95))]
                     if values else 0,
                     "per_round_max": values[-1] if values else 0}
    total = out["requests"]["total"]
    out["not_modified_share"] = round(out["not_modified"]["total"] / total, 4) if total else 0.0
    return out


def llm_usage(records: list[dict]) -> dict:
    """Model calls over the run, the calls that got no answer, and the model's answers (or
    items of them) that were dropped, by reason."""
    dropped: dict[str, int] = {}
    for record in records:
        for reason, n in (record.get("dropped") or {}).items():
            dropped[reason] = dropped.get(reason, 0) + int(n)
    return {"calls": sum(int(r.get("llm_calls") or 0) for r in records),
            "failed": sum(int(r.get("llm_failed") or 0) for r in records),
            "dropped": dict(sorted(dropped.items()))}


async def run(opts: RunOptions) -> dict:
    """Do a whole run; returns the summary (also written to ``OUT/summary.json``)."""
    if opts.baseline and opts.baseline != "stateless":
        raise ValueError(f"unknown baseline {opts.baseline!r}; the only one is 'stateless'")
    if opts.baseline and not opts.model:
        raise ValueError("--baseline stateless needs --model (the same model as the run)")
    tasks, skipped = gather_tasks(opts.tasks, opts.limit)
    if not tasks:
        why = f": {skipped[0]}" + (f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else "") \
            if skipped else ""
        raise TaskError("no valid tasks found in " + ", ".join(opts.tasks) + why)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "tasks").mkdir(exist_ok=True)
    todo = [t for t in tasks if not (opts.resume and _task_file(opts.out, t.task_id).exists())]
    errors: dict[str, str] = {}
    started = time.monotonic()
    if todo:
        if opts.baseline:
            await _stateless_all(opts, todo, errors)
        else:
            await _play_all(opts, todo, errors)
    records = []
    for task in tasks:
        path = _task_file(opts.out, task.task_id)
        if path.exists():
            records.extend(_read_records(path))
    summary = await ascore(tasks, records, make_judge(opts), opts.tolerance)
    summary["tracking"]["baseline"] = naive_tracking(tasks)
    details = {(d["task"], d["round"]): d for d in summary.pop("records")}
    with (opts.out / "results.jsonl").open("w") as fh:
        for record in sorted(records, key=lambda r: (r["task"], r["round"])):
            extra = details.get((record["task"], record["round"]), {})
            fh.write(json.dumps({**record, "matches": extra.get("matches", []),
                                 "due": extra.get("due", [])}, sort_keys=True) + "\n")
    summary["github"] = github_usage(records)
    summary["llm"] = llm_usage(records)
    summary["run"] = {
        **provenance_of_run(),
        "model": opts.model or "offline", "baseline": opts.baseline, "judge": opts.judge,
        "tasks_requested": len(tasks), "tasks_failed": dict(sorted(errors.items())),
        "skipped_inputs": skipped, "wall_seconds": round(time.monotonic() - started, 2),
    }
    (opts.out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    posted = {t.task_id: _read_records(_posted_file(opts.out, t.task_id)) for t in tasks
              if _posted_file(opts.out, t.task_id).exists()}
    titles = {t.task_id: f"{t.pr.get('title') or t.task_id} ({t.task_id})" for t in tasks}
    write_reports(summary, opts.out, conversations=write_posted(opts.out, posted, titles))
    return summary
