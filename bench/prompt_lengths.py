"""Prompt token lengths of a long-form dataset, against candidate ``data.max_prompt_length`` values.

    python bench/prompt_lengths.py --input prompts.jsonl --tokenizer /models/Qwen3-8B [--key query]

Reads a JSONL (one object per line, the prompt under ``--key``) or a verl parquet (its ``prompt``
messages), counts tokens as verl's RLHFDataset does (chat template + generation prompt) and prints
the percentiles and the share of rows each candidate limit would drop. The defaults in
``hydra_configs/judge_base.yaml`` come from this on WritingBench's length subset
(docs/configuration.md, "Sequence lengths and memory").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from writing_rl.tools.preflight.data_checks import Row, load_tokenizer, prompt_token_lengths  # noqa: E402

LIMITS = (1024, 2048, 4096, 6144, 8192, 16384)


def read_prompts(path: Path, key: str) -> list[Row]:
    if path.suffix == ".parquet":
        import pandas as pd

        frame = pd.read_parquet(path, columns=["prompt"])
        return [Row(i, list(messages), None, {}) for i, messages in enumerate(frame["prompt"])]
    with path.open(encoding="utf-8") as f:
        texts = [json.loads(line)[key] for line in f if line.strip()]
    return [Row(i, [{"role": "user", "content": text}], None, {}) for i, text in enumerate(texts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, type=Path, help="JSONL of prompts or a verl parquet")
    parser.add_argument("--tokenizer", required=True, help="policy tokenizer (HF dir)")
    parser.add_argument("--key", default="prompt", help="JSONL field holding the prompt (default: prompt)")
    args = parser.parse_args()

    rows = read_prompts(args.input, args.key)
    lengths = prompt_token_lengths(load_tokenizer(args.tokenizer, False), rows, {})
    chars = np.array([len(r.prompt) for r in rows])
    print(f"{len(rows)} prompts, {chars.mean():.0f} characters on average")
    percentiles = " ".join(f"p{q} {int(np.percentile(lengths, q))}" for q in (50, 90, 95, 99))
    print(f"tokens: mean {lengths.mean():.0f} {percentiles} max {lengths.max()}")
    for limit in LIMITS:
        print(f"  max_prompt_length={limit:>5}: {np.mean(lengths > limit):6.1%} of rows over (dropped)")


if __name__ == "__main__":
    main()
