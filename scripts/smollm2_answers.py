"""Real answers to writing prompts from a real instruct model, generated once and kept: SmolLM2-135M-Instruct
(``writing_rl.models.model_dir("smollm2")``, no model hub needed) samples K answers per prompt on the CPU.

    .venv/bin/python scripts/smollm2_answers.py [--prompts FILE] [--output FILE] [--samples K] [--seed S]
                                                [--temperature T] [--top-p P] [--max-new-tokens N]
                                                [--batch-size B] [--min-sentences M] [--threads T]

Input: JSONL rows ``{"id", "prompt"}`` (default examples/real/writing_prompts.jsonl). Output: JSONL rows
``{"id", "prompt", "answer", "sample"}`` (``sample``: 0..K-1), written at once or not at all (default
examples/real/smollm2_answers.jsonl). These answers are the originals that data_prep/degraded_pairs.py damages
into preference pairs and ranked groups whose labels need no judge.

An answer stopped by the token limit loses its unfinished last sentence, so an original never stops mid-sentence
the way a ``cut`` copy does. Answers left with fewer than ``--min-sentences`` sentences (or empty) are dropped
and counted. Sampling is seeded per batch: the same arguments give the same file on the same machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from writing_rl.data.degrade import split_sentences  # noqa: E402
from writing_rl.files import atomic_write_text, read_jsonl  # noqa: E402
from writing_rl.models import model_dir  # noqa: E402

DEFAULT_PROMPTS = REPO / "examples/real/writing_prompts.jsonl"
DEFAULT_OUTPUT = REPO / "examples/real/smollm2_answers.jsonl"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=Path, default=DEFAULT_PROMPTS, help="JSONL rows {id, prompt}")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSONL rows {id, prompt, answer, sample}")
    p.add_argument("--samples", type=int, default=2, metavar="K", help="answers per prompt (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-p", type=float, default=0.9)
    p.add_argument("--max-new-tokens", type=int, default=120)
    p.add_argument("--batch-size", type=int, default=40, help="sequences generated together (default 40)")
    p.add_argument("--min-sentences", type=int, default=2, help="drop shorter answers (default 2)")
    p.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: torch's); 1 is fastest on a busy machine"
    )
    return p.parse_args(argv)


def read_prompts(path: Path) -> list[dict]:
    rows = [{"id": str(row["id"]), "prompt": row["prompt"]} for _, row in read_jsonl(path)]
    ids = [row["id"] for row in rows]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: prompt ids repeat")
    return rows


def without_unfinished_tail(answer: str) -> str:
    """The answer up to its last finished sentence (everything, when it has only one)."""
    parts = split_sentences(answer)
    last = parts.sentences[-1] if parts.sentences else ""
    if len(parts.sentences) < 2 or last.rstrip("\"'\u201d\u2019)]").endswith((".", "!", "?")):
        return answer.strip()
    return parts.text()[: -len(last)].rstrip()


def generate(model, tokenizer, prompts: list[str], args: argparse.Namespace, seed: int) -> list[tuple[str, bool]]:
    """(answer, stopped by the token limit) for each prompt, sampled together in one left-padded batch."""
    import torch

    chats = [[{"role": "user", "content": p}] for p in prompts]
    texts = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in chats]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(
            **batch,
            do_sample=True,
            temperature=args.temperature,
            top_p=args.top_p,
            max_new_tokens=args.max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    new = out[:, batch["input_ids"].shape[1] :]
    results = []
    for tokens in new:
        finished = bool((tokens == tokenizer.eos_token_id).any())
        results.append((tokenizer.decode(tokens, skip_special_tokens=True).strip(), not finished))
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if args.threads:
        torch.set_num_threads(args.threads)
    prompts = read_prompts(args.prompts)
    folder = model_dir("smollm2")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    jobs = [(row, k) for k in range(args.samples) for row in prompts]
    kept, dropped, truncated = [], 0, 0
    started = time.monotonic()
    for start in range(0, len(jobs), args.batch_size):
        chunk = jobs[start : start + args.batch_size]
        answers = generate(model, tokenizer, [row["prompt"] for row, _ in chunk], args, args.seed + start)
        for (row, k), (answer, hit_limit) in zip(chunk, answers):
            truncated += hit_limit
            answer = without_unfinished_tail(answer) if hit_limit else answer
            if not answer or len(split_sentences(answer).sentences) < args.min_sentences:
                dropped += 1
                continue
            kept.append({"id": row["id"], "prompt": row["prompt"], "answer": answer, "sample": k})
        print(f"{min(start + args.batch_size, len(jobs))}/{len(jobs)} answers, {time.monotonic() - started:.0f} s")
    position = {row["id"]: i for i, row in enumerate(prompts)}
    kept.sort(key=lambda r: (position[r["id"]], r["sample"]))  # the prompts file's order
    atomic_write_text(args.output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept))
    print(
        f"{len(kept)} answers kept, {dropped} dropped (empty or under {args.min_sentences} sentences), "
        f"{truncated} stopped by the token limit (unfinished last sentence removed); "
        f"{time.monotonic() - started:.0f} s -> {args.output}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
