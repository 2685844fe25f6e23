"""The import graph of our packages: writing_rl never imports reward_fns or data_prep, and no cycles.

Every import counts, also those inside functions (the lazy ones that keep torch, vLLM or verl out of a
process until needed): a lazy import still ties two modules together for a reader."""

import ast
from pathlib import Path

from conftest import REPO_DIR

PACKAGES = ("writing_rl", "reward_fns", "data_prep")


def module_files() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        for path in (REPO_DIR / package).rglob("*.py"):
            parts = list(path.relative_to(REPO_DIR).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


def imported_names(module: str, path: Path, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package, up level - 1
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    graph = {module: set() for module in files}
    for module, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module] |= {name for name in imported_names(module, path, node) if name in files} - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_writing_rl_never_imports_the_thin_layers():
    graph = import_graph()
    upward = sorted(
        (module, name)
        for module, names in graph.items()
        if module.split(".")[0] == "writing_rl"
        for name in names
        if name.split(".")[0] in ("reward_fns", "data_prep")
    )
    assert upward == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_checks_see_an_upward_import_and_a_cycle():
    graph = {"writing_rl.a": {"reward_fns.x"}, "reward_fns.x": {"writing_rl.a"}, "writing_rl.b": set()}
    assert cycles(graph) == [["reward_fns.x", "writing_rl.a"]]
    assert "writing_rl.judge.engine" in import_graph()["writing_rl.judge.pool"]  # relative imports resolve
