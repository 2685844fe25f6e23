"""What serving a real judge costs: ``writing-rl serve-judge --engine hf`` against plain batched ``transformers``
generation of the same prompts on the same model, in one run, tokens per second side by side.

    python bench/serve_judge_vs_generate.py [--requests 64] [--max-tokens 48] [--batch 16] [--threads 2]

The model is SmolLM2-135M-Instruct (``writing-rl model smollm2``); the prompts are pairwise judge requests built
from its own answers to the shipped prompts (examples/real/), as a reward fn sends them; greedy, ``--max-tokens``
new tokens at most.

  plain generate   this process: the prompts in batches of ``--batch`` (left padded, chat template applied), one
                   ``model.generate`` call each, ``--threads`` torch threads (the ideal: no server, no queue)
  serve-judge      the command in a process of its own (one replica, ``--max-batch-size`` = ``--batch``,
                   ``--num-cpus`` = ``--threads``), every request sent at once over HTTP on 127.0.0.1

Printed: completion tokens, seconds and tokens per second of each, and serve-judge's ratio to plain generate (the
target: 0.9x or more). Each side counts its own completion tokens (serve-judge's from the replies' usage).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))


def judge_requests(n: int, seed: int = 0) -> list[list[dict]]:
    """``n`` pairwise judge requests: two of SmolLM2's answers to one shipped prompt, as BRPO would compare them."""
    from writing_rl.protocols.prompts import pairwise_messages

    answers = [json.loads(line) for line in (REPO / "examples/real/smollm2_answers.jsonl").read_text().splitlines()]
    by_prompt: dict[str, list[dict]] = {}
    for answer in answers:
        by_prompt.setdefault(answer["id"], []).append(answer)
    pairs = [group for group in by_prompt.values() if len(group) >= 2]
    rng = random.Random(seed)
    requests = []
    for index in range(n):
        first, second = rng.sample(pairs[index % len(pairs)], 2)
        requests.append(pairwise_messages(first["prompt"], first["answer"], second["answer"]))
    return requests


def plain_generate(model_dir: Path, requests, max_tokens: int, batch: int, threads: int) -> tuple[int, float]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokens, start = 0, time.perf_counter()
    for begin in range(0, len(requests), batch):
        encoded = tokenizer.apply_chat_template(requests[begin : begin + batch], add_generation_prompt=True,
                                                return_dict=True, return_tensors="pt", padding=True)  # fmt: skip
        with torch.inference_mode():
            out = model.generate(**encoded, max_new_tokens=max_tokens, do_sample=False, top_p=None, top_k=None,
                                 temperature=None, pad_token_id=tokenizer.pad_token_id)  # fmt: skip
        for row in out[:, encoded["input_ids"].shape[1] :].tolist():
            stop = row.index(tokenizer.eos_token_id) + 1 if tokenizer.eos_token_id in row else len(row)
            tokens += stop
    return tokens, time.perf_counter() - start


def serve_judge(model_dir: Path, requests, max_tokens: int, batch: int, threads: int, log: Path) -> tuple[int, float]:
    import aiohttp

    from local_judge import ServedJudge  # scripts/local_judge.py: started, waited for, stopped with its Ray

    options = ("--max-batch-size", str(batch), "--num-cpus", str(threads), "--device", "cpu")
    with ServedJudge(model_dir, "judge", log, *options) as served:

        async def burst() -> int:
            body = {"model": "judge", "max_tokens": max_tokens, "temperature": 0}
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3600)) as session:

                async def one(messages) -> int:
                    async with session.post(f"{served.base_url}/chat/completions", json={**body, "messages": messages}) as reply:
                        reply.raise_for_status()
                        return (await reply.json())["usage"]["completion_tokens"]

                return sum(await asyncio.gather(*(one(m) for m in requests)))

        start = time.perf_counter()
        tokens = asyncio.run(burst())
        return tokens, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    from writing_rl.models import model_dir

    model = model_dir("smollm2")
    requests = judge_requests(args.requests)
    print(f"SmolLM2-135M-Instruct, {len(requests)} pairwise judge requests, greedy, max_tokens {args.max_tokens}, "
          f"batches of {args.batch}, {args.threads} threads")  # fmt: skip
    plain = plain_generate(model, requests, args.max_tokens, args.batch, args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        served = serve_judge(model, requests, args.max_tokens, args.batch, args.threads, Path(tmp) / "serve-judge.log")
    print(f"{'setup':<18}{'tokens':>8}{'seconds':>10}{'tok/s':>9}")
    for name, (tokens, seconds) in (("plain generate", plain), ("serve-judge", served)):
        print(f"{name:<18}{tokens:>8}{seconds:>10.1f}{tokens / seconds:>9.1f}")
    ratio = (served[0] / served[1]) / (plain[0] / plain[1])
    print(f"serve-judge / plain generate: {ratio:.2f}x tokens per second (target 0.9x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
