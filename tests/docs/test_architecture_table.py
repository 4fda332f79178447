"""docs/architecture.md answers "where is X" in one hop, and the shape it describes holds: every file and
name its table gives exists, no module imports another in a cycle, no kind module picks a shared reporter,
and every kind the registries name can be imported."""

from __future__ import annotations

import ast
import importlib
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src"
ROW = re.compile(r"^\| (?P<behaviour>[^|]+) \| `(?P<path>[^`]+)` \| `(?P<name>[^`]+)` \|$", re.M)


def test_every_file_and_name_the_table_gives_exists() -> None:
    rows = ROW.findall((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert len(rows) >= 40
    missing = []
    for behaviour, path, name in rows:
        file = ROOT / path
        defined = rf"^(async def|def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
        if not file.is_file() or not re.search(defined, file.read_text(encoding="utf-8"), re.M):
            missing.append(f"{behaviour}: {path} {name}")
    assert missing == []


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every import statement of every module under src/ (top-level or inside a function), as module edges."""
    files = {_module_of(path): path for path in SOURCE.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in files.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                targets = [known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in files else known(base)
                           for alias in node.names]
            else:
                continue
            graph[module].update(target for target in targets if target and target != module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_another_in_a_cycle() -> None:
    assert _cycles(_imports()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_kind_module_imports_a_shared_reporter() -> None:
    reporters = {"assay.core.report.junit", "assay.core.report.ndjson", "assay.core.report.progress"}
    graph = _imports()
    offenders = sorted(f"{module} imports {target}" for module, targets in graph.items()
                       if module.split(".")[1:2] in (["video"], ["agent"], ["doc"]) for target in targets & reporters)
    assert offenders == []


def test_every_registered_kind_and_kind_view_can_be_imported() -> None:
    from assay.core.run.kinds import KINDS, VIEWS, KindView, kind_view

    for name, target in {**KINDS, **VIEWS}.items():
        if target is not None:
            module, attribute = target.split(":")
            assert getattr(importlib.import_module(module), attribute) is not None, name
    assert kind_view("imported") == KindView() and kind_view("agent").trace_row is not None
