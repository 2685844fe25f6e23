"""``writing-rl preflight``: what a run will meet, checked before Ray starts anything expensive.

Every problem is one line, all of them at once: the config (verl's ``validate_config`` and ours),
the paths the run reads, the parquet rows against what the configured reward fn needs, prompt token
lengths against ``data.max_prompt_length``, the judge prompt at ``max_response_length`` against the
judge's context, and the judge endpoint itself (``GET /v1/models``). ``DRY_RUN=1`` and every
``scripts/train_*.sh`` run it first.

A reward method declares what it needs in its ``METHOD`` (reward_loop/contract.py): ``check_row`` raises
``ValueError`` for a row it cannot score, and ``judge_messages`` gives the judge messages of one call with
every policy response replaced by a given one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence, TypeVar

from hydra_configs import DEFAULT_OVERLAY
from writing_rl.settings import ConfigError
from writing_rl.tools.preflight.config_checks import GENRM_KEY, check_paths
from writing_rl.tools.preflight.data_checks import (
    check_prompt_lengths,
    check_rows,
    load_tokenizer,
    message_problem,
    prompt_token_lengths,
    read_rows,
)
from writing_rl.tools.preflight.judge_checks import (
    TokenCounter,
    byte_counter,
    check_judge,
    check_judge_prompt,
    check_shadow,
    judge_prompt_tokens,
    judge_prompts,
    response_tokens,
    server_counter,
    tokenizer_counter,
)
from writing_rl.tools.preflight.report import Report
from writing_rl.tools.preflight.spend_checks import check_run_spend

T = TypeVar("T")


def judge_counter(genrm_tokenizer, policy_tokenizer, judge) -> TokenCounter:
    """The best way this machine has to count the judge prompt (judge_checks.py); ``judge``: the endpoint's
    settings when it may be asked (not hosted by verl, pinging allowed)."""
    if genrm_tokenizer is not None:
        return tokenizer_counter(genrm_tokenizer)
    if judge is not None and judge.base_url:
        key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
        counter = server_counter(judge.endpoints[0], str(judge.model), key)
        if counter is not None:
            return counter
    if policy_tokenizer is not None:
        return tokenizer_counter(policy_tokenizer, " (counted with the policy tokenizer)")
    return byte_counter()


def parquet_rows(path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def _unscorable(row, check_row) -> bool:
    """A row the reward fn refuses (check_rows reported it)."""
    if check_row is None:
        return False
    try:
        check_row(row.ground_truth, row.extra_info)
    except ValueError:
        return True
    return False


def attempt(report: Report, what: str, check: Callable[..., T], *args) -> T | None:
    """``check(*args)``, or None with its error as one problem line (once: a config stage may have named it)."""
    try:
        return check(*args)
    except Exception as err:  # noqa: BLE001 - any failed check is one line of the report
        text = (str(err).strip().splitlines() or [type(err).__name__])[0]
        if not any(text in problem for problem in report.problems):
            report.problem(f"{what}: {text}")
        return None


def check_config_stages(config, report: Report) -> None:
    """verl's settings, the environment and our reward settings, each reported on its own (one problem does
    not hide the others)."""
    from writing_rl.tools.preflight.config_checks import CONFIG_STAGES

    for stage in CONFIG_STAGES:
        for line in attempt(report, "config", stage, config) or []:
            if line.removeprefix("WARNING ").startswith("API key env var"):  # check_judge reports the key
                continue
            (report.note if line.startswith("WARNING") else report.ok)(line.removeprefix("WARNING "))


def run_preflight(
    config,
    remote: Iterable[str] = (),
    max_rows: int = 20_000,
    max_drop: float = 0.05,
    ping: bool = True,
    extra_checks: Sequence[Callable] = (),
    config_problems: Sequence[str] = (),
) -> Report:
    """Every check that can run does: a config problem is one line and the paths, data and judge are still
    checked. ``config_problems``: the overrides Hydra refused (``config`` was composed without them).
    ``extra_checks``: ``check(config, report)`` run last, when nothing above is a problem (the command
    line passes ``writing-rl preflight --probe``'s judge probe)."""
    from writing_rl.reward_loop.reward_fn import load_reward_fn
    from writing_rl.tools.preflight.config_checks import runs_our_manager

    report = Report()
    for problem in config_problems:
        report.problem(f"config: {problem}")
    check_config_stages(config, report)
    reward_fn = attempt(report, "reward fn", load_reward_fn, config)
    method = None if reward_fn is None else reward_fn.method
    ours = bool(attempt(report, "reward manager", runs_our_manager, config))
    found = attempt(report, "paths", check_paths, config, set(remote), report) or {}
    tokenizer, genrm_tokenizer = _tokenizers(config, found, report)
    build_judge = method.judge_messages if method is not None and ours else None
    seen = check_data(config, found, method, build_judge, tokenizer, max_rows, max_drop, report)
    if build_judge is not None:
        attempt(report, "judge", check_judge_side, config, method, seen, tokenizer, genrm_tokenizer, ping, report)
    for check in extra_checks:
        if report.problems:
            report.note("judge probe skipped: fix the problems above first")
            break
        check(config, report)
    return report


def _tokenizers(config, found, report: Report) -> tuple[object | None, object | None]:
    """The policy's tokenizer and, when verl hosts a GenRM, the GenRM's; None where this machine has none."""
    tokenizer = None
    model = config.actor_rollout_ref.model
    model_path = model.get("tokenizer_path") or model.get("path")
    if model_path:
        try:
            tokenizer = load_tokenizer(str(model_path), bool(config.data.get("trust_remote_code", False)))
        except (OSError, ValueError) as err:
            report.note(
                f"prompt lengths not measured: no tokenizer for {model_path} on this machine "
                f"({str(err).splitlines()[0]}); to measure them, give a local path or run "
                f"huggingface-cli download {model_path} --include 'tokenizer*' here"
            )
    genrm_tokenizer = None
    if GENRM_KEY in found:  # verl hosts a local GenRM: count the judge prompt with its own tokenizer
        try:
            genrm_tokenizer = load_tokenizer(str(found[GENRM_KEY][0]), False)
        except (OSError, ValueError) as err:
            report.note(f"no GenRM tokenizer at {found[GENRM_KEY][0]} ({err})")
    return tokenizer, genrm_tokenizer


@dataclass
class DataSeen:
    """What the data checks read that the judge checks use."""

    prompts: list[list[dict]] = field(default_factory=list)  # the judge messages of the rows read
    train_rows: list = field(default_factory=list)
    train_size: int = 0  # rows in the train files, read or not


def check_data(config, found, method, build_judge, tokenizer, max_rows, max_drop, report: Report) -> DataSeen:
    """Each parquet file's rows against the reward fn and ``data.max_prompt_length``; a file whose check
    fails is one problem, the others are still checked."""
    seen = DataSeen()
    check_row = None if method is None else method.check_row
    fn = config.reward.custom_reward_function
    where = f"{fn.get('path')}:{fn.get('name')}"
    template_kwargs = dict(config.data.get("apply_chat_template_kwargs") or {})
    for key in ("data.train_files", "data.val_files"):
        for path in found.get(key, []):
            rows = read_rows(path, config.data.get("prompt_key", "prompt"), max_rows, report)
            if not rows:
                continue
            if key == "data.train_files":
                seen.train_rows += rows
                seen.train_size += parquet_rows(path)
            check_rows(path, rows, check_row, where, report)
            usable = [r for r in rows if message_problem(r.messages) is None]

            lengths = None
            if tokenizer is not None:
                lengths = attempt(report, str(path), prompt_token_lengths, tokenizer, usable, template_kwargs)
                if lengths is not None:
                    check_prompt_lengths(path, lengths, config.data, max_drop, report)
            if build_judge is not None:
                seen.prompts += attempt(report, str(path), judge_prompts, usable, lengths, build_judge, config) or []
    return seen


def judge_settings(config, hosted: bool):
    """``reward.reward_kwargs`` as the reward workers read it; when another part of it is refused (a
    config problem already), the judge and shadow sections alone, so the endpoints are still checked."""
    from omegaconf import OmegaConf

    from writing_rl.reward_loop.config import ManagerConfig
    from writing_rl.settings import ConfigError

    address = "verl-reward-router:0" if hosted else None
    try:
        return ManagerConfig.from_verl(config, address)
    except ConfigError:
        plain = OmegaConf.to_container(config, resolve=False)
        kwargs = plain["reward"].get("reward_kwargs") or {}
        plain["reward"]["reward_kwargs"] = {k: kwargs[k] for k in ("judge", "shadow") if k in kwargs}
        return ManagerConfig.from_verl(OmegaConf.create(plain), address)


def check_judge_side(config, method, seen: DataSeen, tokenizer, genrm_tokenizer, ping: bool, report: Report) -> None:
    """The judge endpoint and the shadow judge, the longest judge prompt against the judge's context, and
    what the run's judge calls cost."""
    hosted = bool(config.reward.reward_model.get("enable"))
    settings = judge_settings(config, hosted)
    context = check_judge(config, settings, report, ping)
    check_shadow(settings, report, ping)
    longest = None
    if seen.prompts:
        counter = judge_counter(genrm_tokenizer, tokenizer, None if hosted or not ping else settings.judge)
        response_length = int(config.data.max_response_length)
        longest = max(judge_prompt_tokens(counter, messages, response_length) for messages in seen.prompts)
        responses = max(response_tokens(messages, response_length) for messages in seen.prompts)
        check_judge_prompt(longest, responses, int(settings.judge.max_tokens), context, counter, report)
    usable = [row for row in seen.train_rows if not _unscorable(row, method.check_row)]
    check_run_spend(config, settings.judge, usable, seen.train_size, method.calls_per_rollout, longest, report)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--config-name", default=DEFAULT_OVERLAY, help=f"overlay in hydra_configs/ (default: {DEFAULT_OVERLAY})"
    )
    parser.add_argument("--config-dir", help="directory of the overlay (default: the installed hydra_configs/)")
    parser.add_argument(
        "--remote", action="append", default=[], metavar="NAME",
        help="a path only the cluster sees, not checked here: MODEL_PATH, TRAIN_FILES, VAL_FILES, GENRM_PATH, "
        "its config key, or 'all' (repeat; default: none)",
    )  # fmt: skip
    parser.add_argument("--max-rows", type=int, default=20_000, help="rows read per parquet file (default: 20000)")
    parser.add_argument(
        "--max-drop", type=float, default=0.05,
        help="largest share of rows filter_overlong_prompts may drop before it is a problem (default: 0.05)",
    )  # fmt: skip
    parser.add_argument("--no-ping", action="store_true", help="do not contact the judge endpoint")
    parser.add_argument(
        "--no-cluster", action="store_true",
        help="with RAY_ADDRESS set: do not ask the cluster (its resources, the job's environment there)",
    )  # fmt: skip
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for verl.trainer.main_ppo")


def cluster_address() -> str:
    """The Ray cluster a job goes to (RAY_ADDRESS), or "" for a Ray of this machine's own."""
    address = os.environ.get("RAY_ADDRESS", "")
    return "" if address in ("", "local", "auto") else address


def run_from_args(args, extra_checks: Sequence[Callable] = ()) -> int:
    from writing_rl.offline.compose import compose_leniently

    try:  # a mistyped override is one line, and the rest is checked without it
        config, refused = compose_leniently(args.config_name, args.overrides, args.config_dir)
    except ConfigError as err:  # no overlay of that name: nothing to check
        report = Report()
        report.problem(f"config: {err}")
    else:
        remote = [name for value in args.remote for name in re.split(r"[,\s]+", value) if name]
        report = run_preflight(
            config, remote, args.max_rows, args.max_drop, not args.no_ping, extra_checks, config_problems=refused
        )
        if not args.no_cluster and cluster_address():
            from writing_rl.tools.shared.cluster.probe import check_cluster_from_environ

            check_cluster_from_environ(config, report, args.config_dir)
    print("\n".join(report.lines))
    if report.problems:
        print(f"preflight: {len(report.problems)} problem(s); nothing was started")
        return 1
    print("preflight: ok")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="writing-rl preflight", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))
