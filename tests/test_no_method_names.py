"""No generic module names a method: the registry (writing_rl/reward_loop/registry.py) is the one list of them.

A generic module is one of the reward loop, the judge, the reward terms, the tools and the scripts. It names a
method when it holds, outside a docstring or comment, a registered method's name, one of its extras' names or
its module as a string, or imports a method's module or an extra's package. A method lives in its own module
(reward_fns/) and declares there what the tools iterate over: options, settings, probe placement, estimators,
the keys it logs. The Writing-RL method shares its name with the package (``writing_rl``): that string names
the package (a logger, the verl plugin) wherever it appears, so it is not counted as the method's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from writing_rl.reward_loop.registry import extras, methods

REPO = Path(__file__).resolve().parent.parent
GENERIC = ("writing_rl/reward_loop", "writing_rl/judge", "writing_rl/terms", "writing_rl/tools", "scripts")
# Scripts that drive named overlays end to end (a tiny run of each trainer, the hand-made breaks of the methods'
# files, the mutation tool's areas, the GenRM chains): they are test harnesses over the methods, not code a
# new method has to be added to.
HARNESSES = {
    "scripts/tiny_train.py",
    "scripts/mutations.py",
    "scripts/mutation_score.py",
    "scripts/real_genrm.py",
    "scripts/tiny_genrm_chain.py",
    "scripts/tiny_results.py",
    "scripts/tiny_sft.py",
    "scripts/smollm2_answers.py",
}
PACKAGE = "writing_rl"


def method_words() -> tuple[set[str], tuple[str, ...]]:
    """(strings that name a method, module prefixes that hold one)."""
    known = methods()
    words = {name for name in known} | set(extras())
    modules = {m.module for m in known.values()} | {type(e).__module__.rsplit(".", 1)[0] for e in extras().values()}
    words |= modules | {f"pkg://{m}" for m in modules}
    return words - {PACKAGE}, tuple(sorted(modules))


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def names_of_methods(path: Path, words: set[str], modules: tuple[str, ...]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            value = node.value
            if value in words or any(f"{m}." in value or f"{m}:" in value for m in modules):
                found.append(f"line {node.lineno}: {value!r:.80}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"line {node.lineno}: import {m}" for m in imported if m in modules or m.startswith(modules)]
    return found


def generic_modules() -> list[Path]:
    paths = [p for root in GENERIC for p in sorted((REPO / root).rglob("*.py"))]
    return [p for p in paths if str(p.relative_to(REPO)) not in HARNESSES]


def test_the_scan_finds_a_method_named_in_a_string_or_an_import(tmp_path):
    words, modules = method_words()
    assert {"brpo", "tournament", "curriculum", "reward_fns.pairwise", "pkg://reward_fns.rubric"} <= words
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""brpo in a docstring is prose."""\n'
        "import reward_fns.brpo\n"
        "from writing_rl.curriculum.config import CurriculumConfig\n"
        'ESTIMATOR = "brpo"\n'
        'PATH = "pkg://reward_fns.tournament"\n'
        'logger = "writing_rl"  # the package\n'
    )
    found = names_of_methods(sample, words, modules)
    assert [line.split(":")[0] for line in found] == ["line 2", "line 3", "line 4", "line 5"], found


@pytest.mark.parametrize("path", generic_modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_generic_module_names_a_method(path):
    words, modules = method_words()
    assert names_of_methods(path, words, modules) == [], (
        f"{path.relative_to(REPO)} names a method: declare it on the method (RewardMethod, reward_loop/contract.py) "
        "and read it from the registry"
    )
