"""The import graph of our packages: writing_rl never imports reward_fns or data_prep, its subpackages
import only from lower layers (docs/architecture.md), and there are no cycles.

Every import counts, also those inside functions (the lazy ones that keep torch, vLLM or verl out of a
process until needed): a lazy import still ties two modules together for a reader."""

import ast
from pathlib import Path

from conftest import REPO_DIR

PACKAGES = ("writing_rl", "reward_fns", "data_prep")

# writing_rl's parts, lowest first. A module imports its own part and lower layers only; two parts on one
# layer never import each other.
LAYERS = (
    ("writing_rl.files", "writing_rl.settings", "writing_rl.help_format", "writing_rl.import_hooks"),
    ("writing_rl.protocols", "writing_rl.tournament", "writing_rl.models", "writing_rl.plot"),
    ("writing_rl.judge", "writing_rl.data", "writing_rl.terms"),
    ("writing_rl.genrm", "writing_rl.reward_loop"),
    ("writing_rl.curriculum",),  # a service Writing-RL asks the reward loop for: the loop never imports it
    ("writing_rl.cpu_backend", "writing_rl.plugin", "writing_rl.offline"),
    ("writing_rl.evaluation", "writing_rl.selection", "writing_rl.ordering"),  # offline commands over the judge
    ("writing_rl.tools",),
)


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


def part_of(module: str) -> tuple[str, int] | None:
    for layer, parts in enumerate(LAYERS):
        for part in parts:
            if module == part or module.startswith(part + "."):
                return part, layer
    return None


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    found = []
    for module, names in graph.items():
        mine = part_of(module)
        for name in names:
            theirs = part_of(name)
            if mine and theirs and mine[0] != theirs[0] and theirs[1] >= mine[1]:
                found.append((module, name))
    return sorted(found)


def test_every_writing_rl_module_has_a_layer():
    unplaced = [m for m in import_graph() if m.startswith("writing_rl.") and part_of(m) is None]
    assert unplaced == []


def test_writing_rl_parts_import_only_lower_layers():
    assert layer_violations(import_graph()) == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_checks_see_an_upward_import_and_a_cycle():
    graph = {"writing_rl.a": {"reward_fns.x"}, "reward_fns.x": {"writing_rl.a"}, "writing_rl.b": set()}
    assert cycles(graph) == [["reward_fns.x", "writing_rl.a"]]
    relative = ast.parse("from ..judge import base\nfrom . import engine").body
    pool = REPO_DIR / "writing_rl/genrm/pool.py"
    assert imported_names("writing_rl.genrm.pool", pool, relative[0]) == ["writing_rl.judge", "writing_rl.judge.base"]
    assert imported_names("writing_rl.genrm.pool", pool, relative[1]) == ["writing_rl.genrm", "writing_rl.genrm.engine"]
    sideways = {
        "writing_rl.genrm.pool": {"writing_rl.reward_loop.config"},
        "writing_rl.judge.http": {"writing_rl.protocols"},
    }
    upward = {"writing_rl.protocols.text": {"writing_rl.judge.base"}}
    assert layer_violations(sideways) == [("writing_rl.genrm.pool", "writing_rl.reward_loop.config")]
    assert layer_violations(upward) == [("writing_rl.protocols.text", "writing_rl.judge.base")]


# writing_rl/tools/: the command line (cli, commands/) over command families (one module or package per
# family: preflight/, probe/, monitor, score, quickstart_report), over the
# utilities the families share (shared/). A family imports its own modules, shared/ and lower layers only;
# shared/ imports only itself (and lower layers); nothing below the command line imports it.
TOOLS = "writing_rl.tools"
TOOLS_COMMAND_LINE = ("cli", "commands")
TOOLS_SHARED = "shared"


def tools_family(module: str) -> str | None:
    """The part of writing_rl/tools/ a module is in (``selection``, ``shared``, ``cli``...); None outside."""
    if not module.startswith(TOOLS + "."):
        return None
    return module.split(".")[2]


def tools_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    found = []
    for module, names in graph.items():
        mine = tools_family(module)
        if mine is None or mine in TOOLS_COMMAND_LINE:
            continue
        for name in names:
            theirs = tools_family(name) if name != TOOLS else TOOLS
            if theirs is not None and theirs != mine and (theirs != TOOLS_SHARED or mine == TOOLS_SHARED):
                found.append((module, name))
    return sorted(found)


def test_tools_families_import_only_the_shared_utilities():
    assert tools_violations(import_graph()) == []


def test_the_tools_check_sees_a_family_importing_another():
    graph = {
        "writing_rl.tools.probe.run": {"writing_rl.tools.shared.trainers", "writing_rl.tools.preflight.runner"},
        "writing_rl.tools.shared.trainers": {"writing_rl.tools.cli"},
        "writing_rl.tools.commands.judging": {"writing_rl.tools.probe.job"},
        "writing_rl.tools.monitor": {"writing_rl.offline.files", "writing_rl.reward_loop.health"},
    }
    assert tools_violations(graph) == [
        ("writing_rl.tools.probe.run", "writing_rl.tools.preflight.runner"),
        ("writing_rl.tools.shared.trainers", "writing_rl.tools.cli"),
    ]


MAX_LINES = 400  # docs/architecture.md: a module a newcomer reads in one sitting


def test_no_module_is_over_the_size_limit():
    files = module_files()
    long = {
        module: n
        for module, path in files.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these modules: {long}"


# What reward_fns/ may import from writing_rl.reward_loop: the reward-fn contract (reward_loop/contract.py). The
# managers' modules are named in configs, never imported by a fn; everything else is the managers' business.
REWARD_FN_CONTRACT = {"writing_rl.reward_loop.contract"}


def reward_loop_imports_of_reward_fns(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (module, name)
        for module, names in graph.items()
        if module.split(".")[0] == "reward_fns"
        for name in names
        if name.startswith("writing_rl.reward_loop") and name not in REWARD_FN_CONTRACT
    )


def test_reward_fns_import_only_the_contract_from_the_reward_loop():
    assert reward_loop_imports_of_reward_fns(import_graph()) == []
    other = {"reward_fns.x": {"writing_rl.reward_loop.contract", "writing_rl.reward_loop.failures"}}
    assert reward_loop_imports_of_reward_fns(other) == [("reward_fns.x", "writing_rl.reward_loop.failures")]
