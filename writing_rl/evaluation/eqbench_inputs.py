"""EQ-Bench Creative Writing v3's inputs: its prompts file (``creative_writing_prompts_v3.json``), the pieces to
judge (our JSONL, or the benchmark's runs file), the generation requests, and the judge prompt files. The formats:
docs/writing-benchmarks.md, EQ-Bench Creative Writing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from writing_rl.evaluation import report as out
from writing_rl.evaluation.inputs import InputError, require_fields
from writing_rl.offline.files import lines
from writing_rl.protocols import strip_think
from writing_rl.settings import ConfigError

SEED = "<SEED>"


@dataclass(frozen=True)
class Prompt:
    id: str
    category: str
    title: str
    text: str  # the benchmark's writing_prompt, <SEED> in it
    seeds: tuple[str, ...]

    def seeded(self, iteration: int) -> str:
        """The prompt of an iteration (1-based), as the benchmark's generator builds it."""
        return self.text.replace(SEED, self.seeds[(iteration - 1) % len(self.seeds)])


@dataclass(frozen=True)
class Piece:
    model: str | None  # None: a JSONL line without one (the policy)
    prompt_id: str
    iteration: int
    response: str
    where: str

    @property
    def text(self) -> str | None:
        """What the judges see: the answer without a reasoning block, stripped; None when there is none."""
        return strip_think(self.response)


def read_prompts(path: str | Path) -> dict[str, Prompt]:
    """creative_writing_prompts_v3.json: {id: {category, title, writing_prompt, seed_modifiers}}, in file order."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: expected an object of prompt id -> {{writing_prompt, seed_modifiers, ...}}")
    prompts = {}
    for key, entry in data.items():
        where = f"{path}: prompt {key!r}"
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected an object, got {type(entry).__name__}")
        text, seeds = entry.get("writing_prompt"), entry.get("seed_modifiers")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: writing_prompt must be a non-empty string")
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, str) for s in seeds):
            raise InputError(f"{where}: seed_modifiers must be a non-empty list of strings")
        prompts[str(key)] = Prompt(str(key), str(entry.get("category") or "unknown"), str(entry.get("title") or ""),
                                   text, tuple(seeds))  # fmt: skip
    return prompts


def write_requests(prompts: dict[str, Prompt], iterations: int, path: str | Path) -> int:
    """The generation inputs: one line per iteration and prompt, the seed modifier filled in."""
    if iterations < 1:
        raise InputError(f"--iterations must be at least 1, got {iterations}")
    rows = [
        {"prompt_id": p.id, "iteration": i, "category": p.category, "title": p.title,
         "seed_modifier": p.seeds[(i - 1) % len(p.seeds)], "prompt": p.seeded(i)}
        for i in range(1, iterations + 1) for p in prompts.values()
    ]  # fmt: skip
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    out.write_jsonl(path, rows)
    return len(rows)


def read_pieces(paths: Sequence[str | Path], prompts: dict[str, Prompt]) -> list[Piece]:
    """Pieces from JSONL files of {prompt_id, iteration, model, response}, the benchmark's runs files
    (creative_bench_runs.json) or directories of either; one piece per (model, iteration, prompt)."""
    files: list[Path] = []
    for path in map(Path, paths):
        files += sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".json")) if path.is_dir() else [path]
    pieces, seen = [], {}
    for file in files:
        for piece in _runs_pieces(file, prompts) if file.suffix == ".json" else _jsonl_pieces(file, prompts):
            key = (piece.model, piece.iteration, piece.prompt_id)
            if key in seen:
                raise InputError(f"{piece.where}: a second piece for model {piece.model!r}, iteration "
                                 f"{piece.iteration}, prompt {piece.prompt_id!r} (the first: {seen[key]})")  # fmt: skip
            seen[key] = piece.where
            pieces.append(piece)
    if not pieces:
        raise InputError(f"{', '.join(map(str, paths))}: no pieces")
    return pieces


def _jsonl_pieces(path: Path, prompts: dict[str, Prompt]):
    for where, record in lines(path):
        require_fields(record, ("prompt_id", "iteration", "response"), where)
        model = record.get("model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise InputError(f"{where}: model must be a non-empty string, got {model!r}")
        yield _piece(model, record["prompt_id"], record["iteration"], record["response"], where, prompts)


def _runs_pieces(path: Path, prompts: dict[str, Prompt]):
    """runs[run_key]["creative_tasks"][iteration][prompt_id]["results_by_modifier"][seed]["model_response"]; a
    piece whose generation failed has no model_response and is left out, as the benchmark leaves it out."""
    try:
        runs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(runs, dict) or not all(isinstance(r, dict) and "creative_tasks" in r for r in runs.values()):
        raise InputError(f"{path}: not a runs file (expected {{run_key: {{creative_tasks: ...}}}}); pieces as JSONL "
                         "need the .jsonl suffix")  # fmt: skip
    for run_key, run in runs.items():
        for iteration, tasks in run["creative_tasks"].items():
            for prompt_id, task in (tasks or {}).items():
                where = f"{path}: run {run_key!r}, iteration {iteration}, prompt {prompt_id}"
                blocks = (task or {}).get("results_by_modifier") or {}
                if len(blocks) > 1:
                    raise InputError(f"{where}: {len(blocks)} seed modifiers; a v3 task has one")
                for block in blocks.values():
                    if isinstance(block.get("model_response"), str) and not block.get("generation_failed"):
                        model = task.get("test_model") or run.get("test_model") or run_key
                        yield _piece(model, prompt_id, iteration, block["model_response"], where, prompts)


def _piece(model, prompt_id, iteration, response, where: str, prompts: dict[str, Prompt]) -> Piece:
    if isinstance(prompt_id, bool) or not isinstance(prompt_id, (str, int)) or str(prompt_id) not in prompts:
        raise InputError(f"{where}: prompt_id {prompt_id!r} is not a prompt of the benchmark")
    if isinstance(iteration, str) and iteration.isdigit():
        iteration = int(iteration)
    if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 1:
        raise InputError(f"{where}: iteration must be an integer from 1, got {iteration!r}")
    if not isinstance(response, str):
        raise InputError(f"{where}: response must be a string, got {type(response).__name__}")
    return Piece(model, str(prompt_id), iteration, response, where)


def policy_pieces(pieces: list[Piece], model: str | None) -> tuple[str, list[Piece]]:
    """The policy's name and pieces: ``model``'s, else the file's only model's (a line without one is the policy)."""
    names = list(dict.fromkeys(p.model for p in pieces))
    if model is None:
        if len(names) > 1:
            raise InputError(f"the responses hold {len(names)} models ({', '.join(map(str, names))}): pass --model")
        return names[0] or "policy", pieces
    mine = [p for p in pieces if p.model in (model, None)]
    if not mine:
        raise InputError(f"--model {model!r}: no such model in the responses ({', '.join(map(str, names))})")
    return model, mine


def read_template(path: str | Path, *required: str) -> str:
    text = Path(path).read_text(encoding="utf-8")
    for name in required:
        if "{" + name + "}" not in text:
            raise ConfigError(f"{path}: the template has no {{{name}}} placeholder")
    return text


def fill(template: str, fields: Sequence[str], values: dict[str, str], format_style: bool) -> str:
    """The placeholders filled in one pass (text inside a value is never filled again). ``format_style``: a
    template with a ``{{`` is read as ``str.format`` reads it, ``{{`` and ``}}`` being single braces."""
    names = "|".join(map(re.escape, fields))
    if format_style and "{{" in template:
        return re.sub(r"\{\{|\}\}|\{(" + names + r")\}", lambda m: values[m.group(1)] if m.group(1) else m.group(0)[0],
                      template)  # fmt: skip
    return re.sub(r"\{(" + names + r")\}", lambda m: values[m.group(1)], template)
