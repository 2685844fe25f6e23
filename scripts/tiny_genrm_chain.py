"""The pairwise GenRM pipeline end to end on this machine's CPU, each stage from the last one's model, as a user
runs it (docs/genrm/training.md, "On a laptop"):

1. SFT: verl's SFT trainer on ``pref-sft`` rows (``scripts/tiny_sft.py``'s ``run_sft``), the tiny random GenRM
   measured before and after on the held-out pairs (``tiny_sft.measure``: readable share, verdict accuracy);
2. RLVR: ``scripts/tiny_train.sh genrm_pairwise_rl`` (verl's PPO trainer, GRPO, ``reward_fns.preference``)
   from the SFT's HF model (``MODEL_PATH``) on the SFT's training pairs (``ROWS``), leaving an HF model
   (``HF_CHECKPOINT=1``), measured on the same held-out pairs; verl's reward per step;
3. hosted: ``GENRM=standalone GENRM_PATH=<the RLVR's HF model> scripts/tiny_train.sh brpo``, a policy run
   whose reward model is that GenRM, hosted by verl; ``judge/parse_error_rate`` per step from verl's tracker,
   beside the same run with the tiny untrained GenRM (``--no-compare``: skipped).

    .venv/bin/python scripts/tiny_genrm_chain.py [--out DIR] [--rlvr-steps N] [--policy-steps N] [--no-compare]

Writes OUT/chain.json (default runs/tiny_genrm_chain) and, per stage, OUT/sft/, OUT/rlvr/, OUT/hosted/,
OUT/hosted_untrained/ (each a tiny_sft / tiny_train output folder; OUT/<stage>.log: what the script printed).
Exit status 0 when every stage finished (whatever it learned).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from tiny_results import read_metrics, write_json  # noqa: E402
from tiny_sft import measure, run_sft  # noqa: E402
from tiny_train import build_artifacts  # noqa: E402

SFT_EPOCHS = 6
RLVR_STEPS = 4
# A tiny model moves at neither the overlay's 1e-6 nor the SFT's 3e-3 without losing the format it just learned.
RLVR_LR = 1e-4
POLICY_STEPS = 3
# tiny_train.sh's variables that each stage sets itself or must not inherit from the caller's shell
STAGE_VARIABLES = {
    "GENRM", "GENRM_PATH", "MODEL_PATH", "HF_CHECKPOINT", "ROWS", "LEARN", "TASTE", "JUDGE_TASTE", "POLICY", "JUDGE"
}  # fmt: skip


def say(message: str) -> None:
    print(message, flush=True)


def tiny_train(method: str, out: Path, cache: Path, steps: int, env: dict, overrides: tuple[str, ...] = ()) -> dict:
    """``scripts/tiny_train.sh METHOD`` with ``env`` added; its per-step metrics (verl's tracker). Raises
    RuntimeError, naming its log, when a step did not finish. A rerun starts over (tiny_train.sh would resume
    from the checkpoint a previous run left in ``out``)."""
    shutil.rmtree(out, ignore_errors=True)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    inherited = {k: v for k, v in os.environ.items() if k not in STAGE_VARIABLES}
    run_env = {**inherited, **env, "SKIP_VENV": "1", "PATH": path, "OUT": str(out), "CACHE_DIR": str(cache)}
    run_env["STEPS"] = str(steps)
    log = out.parent / f"{out.name}.log"
    with log.open("w") as sink:
        command = ["bash", str(REPO / "scripts/tiny_train.sh"), method, *overrides]
        rc = subprocess.run(command, env=run_env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise RuntimeError(f"tiny_train.sh {method} exited {rc}; its output: {log}, verl's: {out / 'train.log'}")
    return read_metrics(out / "metrics.jsonl")


def rlvr_model(checkpoints: Path) -> Path:
    """The HF model of the actor at verl's last checkpoint (``HF_CHECKPOINT=1``): weights, not only the config
    verl writes there in any case."""
    tracker = checkpoints / "latest_checkpointed_iteration.txt"
    if not tracker.exists():
        raise RuntimeError(f"the RLVR run saved no checkpoint: expected {tracker}")
    model = checkpoints / f"global_step_{tracker.read_text().strip()}" / "actor" / "huggingface"
    if not list(model.glob("*.safetensors")) and not list(model.glob("*.bin")):
        raise RuntimeError(f"expected HF weights in {model} (actor.checkpoint.save_contents holding hf_model)")
    return model


def per_step(metrics: dict[int, dict], key: str) -> list[float | None]:
    return [metrics[step].get(key) for step in sorted(metrics)]


def brief(measured: dict) -> dict:
    return {k: measured[k] for k in ("rows", "readable", "accuracy")} | {"replies": measured["replies"]}


def run_chain(
    out: Path,
    cache: Path,
    *,
    sft_epochs: int = SFT_EPOCHS,
    rlvr_steps: int = RLVR_STEPS,
    rlvr_lr: float = RLVR_LR,
    policy_steps: int = POLICY_STEPS,
    compare: bool = True,
) -> dict:
    """The three stages in order; their figures, also written to OUT/chain.json."""
    out, cache = Path(out).resolve(), Path(cache).resolve()
    out.mkdir(parents=True, exist_ok=True)
    chain: dict = {"out": str(out)}
    start = time.monotonic()

    say(f"== 1/3 SFT: verl's SFT trainer on pref-sft rows ({sft_epochs} epochs), output in {out / 'sft'}")
    sft_model = run_sft("pref-sft", out / "sft", cache, sft_epochs)
    data = out / "sft" / "data"  # the held-out pairs every stage is measured on
    untrained = build_artifacts(cache, genrm=True)["genrm"]
    chain["sft"] = {
        "hf_model": str(sft_model),
        "before": brief(measure(untrained, data)),
        "after": brief(measure(sft_model, data)),
        "seconds": round(time.monotonic() - start, 1),
    }
    say(f"   held-out pairs: {held(chain['sft']['before'])} before, {held(chain['sft']['after'])} after")

    say(f"== 2/3 RLVR: tiny_train.sh genrm_pairwise_rl from the SFT model, {rlvr_steps} steps, lr {rlvr_lr:g}")
    mark = time.monotonic()
    env = {"MODEL_PATH": str(sft_model), "HF_CHECKPOINT": "1", "ROWS": str(data / "inputs" / "train.jsonl")}
    metrics = tiny_train(
        "genrm_pairwise_rl", out / "rlvr", cache, rlvr_steps, env, (f"actor_rollout_ref.actor.optim.lr={rlvr_lr}",)
    )
    rl_model = rlvr_model(out / "rlvr" / "checkpoints")
    command = (out / "rlvr" / "command.txt").read_text().split()
    chain["rlvr"] = {
        "started_from": str(sft_model) if f"actor_rollout_ref.model.path={sft_model}" in command else None,
        "hf_model": str(rl_model),
        "steps": sorted(metrics),
        "reward": per_step(metrics, "critic/score/mean"),
        "response_length": per_step(metrics, "response_length/mean"),
        "after": brief(measure(rl_model, data)),
        "seconds": round(time.monotonic() - mark, 1),
    }
    say(f"   reward per step {steps(chain['rlvr']['reward'])}; held-out pairs: {held(chain['rlvr']['after'])}")

    runs = [("hosted", rl_model)] + ([("hosted_untrained", None)] if compare else [])
    for stage, genrm in runs:
        which = "the RLVR GenRM" if genrm else "the tiny untrained GenRM"
        say(f"== 3/3 {stage}: tiny_train.sh brpo, {policy_steps} steps, {which} hosted by verl (standalone)")
        mark = time.monotonic()
        env = {"GENRM": "standalone", **({"GENRM_PATH": str(genrm)} if genrm else {})}
        metrics = tiny_train("brpo", out / stage, cache, policy_steps, env)
        command = (out / stage / "command.txt").read_text().split()
        chain[stage] = {
            "genrm": str(genrm or untrained),
            "hosted_as_reward_model": f"reward.reward_model.model_path={genrm or untrained}" in command,
            "steps": sorted(metrics),
            "parse_error_rate": per_step(metrics, "judge/parse_error_rate"),
            "reward": per_step(metrics, "critic/score/mean"),
            "seconds": round(time.monotonic() - mark, 1),
        }
        say(f"   judge/parse_error_rate per step {steps(chain[stage]['parse_error_rate'])}")
    chain["seconds"] = round(time.monotonic() - start, 1)
    write_json(out / "chain.json", chain)
    return chain


def mean(values) -> float:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")


def held(m: dict) -> str:
    acc = "-" if m["accuracy"] is None else f"{m['accuracy']:.2f}"
    return f"{m['readable']:.0%} readable of {m['rows']}, accuracy {acc}"


def steps(values) -> str:
    return " ".join("-" if v is None else f"{v:.2f}" for v in values)


def table(chain: dict) -> str:
    """One line per stage: the held-out figures, verl's reward per step, the judge's parse errors per step."""
    sft, rlvr = chain["sft"], chain["rlvr"]
    lines = [
        f"{'stage':<18} {'held-out pairs (greedy)':<36} per step",
        f"{'untrained GenRM':<18} {held(sft['before']):<36}",
        f"{'SFT':<18} {held(sft['after']):<36}",
        f"{'RLVR':<18} {held(rlvr['after']):<36} reward {steps(rlvr['reward'])}",
    ]
    for stage in ("hosted", "hosted_untrained"):
        if stage in chain:
            rates = chain[stage]["parse_error_rate"]
            lines.append(f"{stage:<18} {'':<36} parse err {steps(rates)} (mean {mean(rates):.2f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/tiny_genrm_chain.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "runs/tiny_genrm_chain")
    parser.add_argument(
        "--cache", type=Path, default=REPO / ".cache/tiny", help="the tiny models (default .cache/tiny)"
    )
    parser.add_argument("--sft-epochs", type=int, default=SFT_EPOCHS)
    parser.add_argument("--rlvr-steps", type=int, default=RLVR_STEPS)
    parser.add_argument("--rlvr-lr", type=float, default=RLVR_LR)
    parser.add_argument("--policy-steps", type=int, default=POLICY_STEPS)
    parser.add_argument("--no-compare", action="store_true", help="skip the policy run with the untrained GenRM")
    args = parser.parse_args(argv)
    for option in ("sft_epochs", "rlvr_steps", "policy_steps"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be 1 or more, got {getattr(args, option)}")
    try:
        chain = run_chain(
            args.out, args.cache, sft_epochs=args.sft_epochs, rlvr_steps=args.rlvr_steps, rlvr_lr=args.rlvr_lr,
            policy_steps=args.policy_steps, compare=not args.no_compare,
        )  # fmt: skip
    except (RuntimeError, ValueError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    say(table(chain))
    say(f"done in {chain['seconds']:.0f}s; figures: {Path(chain['out']) / 'chain.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
