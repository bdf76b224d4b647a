"""The project's surface: the documented settings and rules, ``__all__``, layering and install extras."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys

import pytest

from bot.server.hosts import SETTINGS, load_config

from .conftest import ROOT

PACKAGES = ["bot", "bench", "roundwise"]
# tracker/ is owned by other work in progress; its __all__ comes with that work
NOT_YET = {"tracker"}


def readme_settings() -> dict[str, str]:
    """Variable -> default cell of the "Settings (environment)" table (docs/configuration.md)."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text.split("## Settings (environment)", 1)[1].split("\n#", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([A-Z_]+)`", cells[0]):
            out[name] = cells[2]
    return out


def readme_problems(settings: dict[str, tuple[str, str]]) -> list[str]:
    """Where the documented settings table and ``settings`` disagree (empty: they agree)."""
    documented = readme_settings()
    problems = []
    if set(documented) != set(settings):
        problems.append(f"missing from docs/configuration.md: "
                        f"{sorted(set(settings) - set(documented))}; not in bot.server.hosts."
                        f"SETTINGS: {sorted(set(documented) - set(settings))}")
    for name, (_, default) in settings.items():
        if name in documented and default not in ("unset", "required") \
                and "required" not in default and default not in documented[name]:
            problems.append(f"{name}: docs/configuration.md says {documented[name]}")
    return problems


def test_the_settings_table_matches_the_config_code():
    assert readme_problems(SETTINGS) == []


def test_the_readme_shows_what_ci_runs_on_its_first_screen():
    """``.ci/run`` installs, runs and tests exactly as README says, and a newcomer sees both
    commands without scrolling."""
    readme = (ROOT / "README.md").read_text().splitlines()
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.startswith("python3 -m venv")]
    shown = [(n, line) for n, line in enumerate(readme, 1) if line.startswith("python3 -m venv")]
    assert len(ci) == 2 and [line for _, line in shown] == ci
    assert ci[0].endswith("roundwise bench run --tasks bench/examples --out bench-out")
    assert ci[1].endswith("pytest -q")
    assert all(n <= 45 for n, _ in shown), f"the commands are at lines {[n for n, _ in shown]}"


def settings_modules() -> list[str]:
    """The modules that declare settings: every ``bot`` module assigning a ``...SETTINGS``
    dict at its top level (``bot.config.env``'s own, the LLM's, the context's, each code-host
    backend's), found by reading them, so a new backend's module is checked without a list."""
    found = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            target = node.target if isinstance(node, ast.AnnAssign) else \
                node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(target, ast.Name) and target.id.endswith("SETTINGS") \
                    and isinstance(node.value, ast.Dict):
                found.append(str(path.relative_to(ROOT)))
                break
    return found


def test_the_settings_modules_are_found_by_reading_them():
    assert {"bot/config/env.py", "bot/review/llm_config.py", "bot/review/prompt_context.py",
            "bot/gitlab/settings.py", "bot/github/host.py"} <= set(settings_modules())


def test_every_variable_the_config_code_reads_is_declared():
    # the settings' prefixes (GITHUB, GITLAB, ROUNDWISE; a new backend's comes with it)
    prefixes = "|".join(sorted({name.split("_", 1)[0] for name in SETTINGS}))
    read = set()
    for module in settings_modules():
        tree = ast.parse((ROOT / module).read_text())
        read |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                 and isinstance(node.value, str)
                 and re.fullmatch(rf"({prefixes})_[A-Z_]+", node.value)}
    assert read == set(SETTINGS)


def test_load_config_parses_every_llm_setting_once(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    env = {"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": key, "GITHUB_WEBHOOK_SECRET": "s",
           "ROUNDWISE_MODEL": "openai/m", "ROUNDWISE_API_BASE": "http://h/v1",
           "ROUNDWISE_API_KEY": "sk-k", "ROUNDWISE_FALLBACK_MODEL": "openai/f",
           "ROUNDWISE_LLM_TIMEOUT": "7", "ROUNDWISE_MAX_PROMPT_TOKENS": "999",
           "ROUNDWISE_LLM_CACHE": str(tmp_path)}
    llm = load_config(env).llm
    assert (llm.model, llm.api_base, llm.api_key, llm.fallback_model, llm.timeout,
            llm.max_prompt_tokens, llm.cache_dir) == (
        "openai/m", "http://h/v1", "sk-k", "openai/f", 7.0, 999, str(tmp_path))
    assert "sk-k" not in repr(llm)
    assert load_config({**env, "ROUNDWISE_MODEL": ""}).llm is None


def _packages():
    for top in PACKAGES:
        yield top
        module = importlib.import_module(top)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{top}."):
            if info.ispkg:
                yield info.name


@pytest.mark.parametrize("name", sorted(set(_packages())))
def test_every_package_declares_all_and_it_holds(name):
    package = importlib.import_module(name)
    assert isinstance(getattr(package, "__all__", None), list), f"{name} has no __all__"
    for member in package.__all__:
        assert hasattr(package, member) or importlib.util.find_spec(f"{name}.{member}"), \
            f"{name}.__all__ names {member}, which does not exist"
    modules = {i.name for i in pkgutil.iter_modules(package.__path__)} - {"__main__"}
    assert modules <= set(package.__all__) | set(dir(package)), \
        f"{name}.__all__ misses {sorted(modules - set(package.__all__))}"


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_layers_point_one_way():
    below = {"tracker": {"bot", "bench", "roundwise"}, "bot": {"bench", "roundwise"},
             "bench": {"roundwise"}}
    for package, forbidden in below.items():
        for path in (ROOT / package).rglob("*.py"):
            wrong = _imports(path) & forbidden
            assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_litellm_is_configured_in_one_place():
    setters = [str(p.relative_to(ROOT)) for package in PACKAGES + ["tracker"]
               for p in (ROOT / package).rglob("*.py")
               if "LITELLM_LOCAL_MODEL_COST_MAP" in p.read_text()]
    assert setters == ["bot/review/llm_config.py"]


def test_the_server_needs_no_bench_extra():
    code = ("import sys; from roundwise.cli import build_parser; import bot.server.app; "
            "build_parser().parse_args(['serve']); "
            "print(sorted({'jinja2', 'matplotlib', 'tqdm', 'litellm'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_the_bench_extra_is_what_the_bench_checks_and_the_test_extra_carries_it():
    import tomllib

    from bench.cli import BENCH_EXTRA

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = re.compile(r"^[A-Za-z0-9_.-]+")
    bench = {name.match(d).group(0) for d in project["optional-dependencies"]["bench"]}
    test = {name.match(d).group(0) for d in project["optional-dependencies"]["test"]}
    runtime = {name.match(d).group(0) for d in project["dependencies"]}
    assert bench == set(BENCH_EXTRA) and bench <= test and not bench & runtime


def ruling_names(source: str) -> set[str]:
    """The rule names ``tracker/rules.py`` can rule with: every string constant in the name
    argument of a ``Ruling(...)`` call, or in what the variable passed there was assigned."""
    import ast

    tree = ast.parse(source)
    assigned: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Ruling" \
                and len(node.args) > 1:
            arg = node.args[1]
            for part in [arg, *(assigned.get(arg.id, []) if isinstance(arg, ast.Name) else [])]:
                names |= {c.value for c in ast.walk(part)
                          if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return names


def test_every_rule_the_tracker_can_rule_with_is_documented():
    source = (ROOT / "tracker" / "rules.py").read_text(encoding="utf-8")
    names = ruling_names(source)
    assert {"anchor-untouched", "anchor-modified", "asked-still-absent"} <= names
    readme = (ROOT / "docs" / "tracker.md").read_text(encoding="utf-8")
    assert [n for n in sorted(names) if f"`{n}`" not in readme] == []
    assert ruling_names('x = "b-c"\nRuling(S, "a-b", "e", 1)\nRuling(S, x, "e", 1)\n') == \
        {"a-b", "b-c"}
