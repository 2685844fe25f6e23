"""Preference pairs and ranked groups from real answers and degraded copies of them, labelled by construction.

Input: the JSONL answers scripts/smollm2_answers.py writes (``id`` names the prompt). Into the output dir go
pairs_train.jsonl and pairs_heldout.jsonl (the answer chosen, one of its copies from ``writing_rl.data.degrade``
rejected, a critique for each order), which ``build_parquet.py pref-sft`` / ``pref-rl`` read as they are, and
groups_train.jsonl and groups_heldout.jsonl (the answer and its copies in a seeded order, scored by
``degrade.RANK_SCORES``), which ``gqm-rl`` and ``gqm-sft --no-cot`` read as writing groups. Each file is
complete or not there; the same input and seed give the same files. Prompts, not answers, are split, and a
``swapped`` copy comes from answers of the same split only, so no held-out prompt or answer text appears in the
train files. The command and the GenRM it trains: docs/genrm/training.md#real-text-with-labels-no-judge-gave.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from writing_rl.data.degrade import ORIGINAL, RANK_SCORES, SEVERITY, critique, degraded_copies  # noqa: E402
from writing_rl.files import atomic_write_text, read_jsonl  # noqa: E402

SPLITS = ("train", "heldout")
MIN_GROUP_COPIES = 2  # a group ranks the original and at least 2 copies: 3 candidates or more


def read_answers(path: str | Path) -> list[dict]:
    """The answer rows, checked: a string ``id``, ``prompt`` and non-empty ``answer``, an integer ``sample``."""
    rows = []
    for number, row in read_jsonl(path):
        for key in ("id", "prompt", "answer"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise ValueError(f"{path}:{number}: '{key}' must be a non-empty string")
        rows.append({"id": row["id"], "prompt": row["prompt"], "answer": row["answer"], "sample": int(row["sample"])})
    return rows


def split_prompts(prompt_ids: list[str], heldout: float, seed: int) -> dict[str, str]:
    """Each prompt id's split: a seeded ``heldout`` share of the distinct ids (at least one when there are two
    or more, and never all of them) is ``heldout``, the rest ``train``."""
    if not 0 <= heldout < 1:
        raise ValueError(f"--heldout must be in [0, 1), got {heldout}")
    ids = sorted(set(prompt_ids))
    random.Random(seed).shuffle(ids)
    count = min(max(round(heldout * len(ids)), 1 if heldout and len(ids) > 1 else 0), len(ids) - 1)
    return {prompt_id: "heldout" if i < count else "train" for i, prompt_id in enumerate(ids)}


def with_copies(answers: list[dict], seed: int) -> list[tuple[dict, dict[str, str]]]:
    """Each answer and its degraded copies; ``swapped`` draws from the given answers to other prompts."""
    out = []
    for answer in answers:
        others = [a["answer"] for a in answers if a["id"] != answer["id"]]
        out.append((answer, degraded_copies(answer["answer"], others, seed)))
    return out


def pair_rows(answer: dict, copies: dict[str, str], critiques: bool = True) -> list[dict]:
    """One preference pair per copy: the original chosen, the copy rejected; with ``critiques``, the critique of
    each order (the copy as Response B, then as Response A)."""
    critiqued = {
        name: {"critique": critique(name, "B"), "critique_swapped": critique(name, "A")} if critiques else {}
        for name in copies
    }
    return [
        {
            "id": f"{answer['id']}/{answer['sample']}/{name}",
            "prompt_id": answer["id"],
            "sample": answer["sample"],
            "prompt": answer["prompt"],
            "chosen": answer["answer"],
            "rejected": copy,
            "degradation": name,
            **critiqued[name],
        }
        for name, copy in copies.items()
    ]


def group_row(answer: dict, copies: dict[str, str], seed: int, max_copies: int = len(SEVERITY)) -> dict | None:
    """The original and up to ``max_copies`` copies (a seeded draw when more apply), in a seeded order so the
    best is not always first, with their severity scores; None under ``MIN_GROUP_COPIES`` copies."""
    if len(copies) < MIN_GROUP_COPIES:
        return None
    rng = random.Random(f"{seed}\x00group\x00{answer['id']}\x00{answer['sample']}")
    names = sorted(copies, key=SEVERITY.index)
    if len(names) > max_copies:
        names = sorted(rng.sample(names, max_copies), key=SEVERITY.index)
    candidates = [(ORIGINAL, answer["answer"])] + [(name, copies[name]) for name in names]
    rng.shuffle(candidates)
    return {
        "id": f"{answer['id']}/{answer['sample']}",
        "prompt_id": answer["id"],
        "sample": answer["sample"],
        "prompt": answer["prompt"],
        "mt_texts": [text for _, text in candidates],
        "scores": [RANK_SCORES[name] for name, _ in candidates],
        "degradations": [name for name, _ in candidates],
    }


def build(
    answers: list[dict], heldout: float, seed: int, max_copies: int, critiques: bool = True
) -> dict[str, dict[str, list[dict]]]:
    """{"pairs"|"groups": {split: rows}}: the rows of every answer, split by prompt."""
    if not MIN_GROUP_COPIES <= max_copies <= len(SEVERITY):
        raise ValueError(f"--max-copies must be {MIN_GROUP_COPIES}..{len(SEVERITY)}, got {max_copies}")
    split_of = split_prompts([a["id"] for a in answers], heldout, seed)
    rows: dict[str, dict[str, list[dict]]] = {"pairs": {s: [] for s in SPLITS}, "groups": {s: [] for s in SPLITS}}
    for split in SPLITS:
        for answer, copies in with_copies([a for a in answers if split_of[a["id"]] == split], seed):
            rows["pairs"][split] += pair_rows(answer, copies, critiques)
            group = group_row(answer, copies, seed, max_copies)
            if group is not None:
                rows["groups"][split].append(group)
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def summary(answers: list[dict], rows: dict[str, dict[str, list[dict]]]) -> list[str]:
    lines = []
    for split in SPLITS:
        prompts = {r["prompt_id"] for r in rows["pairs"][split]}
        kinds = Counter(r["degradation"] for r in rows["pairs"][split])
        sizes = Counter(len(g["mt_texts"]) for g in rows["groups"][split])
        lines.append(
            f"{split}: {len(prompts)} prompts, {len(rows['pairs'][split])} pairs "
            f"({', '.join(f'{k} {kinds[k]}' for k in SEVERITY)}), {len(rows['groups'][split])} groups "
            f"(by size: {', '.join(f'{n}: {sizes[n]}' for n in sorted(sizes))})"
        )
    return [f"{len(answers)} answers to {len({a['id'] for a in answers})} prompts", *lines]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--input", required=True, help="JSONL answers {id, prompt, answer, sample}")
    p.add_argument("--output", required=True, type=Path, help="directory for the four JSONL files")
    p.add_argument("--heldout", type=float, default=0.2, help="share of the prompts held out")
    p.add_argument("--seed", type=int, default=0, help="the held-out prompts, the copies and the group orders")
    p.add_argument("--max-copies", type=int, default=len(SEVERITY), help="degraded copies per group at most")
    p.add_argument("--no-critique", action="store_true", help="pairs without the critique naming the damage")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    answers = read_answers(args.input)
    rows = build(answers, args.heldout, args.seed, args.max_copies, critiques=not args.no_critique)
    args.output.mkdir(parents=True, exist_ok=True)
    for kind, splits in rows.items():
        for split, split_rows in splits.items():
            write_jsonl(args.output / f"{kind}_{split}.jsonl", split_rows)
    print("\n".join(summary(answers, rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
