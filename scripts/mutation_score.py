"""The reward path's mutation score, measured by a tool: mutmut mutates one module at a time and runs, for each
mutant, only the fast tests that reach the function it changed.

    .venv/bin/python scripts/mutation_score.py writing_rl/judge/votes.py       # one module (or several)
    .venv/bin/python scripts/mutation_score.py judge tournament                 # the modules of some areas
    .venv/bin/python scripts/mutation_score.py --changed main                  # what a change touched
    .venv/bin/python scripts/mutation_score.py --all                           # every module of REWARD_PATH
    .venv/bin/python scripts/mutation_score.py --list                          # the modules and their tests

For each module: a copy of the repository (the working tree: tracked and untracked files, not ignored ones)
under a temporary directory, ``[tool.mutmut]`` set there (``only_mutate`` the module; its tests as its area's
file names them, else every fast test file that imports the module), ``mutmut run``, then its counts and the
survivors. Each area of REWARD_PATH has a file, scripts/mutation_areas/AREA.json:
``{"<module>": {"tests": [...], "equivalent": {"<mutant>": "why it cannot change behaviour"}}}``; an
equivalent mutant leaves the score's denominator. Prints a line per module and each survivor
not known to be equivalent, with ``mutmut show``'s diff (``--quiet``: names only); writes OUT/scores.json
(default runs/mutation/). Exit 1 when a module scores under --target (default 0.9).

Not part of CI: on 2 cores a module takes from 20 s to a few minutes; docs/development.md holds the table.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from mutations import copy_repository  # noqa: E402

AREAS = REPO / "scripts" / "mutation_areas"
TARGET = 0.9
# The reward path (issue 54), area by area.
REWARD_PATH = {
    "reward_fns": sorted(str(p.relative_to(REPO)) for p in (REPO / "reward_fns").glob("*.py")),
    "tournament": [f"writing_rl/tournament/{name}.py" for name in ("aggregation", "schedules", "metrics")],
    "judge": [f"writing_rl/judge/{name}.py" for name in ("votes", "ensemble", "retry", "hedge", "limiter", "errors")],
    "reward_loop": [
        f"writing_rl/reward_loop/{name}.py"
        for name in ("failures", "fn_options", "fn_extras", "scoring", "sample", "group/collector")
    ],
    "protocols": [f"writing_rl/protocols/{name}.py" for name in ("pairwise", "gqm_reply", "rubric", "comparison")],
    "curriculum": [f"writing_rl/curriculum/{name}.py" for name in ("scheduler", "groups", "extra", "handle", "start")],
}
SLOW_MARKS = ("pytest.mark.trainer", "pytest.mark.release")


def modules_of(names: list[str]) -> list[str]:
    """Areas of REWARD_PATH expanded; paths kept (checked to exist)."""
    out = []
    for name in names:
        paths = REWARD_PATH.get(name) or [name]
        for path in paths:
            if not (REPO / path).is_file():
                raise SystemExit(f"no module {path!r}: expected a .py file or one of {', '.join(REWARD_PATH)}")
            out.append(path)
    return list(dict.fromkeys(out))


def changed_modules(rev: str) -> list[str]:
    listed = subprocess.run(["git", "-C", str(REPO), "diff", "--name-only", rev], capture_output=True, text=True)
    if listed.returncode:
        raise SystemExit(f"git diff {rev}: {listed.stderr.strip()}")
    touched = set(listed.stdout.split())
    return [path for paths in REWARD_PATH.values() for path in paths if path in touched]


def dotted(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def known(path: str) -> dict:
    """The module's entry in its area's file: {"tests": [...], "equivalent": {mutant: reason}}, either optional."""
    modules = {}
    for area in sorted(AREAS.glob("*.json")):
        modules.update(json.loads(area.read_text()))
    return modules.get(path, {})


def tests_for(path: str) -> tuple[str, ...]:
    """The tests its area's file names, else every test file without a slow mark that imports the module."""
    if known(path).get("tests"):
        return tuple(known(path)["tests"])
    name = dotted(path)
    package, _, leaf = name.rpartition(".")
    uses = re.compile(rf"\b{re.escape(name)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(leaf)}\b")
    found = []
    for test in sorted((REPO / "tests").glob("test_*.py")):
        text = test.read_text()
        if uses.search(text) and not any(mark in text for mark in SLOW_MARKS):
            found.append(str(test.relative_to(REPO)))
    return tuple(found)


def mutmut_config(path: str, tests: tuple[str, ...]) -> str:
    def array(values) -> str:
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    also = ("reward_fns", "data_prep", "hydra_configs", "examples", "scripts", "bench", "writing_rl")
    return (
        "\n[tool.mutmut]\n"
        f"source_paths = {array(['writing_rl', 'reward_fns'])}\n"
        f"only_mutate = {array([path])}\n"
        f"pytest_add_cli_args_test_selection = {array(tests)}\n"
        f"pytest_add_cli_args = {array(['-p', 'no:cacheprovider', '-q'])}\n"
        f"also_copy = {array(also)}\n"
    )


def mutmut(root: Path, *args: str, timeout_s: float = 3600) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=timeout_s)


def score_module(path: str, scratch: Path, show: bool, jobs: int | None = None) -> dict:
    tests = tests_for(path)
    equivalents = known(path).get("equivalent", {})
    if not tests:
        return {"module": path, "error": f"no fast test imports it: name its tests in {AREAS.name}/"}
    root = copy_repository(scratch / dotted(path), None)
    with (root / "pyproject.toml").open("a") as config:
        config.write(mutmut_config(path, tests))
    start = time.monotonic()
    run = mutmut(root, "run", *(("--max-children", str(jobs)) if jobs else ()))
    if run.returncode:
        return {"module": path, "tests": tests, "error": f"mutmut run exited {run.returncode}: {run.stdout[-1500:]}"}
    mutmut(root, "export-cicd-stats")
    counts = json.loads((root / "mutants" / "mutmut-cicd-stats.json").read_text())
    lines = mutmut(root, "results").stdout.splitlines()
    survivors = [line.split(":")[0].strip() for line in lines if line.strip().endswith((": survived", ": no tests"))]
    equivalent = [name for name in survivors if name in equivalents]
    open_ = [name for name in survivors if name not in equivalents]
    judged = counts["total"] - len(equivalent) - counts.get("skipped", 0)
    result = {
        "module": path,
        "tests": tests,
        "total": counts["total"],
        "killed": counts["killed"] + counts.get("timeout", 0),
        "survived": open_,
        "equivalent": equivalent,
        "score": round((counts["killed"] + counts.get("timeout", 0)) / judged, 4) if judged else None,
        "seconds": round(time.monotonic() - start),
    }
    if show:
        result["diffs"] = {name: mutmut(root, "show", name).stdout for name in open_}
    return result


def line(result: dict) -> str:
    if "error" in result:
        return f"{result['module']:<44} ERROR {result['error']}"
    score = "-" if result["score"] is None else f"{result['score']:.1%}"
    return (
        f"{result['module']:<44} {score:>7}  killed {result['killed']}/{result['total']}, "
        f"equivalent {len(result['equivalent'])}, surviving {len(result['survived'])} ({result['seconds']} s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutation_score.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"module paths or areas ({', '.join(REWARD_PATH)})")
    parser.add_argument("--all", action="store_true", help="every module of REWARD_PATH")
    parser.add_argument("--changed", metavar="REV", help="the modules of REWARD_PATH that differ from REV")
    parser.add_argument("--list", action="store_true", help="the modules and the tests each is run against")
    parser.add_argument("--target", type=float, default=TARGET, help=f"the least score (default {TARGET})")
    parser.add_argument("--quiet", action="store_true", help="survivors' names only, no diffs")
    parser.add_argument("--jobs", type=int, help="mutants tested at once (default: mutmut's, one per core)")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "mutation", help="default runs/mutation")
    args = parser.parse_args(argv)
    names = list(args.modules) + (list(REWARD_PATH) if args.all else [])
    paths = modules_of(names) + (changed_modules(args.changed) if args.changed else [])
    if not paths:
        parser.error("name modules or areas, --all or --changed REV")
    if args.list:
        for path in paths:
            print(f"{path}: {' '.join(tests_for(path)) or '(no fast test imports it)'}")
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="mutation-score-") as scratch:
        for path in paths:
            result = score_module(path, Path(scratch), show=not args.quiet, jobs=args.jobs)
            results.append(result)
            print(line(result), flush=True)
            for name in result.get("survived", []):
                print(f"   survived: {name}")
                if not args.quiet:
                    print("      " + result["diffs"][name].strip().replace("\n", "\n      "))
    args.out.mkdir(parents=True, exist_ok=True)
    scores = args.out / "scores.json"
    known = json.loads(scores.read_text()) if scores.exists() else {}
    known.update({r["module"]: {k: v for k, v in r.items() if k != "diffs"} for r in results})
    from writing_rl.files import atomic_write_text

    atomic_write_text(scores, json.dumps(known, indent=2) + "\n")
    low = [r["module"] for r in results if "error" in r or (r["score"] is not None and r["score"] < args.target)]
    if low:
        print(f"under {args.target:.0%} (or not measured): {', '.join(low)}")
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
