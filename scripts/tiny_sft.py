"""verl's own SFT trainer cold-starting the tiny GenRM on this machine's CPU, with the GenRM's replies measured
before and after: ``scripts/train_genrm_sft.sh`` with ``BACKEND=cpu`` (``torchrun -m verl.trainer.sft_trainer``,
verl's ``sft_trainer_engine`` config, on the CPU backend of writing_rl/cpu_backend/).

    .venv/bin/python scripts/tiny_sft.py [gqm-sft|pref-sft|all] [--epochs N] [--lr LR] [--prompt-type T]
                                         [--out DIR] [--cache DIR]

For each kind (a ``data_prep/build_parquet.py`` subcommand):

1. the tiny random Qwen2 GenRM and its tokenizer, built by ``scripts/tiny_train.py``'s ``build_artifacts``;
2. SFT rows built by the builder from the example rows under examples/tiny/, ``HELD_OUT`` source rows (pairs,
   groups: every row built from them) held out. The example groups all list their candidates best first, so
   gqm-sft writes each group in ``Kind.orders`` rotations (the scores following their candidates): the truth
   then differs from row to row, and a model that ignores the candidates cannot be right;
3. verl's SFT run through the script, its loss in verl's file tracker (``trainer.logger=[console,file]``);
4. on the held-out rows, before and after: greedy replies (transformers ``generate``, the request rendered with
   the tokenizer's chat template), the share our readers read (``read_gqm_output``, ``read_comparison``) and,
   among those, the accuracy against the row's own answer (pairwise-order agreement of the rankings; the
   verdict equal to the label, a tie wrong).

Writes under OUT/<kind> (default runs/tiny_sft/<kind>; a rerun starts over): data/ (inputs/ and, built from
them, train/ and heldout/), train.log (everything the script and verl printed), metrics.jsonl (verl's file
tracker), checkpoints/ (verl's; global_step_N/huggingface is the trained GenRM) and summary.json. Exit
status 0 when every run finished (whatever it learned).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from tiny_train import build_artifacts  # noqa: E402  (the tiny model and tokenizer, built one way)

SCRIPT = REPO / "scripts/train_genrm_sft.sh"
HELD_OUT = 2  # source rows held out of training, measured before and after
SEED = 0  # which rows are held out


@dataclass(frozen=True)
class Kind:
    rows: str  # the builder's input, under the repo
    builder_args: tuple[str, ...]  # beyond --input and --output
    orders: int  # rotations written per ranking group; 1: the rows as given
    max_new_tokens: int  # reply budget when measuring (the trained answers are shorter)
    epochs: int  # default SFT epochs


KINDS = {
    # The example groups carry no analysis: answers are the final lines only (--no-cot).
    "gqm-sft": Kind("examples/tiny/ranking_groups.jsonl", ("--no-cot",), orders=4, max_new_tokens=40, epochs=8),
    # No critiques: answers are the label alone; the builder writes each pair in both orders.
    "pref-sft": Kind("examples/tiny/preference_pairs.jsonl", (), orders=1, max_new_tokens=16, epochs=6),
}
# What a gqm-sft answer ends with. The ranking line alone by default: in a few dozen steps the tiny model does
# not learn GRRM's two lines (a scores line that agrees with the ranking); --prompt-type ranking_score shows it.
PROMPT_TYPE = "ranking"
LR = 3e-3  # a tiny random model: GRRM's 6e-6 would not move it in a few dozen steps
BATCH = 4  # conversations per step
MAX_LENGTH = 1024  # tokens per conversation (the GQM requests here are about 430)
# A start that failed for the machine, not the run: another process took the port torchrun picked. Once more.
PORT_TAKEN = ("EADDRINUSE", "Address already in use")


def say(message: str) -> None:
    print(message, flush=True)


# ---------------------------------------------------------------- rows


def source_rows(kind: Kind) -> tuple[list[dict], list[dict]]:
    """(train, held out): the example rows, ``HELD_OUT`` of them chosen by ``SEED``."""
    path = REPO / kind.rows
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(rows) <= HELD_OUT:
        raise ValueError(f"{path}: expected more than {HELD_OUT} rows to hold {HELD_OUT} out, found {len(rows)}")
    held = set(random.Random(SEED).sample(range(len(rows)), HELD_OUT))
    return [r for i, r in enumerate(rows) if i not in held], [r for i, r in enumerate(rows) if i in held]


def rotated(rows: list[dict], rotations: int) -> list[dict]:
    """Each ranking group in its first ``rotations`` rotations (candidates shifted by 0, 1, ... places, each score
    following its candidate). Every group gets the same orders: a held-out group's answer has a shape training
    shows, and which one it is depends on where the best candidate stands."""
    if rotations == 1:
        return rows
    out = []
    for row in rows:
        texts, scores = row["mt_texts"], row["scores"]
        for shift in range(min(rotations, len(texts))):
            out.append({**row, "mt_texts": texts[shift:] + texts[:shift], "scores": scores[shift:] + scores[:shift]})
    return out


def build_rows(kind: str, data: Path, prompt_type: str = PROMPT_TYPE) -> dict[str, Path]:
    """``build_parquet.py <kind>`` on the training rows and on the held-out rows: {"train"|"heldout": parquet}.
    ``data/built.json`` says how they were built (``measure`` reads it)."""
    spec = KINDS[kind]
    extra = ("--prompt-type", prompt_type) if kind == "gqm-sft" else ()
    built = {}
    for split, rows in zip(("train", "heldout"), source_rows(spec)):
        source = data / "inputs" / f"{split}.jsonl"
        source.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(row, ensure_ascii=False) for row in rotated(rows, spec.orders)]
        source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        command = [sys.executable, str(REPO / "data_prep/build_parquet.py"), kind, "--quiet"]
        command += ["--input", str(source), "--output", str(data / split), *spec.builder_args, *extra]
        subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        built[split] = data / split / "train.parquet"  # the builder's name for a build without a test split
    (data / "built.json").write_text(json.dumps({"kind": kind, "prompt_type": prompt_type}) + "\n")
    return built


# ---------------------------------------------------------------- the SFT run


def run_sft(
    kind: str,
    out: Path,
    cache: Path,
    epochs: int,
    *,
    lr: float = LR,
    prompt_type: str = PROMPT_TYPE,
    overrides: tuple[str, ...] = (),
    model: Path | None = None,
    built: dict[str, Path] | None = None,
) -> Path:
    """verl's SFT of the tiny GenRM on ``kind``'s rows (held-out rows as verl's validation files), through
    ``scripts/train_genrm_sft.sh`` with ``BACKEND=cpu``; returns the HF model verl saved at the last step.
    ``overrides``: more Hydra overrides of verl's SFT config; ``model``: another base model (an HF folder);
    ``built``: rows built already ({"train"|"heldout": parquet}, kept). Raises RuntimeError, with the end of
    verl's output, when the run fails or leaves no HF model."""
    if kind not in KINDS:
        raise ValueError(f"unknown SFT kind {kind!r}: expected one of {', '.join(KINDS)}")
    out, cache = Path(out).resolve(), Path(cache).resolve()
    for stale in ("checkpoints", "metrics.jsonl") + (() if built else ("data",)):  # a rerun starts over
        path = out / stale
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    model = model or build_artifacts(cache, genrm=True)["genrm"]
    rows = built or build_rows(kind, out / "data", prompt_type)
    env = {
        **os.environ,
        "BACKEND": "cpu",
        "N_GPUS": "1",
        "NNODES": "1",
        # This interpreter (torchrun beside it): the one that has verl and this repository's packages.
        "PYTHON": os.environ.get("PYTHON") or sys.executable,
        "MODEL_PATH": str(model),
        "TRAIN_FILES": str(rows["train"]),
        "VAL_FILES": str(rows["heldout"]),
        "MAX_LENGTH": str(MAX_LENGTH),
        "OUTPUT_DIR": str(out / "checkpoints"),
        "VERL_FILE_LOGGER_PATH": str(out / "metrics.jsonl"),
        # One thread: a model this small gains nothing from more, and loses much when the cores are busy.
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    args = [
        f"data.train_batch_size={BATCH}",
        f"trainer.total_epochs={epochs}",
        f"optim.lr={lr}",
        "trainer.logger=[console,file]",
        f"trainer.experiment_name=tiny_{kind.replace('-', '_')}",
        *overrides,
    ]
    log = out / "train.log"
    for attempt in (1, 2):
        with log.open("w") as sink:
            command = ["bash", str(SCRIPT), *args]
            done = subprocess.run(command, env=env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
        if done.returncode == 0 or not any(sign in log.read_text(errors="replace") for sign in PORT_TAKEN):
            break
        if attempt == 1:
            say("   another process took the port torchrun picked for torch.distributed: starting once more")
    if done.returncode != 0:
        raise RuntimeError(f"{SCRIPT.name} exited {done.returncode}; the end of {log}:\n{tail(log)}")
    return hf_model(out / "checkpoints", log)


def hf_model(checkpoints: Path, log: Path) -> Path:
    """The ``huggingface`` folder of verl's last checkpoint (``latest_checkpointed_iteration.txt`` names its step)."""
    tracker = checkpoints / "latest_checkpointed_iteration.txt"
    if not tracker.exists():
        raise RuntimeError(f"verl saved no checkpoint: expected {tracker}; the end of {log}:\n{tail(log)}")
    model = checkpoints / f"global_step_{tracker.read_text().strip()}" / "huggingface"
    if not (model / "config.json").exists():
        raise RuntimeError(f"expected an HF model in {model} (checkpoint.save_contents holding hf_model)")
    return model


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def losses(metrics: Path) -> list[float]:
    """``train/loss`` of each step, in step order, as verl's file tracker logged it."""
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    steps = sorted((row["step"], row["data"]["train/loss"]) for row in rows if "train/loss" in row["data"])
    if not steps:
        raise ValueError(f"{metrics}: expected train/loss in verl's tracker, found none")
    return [loss for _, loss in steps]


# ---------------------------------------------------------------- measuring the GenRM


def read_reply(kind: str, reply: str, labels: int, prompt_type: str):
    """What a reply concludes, read by our readers: a ranking (gqm-sft) or a verdict A/B/C (pref-sft); None
    where the reader finds the reply unreadable."""
    from writing_rl.protocols import Unreadable, read_comparison, read_gqm_output

    if kind == "gqm-sft":
        read = read_gqm_output(reply, labels, prompt_type=prompt_type, variant="no_cot")
        return None if isinstance(read, Unreadable) else read.ranking
    read = read_comparison(reply, "verdict")
    return None if isinstance(read, Unreadable) else read.verdict


def accuracy(kind: str, predicted, truth) -> float:
    """The share of candidate pairs two rankings order alike (gqm-sft); 1 for the labelled verdict, else 0."""
    from writing_rl.protocols.gqm_task import ranking_agreement

    return ranking_agreement(predicted, truth) if kind == "gqm-sft" else float(predicted == truth)


def measure(model_dir: Path, data: Path, max_new_tokens: int | None = None) -> dict:
    """The model's greedy replies to the held-out requests of ``data`` (``build_rows``' folder): ``rows``,
    ``readable`` (the share our reader reads), ``accuracy`` (the mean over the readable ones; None when none
    reads) and the ``replies``. ``max_new_tokens``: the reply budget (default: the kind's)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    built = json.loads((data / "built.json").read_text())
    kind, prompt_type = built["kind"], built["prompt_type"]
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as for the training: more threads only slow a model this small on busy cores
    try:
        return _replies(kind, prompt_type, tokenizer, model, data, max_new_tokens or KINDS[kind].max_new_tokens)
    finally:
        torch.set_num_threads(threads)


def _replies(kind: str, prompt_type: str, tokenizer, model, data: Path, max_new_tokens: int) -> dict:
    import pandas as pd
    import torch

    rows = pd.read_parquet(data / "heldout/train.parquet")
    groups = [json.loads(line) for line in (data / "inputs/heldout.jsonl").read_text().splitlines()]
    replies, scores = [], []
    for messages, extra in zip(rows["messages"], rows["extra_info"]):
        *request, answer = [dict(m) for m in messages]
        labels = len(groups[int(extra["index"])].get("mt_texts") or ())  # gqm-sft: the row's candidates
        truth = read_reply(kind, answer["content"], labels, prompt_type)
        if truth is None:
            raise ValueError(f"{data}: a held-out row's own answer {answer['content']!r} does not read as {kind}")
        prompt = tokenizer.apply_chat_template(request, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            generated = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False)
        reply = tokenizer.decode(generated[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
        replies.append(reply)
        predicted = read_reply(kind, reply, labels, prompt_type)
        if predicted is not None:
            scores.append(accuracy(kind, predicted, truth))
    return {
        "rows": len(replies),
        "readable": len(scores) / len(replies),
        "accuracy": sum(scores) / len(scores) if scores else None,
        "replies": replies,
        "correct": sum(scores),  # of the readable replies (gqm-sft: pairwise agreements summed)
    }


# ---------------------------------------------------------------- the command


def run_kind(kind: str, out: Path, cache: Path, epochs: int, lr: float, prompt_type: str) -> dict:
    say(f"== {kind}: verl's SFT trainer on the CPU ({epochs} epochs, lr {lr}), output in {out}")
    start = time.monotonic()
    model = run_sft(kind, out, cache, epochs, lr=lr, prompt_type=prompt_type)
    seconds = time.monotonic() - start
    loss = losses(out / "metrics.jsonl")
    before = measure(build_artifacts(cache, genrm=True)["genrm"], out / "data")
    after = measure(model, out / "data")
    summary = {
        "kind": kind,
        "prompt_type": prompt_type if kind == "gqm-sft" else None,
        "epochs": epochs,
        "lr": lr,
        "steps": len(loss),
        "seconds": round(seconds, 1),
        "loss_first": loss[0],
        "loss_last": loss[-1],
        "hf_model": str(model),
        "before": before,
        "after": after,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    say(f"   {len(loss)} steps, {seconds:.0f} s for the rows, torchrun, verl and its checkpoint; HF model: {model}")
    say(f"   verl's train/loss: {loss[0]:.3f} at step 1, {loss[-1]:.3f} at step {len(loss)}")
    for when, measured in (("before", before), ("after", after)):
        acc = "n/a" if measured["accuracy"] is None else f"{measured['accuracy']:.2f}"
        say(
            f"   {when:6} SFT: {measured['readable']:.0%} of {measured['rows']} held-out replies readable,"
            f" accuracy of those {acc}; first reply {measured['replies'][0][:60]!r}"
        )
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/tiny_sft.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", nargs="?", default="all", choices=[*KINDS, "all"], help="default: all")
    parser.add_argument("--epochs", type=int, help="SFT epochs (default: gqm-sft 8, pref-sft 6)")
    parser.add_argument("--lr", type=float, default=LR, help=f"SFT learning rate (default {LR})")
    parser.add_argument(
        "--prompt-type",
        default=PROMPT_TYPE,
        choices=("ranking", "score", "ranking_score"),
        help=f"what a gqm-sft answer ends with (default {PROMPT_TYPE})",
    )
    parser.add_argument("--out", type=Path, default=REPO / "runs/tiny_sft", help="output root (default runs/tiny_sft)")
    parser.add_argument("--cache", type=Path, default=REPO / ".cache/tiny", help="the tiny model (default .cache/tiny)")
    args = parser.parse_args(argv)
    if args.epochs is not None and args.epochs < 1:
        parser.error(f"--epochs must be 1 or more, got {args.epochs}")
    for kind in list(KINDS) if args.kind == "all" else [args.kind]:
        try:
            run_kind(kind, args.out / kind, args.cache, args.epochs or KINDS[kind].epochs, args.lr, args.prompt_type)
        except (RuntimeError, ValueError, subprocess.CalledProcessError) as err:
            print(f"error: {kind}: {err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
