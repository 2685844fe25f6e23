"""verl's real trainer around one of our methods, on this machine's CPU, with a tiny model: the driver of
scripts/tiny_train.sh (read that file for the variables). What it runs is what the cluster runs, the
method's own overlay through ``python -m verl.trainer.main_ppo``, with only the backend swapped
(``+backend=cpu``: hydra_configs/backend/cpu.yaml) and the sizes made tiny.

Writes under OUT: data/ (the parquet built by build_parquet.py), train.log (verl's whole output),
metrics.jsonl (verl's file tracker; a previous run's is kept as metrics.previous.jsonl), samples/ (each
reward our managers returned), rollouts/ (verl's dump of each step's rollouts and scores),
checkpoints/, reward.png, summary.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from writing_rl.cpu_backend.platform_name import CHECKPOINT_ENGINE
from writing_rl.offline.compose import compose
from writing_rl.tools.shared.cluster.submit import joining_overrides
from writing_rl.tools.shared.trainers import TRAINERS, trainer_of, unmet, unsupported

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))  # tiny_results.py beside this file, also when loaded by path (tests)
sys.path.insert(0, str(REPO / "tests"))  # the stand-ins the tests build: tests/tiny.py, tests/stand_in_judge.py

from tiny_results import MIN_Z, learning_line, read_metrics, report, taste_of, write_json  # noqa: E402

from tiny_cluster import in_job, judge_host, submit_tiny_run, submits  # noqa: E402


@dataclass(frozen=True)
class Method:
    builder: str  # build_parquet.py subcommand
    rows: str  # its input, under examples/
    judged: bool  # scored by a judge (our managers); else a rule-based reward (verl's naive manager)
    prompt_length: int = 1024
    response_length: int = 32


METHODS = {
    "writing_rl": Method("writing-rl", "examples/writing_prompts.jsonl", judged=True),
    "brpo": Method("prompts", "examples/writing_prompts.jsonl", judged=True),
    "tournament": Method("prompts", "examples/writing_prompts.jsonl", judged=True),
    "grrm_mt_grpo": Method("prompts", "examples/tiny/mt_sources.jsonl", judged=True),
    "rubric": Method("rubric", "examples/tiny/rubric_rows.jsonl", judged=True),
    "grrm_rlvr": Method("gqm-rl", "examples/tiny/ranking_groups.jsonl", judged=False, prompt_length=2048),
    "genrm_pairwise_rl": Method("pref-rl", "examples/tiny/preference_pairs.jsonl", judged=False),
}
BATCH, ROLLOUTS = 4, 4  # prompts per step, rollouts per prompt


def judged_overlays() -> set[str]:
    """The overlays the installed methods declare as their own: a method not in METHODS trains on writing prompts."""
    from writing_rl.reward_loop.registry import methods

    return {m.method.probe.overlay for m in methods().values() if m.method.probe}


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def say(message: str) -> None:
    print(message, flush=True)


# "==" heads each stage; the quickstart, which runs this as its last stage, sets "  --" to nest them.
HEAD = os.environ.get("TINY_TRAIN_HEADING", "==")


def build_artifacts(cache: Path, genrm: bool) -> dict[str, Path]:
    """A byte-level BPE trained on the example texts, a tiny random Qwen2 policy on it (and a GenRM),
    built once into ``cache`` and reused."""
    from tiny import build_tiny_qwen2, build_tiny_tokenizer

    tokenizer, policy, judge = cache / "tokenizer", cache / "policy", cache / "genrm"
    if not (tokenizer / "tokenizer.json").exists():
        texts = [line for f in sorted((REPO / "examples").rglob("*.jsonl")) for line in f.open(encoding="utf-8")]
        build_tiny_tokenizer(tokenizer, texts + prompt_templates(), vocab_size=4000)
    if not (policy / "config.json").exists():
        build_tiny_qwen2(policy, tokenizer, max_position_embeddings=4096, seed=1)
    if genrm and not (judge / "config.json").exists():
        build_tiny_qwen2(judge, tokenizer, max_position_embeddings=8192, seed=2)
    return {"tokenizer": tokenizer, "policy": policy, "genrm": judge}


def prompt_templates() -> list[str]:
    """Our judge and GenRM prompt templates: a tokenizer that knows them makes the GenRM-training prompts
    (a whole judge request each) a third shorter, and each step as much faster."""
    import importlib

    names = ("prompts", "gqm_prompt", "rubric")
    modules = [importlib.import_module(f"writing_rl.protocols.{name}") for name in names]
    return [
        value for module in modules for value in vars(module).values() if isinstance(value, str) and len(value) > 80
    ]


def build_data(method: Method, rows: Path, data: Path, test_size: int = 0) -> Path:
    """verl parquet from ``rows`` with the method's builder, as a user builds it: data/train.parquet (and
    test.parquet, ``test_size`` rows, whose rows verl's validation reads as validation rows)."""
    command = [sys.executable, str(REPO / "data_prep/build_parquet.py"), method.builder, "--quiet"]
    command += ["--input", str(rows), "--output", str(data), "--test-size", str(test_size)]
    built = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if built.returncode != 0:
        fail(f"build_parquet.py {method.builder} failed:\n{built.stdout}{built.stderr}")
    return data / "train.parquet"


def graded_rows(method: Method, taste: str, out: Path) -> Path:
    """The example rows with their references replaced by texts graded on the taste, easiest first (Writing-RL
    under LEARN=1): the policy starts by losing to the first and climbs the curriculum as it learns."""
    from taste import parse_taste

    liked = parse_taste(taste)
    path = out / "graded_rows.jsonl"
    with path.open("w", encoding="utf-8") as rows:
        for line in (REPO / method.rows).open(encoding="utf-8"):
            row = json.loads(line)
            row["references"] = [liked.text_with(level) for level in REFERENCE_LEVELS]
            rows.write(json.dumps(row) + "\n")
    return path


class StandInJudge:
    """tests/stand_in_judge.py in a process of its own, stopped on exit."""

    def __init__(self, log: Path, faults: int = 0, taste: str = "", flip: float = 0.0, host: str = "127.0.0.1"):
        self.log = log.open("w")
        command = [sys.executable, str(REPO / "tests/stand_in_judge.py"), "--faults", str(faults), "--host", host]
        if taste:
            command += [f"--taste={taste}", "--flip", str(flip)]  # (= : a reversed taste starts with -)
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=REPO)
        line = self.process.stdout.readline()
        if not line.startswith("stand-in judge: "):
            self.stop()
            fail(f"the stand-in judge did not start (log: {log})")
        self.base_url = line.split(": ", 1)[1].strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


# The trainers that generate apart from training, on this machine: the rollout's own process (one logical GPU)
# and the gloo checkpoint engine to send it the weights after each update.
_GLOO = f"actor_rollout_ref.rollout.checkpoint_engine.backend={CHECKPOINT_ENGINE}"
ON_ONE_MACHINE = {
    "v1-separate-async": (
        "actor_rollout_ref.rollout.n_gpus_per_node=1",
        "actor_rollout_ref.rollout.nnodes=1",
        "trainer.v1.separate_async.parameter_sync_step=1",  # one mini-batch per step here
        _GLOO,
    ),
    # A weight update after every step, and STEPS steps: the rollouter counts prompts.
    # Its trainer and rollouter actors ask for 10 logical CPUs each.
    "fully-async": (
        "rollout.n_gpus_per_node=1",
        "rollout.nnodes=1",
        "async_training.trigger_parameter_sync_step=1",
        "ray_kwargs.ray_init.num_cpus=32",
        "data.train_batch_size=0",  # the trainer takes ppo_mini_batch_size prompts as they come
        # Its validation comes at a weight sync test_freq names: off here, LEARN=1 too (its figures are the rollouts').
        "trainer.test_freq=-1",
        _GLOO,
    ),
    "one-step-off": ("rollout.n_gpus_per_node=1", "rollout.nnodes=1", "trainer.rollout_data_dir=null", _GLOO),
}


# LEARN=1: settings under which the tiny policy learns the stand-in judge's taste on 2 cores (docs/train-on-a-laptop.md,
# "A policy that learns"). The overlays' learning rate (1e-6) is a real model's; a 2-layer model 64 wide starting
# from uniform next-token odds moves within tens of steps only with a large one (1e-2: after about 20 steps).
LEARN_STEPS = 20
LEARN = (
    "actor_rollout_ref.actor.optim.lr=3e-2",
    "actor_rollout_ref.rollout.temperature=1.0",
)
LEARN_BY_METHOD = {
    # the level rises once half a group beats its reference (Writing-RL's own rule, any win, races ahead)
    "writing_rl": ("reward.custom_reward_function.reward_kwargs.advance_threshold=0.5",),
}
DEFAULT_TASTE = "letter:e"
VAL_ROWS = 4  # of the 8 example rows: validated before training and after the last step
# Writing-RL's references under LEARN=1: the taste's measure of each level (letter:e: e's), easiest first; the
# tiny policy starts at about 15.
REFERENCE_LEVELS = (16, 20, 24, 28, 32, 40, 48, 56)


def watch_taste(taste: str) -> list[str]:
    """The taste's measure as a watch (reward.reward_kwargs.watch): logged per sample and per step
    (watch/taste_mean in verl's tracker), never paid."""
    key = "+reward.reward_kwargs.watch.taste"
    return [f"{key}.fn.path='{REPO / 'tests' / 'taste.py'}'", f"{key}.fn.name=measure", f"{key}.taste='{taste}'"]


def overrides(
    name: str, method: Method, out: Path, artifacts: dict, train: Path, steps: int, judge, val: Path | None = None
) -> list[str]:
    args = [
        f"data.train_files={train}",
        f"data.val_files={val or train}",
        f"data.train_batch_size={BATCH}",
        f"data.max_prompt_length={method.prompt_length}",
        f"data.max_response_length={method.response_length}",
        f"actor_rollout_ref.model.path={os.environ.get('MODEL_PATH') or artifacts['policy']}",
        f"actor_rollout_ref.rollout.n={ROLLOUTS}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={BATCH}",
        f"trainer.total_training_steps={steps}",
        "trainer.total_epochs=1000",  # the steps decide, not the few example rows
        f"trainer.save_freq={steps}",
        "trainer.test_freq=-1",
        "trainer.val_before_train=false",
        "trainer.logger=[console,file]",
        f"trainer.experiment_name=tiny_{name}",
        f"trainer.default_local_dir={out / 'checkpoints'}",
        f"trainer.rollout_data_dir={out / 'rollouts'}",
        f"hydra.run.dir={out / 'hydra'}",  # Hydra's own output, under OUT rather than ./outputs
    ]
    if os.environ.get("SEED"):  # the rollout's sampling and the order of the rows
        args += [f"actor_rollout_ref.rollout.seed={os.environ['SEED']}", f"data.seed={os.environ['SEED']}"]
    if os.environ.get("HF_CHECKPOINT") == "1":  # the last checkpoint also as an HF model (.../actor/huggingface)
        key, kept = "actor_rollout_ref.actor.checkpoint", "model,optimizer,extra"  # (a resume loads no hf_model)
        args += [f"{key}.save_contents=[{kept},hf_model]", f"{key}.load_contents=[{kept}]"]
    if name == "grrm_mt_grpo":  # the overlay's overlong buffer (256 tokens) is longer than a tiny response
        args.append(f"reward.custom_reward_function.reward_kwargs.buffer_len={method.response_length // 4}")
    if method.judged:
        args.append(f"reward.reward_kwargs.sample_log_dir={out / 'samples'}")
        if os.environ.get("TASTE"):
            args += watch_taste(os.environ["TASTE"])
    if os.environ.get("LEARN") == "1":
        args += [
            *LEARN,
            *LEARN_BY_METHOD.get(name, ()),
            # verl's validation before training and after the last step, dumped: the taste measured on them too
            "trainer.val_before_train=true",
            f"trainer.test_freq={steps}",
            f"trainer.validation_data_dir={out / 'validation'}",
        ]
    genrm = os.environ.get("GENRM", "")
    if genrm:
        args += [
            f"+genrm={genrm}",
            f"reward.reward_model.model_path={os.environ.get('GENRM_PATH') or artifacts['genrm']}",
            # An untrained model rarely stops on its own: keep each judge reply short (JUDGE_MAX_TOKENS: longer).
            f"reward.reward_kwargs.judge.max_tokens={os.environ.get('JUDGE_MAX_TOKENS') or 32}",
        ]
    elif judge is not None:
        args += [f"reward.reward_kwargs.judge.base_url={judge[0]}", f"reward.reward_kwargs.judge.model={judge[1]}"]
        if os.environ.get("JUDGE_API_KEY_ENV"):
            args.append(f"reward.reward_kwargs.judge.api_key_env={os.environ['JUDGE_API_KEY_ENV']}")
        if os.environ.get("JUDGE_MAX_TOKENS"):
            args.append(f"reward.reward_kwargs.judge.max_tokens={os.environ['JUDGE_MAX_TOKENS']}")
    trainer = os.environ.get("TRAINER", "")
    if trainer:
        args += TRAINERS[trainer].overrides + ON_ONE_MACHINE.get(trainer, ())
    if trainer == "fully-async":
        args.append(f"rollout.total_rollout_steps={steps * BATCH}")
    return args


# verl's console line of a training step's metrics (not its validation's, nor fully-async's rollouter timings).
STEP_LINE = re.compile(r"\btraining/global_step:(\d+)\b")


def run_verl(command: list[str], env: dict, log_path: Path) -> int:
    """verl's output to ``log_path``; here, one line per finished step and the reward workers' summaries."""
    start = time.monotonic()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            for line in process.stdout:
                log.write(line)
                elapsed = f"{time.monotonic() - start:5.0f}s"
                if STEP_LINE.search(line):
                    say(f"   {elapsed}  step {STEP_LINE.search(line).group(1)} finished")
                elif "[writing-rl]" in line:
                    say(f"   {elapsed}  " + line.split("[writing-rl]", 1)[1].strip())
                elif "Training Progress:   0%" in line:
                    say(f"   {elapsed}  workers ready, training")
                elif "Started a local Ray instance" in line:
                    say(f"   {elapsed}  Ray started")
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)
            process.wait()
            raise


def curriculum_levels(out: Path) -> list[int]:
    """Writing-RL's saved level of each prompt (its curriculum's state at the last checkpoint), by prompt id."""
    state = out / "checkpoints" / "curriculum"
    if not state.is_dir():
        return []
    from writing_rl.curriculum.log import read_state

    return [int(level) for _, level in sorted(read_state(state).table.as_dict().items())]


# A served real judge's completion budget unless JUDGE_MAX_TOKENS: room for a short verdict, bounded time per call.
SERVED_JUDGE_MAX_TOKENS = 48
REAL_MODELS = ("smollm2",)  # writing_rl/models: POLICY=smollm2, JUDGE=smollm2


def real_models(genrm: str) -> None:
    """POLICY=NAME: the policy (MODEL_PATH) is that real model, with its own tokenizer and chat template; JUDGE=NAME:
    the judge is that model served here (or, with GENRM, the GenRM verl hosts: GENRM_PATH)."""
    from writing_rl.models import model_dir

    for variable in ("POLICY", "JUDGE"):
        name = os.environ.get(variable)
        if name and name not in REAL_MODELS:
            fail(f"{variable}={name}: expected one of {', '.join(REAL_MODELS)}")
    if os.environ.get("JUDGE") and os.environ.get("JUDGE_BASE_URL"):
        fail("JUDGE serves a judge here and JUDGE_BASE_URL names one elsewhere: set one of them")
    if os.environ.get("JUDGE") and not genrm and submits():
        fail("JUDGE serves a judge on this machine, which a Ray job cannot reach: give the job JUDGE_BASE_URL")
    if os.environ.get("POLICY"):
        os.environ["MODEL_PATH"] = str(model_dir(os.environ["POLICY"]))
    if os.environ.get("JUDGE") and genrm:
        os.environ["GENRM_PATH"] = str(model_dir(os.environ.pop("JUDGE")))


def main(argv: list[str]) -> int:
    if argv and argv[0] not in METHODS and argv[0] in judged_overlays():
        METHODS[argv[0]] = Method("prompts", "examples/writing_prompts.jsonl", judged=True)  # a group of prompts
    if not argv or argv[0] not in METHODS:
        fail(f"usage: tiny_train.sh METHOD [hydra overrides...]; METHOD: {', '.join(METHODS)}")
    name, user_overrides = argv[0], argv[1:]
    method = METHODS[name]
    trainer = os.environ.get("TRAINER", "")
    if trainer and trainer not in TRAINERS:
        fail(f"TRAINER={trainer}: expected one of {', '.join(TRAINERS)}")
    genrm = os.environ.get("GENRM", "")
    if genrm not in ("", "colocated", "standalone"):
        fail(f"GENRM={genrm}: expected colocated or standalone")
    real_models(genrm)
    for variable in ("MODEL_PATH", "GENRM_PATH"):  # HF model folders (the tiny ones: on the tiny tokenizer)
        if os.environ.get(variable) and not (Path(os.environ[variable]) / "config.json").exists():
            fail(f"{variable}={os.environ[variable]}: expected an HF model folder (with config.json)")
    if os.environ.get("GENRM_PATH") and not genrm:
        fail("GENRM_PATH names the GenRM verl hosts: set GENRM=standalone or colocated too")
    if genrm and not method.judged:
        fail(f"GENRM is for the judged methods; {name} has a rule-based reward")
    learn = os.environ.get("LEARN") == "1"
    if learn and not method.judged:
        fail(f"LEARN=1 is for the judged methods (a judge with a taste); {name} has a rule-based reward")
    taste = os.environ.get("TASTE") or (DEFAULT_TASTE if learn else "")
    preference = os.environ.get("JUDGE_TASTE") or taste  # what the stand-in judge prefers (none: nothing)
    if taste or preference:
        from taste import judge_taste, parse_taste

        for variable, spec, read in (("TASTE", taste, parse_taste), ("JUDGE_TASTE", preference, judge_taste)):
            try:
                read(spec) if spec else None
            except ValueError as err:
                fail(f"{variable}={spec}: {err}")
        if taste:
            os.environ["TASTE"] = taste  # overrides() adds the watch
    flip = float(os.environ.get("JUDGE_FLIP") or 0.0)
    if not 0.0 <= flip <= 1.0:
        fail(f"JUDGE_FLIP={flip}: expected a probability within 0-1")
    steps = int(os.environ.get("STEPS") or (LEARN_STEPS if learn else 3))
    out = Path(os.environ.get("OUT") or REPO / "runs/tiny" / name).resolve()
    cache = Path(os.environ.get("CACHE_DIR") or REPO / ".cache/tiny").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if submits():  # RAY_ADDRESS: this same run as a job on that cluster (scripts/tiny_cluster.py)
        selected = [*TRAINERS[trainer].overrides, *ON_ONE_MACHINE.get(trainer, ())] if trainer else []
        preset = [f"+genrm={genrm}"] if genrm else []
        config = compose(name, [*preset, "+backend=cpu", *selected, *user_overrides])
        return submit_tiny_run(REPO, name, user_overrides, out, cache, config)

    artifacts = build_artifacts(cache, genrm=bool(genrm))
    rows = Path(os.environ.get("ROWS") or REPO / method.rows).resolve()  # ROWS: the builder's input instead
    rows = graded_rows(method, taste, out) if learn and name == "writing_rl" else rows
    policy = os.environ.get("POLICY") or f"a tiny Qwen2 ({os.environ.get('MODEL_PATH') or 'random'})"
    say(f"{HEAD} 1/4 {policy} and tokenizer ({os.environ.get('MODEL_PATH') or cache}), rows {rows}")
    train = build_data(method, rows, out / "data")
    # verl's validation rows (split=test: a group method judges them as validation groups of val_kwargs.n)
    val = build_data(method, rows, out / "validation_data", test_size=VAL_ROWS) if learn else None

    stand_in = served = None
    # A judge this run starts is stopped however the run ends (a SIGTERM too: it lives in a session of its own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        judge = None
        if method.judged and not genrm:
            if os.environ.get("JUDGE_BASE_URL"):
                judge = (os.environ["JUDGE_BASE_URL"], os.environ.get("JUDGE_MODEL") or fail("set JUDGE_MODEL too"))
                say(f"{HEAD} 2/4 judge: {judge[1]} at {judge[0]}")
                title = f"judge: {judge[1]}"
            elif os.environ.get("JUDGE"):
                from writing_rl.models import model_dir

                from local_judge import ServedJudge

                say(f"{HEAD} 2/4 judge: {os.environ['JUDGE']}, served here by writing-rl serve-judge --engine hf (log: "
                    f"{out / 'serve-judge.log'})")  # fmt: skip
                served = ServedJudge(model_dir(os.environ["JUDGE"]), os.environ["JUDGE"], out / "serve-judge.log")
                judge = (served.base_url, served.name)
                os.environ.setdefault("JUDGE_MAX_TOKENS", str(SERVED_JUDGE_MAX_TOKENS))
                title = f"judge: {served.name} (a real language model, served on this CPU)"
            else:
                faults = int(os.environ.get("STAND_IN_FAULTS") or 0)
                host = judge_host() if in_job() else "127.0.0.1"
                stand_in = StandInJudge(out / "judge.log", faults=faults, taste=preference, flip=flip, host=host)
                judge = (stand_in.base_url, "stand-in-judge")
                say(f"{HEAD} 2/4 judge: the STAND-IN judge at {stand_in.base_url} (tests/stand_in_judge.py)")
                if preference == "none":
                    say("   with no taste: every verdict a tie, every score alike; the reward terms alone teach")
                    title = f"STAND-IN judge with no preference: the reward terms alone; measured: {taste or '-'}"
                elif preference:
                    say(
                        f"   its taste: {preference} (tests/taste.py), each verdict reversed with probability {flip:g}:"
                    )
                    say("   the policy learns a judge's preference, measured on its text apart from the judge")
                    title = f"STAND-IN judge with a taste: {preference}, flip {flip:g} (tests/taste.py)"
                else:
                    say("   !! its verdicts are a hash of the texts: noise in the judge's format, so rewards vary")
                    say(
                        "   !! and the trainer learns from noise. For real verdicts set JUDGE_BASE_URL and JUDGE_MODEL,"
                    )
                    say("   !! or TASTE=letter:e (LEARN=1) for a judge with a preference the policy can learn.")
                    title = "STAND-IN judge: its verdicts are noise (a hash of the texts); the rewards mean nothing"
        elif genrm and os.environ.get("GENRM_PATH"):
            say(
                f"{HEAD} 2/4 judge: the GenRM at {os.environ['GENRM_PATH']} hosted by verl ({genrm}) on the CPU rollout"
            )
            title = f"the GenRM at {os.environ['GENRM_PATH']} hosted by verl ({genrm})"
        elif genrm:
            say(f"{HEAD} 2/4 judge: a tiny untrained GenRM hosted by verl ({genrm}) on the CPU rollout")
            title = f"a tiny untrained GenRM hosted by verl ({genrm}): its replies are unreadable"
        else:
            say(f"{HEAD} 2/4 no judge: a rule-based reward")
            title = f"{name}: a rule-based reward"

        metrics = out / "metrics.jsonl"
        if metrics.exists():
            shutil.move(metrics, out / "metrics.previous.jsonl")
        val_file = val.parent / "test.parquet" if val else None
        args = [
            *overrides(name, method, out, artifacts, train, steps, judge, val_file),
            "+backend=cpu",
            *user_overrides,
        ]
        config = compose(name, args)
        module = TRAINERS[
            trainer or trainer_of(config)
        ].module  # a legacy preset (+genrm=colocated) too: its judge health
        refused = unsupported(config) or "; ".join(unmet(config))
        if refused:
            fail(refused)
        command = [
            sys.executable,
            "-m",
            module,
            "--config-path",
            str(REPO / "hydra_configs"),
            "--config-name",
            name,
            *args,
        ]
        # A Ray of its own, with the logical GPUs +backend=cpu asks for, even beside a cluster `ray start` left running
        # (ray.init would join it); as a Ray job (RAY_ADDRESS), the job's cluster, with the resources its nodes have.
        env = {**os.environ, "VERL_PLATFORM": "cpu", "VERL_FILE_LOGGER_PATH": str(metrics)}
        if in_job():
            command += joining_overrides(config)
        else:
            env["RAY_ADDRESS"] = "local"
        env["PYTHONUNBUFFERED"] = "1"
        (out / "command.txt").write_text(" ".join(command) + "\n")
        say(
            f"{HEAD} 3/4 verl's trainer: {steps} steps of {BATCH} prompts x {ROLLOUTS} rollouts (log: {out / 'train.log'})"
        )
        say("   starting Ray and verl's workers (about a minute on 2 cores)")
        start = time.monotonic()
        rc = run_verl(command, env, out / "train.log")
    finally:
        for local in (stand_in, served):
            if local is not None:
                local.stop()

    logged = read_metrics(metrics)
    first = min(logged) if logged else None
    finished = bool(logged) and sorted(logged) == list(range(first, steps + 1))
    summary = {"method": name, "rc": rc, "steps": sorted(logged), "finished": finished and rc == 0}
    summary["seconds"] = round(time.monotonic() - start, 1)
    measured = taste_of(taste, out) if taste else None
    if measured:
        summary["taste"] = measured
    levels = curriculum_levels(out)
    if levels:
        summary["curriculum_levels"] = levels
    write_json(out / "summary.json", summary)
    say(f"{HEAD} 4/4 verl's metrics per step ({metrics})")
    if logged:
        report(logged, out, measured, title)
    if not summary["finished"]:
        tail = (out / "train.log").read_text(errors="replace").splitlines()[-40:]
        print("\n".join(tail), file=sys.stderr)
        print(f"error: verl's trainer exited with {rc} after steps {sorted(logged)} of {steps}", file=sys.stderr)
        return 1
    if levels:
        say(f"   curriculum: each prompt's reference level after the last step {levels} (0 = the easiest)")
    if measured and "learned" in measured:
        say(learning_line(measured))
        if learn and not measured["learned"]:
            print(
                f"error: the policy did not learn the taste {taste} (the learning check: z >= {MIN_Z})", file=sys.stderr
            )
            return 3
    say(f"done in {summary['seconds']:.0f}s: every step finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
