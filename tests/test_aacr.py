"""The AACR-Bench adapter: a real tiny git repository converted end to end, and the raw sample
lined up against the converted aacr-dev tasks."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import unidiff

from bench.tasks.aacr import (
    CATEGORY_TYPES,
    category_type,
    convert,
    is_aacr_folder,
    language_folder,
    load_aacr,
    normalise_language,
    task_skeleton,
)
from bench.tasks.mcr import load_task, parse_task

from .conftest import AACR_DEV, SHARED_DATA

AACR_RAW = SHARED_DATA / "aacr-raw-sample"
URL = "https://github.com/o/r/pull/5"

KEEP_BASE = "".join(f"line {i}\n" for i in range(1, 21))
KEEP_HEAD = KEEP_BASE.replace("line 10\n", "line ten\nline ten and a half\n")
ADDED = "def added():\n    return 42\n"
OLD_NAME = "".join(f"row {i}\n" for i in range(1, 31))
RENAMED = OLD_NAME.replace("row 15\n", "row fifteen\n")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, check=True)
    return done.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str | bytes | None]) -> str:
    for path, content in files.items():
        target = repo / path
        if content is None:
            git(repo, "rm", "-q", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8"))
        git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def pr_repo(tmp_path_factory) -> dict:
    """main: root commit, then a later commit (the PR's source); feature: two commits."""
    repo = tmp_path_factory.mktemp("checkout") / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    fork = commit(repo, "initial", {
        "keep.py": KEEP_BASE,
        "gone.txt": "to be deleted\n",
        "img.png": PNG,
        "latin.txt": "caf\xe9\n".encode("latin-1"),
        "old_name.txt": OLD_NAME,
    })
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "Add a module and drop gone.txt\n\nlonger body", {
        "pkg/added.py": ADDED,
        "gone.txt": None,
        "img.png": PNG + b"\x00more",
    })
    git(repo, "mv", "old_name.txt", "new_name.txt")
    head = commit(repo, "Edit keep.py", {
        "keep.py": KEEP_HEAD,
        "latin.txt": "caf\xe9 cr\xe8me\n".encode("latin-1"),
        "new_name.txt": RENAMED,
    })
    git(repo, "checkout", "-q", "main")
    source = commit(repo, "Unrelated work on main", {"other.md": "hello\n"})
    commit(repo, "Add a module and edit keep.py (#5)", {"squashed.md": "x\n"})
    return {"repo": repo, "fork": fork, "source": source, "head": head}


def comment(**fields) -> dict:
    base = {"is_ai_comment": False, "note": "note", "path": "keep.py", "side": "right",
            "source_model": "", "from_line": 10, "to_line": 11,
            "category": "Code Defect", "context": "Diff Level"}
    return {**base, **fields}


def entry(url: str, source: str, target: str, comments: list[dict], **extra) -> dict:
    return {"change_line_count": 7, "project_main_language": "python",
            "source_commit": source, "target_commit": target, "githubPrUrl": url,
            "comments": comments, "category": "Bug Fix", **extra}


@pytest.fixture(scope="module")
def samples(tmp_path_factory, pr_repo) -> dict:
    folder = tmp_path_factory.mktemp("aacr")
    src, head = pr_repo["source"], pr_repo["head"]
    positives = [
        entry(URL, src, head, [
            comment(note="`line ten` is off by one.", from_line=10, to_line=11),
            comment(note="Name it better.", path="pkg/added.py", from_line=1, to_line=1,
                    category="Maintainability and Readability", context="File Level",
                    is_ai_comment=True, source_model="GPT-5.2"),
            comment(note="Slow.", path="pkg/added.py", from_line=2, to_line=1,
                    category="Performance", context="Repo Level"),
            comment(note="Leaks a secret.", path="new_name.txt", from_line=15, to_line=15,
                    category="Security Vulnerability"),
        ]),
        entry("https://github.com/o/missing/pull/1", src, head, [comment()]),
        entry("https://github.com/o/r/pull/6", src, "f" * 40, [comment()]),
        {"githubPrUrl": "not a url", "comments": []},
        entry("https://github.com/o/r/pull/7", src, head, [comment(path="")]),
    ]
    negatives = [
        entry(URL, src, head, [comment(note="Rejected: fine as is.", from_line=3, to_line=4,
                                       is_ai_comment=True, source_model="GLM-4.7")]),
        entry("https://github.com/o/r/pull/8", src, head, [comment(note="Only negative.")]),
    ]
    pos, neg = folder / "positive_samples.json", folder / "negative_samples.json"
    pos.write_text(json.dumps(positives), encoding="utf-8")
    neg.write_text(json.dumps(negatives), encoding="utf-8")
    return {"folder": folder, "positive": pos, "negative": neg}


@pytest.fixture(scope="module")
def converted(samples, pr_repo, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    tasks, errors = convert(samples["positive"], samples["negative"],
                            {"o/r": pr_repo["repo"]}, out_dir=out)
    return {"tasks": {t["task_id"]: t for t in tasks}, "errors": errors, "out": out}


def test_bad_prs_are_reported_not_fatal(converted):
    assert sorted(converted["tasks"]) == ["aacr__o__r-5", "aacr__o__r-8"]
    errors = converted["errors"]
    assert len(errors) == 4
    assert any("o/missing" in e and "no checkout" in e for e in errors)
    assert any("pull/6" in e and "target_commit" in e and "not found" in e for e in errors)
    assert any("not a url" in e for e in errors)
    assert any("pull/7" in e and "no path" in e for e in errors)


def test_task_metadata_and_base(converted, pr_repo):
    task = converted["tasks"]["aacr__o__r-5"]
    parsed = parse_task(task)
    assert parsed.task_id == "aacr__o__r-5" and parsed.repo == "o/r"
    assert parsed.language == "Python"
    assert task["pr"]["base_sha"] == pr_repo["fork"]  # merge-base, not source_commit
    assert task["pr"]["base_sha"] != pr_repo["source"]
    assert task["pr"]["number"] == 5 and task["pr"]["url"] == URL
    assert task["pr"]["title"] == "Add a module and edit keep.py"  # from the squash commit
    assert task["pr"]["body"] == "Bug Fix"
    assert task["aacr"] == {"source_commit": pr_repo["source"], "target_commit": pr_repo["head"],
                            "change_line_count": 7, "pr_category": "Bug Fix"}
    (rnd,) = parsed.rounds
    assert rnd.head_sha == pr_repo["head"] and rnd.events == []
    assert [c["message"] for c in rnd.commits] == ["Edit keep.py", "Add a module and drop gone.txt"]
    assert rnd.commits[0]["sha"] == pr_repo["head"] and rnd.commits[0]["author"] == "Ada"
    # no title in history: the fallback
    assert converted["tasks"]["aacr__o__r-8"]["pr"]["title"] == "PR 8"


def test_diff_and_files(converted):
    rnd = converted["tasks"]["aacr__o__r-5"]["rounds"][0]
    patch = {p.path: p for p in unidiff.PatchSet(rnd["diff"])}
    assert set(patch) == {"gone.txt", "img.png", "keep.py", "latin.txt", "new_name.txt",
                          "pkg/added.py"}
    assert patch["pkg/added.py"].is_added_file and patch["gone.txt"].is_removed_file
    assert patch["new_name.txt"].is_rename and patch["new_name.txt"].source_file == "a/old_name.txt"
    assert patch["img.png"].is_binary_file
    assert patch["latin.txt"].is_binary_file  # not UTF-8: counts as binary
    assert "Binary files a/latin.txt and b/latin.txt differ" in rnd["diff"]
    assert "other.md" not in rnd["diff"]  # main's own work after the fork is not the PR's
    assert rnd["files"] == {"keep.py": KEEP_HEAD, "pkg/added.py": ADDED, "gone.txt": None,
                            "new_name.txt": RENAMED}


def test_loaded_task_reconstructs_base(converted):
    task = parse_task(converted["tasks"]["aacr__o__r-5"])
    base = task.base_files(1)
    assert base["keep.py"] == KEEP_BASE
    assert base["old_name.txt"] == OLD_NAME
    assert base["pkg/added.py"] is None


def test_cards(converted):
    task = converted["tasks"]["aacr__o__r-5"]
    cards = task["defects"]
    assert [c["id"] for c in cards] == ["C1", "C2", "C3", "C4"]
    assert [(c["path"], c["line_start"], c["line_end"]) for c in cards] == [
        ("keep.py", 10, 11), ("pkg/added.py", 1, 1), ("pkg/added.py", 1, 2),
        ("new_name.txt", 15, 15)]
    assert [c["type"] for c in cards] == ["F.2", "E.3.2", "F.6", "F.7"]
    assert [c["aacr_context"] for c in cards] == ["Diff Level", "File Level", "Repo Level",
                                                  "Diff Level"]
    c2 = cards[1]
    assert c2["description"] == "Name it better."
    assert c2["aacr_category"] == "Maintainability and Readability"
    assert c2["is_ai_comment"] is True and c2["source_model"] == "GPT-5.2"
    assert all(c["states"] == ["New"] and c["raised_in_round"] == 1 and c["severity"] is None
               and c["side"] == "right" for c in cards)
    (neg,) = task["negatives"]
    assert neg["id"] == "N1" and (neg["line_start"], neg["line_end"]) == (3, 4)
    assert neg["description"] == "Rejected: fine as is." and neg["source_model"] == "GLM-4.7"
    assert neg["evidence"] == "AACR-Bench negative comment"
    only_negative = converted["tasks"]["aacr__o__r-8"]
    assert only_negative["defects"] == []
    assert [n["id"] for n in only_negative["negatives"]] == ["N1"]


def test_written_files_load(converted):
    path = converted["out"] / "python" / "aacr__o__r-5.json"
    assert load_task(path).task_id == "aacr__o__r-5"


def test_load_aacr_folder(samples, pr_repo, tmp_path):
    folder = tmp_path / "aacr"
    (folder / "repos").mkdir(parents=True)
    for name in ("positive", "negative"):
        (folder / samples[name].name).write_text(samples[name].read_text())
    subprocess.run(["git", "clone", "-q", "--bare", str(pr_repo["repo"]),
                    str(folder / "repos" / "o__r")], check=True, capture_output=True)
    (folder / "repos" / "o__broken").mkdir()  # not a git repository
    assert is_aacr_folder(folder) and not is_aacr_folder(tmp_path)
    tasks, errors = load_aacr(folder)
    assert sorted(t.task_id for t in tasks) == ["aacr__o__r-5", "aacr__o__r-8"]
    assert len(errors) == 4
    task = next(t for t in tasks if t.task_id == "aacr__o__r-5")
    assert task.pr["base_sha"] == pr_repo["fork"] and len(task.defects) == 4


def test_checkout_that_is_not_a_repository(samples, tmp_path):
    empty = tmp_path / "not-a-repo"
    empty.mkdir()
    tasks, errors = convert(samples["positive"], None, lambda name: empty)
    assert tasks == []
    assert any(URL in e and "not a git repository" in e for e in errors)


def test_category_and_language_names():
    assert CATEGORY_TYPES == {"code defect": "F.2", "maintainability and readability": "E.3.2",
                              "performance": "F.6", "security vulnerability": "F.7"}
    assert category_type("Code Defect") == "F.2"
    assert category_type("maintainability & readability") == "E.3.2"
    assert category_type("Security") == "F.7"
    assert category_type("Something else") is None
    assert normalise_language("csharp") == "C#" and normalise_language("C#") == "C#"
    assert normalise_language("typescript") == "TypeScript"
    assert normalise_language("") == "unknown"
    assert language_folder("C#") == "csharp" and language_folder("TypeScript") == "typescript"
    assert language_folder("C++") == "cpp"


def test_skeleton_needs_no_git():
    task = task_skeleton(entry(URL, "a" * 40, "b" * 40, [comment()]))
    assert task["task_id"] == "aacr__o__r-5" and task["rounds"] == []
    assert task["defects"][0]["type"] == "F.2" and task["negatives"] == []


needs_aacr_sample = pytest.mark.skipif(
    not (AACR_RAW.is_dir() and AACR_DEV.is_dir()),
    reason="../shared/data (aacr-raw-sample, aacr-dev) is not available on this machine",
)

CARD_FIELDS = ("id", "description", "path", "line_start", "line_end", "raised_in_round", "type",
               "severity", "states", "evidence", "aacr_category", "aacr_context", "side",
               "is_ai_comment", "source_model")


@needs_aacr_sample
def test_raw_sample_lines_up_with_aacr_dev():
    positives = json.loads((AACR_RAW / "positive_samples.json").read_text(encoding="utf-8"))
    negatives = {e["githubPrUrl"]: e for e in
                 json.loads((AACR_RAW / "negative_samples.json").read_text(encoding="utf-8"))}
    assert positives
    for raw in positives:
        skeleton = task_skeleton(raw, negatives.get(raw["githubPrUrl"]))
        path = AACR_DEV / language_folder(skeleton["language"]) / f"{skeleton['task_id']}.json"
        dev = json.loads(path.read_text(encoding="utf-8"))
        where = skeleton["task_id"]
        for key in ("task_id", "repo", "language", "source", "aacr"):
            assert skeleton[key] == dev[key], (where, key)
        for key in ("number", "url", "body"):
            assert skeleton["pr"][key] == dev["pr"][key], (where, key)
        assert len(skeleton["defects"]) == len(dev["defects"]), where
        assert len(skeleton["negatives"]) == len(dev.get("negatives") or []), where
        for ours, theirs in zip(skeleton["defects"] + skeleton["negatives"],
                                dev["defects"] + (dev.get("negatives") or [])):
            for key in CARD_FIELDS:
                assert ours[key] == theirs.get(key), (where, ours["id"], key)


def test_odd_paths_and_non_utf8_files(tmp_path):
    repo = tmp_path / "odd"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    base = commit(repo, "initial", {"old latin.txt": "\xe9t\xe9\n".encode("latin-1"),
                                    "plain.txt": "a\n"})
    head = commit(repo, "odd names", {
        "dir with space/caf\u00e9.py": "print('caf\u00e9')\n",
        "new latin.txt": "na\xefve\n".encode("latin-1"),
        "old latin.txt": None,
        "tab\there.txt": "tab\n",
    })
    raw = tmp_path / "positive_samples.json"
    raw.write_text(json.dumps([entry(URL, base, head, [comment(path="plain.txt")])]))
    tasks, errors = convert(raw, None, {"o__r": repo})
    assert errors == []
    (task,) = tasks
    rnd = task["rounds"][0]
    assert rnd["files"] == {"dir with space/caf\u00e9.py": "print('caf\u00e9')\n",
                            "old latin.txt": None, "tab\there.txt": "tab\n"}
    assert "Binary files /dev/null and b/new latin.txt differ" in rnd["diff"]
    assert "Binary files a/old latin.txt and /dev/null differ" in rnd["diff"]
    paths = {p.path for p in unidiff.PatchSet(rnd["diff"])}
    assert {"dir with space/caf\u00e9.py", "new latin.txt", "old latin.txt"} <= paths
    assert parse_task(task).base_files(1)["dir with space/caf\u00e9.py"] is None
