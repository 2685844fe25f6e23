"""`build_parquet.py gqm-rl` vs a row-by-row `DataFrame.iterrows` builder, on synthetic ranked groups.

    python bench/gqm_build.py                      # 100k groups, subgroup 4 + shuffle 4
    python bench/gqm_build.py --groups 20000 --sizes 5000,20000

Both builders write the same rows: the same augmentation (both call ``augmentation_plan`` with the
same content seeds), the same prompts and ground truths. The baseline does what a one-off script would:
iterrows, ``gqm_prompt.build_prompt`` and ``json.dumps`` per output row, one dict per row, a DataFrame and
``to_parquet``. Ours streams chunks, builds each group's prompts at once as UTF-8
(``GroupPrompter.prompts_utf8``: template and candidate blocks encoded once per group) and writes
columnar Arrow tables. Each build runs in its own process, with no worker pool; peak RSS is that process's
maximum resident set (VmHWM). The outputs are compared row by row afterwards (every column); the run
fails if they differ. Rows/s are given per wall second and per CPU second: on a shared machine the CPU
figures are the steadier ones, and the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PAIRS = [("zh", "en"), ("en", "zh"), ("en", "de"), ("de", "en")]
WORDS = "the river carried old songs past quiet towns where lanterns burned until morning light returned".split()
HANZI = "河流带着古老的歌谣流过安静的小镇灯笼一直燃烧到晨光归来"


def make_input(path: Path, groups: int, candidates: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    writer = None
    for start in range(0, groups, 10_000):
        rows = []
        for i in range(start, min(groups, start + 10_000)):
            src, trg = PAIRS[i % len(PAIRS)]
            source = (
                "".join(rng.choice(HANZI) for _ in range(40)) if src == "zh" else " ".join(rng.choices(WORDS, k=18))
            )
            texts = [" ".join(rng.choices(WORDS, k=rng.randint(12, 24))) + f" ({i}.{j})" for j in range(candidates)]
            rows.append(
                {
                    "src_text": source,
                    "src_lang": src,
                    "trg_lang": trg,
                    "mt_texts": texts,
                    "scores": [rng.randint(0, 10) for _ in texts],
                }
            )
        table = pa.Table.from_pylist(rows)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def baseline_build(input_path: str, output_path: str, subgroups: int, shuffles: int, seed: int) -> int:
    """What a one-off script does: iterrows, one dict per output row, DataFrame, to_parquet."""
    import pandas as pd

    from writing_rl.data.builders.gqm_augmentation import augmentation_plan
    from writing_rl.data.fields import content_seed
    from writing_rl.protocols import gqm, gqm_prompt

    frame = pd.read_parquet(input_path)
    items = []
    for group_id, (_, row) in enumerate(frame.iterrows()):
        candidates = list(row["mt_texts"])
        scores = [int(s) for s in row["scores"]]
        first: dict[str, int] = {}
        classes = [first.setdefault(text.strip(), i) for i, text in enumerate(candidates)]
        rng = random.Random(content_seed(seed, row["src_text"], candidates))
        for order, kind in augmentation_plan(classes, subgroups, shuffles, rng):
            labels = gqm.LABELS[: len(order)]
            prompt = gqm_prompt.build_prompt(
                [candidates[i] for i in order],
                source_text=row["src_text"],
                src_lang=row["src_lang"],
                trg_lang=row["trg_lang"],
            )
            truth = json.dumps({labels[j]: scores[i] for j, i in enumerate(order)})
            items.append(
                {
                    "data_source": "gqm",
                    "prompt": [{"role": "user", "content": prompt}],
                    "ability": "ranking",
                    "reward_model": {"style": "rule", "ground_truth": truth},
                    "extra_info": {
                        "index": group_id,
                        "split": "train",
                        "prompt_type": "ranking_score",
                        "src_lang": row["src_lang"],
                        "trg_lang": row["trg_lang"],
                        "group_size": len(order),
                        "candidate_order": list(order),
                        "augmentation": kind,
                    },
                }
            )
    pd.DataFrame(items).to_parquet(output_path, index=False)
    return len(items)


def ours_build(input_path: str, output_path: str, subgroups: int, shuffles: int, seed: int) -> int:
    from data_prep.build_parquet import main

    out_dir = Path(output_path).with_suffix("")
    argv = ["gqm-rl", "--quiet", "--input", input_path, "--output", str(out_dir), "--seed", str(seed),
            "--subgroup-augment", str(subgroups), "--shuffle-augment", str(shuffles)]  # fmt: skip
    if main(argv) != 0:
        raise SystemExit("gqm-rl failed")
    (out_dir / "train.parquet").rename(output_path)
    import pyarrow.parquet as pq

    return pq.ParquetFile(output_path).metadata.num_rows


def _child(builder: str, input_path: str, output_path: str, subgroups: int, shuffles: int, seed: int) -> None:
    """Run one build in this (fresh) process and print its numbers as JSON."""
    import contextlib
    import io

    build = {"ours": ours_build, "iterrows": baseline_build}[builder]
    before = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = before.ru_utime + before.ru_stime
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        rows = build(input_path, output_path, subgroups, shuffles, seed)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    print(json.dumps({"rows": rows, "seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak_rss_mb()}))


def peak_rss_mb() -> float:
    """This program's peak resident set (VmHWM). Not ru_maxrss: Linux carries that across exec, so a
    child would report the RSS its parent had when it forked."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux


def run_child(builder: str, input_path: Path, output_path: Path, args) -> dict:
    command = [sys.executable, __file__, "--child", builder, str(input_path), str(output_path),
               str(args.subgroup), str(args.shuffle), str(args.seed)]  # fmt: skip
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _load() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg()) + " (1 / 5 / 15 min)"


def same_rows(a: Path, b: Path) -> bool:
    import pyarrow.parquet as pq

    left = pq.ParquetFile(a).iter_batches(batch_size=20_000)
    right = pq.ParquetFile(b).iter_batches(batch_size=20_000)
    for x, y in zip(left, right):
        for name in ("data_source", "prompt", "ability", "reward_model", "extra_info"):
            if x.column(name).to_pylist() != y.column(name).to_pylist():
                return False
    return pq.ParquetFile(a).metadata.num_rows == pq.ParquetFile(b).metadata.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=100_000, help="groups in the largest run")
    parser.add_argument("--sizes", help="comma-separated group counts (default: groups/10 and groups)")
    parser.add_argument("--candidates", type=int, default=4, help="candidates per group")
    parser.add_argument("--subgroup", type=int, default=4)
    parser.add_argument("--shuffle", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.groups // 10, args.groups]

    print(f"gqm-rl, {args.candidates} candidates per group, subgroup {args.subgroup} + shuffle {args.shuffle}")
    print(f"machine: {os.cpu_count()} CPUs, load average {_load()} at start (other jobs share them)")
    header = (
        f"{'groups':>8} {'builder':>9} {'rows':>9} {'wall s':>8} {'rows/s':>9} {'CPU s':>8} "
        f"{'rows/CPU s':>10} {'peak RSS MB':>12}"
    )
    print(header)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        for groups in sizes:
            input_path = tmp_dir / f"groups_{groups}.parquet"
            make_input(input_path, groups, args.candidates)
            measured = {}
            for builder in ("ours", "iterrows"):
                output = tmp_dir / f"{builder}_{groups}.parquet"
                measured[builder] = run_child(builder, input_path, output, args)
                m = measured[builder]
                print(
                    f"{groups:>8} {builder:>9} {m['rows']:>9} {m['seconds']:>8.1f} {m['rows'] / m['seconds']:>9.0f} "
                    f"{m['cpu_seconds']:>8.1f} {m['rows'] / m['cpu_seconds']:>10.0f} {m['peak_rss_mb']:>12.0f}",
                    flush=True,
                )
            identical = same_rows(tmp_dir / f"ours_{groups}.parquet", tmp_dir / f"iterrows_{groups}.parquet")
            results.append((groups, measured, identical))
            for builder in ("ours", "iterrows"):
                (tmp_dir / f"{builder}_{groups}.parquet").unlink()
    print()
    for groups, measured, identical in results:
        speedup = measured["iterrows"]["seconds"] / measured["ours"]["seconds"]
        cpu_speedup = measured["iterrows"]["cpu_seconds"] / measured["ours"]["cpu_seconds"]
        memory = measured["iterrows"]["peak_rss_mb"] / measured["ours"]["peak_rss_mb"]
        print(
            f"{groups:>8} groups: ours {speedup:.1f}x faster (wall), {cpu_speedup:.1f}x (CPU), "
            f"{memory:.1f}x less peak memory; outputs identical: {identical}"
        )
    print(f"load average {_load()} at the end")
    if len(results) > 1:
        (small, m_small, _), (large, m_large, _) = results[0], results[-1]
        for builder in ("ours", "iterrows"):
            growth = m_large[builder]["peak_rss_mb"] / m_small[builder]["peak_rss_mb"]
            print(f"peak RSS growth {small} -> {large} groups, {builder}: {growth:.2f}x")
    if not all(identical for _, _, identical in results):
        raise SystemExit("the two builders wrote different rows: the speed figures above do not count")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]))
    else:
        main()
