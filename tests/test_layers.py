"""The house plan holds: no module imports itself back through others.

Every import between the project's own modules counts, at module level or inside a function
(a lazy import still ties the two rooms together), relative or absolute. ``from a.b import c``
is an edge to the module ``a.b.c`` when it exists, else to ``a.b``. The one-way layers
(tracker → bot → bench → roundwise) are ``test_surface.test_layers_point_one_way``'s. Inside
the bench, the harnesses (``bench.perf``, ``bench.faults``, ``bench.studies``) may use the
benchmark's pipeline (the rest of ``bench``), never the other way round.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tracker", "bot", "bench", "roundwise")
HARNESSES = ("bench.perf", "bench.faults", "bench.studies")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _known(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1] + [node.module or ""]
                                if node.level else [node.module or ""]).strip(".")
                wanted = [f"{base}.{alias.name}" for alias in node.names] + [base]
                wanted = wanted[:-1] if any(w in modules for w in wanted[:-1]) else wanted
            else:
                continue
            for target in wanted:
                found = _known(target, modules)
                if found and found != name:
                    graph[name].add(found)
    return graph


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 100  # the walk found the project
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_the_check_sees_a_lazy_import_cycle(tmp_path, monkeypatch):
    graph = {"tracker.a": {"tracker.b"}, "tracker.b": {"tracker.a"}}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError:
        return
    raise AssertionError("a two-module cycle must be reported")


def test_a_function_level_import_is_an_edge():
    graph = import_graph()
    # bot.review.prompt_context reads the prompt helpers lazily, from their own modules
    assert "bot.review.llm.prompts" in graph["bot.review.prompt_context"]
    assert "bot.review.llm" not in graph["bot.review.prompt_context"]


def _in(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def pipeline_to_harness(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import from a bench module outside the harness packages into one of them."""
    return sorted((name, target) for name, targets in graph.items()
                  if _in(name, ("bench",)) and not _in(name, HARNESSES)
                  for target in targets if _in(target, HARNESSES))


def test_the_bench_pipeline_imports_no_harness():
    graph = import_graph()
    assert all(package in graph for package in HARNESSES)
    assert {"bench.run", "bench.replay.github", "bench.score.scoring", "bench.report"} <= set(graph)
    # the harnesses do use the pipeline (the check below looks at the right edges)
    assert "bench.replay.github" in graph["bench.faults.chaos"]
    wrong = pipeline_to_harness(graph)
    assert not wrong, "the bench pipeline imports a harness: " + ", ".join(
        f"{a} -> {b}" for a, b in wrong)


def test_the_pipeline_check_sees_a_harness_import():
    graph = {"bench.run": {"bench.replay.github"}, "bench.report": {"bench.perf.ack"},
             "bench.perf.ack": {"bench.replay.github"}, "bench.fake_github.rest": {"bench.faults"}}
    assert pipeline_to_harness(graph) == [("bench.fake_github.rest", "bench.faults"),
                                          ("bench.report", "bench.perf.ack")]


def bot_rooms(root: Path = ROOT) -> set[str]:
    """The rooms of ``bot``: its sub-packages and any module at its top level."""
    return {path.name if path.is_dir() else path.stem for path in (root / "bot").iterdir()
            if (path.is_dir() and (path / "__init__.py").exists())
            or (path.suffix == ".py" and path.stem != "__init__")}


def imports_against_the_order(graph: dict[str, set[str]],
                              layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import from one room of ``bot`` into a room of its own layer or one above, as
    "module -> module (room, layer N, imports room, layer M)", lazy imports included."""
    level = {room: n for n, layer in enumerate(layers, 1) for room in layer}
    wrong = []
    for name, targets in graph.items():
        parts = name.split(".")
        if parts[0] != "bot" or len(parts) < 2:
            continue
        for target in targets:
            other = target.split(".")
            if other[0] != "bot" or len(other) < 2 or other[1] == parts[1]:
                continue
            if level.get(other[1], 0) >= level.get(parts[1], 0):
                wrong.append(f"{name} -> {target} ({parts[1]}, layer {level.get(parts[1])}, "
                             f"imports {other[1]}, layer {level.get(other[1])})")
    return sorted(wrong)


def test_every_room_of_the_bot_has_its_layer():
    from bot import LAYERS

    placed = [room for layer in LAYERS for room in layer]
    assert len(placed) == len(set(placed)), "a room is in two layers"
    assert set(placed) == bot_rooms(), (
        f"rooms without a layer in bot/__init__.py's LAYERS: {sorted(bot_rooms() - set(placed))}"
        f"; layers naming no room: {sorted(set(placed) - bot_rooms())}")


def test_the_bot_rooms_import_only_the_layers_below():
    from bot import LAYERS

    graph = import_graph()
    wrong = imports_against_the_order(graph, LAYERS)
    assert not wrong, f"{len(wrong)} import(s) against bot/__init__.py's layers:\n" + \
        "\n".join(wrong)
    # the check read the edges it must judge: lazy ones (a store's counter) among them
    assert "bot.observe.metrics" in graph["bot.store.queue_sqlite"]


def test_the_layer_check_names_each_import_against_the_order():
    layers = (("observe",), ("store",), ("server",))
    graph = {"bot.store.queue": {"bot.server.metrics", "bot.observe.metrics", "tracker.store"},
             "bot.server.app": {"bot.store", "bot.server.logs"},
             "bot.observe.metrics": {"bot.observe"}, "bot.new.thing": {"bot.store"},
             "bot.store.sibling": {"bot.store.queue"}}
    assert imports_against_the_order(graph, layers) == [
        "bot.new.thing -> bot.store (new, layer None, imports store, layer 2)",
        "bot.store.queue -> bot.server.metrics (store, layer 2, imports server, layer 3)"]
    # two rooms of one layer may not import each other either
    assert imports_against_the_order({"bot.a.x": {"bot.b"}}, (("a", "b"),)) == [
        "bot.a.x -> bot.b (a, layer 1, imports b, layer 1)"]


#: what talks to another machine: the tracker imports none of these (it does no network I/O;
#: the ledger's engines, the PostgreSQL one among them, are ``bot.store``'s)
NETWORK = {"aiohttp", "gidgethub", "gidgetlab", "http", "httpx", "litellm", "psycopg",
           "psycopg_pool", "requests", "socket", "ssl", "urllib", "urllib3"}


def tracker_imports_out_of_bounds(root: Path = ROOT) -> list[str]:
    """Every import in ``tracker/`` (module level or lazy, absolute or relative) of a network
    module or of a module of ``bot`` or ``bench``, as ``path: name``."""
    wrong = []
    for path in sorted((root / "tracker").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom):  # relative: ..bot from inside tracker
                up = len(path.relative_to(root).parts) - node.level
                names = [node.module or ""] if up <= 0 else []
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in NETWORK or top in ("bot", "bench"):
                    wrong.append(f"{path.relative_to(root)}: {name}")
    return wrong


def test_the_tracker_imports_no_network_module_and_nothing_of_bot_or_bench():
    assert (ROOT / "tracker" / "store.py").exists()  # the walk reads the real tracker
    assert tracker_imports_out_of_bounds() == []


def test_the_tracker_check_sees_a_lazy_network_import(tmp_path):
    (tmp_path / "tracker").mkdir()
    (tmp_path / "tracker" / "fine.py").write_text("import json\nfrom .models import Defect\n")
    (tmp_path / "tracker" / "talks.py").write_text(
        "def f():\n    import psycopg\n    from bot.store import ledger_postgres\n")
    assert tracker_imports_out_of_bounds(tmp_path) == [
        "tracker/talks.py: psycopg", "tracker/talks.py: bot.store"]
