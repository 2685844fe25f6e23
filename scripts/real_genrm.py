"""A pairwise GenRM from a real model on this machine's CPU, through every stage a cluster run takes:
SmolLM2-135M-Instruct (``writing-rl model smollm2``) SFT'd by verl's SFT trainer on pairs of its own answers against
degraded copies of them (examples/real/, ``data_prep/degraded_pairs.py``: the label is the rule that made the copy,
never a judge), then RL on the GenRM (RLVR), then hosted by verl as the reward of a SmolLM2 policy under BRPO.

    .venv/bin/python scripts/real_genrm.py [--out DIR] [--epochs N] [--max-steps N] [--lr LR] [--no-before]
        [--sft-model DIR] [--rlvr-steps N] [--rlvr-lr LR] [--policy-steps N]

1. the pairs: ``degraded_pairs.py`` on the shipped answers (prompts split 80/20, seeded), then ``build_parquet.py
   pref-sft`` on each split (each pair in both orders, the answer the label alone);
2. before: SmolLM2's greedy replies to the held-out requests (``tiny_sft.measure``: the share our reader reads,
   the accuracy of those against the label); ``--no-before`` skips it;
3. SFT: verl's SFT trainer (``scripts/train_genrm_sft.sh`` with ``BACKEND=cpu``, through ``tiny_sft.run_sft``),
   measured the same way (``--sft-model``: start from a GenRM SFT'd before instead);
4. RLVR: ``tiny_train.sh genrm_pairwise_rl`` from the SFT'd model on the training pairs (verl's PPO trainer, GRPO,
   the rule-based ``reward_fns.preference``), measured the same way;
5. hosted: ``POLICY=smollm2 GENRM=standalone tiny_train.sh brpo`` with the last GenRM as verl's reward model, and
   the policy's ``damage`` (``writing_rl.data.degrade``: the rule the pairs were labelled by, not the GenRM)
   watched per step.

Each share comes with its Wilson 95% interval, and the accuracy also over every held-out request, an unreadable
reply counted wrong (what a reward pays for it). Writes OUT/summary.json (default runs/real_genrm) beside
OUT/pairs/, OUT/sft/ (tiny_sft's folder), OUT/rlvr/ and OUT/hosted/ (tiny_train's). Exit 0 when every stage
finished, whatever the model learned.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from tiny_genrm_chain import per_step, rlvr_model, tiny_train  # noqa: E402
from tiny_sft import losses, measure, read_reply, run_sft  # noqa: E402

ANSWERS = REPO / "examples/real/smollm2_answers.jsonl"
HELDOUT = 0.2  # the share of prompts held out
EPOCHS = 1
LR = 2e-5  # a pretrained model: the tiny random model's 3e-3 would wreck it
SEED = 0
RLVR_STEPS = 4
RLVR_LR = 1e-6  # the overlay's: SFT taught the format, RL only sharpens the choice
REPLY_TOKENS = 48  # the critique naming the damage (about 15 tokens), then the verdict
POLICY_STEPS = 2
POLICY_LR = 1e-5  # a pretrained policy: the overlays' 1e-6 barely moves it in tens of steps
# The policy's damage (writing_rl.data.degrade.damage: the rule the pairs were labelled by), per sample and step.
DAMAGE_WATCH = ("+reward.reward_kwargs.watch.damage.fn.path=pkg://writing_rl.data.degrade",
                "+reward.reward_kwargs.watch.damage.fn.name=damage_watch")  # fmt: skip


def say(message: str) -> None:
    print(message, flush=True)


def build(out: Path) -> dict[str, Path]:
    """The pairs and their pref-sft rows, laid out as ``tiny_sft.measure`` reads them."""
    pairs, data = out / "pairs", out / "sft" / "data"
    shutil.rmtree(data, ignore_errors=True)
    python = [sys.executable]
    subprocess.run([*python, str(REPO / "data_prep/degraded_pairs.py"), "--input", str(ANSWERS), "--output", str(pairs),
                    "--heldout", str(HELDOUT), "--seed", str(SEED)], check=True, cwd=REPO, stdout=subprocess.DEVNULL)  # fmt: skip
    built = {}
    for split in ("train", "heldout"):
        source = pairs / f"pairs_{split}.jsonl"
        (data / "inputs").mkdir(parents=True, exist_ok=True)
        shutil.copy(source, data / "inputs" / f"{split}.jsonl")
        subprocess.run([*python, str(REPO / "data_prep/build_parquet.py"), "pref-sft", "--quiet", "--input", str(source),
                        "--output", str(data / split), "--test-size", "0"], check=True, cwd=REPO,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        built[split] = data / split / "train.parquet"
    (data / "built.json").write_text(json.dumps({"kind": "pref-sft", "prompt_type": "ranking"}) + "\n")
    return built


def with_intervals(measured: dict) -> dict:
    """``tiny_sft.measure``'s figures with Wilson 95% intervals (the replies themselves left out)."""
    from writing_rl.tools.probe.verdict import wilson_interval

    rows = measured["rows"]
    readable = round(measured["readable"] * rows)
    correct = round(measured["correct"])
    shares = {
        "readable": (readable, rows),
        "accuracy_of_readable": (correct, readable),
        "accuracy_unreadable_wrong": (correct, rows),
    }
    figures = {"rows": rows}
    for name, (hits, n) in shares.items():
        low, high = wilson_interval(hits, n)
        figures[name] = {"hits": hits, "n": n, "share": round(hits / n, 4) if n else None,
                         "ci95": [round(low, 4), round(high, 4)]}  # fmt: skip
    figures["first_replies"] = measured["replies"][:5]
    return figures


def measured_with_damage(model: Path, data: Path) -> dict:
    """``tiny_sft.measure`` on the held-out requests, with intervals and the figures per damage."""
    measured = measure(model, data, REPLY_TOKENS)
    return {**with_intervals(measured), "by_damage": by_damage(measured["replies"], data)}


def by_damage(replies: list[str], data: Path) -> dict[str, dict]:
    """Per damage of the held-out pairs (repeated, shuffled, cut, swapped): the verdicts that chose the original
    (``correct``) and the replies whose critique named the damage the pair was made with (``named``)."""
    import pandas as pd

    from writing_rl.data.degrade import CRITIQUES

    rows = pd.read_parquet(data / "heldout" / "train.parquet")
    found: dict[str, dict] = {}
    for messages, extra, reply in zip(rows["messages"], rows["extra_info"], replies):
        damage, truth = extra["degradation"], read_reply("pref-sft", messages[-1]["content"], 2, "ranking")
        counts = found.setdefault(damage, {"pairs": 0, "correct": 0, "named": 0})
        counts["pairs"] += 1
        counts["correct"] += read_reply("pref-sft", reply, 2, "ranking") == truth
        counts["named"] += reply.startswith(CRITIQUES[damage].split("{slot}")[0])
    return found


def damage_line(figures: dict) -> str:
    found = figures.get("by_damage", {})
    return "          per damage, original chosen / damage named: " + ", ".join(
        f"{name} {c['correct']}/{c['pairs']} / {c['named']}/{c['pairs']}" for name, c in found.items()
    )


def line(when: str, figures: dict) -> str:
    def share(name: str) -> str:
        f = figures[name]
        if f["share"] is None:
            return "n/a"
        return f"{f['hits']}/{f['n']} = {f['share']:.2f} [{f['ci95'][0]:.2f}, {f['ci95'][1]:.2f}]"

    return (f"   {when:6} readable {share('readable')}; accuracy of those {share('accuracy_of_readable')}; "
            f"over all (unreadable wrong) {share('accuracy_unreadable_wrong')}")  # fmt: skip


def sft_stage(
    out: Path, base: Path, built: dict[str, Path], epochs: int, lr: float, max_steps: int | None, save_freq: int | None
) -> dict:
    steps = f", at most {max_steps} steps" if max_steps else ""
    say(f"== SFT: verl's SFT trainer on the CPU, {epochs} epoch(s){steps}, lr {lr}, from {base}")
    start = time.monotonic()
    # 135 M parameters' activations fit in memory: recomputing them in the backward pass costs a quarter of a step.
    overrides = ("model.enable_gradient_checkpointing=false",)
    overrides += (f"trainer.total_training_steps={max_steps}",) if max_steps else ()
    overrides += (f"trainer.save_freq={save_freq}",) if save_freq else ()
    model = run_sft("pref-sft", out / "sft", out / "cache", epochs, lr=lr, model=base, built=built, overrides=overrides)
    seconds = time.monotonic() - start
    loss = losses(out / "sft" / "metrics.jsonl")
    say(
        f"   {len(loss)} steps in {seconds:.0f} s; verl's train/loss {loss[0]:.3f} -> {loss[-1]:.3f}; HF model: {model}"
    )
    after = measured_with_damage(model, built["train"].parent.parent)
    say(line("SFT", after))
    say(damage_line(after))
    return {"hf_model": str(model), "epochs": epochs, "lr": lr, "steps": len(loss), "seconds": round(seconds),
            "loss_first": loss[0], "loss_last": loss[-1], "after": after}  # fmt: skip


def rlvr_stage(out: Path, sft_model: Path, pairs: Path, data: Path, steps: int, lr: float) -> dict:
    say(f"== RLVR: tiny_train.sh genrm_pairwise_rl from the SFT model, {steps} steps, lr {lr:g}")
    start = time.monotonic()
    env = {"MODEL_PATH": str(sft_model), "HF_CHECKPOINT": "1", "ROWS": str(pairs)}
    metrics = tiny_train("genrm_pairwise_rl", out / "rlvr", out / "cache", steps, env,
                         (f"actor_rollout_ref.actor.optim.lr={lr}",))  # fmt: skip
    model = rlvr_model(out / "rlvr" / "checkpoints")
    after = measured_with_damage(model, data)
    say(line("RLVR", after))
    say(damage_line(after))
    return {"hf_model": str(model), "steps": sorted(metrics), "reward": per_step(metrics, "critic/score/mean"),
            "seconds": round(time.monotonic() - start), "after": after}  # fmt: skip


def hosted_stage(out: Path, genrm: Path, steps: int, lr: float) -> dict:
    """BRPO on a SmolLM2 policy with ``genrm`` hosted by verl as its reward, the policy's damage watched, and the
    learning check on it (``learning_check``) when the run is long enough."""
    say(
        f"== hosted: POLICY=smollm2 GENRM=standalone tiny_train.sh brpo, {steps} steps, lr {lr:g}, the GenRM at {genrm}"
    )
    start = time.monotonic()
    env = {"POLICY": "smollm2", "GENRM": "standalone", "GENRM_PATH": str(genrm), "JUDGE_MAX_TOKENS": str(REPLY_TOKENS)}
    # Sampling at temperature 1: the group's rollouts must differ for BRPO to have anything to prefer.
    policy = (f"actor_rollout_ref.actor.optim.lr={lr}", "actor_rollout_ref.rollout.temperature=1.0")
    metrics = tiny_train("brpo", out / "hosted", out / "cache", steps, env, (*DAMAGE_WATCH, *policy))
    figures = {"genrm": str(genrm), "lr": lr, "steps": sorted(metrics), "reward": per_step(metrics, "critic/score/mean"),
               "parse_error_rate": per_step(metrics, "judge/parse_error_rate"),
               "damage": per_step(metrics, "watch/damage_mean"), "step_s": per_step(metrics, "timing_s/step"),
               "reward_s": per_step(metrics, "timing_s/reward"), "seconds": round(time.monotonic() - start),
               "learning": learning_check(out / "hosted" / "rollouts")}  # fmt: skip
    say(f"   per step: parse errors {figures['parse_error_rate']}, damage {figures['damage']}, s {figures['step_s']}")
    if figures["learning"]:
        say(learning_line(figures["learning"]))
    return figures


def learning_check(rollouts: Path) -> dict | None:
    """``LEARN=1``'s check (tiny_results: the first and the last WINDOW steps' rollouts, z >= MIN_Z), on the
    damage of verl's dumped rollouts: the GenRM's training rule measured on the policy's text, lower is better."""
    from tiny_results import MIN_Z, WINDOW, difference, mean, read_dump

    from writing_rl.data.degrade import damage

    texts = read_dump(rollouts)
    steps = sorted(texts)
    if len(steps) < 2 * WINDOW:
        return None
    first = [-damage(t) for step in steps[:WINDOW] for t in texts[step]]
    last = [-damage(t) for step in steps[-WINDOW:] for t in texts[step]]
    gain, z = difference(first, last)
    per_step_damage = {step: round(mean(map(damage, texts[step])), 4) for step in steps}
    return {"damage": per_step_damage, "start": -mean(first), "end": -mean(last), "gain": gain, "z": z,
            "learned": z >= MIN_Z, "window": WINDOW}  # fmt: skip


def learning_line(check: dict) -> str:
    verdict = "learned" if check["learned"] else "NOT learned"
    return (f"   damage of the policy's rollouts: {check['start']:.3f} in the first {check['window']} steps, "
            f"{check['end']:.3f} in the last {check['window']} (less damage: {check['gain']:+.3f}, "
            f"z = {check['z']:.1f}): {verdict}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/real_genrm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "runs/real_genrm", help="default runs/real_genrm")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"SFT epochs (default {EPOCHS})")
    parser.add_argument("--lr", type=float, default=LR, help=f"SFT learning rate (default {LR})")
    parser.add_argument("--max-steps", type=int, help="SFT steps at most, of 4 conversations (default: the epochs')")
    parser.add_argument("--save-freq", type=int, help="also keep verl's checkpoint every N SFT steps (default: last)")
    parser.add_argument("--no-before", action="store_true", help="skip measuring SmolLM2 itself (about 10 minutes)")
    parser.add_argument("--sft-model", type=Path, help="an SFT'd GenRM to start from: no SFT, no 'before'")
    parser.add_argument("--rlvr-steps", type=int, default=RLVR_STEPS, help=f"0: no RLVR (default {RLVR_STEPS})")
    parser.add_argument("--rlvr-lr", type=float, default=RLVR_LR, help=f"(default {RLVR_LR})")
    parser.add_argument("--policy-steps", type=int, default=POLICY_STEPS,
                        help=f"BRPO steps with the GenRM hosted; 0: none (default {POLICY_STEPS})")  # fmt: skip
    parser.add_argument("--policy-lr", type=float, default=POLICY_LR, help=f"(default {POLICY_LR})")
    args = parser.parse_args(argv)
    from writing_rl.models import model_dir

    out = args.out.resolve()
    base = model_dir("smollm2")
    built = build(out)
    data = built["train"].parent.parent
    say(f"== the pairs: {built['train']} (train), {built['heldout']} (held-out prompts)")
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() and args.sft_model else {}
    summary["base"] = str(base)
    try:
        if args.sft_model is None and not args.no_before:
            summary["before"] = measured_with_damage(base, data)
            say(line("before", summary["before"]))
            say(damage_line(summary["before"]))
        if args.sft_model is None:
            summary["sft"] = sft_stage(out, base, built, args.epochs, args.lr, args.max_steps, args.save_freq)
        genrm = Path(summary["sft"]["hf_model"]) if args.sft_model is None else args.sft_model.resolve()
        if args.rlvr_steps:
            pairs = out / "pairs" / "pairs_train.jsonl"
            summary["rlvr"] = rlvr_stage(out, genrm, pairs, data, args.rlvr_steps, args.rlvr_lr)
            genrm = Path(summary["rlvr"]["hf_model"])
        if args.policy_steps:
            summary["hosted"] = hosted_stage(out, genrm, args.policy_steps, args.policy_lr)
    except (RuntimeError, ValueError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        from writing_rl.files import atomic_write_text

        atomic_write_text(summary_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
