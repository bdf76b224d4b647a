"""Repository context for the LLM detection prompt, on small repositories built here.

Each repository has a changed file that calls a function defined in another, unchanged file;
the prompt must show that definition with its path and line numbers, within the budget.
"""

from __future__ import annotations

import json

import pytest

from bench.score.context import measure, named_identifiers, round_context, shown_lines
from bench.tasks.diffs import file_diff, git_diff
from bench.tasks.mcr import parse_task
from bot.review.context import (
    RepoFiles,
    SymbolIndex,
    build_sections,
    changed_files_from,
    definitions_in,
)
from bot.review.engine import RoundContext
from bot.review.llm import LLMClient, LLMConfig, LLMDetector, LLMVerifier, annotate_diff
from bot.review.prompt_context import ContextProvider
from roundwise.cli import main
from tracker.models import Decision, Defect

MODEL = "gpt-4o"  # litellm's offline tokenizer

# (language, library file and text, callee's first line, changed file, before, after)
REPOS = {
    "python": (
        "pkg/money.py",
        ("import math\n\n\ndef compute_total(items, rate):\n    \"\"\"Sum with tax.\"\"\"\n"
        "    subtotal = sum(items)\n    return math.ceil(subtotal * (1 + rate))\n"),
        4, "pkg/cart.py",
        "from pkg.money import compute_total\n\n\ndef checkout(cart):\n    return 0\n",
        ("from pkg.money import compute_total\n\n\ndef checkout(cart):\n"
        "    return compute_total(cart.items, 0.2)\n"),
    ),
    "java": (
        "src/main/java/shop/Money.java",
        ("package shop;\n\npublic final class Money {\n    private Money() {}\n\n"
        "    public static long computeTotal(long[] items, double rate) {\n"
        "        long sum = 0;\n        for (long i : items) sum += i;\n"
        "        return Math.round(sum * (1 + rate));\n    }\n}\n"),
        6, "src/main/java/shop/Cart.java",
        ("package shop;\n\nclass Cart {\n    long[] items;\n\n    long checkout() {\n"
        "        return 0;\n    }\n}\n"),
        ("package shop;\n\nclass Cart {\n    long[] items;\n\n    long checkout() {\n"
        "        return Money.computeTotal(items, 0.2);\n    }\n}\n"),
    ),
    "typescript": (
        "src/money.ts",
        ("export interface Line { price: number }\n\n"
        "export function computeTotal(items: Line[], rate: number): number {\n"
        "  const sum = items.reduce((a, l) => a + l.price, 0);\n"
        "  return Math.ceil(sum * (1 + rate));\n}\n"),
        3, "src/cart.ts",
        ("import { computeTotal, Line } from './money';\n\n"
        "export class Cart {\n  items: Line[] = [];\n\n  checkout(): number {\n"
        "    return 0;\n  }\n}\n"),
        ("import { computeTotal, Line } from './money';\n\n"
        "export class Cart {\n  items: Line[] = [];\n\n  checkout(): number {\n"
        "    return computeTotal(this.items, 0.2);\n  }\n}\n"),
    ),
    "go": (
        "money/money.go",
        ("package money\n\nimport \"math\"\n\n"
        "// ComputeTotal sums the items with tax.\n"
        "func ComputeTotal(items []float64, rate float64) float64 {\n"
        "\tsum := 0.0\n\tfor _, i := range items {\n\t\tsum += i\n\t}\n"
        "\treturn math.Ceil(sum * (1 + rate))\n}\n"),
        6, "cart/cart.go",
        ("package cart\n\nimport \"example.com/shop/money\"\n\ntype Cart struct {\n"
        "\tItems []float64\n}\n\nfunc (c *Cart) Checkout() float64 {\n\treturn 0\n}\n"),
        ("package cart\n\nimport \"example.com/shop/money\"\n\ntype Cart struct {\n"
        "\tItems []float64\n}\n\nfunc (c *Cart) Checkout() float64 {\n"
        "\treturn money.ComputeTotal(c.Items, 0.2)\n}\n"),
    ),
}


def write_repo(root, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def context_for(path: str, before: str, after: str, extra: dict | None = None) -> RoundContext:
    diff = file_diff(path, before, after)
    return RoundContext(repo="o/shop", number=1, round=1, head_sha="h" * 40, base_sha="b" * 40,
                        pr_diff=diff, round_diff=diff, files={path: after, **(extra or {})},
                        title="Checkout uses the total")


def detector(budget: int, provider: ContextProvider) -> LLMDetector:
    det = LLMDetector(LLMClient(LLMConfig(model=MODEL, max_prompt_tokens=budget)))
    det.context = provider
    return det


@pytest.mark.parametrize("language", sorted(REPOS))
def test_a_callee_defined_in_another_file_lands_in_the_prompt(tmp_path, language):
    lib, lib_text, def_line, changed, before, after = REPOS[language]
    write_repo(tmp_path, {lib: lib_text, changed: after})
    provider = ContextProvider(locate=lambda _ctx: tmp_path)
    calls = detector(4000, provider).plan(context_for(changed, before, after)).calls
    assert len(calls) == 1
    prompt = calls[0][1]["content"]
    # Java's call names the class first: its definition (which holds the callee) comes in
    name = {"python": "compute_total", "go": "ComputeTotal", "java": "Money"}.get(
        language, "computeTotal")
    assert f'<context_code file="{lib}" lines="' in prompt
    assert f"definition of {name}" in prompt
    # the callee's first line is shown with its own line number, as diff lines are
    assert (lib, "RIGHT", def_line) in shown_lines(calls)
    # the enclosing method of the change comes first, then the callee
    assert prompt.index("enclosing") < prompt.index(f"definition of {name}")
    assert prompt.index("</repository_context>") < prompt.index("Review the <round_diff>")
    plain = detector(4000, ContextProvider(enabled=False)).plan(
        context_for(changed, before, after)).calls
    assert (lib, "RIGHT", def_line) not in shown_lines(plain)
    assert "<repository_context>" not in plain[0][1]["content"]


def test_the_budget_is_respected_and_the_diff_comes_first(tmp_path):
    lib, lib_text, def_line, changed, before, after = REPOS["python"]
    # a long callee: whole it does not fit a small budget, its head does
    body = "".join(f"    subtotal += {i}\n" for i in range(300))
    long_lib = lib_text.replace("    subtotal = sum(items)\n", "    subtotal = sum(items)\n" + body)
    write_repo(tmp_path, {lib: long_lib, changed: after})
    provider = ContextProvider(locate=lambda _ctx: tmp_path)
    ctx = context_for(changed, before, after)
    plain = detector(100_000, ContextProvider(enabled=False)).plan(ctx).calls
    client = LLMClient(LLMConfig(model=MODEL))
    diff_only = client.count_tokens(plain[0])
    for budget in (diff_only + 150, diff_only + 400, diff_only + 2000, 100_000):
        calls = detector(budget, provider).plan(ctx).calls
        assert len(calls) == 1 and client.count_tokens(calls[0]) <= budget
        assert "<round_diff" in calls[0][1]["content"]  # the diff is never crowded out
    # room for the enclosing function only: the callee (even its head) is left out
    small = detector(diff_only + 150, provider).plan(ctx).calls[0][1]["content"]
    assert "enclosing function_definition checkout" in small
    assert "definition of compute_total" not in small
    # more room: the callee's first 40 lines, not all 300+
    medium = shown_lines(detector(diff_only + 900, provider).plan(ctx).calls)
    assert (lib, "RIGHT", def_line) in medium and (lib, "RIGHT", def_line + 39) in medium
    assert (lib, "RIGHT", def_line + 40) not in medium
    # a budget the diff alone fills: no context at all, the prompt is the diff-only one
    tight = detector(diff_only + 100, provider).plan(ctx).calls
    assert tight == plain


def test_callers_and_tests_of_a_changed_function(tmp_path):
    before = "def rate_for(region):\n    return 0.2\n"
    after = "def rate_for(region):\n    if region == 'EU':\n        return 0.2\n    return 0.0\n"
    files = {
        "pkg/tax.py": after,
        "pkg/invoice.py": "from pkg.tax import rate_for\n\n\ndef invoice(total, region):\n"
                          "    return total * (1 + rate_for(region))\n",
        "tests/test_tax.py": "from pkg.tax import rate_for\n\n\ndef test_eu():\n"
                             "    assert rate_for('EU') == 0.2\n",
        "docs/notes.py": "# rate_for is documented elsewhere\n",
    }
    write_repo(tmp_path, files)
    ctx = context_for("pkg/tax.py", before, after)
    calls = detector(6000, ContextProvider(locate=lambda _ctx: tmp_path)).plan(ctx).calls
    prompt = calls[0][1]["content"]
    assert ('file="pkg/invoice.py" lines="4-5" source="caller of rate_for: '
            'function_definition invoice calls it at line 5"') in prompt
    assert 'file="tests/test_tax.py" lines="4-5" source="test exercising rate_for' in prompt
    assert "docs/notes.py" not in prompt  # a mention that is not a call is no caller
    kinds = [s.kind for s in build_sections(
        changed_files_from(annotate_diff(ctx.pr_diff)), RepoFiles(tmp_path),
        SymbolIndex.build(RepoFiles(tmp_path)))]
    assert kinds == ["enclosing", "caller", "test"]


def test_without_a_checkout_the_prs_own_files_give_context():
    money, money_text, def_line, changed, before, after = REPOS["typescript"]
    ctx = context_for(changed, before, after, extra={money: money_text})
    calls = detector(4000, ContextProvider()).plan(ctx).calls
    assert (money, "RIGHT", def_line) in shown_lines(calls)


def test_the_symbol_index_is_cached_per_head_as_json(tmp_path):
    lib, lib_text, def_line, changed, _, after = REPOS["go"]
    write_repo(tmp_path / "repo", {lib: lib_text, changed: after})
    repo = RepoFiles(tmp_path / "repo")
    cache = tmp_path / "cache" / "head.json"
    index = SymbolIndex.cached(repo, cache)
    assert [(d.path, d.start, d.kind) for d in index.definitions["ComputeTotal"]] == \
        [(lib, def_line, "function_declaration")]
    assert index.definitions["Checkout"][0].kind == "method_declaration"
    assert json.loads(cache.read_text())["version"] == 1
    (tmp_path / "repo" / lib).write_text("package money\n")  # the cache answers, not the files
    again = SymbolIndex.cached(RepoFiles(tmp_path / "repo"), cache)
    assert again.definitions["ComputeTotal"] == index.definitions["ComputeTotal"]
    cache.write_text("{broken")
    rebuilt = SymbolIndex.cached(RepoFiles(tmp_path / "repo"), cache)
    assert "ComputeTotal" not in rebuilt.definitions


def test_definitions_in_each_language():
    for language, (lib, text, line, *_rest) in REPOS.items():
        found = {(d.name, d.start) for d in definitions_in(lib, text)}
        name = {"python": "compute_total", "go": "ComputeTotal"}.get(language, "computeTotal")
        assert (name, line) in found, language
    assert definitions_in("notes.txt", "def x(): pass") == []


def test_named_identifiers():
    text = ("Calling `Money.computeTotal(items)` before the null check; see PSModuleInfo, "
            "rate_for() and the value of total.")
    assert named_identifiers(text) == ["Money", "computeTotal", "items", "PSModuleInfo",
                                       "rate_for"]


def test_bench_context_coverage_by_hand(tmp_path, capsys):
    lib, lib_text, _def_line, changed, before, after = REPOS["java"]
    write_repo(tmp_path / "repos" / "o__shop", {lib: lib_text, changed: after})
    diff = git_diff({changed: before}, {changed: after})
    raw = {
        "schema": "mcr-task/1", "task_id": "aacr__o__shop-1", "repo": "o/shop",
        "language": "Java", "pr": {"number": 1, "base_sha": "b" * 40},
        "rounds": [{"round": 1, "head_sha": "h" * 40, "diff": diff, "files": {changed: after},
                    "events": []}],
        "defects": [
            # line 7 is the changed line: in both prompts; `computeTotal` is defined in
            # Money.java (line 6): only the context prompt shows it
            {"id": "C1", "path": changed, "line_start": 7, "line_end": 7, "side": "right",
             "raised_in_round": 1, "states": ["New"], "aacr_context": "Repo Level",
             "description": "`computeTotal` rounds; the cart needs the exact sum"},
            # line 2 is outside the diff's context lines and outside the enclosing method
            {"id": "C2", "path": changed, "line_start": 1, "line_end": 1, "side": "right",
             "raised_in_round": 1, "states": ["New"], "aacr_context": "File Level",
             "description": "package name should be shop.cart"},
        ],
    }
    task = parse_task(raw)
    s = measure([task], tmp_path / "repos", budget=6000)
    repo_level, file_level = s["by_level"]["repo"], s["by_level"]["file"]
    assert repo_level["line_coverage"] == {"diff_only": 1.0, "with_context": 1.0}
    assert repo_level["symbols"] == 1
    assert repo_level["symbol_coverage"] == {"diff_only": 0.0, "with_context": 1.0}
    assert file_level["symbols"] == 0 and file_level["symbol_coverage"]["diff_only"] is None
    assert s["checkouts"] == 1 and s["by_language"]["Java"]["comments"] == 2
    assert s["tokens_per_pr"]["with_context"] > s["tokens_per_pr"]["diff_only"] > 0
    assert s["tokens_per_pr"]["max_with_context"] <= 6000
    kinds = s["tokens_per_pr"]["context_by_kind"]
    assert kinds["enclosing"] > 0 and kinds["definition"] > 0 and set(kinds) <= {
        "enclosing", "definition", "caller", "test"}
    ctx = round_context(task, 1)
    assert ctx.files == {changed: after}
    (tmp_path / "task.json").write_text(json.dumps(raw))
    args = ["bench", "context", "--tasks", str(tmp_path / "task.json"), "--repos",
            str(tmp_path / "repos"), "--budget", "6000"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "repo                1         100.0%    100.0%        1          0.0%    100.0%" in out
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["by_level"]["repo"] == repo_level


def test_the_verifier_sees_the_code_around_a_defects_current_lines(tmp_path):
    lib, lib_text, def_line, changed, before, after = REPOS["go"]
    write_repo(tmp_path, {lib: lib_text, changed: after})
    ctx = context_for(changed, before, after)
    # D1 sits on the changed return (line 10), which calls money.ComputeTotal
    defect = Defect(key="D1", description="the total ignores discounts", origin="human",
                    state="Open", raised_round=1, state_round=1, path=changed, line_start=10,
                    line_end=10)
    decision = Decision(key="D1", state="Resolved", rule="anchor-modified", evidence="changed",
                        candidate=True, path=changed, line_start=10, line_end=10)
    client = LLMClient(LLMConfig(model=MODEL, max_prompt_tokens=4000))
    verifier = LLMVerifier(client)
    verifier.context = ContextProvider(locate=lambda _ctx: tmp_path)
    [(messages, group)] = verifier.plan(ctx, [(defect, decision)])
    prompt = messages[1]["content"]
    assert "enclosing method_declaration Checkout" in prompt
    assert (lib, "RIGHT", def_line) in shown_lines([messages])
    assert prompt.index("</defect>") < prompt.index("<repository_context>")
    assert client.count_tokens(messages) <= 4000 and set(group) == {"D1"}
    verifier.context = ContextProvider(enabled=False)
    [(plain, _)] = verifier.plan(ctx, [(defect, decision)])
    assert "<repository_context>" not in plain[1]["content"]


def test_room_is_kept_for_context_only_while_the_diff_still_fits(tmp_path):
    lib, lib_text, _, _, _, _ = REPOS["python"]
    before = "from pkg.money import compute_total\n"
    files = {f"pkg/cart{i}.py": before + "".join(
        f"\n\ndef checkout_{i}_{n}(cart):\n    return compute_total(cart.items, 0.{n})\n"
        for n in range(12)) for i in (1, 2)}
    write_repo(tmp_path, {lib: lib_text, **files})
    diff = git_diff(dict.fromkeys(files, before), files)
    ctx = RoundContext(repo="o/shop", number=1, round=1, head_sha="h" * 40, base_sha="b" * 40,
                       pr_diff=diff, round_diff=diff, files=dict(files))
    plain = detector(100_000, ContextProvider(enabled=False)).plan(ctx).calls
    both = LLMClient(LLMConfig(model=MODEL)).count_tokens(plain[0])
    budget = int(both / 0.8)  # both files fit one call, but not in 65% of it
    provider = ContextProvider(locate=lambda _ctx: tmp_path)
    assert len(detector(budget, ContextProvider(enabled=False)).plan(ctx).calls) == 1
    calls = detector(budget, provider).plan(ctx).calls
    assert len(calls) == 2  # one file per call, each with room for its context
    assert all("<repository_context>" in c[1]["content"] for c in calls)
    one_call = LLMDetector(LLMClient(LLMConfig(model=MODEL, max_prompt_tokens=budget,
                                               max_calls=1)))
    one_call.context = provider
    [single] = one_call.plan(ctx).calls  # one call allowed: the whole diff, context after
    assert all(f'<round_diff file="{path}"' in single[1]["content"] for path in files)
    assert one_call.client.count_tokens(single) <= budget


def test_settings_from_the_environment(tmp_path):
    lib, lib_text, _, changed, before, after = REPOS["go"]
    write_repo(tmp_path / "repos" / "o__shop", {lib: lib_text, changed: after})
    write_repo(tmp_path / "repos" / "task-7", {lib: lib_text})
    env = {"ROUNDWISE_REPOS": str(tmp_path / "repos"), "ROUNDWISE_DB": str(tmp_path / "l.db")}
    provider = ContextProvider.from_env(env)
    ctx = context_for(changed, before, after)
    assert provider.checkout(ctx) == tmp_path / "repos" / "o__shop"
    ctx.repo = "bench/task-7"  # the bench's fake repositories are named by task id
    assert provider.checkout(ctx) == tmp_path / "repos" / "task-7"
    ctx.repo = "o/elsewhere"
    assert provider.checkout(ctx) is None
    ctx.repo = "o/shop"
    _, index = provider.repository(ctx)
    assert "ComputeTotal" in index.definitions
    assert len(list((tmp_path / "context-index").glob("*.json"))) == 1  # beside the ledger
    assert not ContextProvider.from_env({**env, "ROUNDWISE_CONTEXT": "off"}).enabled
    assert ContextProvider.from_env({}).repos_dir is None


def test_names_beside_the_change_and_c_macros_that_rename_functions(tmp_path):
    before = 'int submit(void)\n{\n    SDL_LogError("lost");\n    return 0;\n}\n'
    after = 'int submit(void)\n{\n    SDL_LogError("lost");\n    int retries = 3;\n    return 0;\n}\n'
    files = {"src/gpu/gpu.c": after,
             "src/log.c": "void SDL_LogError(const char *fmt)\n{\n    (void)fmt;\n}\n",
             "src/dynapi/overrides.h": "#define SDL_LogError SDL_LogError_REAL\n"}
    write_repo(tmp_path, files)
    ctx = context_for("src/gpu/gpu.c", before, after)
    prompt = detector(4000, ContextProvider(locate=lambda _ctx: tmp_path)).plan(ctx).calls[0]
    text = prompt[1]["content"]
    # SDL_LogError is on an unchanged line of the hunk: its function, not the macro, comes in
    assert ('<context_code file="src/log.c" lines="1-4" source="definition of SDL_LogError '
            '(function_definition), used at src/gpu/gpu.c:3"') in text
    assert "overrides.h" not in text
