"""``writing-rl preflight``: what a run will meet, checked before Ray starts anything expensive.

Every problem is one line, all of them at once: the config (verl's ``validate_config`` and ours),
the paths the run reads, the parquet rows against what the configured reward fn needs, prompt token
lengths against ``data.max_prompt_length``, the judge prompt at ``max_response_length`` against the
judge's context, and the judge endpoint itself (``GET /v1/models``). ``DRY_RUN=1`` and every
``scripts/train_*.sh`` run it first.

A reward fn module declares what it needs with two optional functions (looked up on the module the
config names, as verl loads it): ``preflight_row(ground_truth, extra_info)`` raises ``ValueError``
for a row it cannot score, and ``preflight_judge_messages(row, response, group_size, reward_kwargs)``
returns the judge messages of one call with every policy response replaced by ``response``.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

# (config key, the scripts' variable that fills it)
MODEL_KEY, GENRM_KEY = "actor_rollout_ref.model.path", "reward.reward_model.model_path"
PATH_KEYS = {
    MODEL_KEY: "MODEL_PATH",
    "data.train_files": "TRAIN_FILES",
    "data.val_files": "VAL_FILES",
    GENRM_KEY: "GENRM_PATH",
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_MARKER = "\u2063RESPONSE\u2063"  # stands for a policy response in a rendered judge prompt
SHOWN_BAD_ROWS = 5


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # what was checked, and what the user should know

    def ok(self, text: str) -> None:
        self.lines.append(f"ok       {text}")

    def note(self, text: str) -> None:
        self.lines.append(f"note     {text}")

    def problem(self, text: str) -> None:
        self.problems.append(text)
        self.lines.append(f"PROBLEM  {text}")


@dataclass(frozen=True)
class Row:
    """One parquet row as the reward path sees it."""

    number: int  # 0-based row of its file
    messages: list
    ground_truth: Any
    extra_info: dict

    @property
    def prompt(self) -> str:
        users = [m.get("content") or "" for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


def _name(key: str) -> str:
    return f"{key} ({PATH_KEYS[key]})" if key in PATH_KEYS else key


def _is_remote(value: str, key: str, remote: set[str]) -> bool:
    return "://" in value or "all" in remote or key in remote or PATH_KEYS.get(key) in remote


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def check_paths(config, remote: set[str], report: Report) -> dict[str, list[Path]]:
    """Local paths that exist, by key; missing ones are problems unless hub ids or marked remote."""
    keys = [MODEL_KEY, "data.train_files", "data.val_files"]
    if config.reward.reward_model.get("enable"):
        keys.append(GENRM_KEY)
    found: dict[str, list[Path]] = {}
    for key in keys:
        values = _as_list(_select(config, key))
        if not values:
            report.problem(f"{_name(key)} is not set")
            continue
        for value in values:
            path = Path(value).expanduser()
            if path.exists():
                found.setdefault(key, []).append(path)
            elif _is_remote(value, key, remote):
                report.note(f"{_name(key)}={value}: remote, not checked here")
            elif key in (MODEL_KEY, GENRM_KEY) and _HUB_ID.match(value):
                report.note(f"{_name(key)}={value}: not a local path; taken as a hub id the nodes download")
            else:
                report.problem(
                    f"{_name(key)}={value}: no such file or directory here (a path only the cluster sees: "
                    f"REMOTE_PATHS={PATH_KEYS.get(key, key)})"
                )
    return found


def _select(config, key: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(config, key, default=None)


# ---------------------------------------------------------------- rows


def read_rows(path: Path, prompt_key: str, max_rows: int, report: Report) -> list[Row] | None:
    """The first ``max_rows`` rows, after the columns verl and the reward path need are checked."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as err:
        report.problem(f"{path}: not a readable parquet file ({err})")
        return None
    columns = set(parquet.schema_arrow.names)
    missing = [c for c in (prompt_key, "reward_model", "data_source") if c not in columns]
    if missing:
        report.problem(
            f"{path}: no column(s) {', '.join(missing)} (has {', '.join(sorted(columns))}); "
            "build it with python data_prep/build_parquet.py"
        )
        return None
    rows: list[Row] = []
    for batch in parquet.iter_batches(batch_size=min(max_rows, 8192)):
        for record in batch.to_pylist():
            reward_model = record.get("reward_model") or {}
            rows.append(
                Row(
                    number=len(rows),
                    messages=record.get(prompt_key) or [],
                    ground_truth=reward_model.get("ground_truth") if isinstance(reward_model, dict) else None,
                    extra_info=record.get("extra_info") or {},
                )
            )
            if len(rows) == max_rows:
                break
        if len(rows) == max_rows:
            break
    total = parquet.metadata.num_rows
    report.ok(f"{path}: {total} rows, columns {prompt_key}/reward_model/data_source present")
    if total > len(rows):
        report.note(f"{path}: rows 0-{len(rows) - 1} of {total} checked (--max-rows)")
    return rows


def _message_problem(messages) -> str | None:
    if not isinstance(messages, (list, tuple)) or not messages:
        return "the prompt must be a non-empty list of chat messages {role, content}"
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            return f"each prompt message needs a string 'content', got {message!r:.80}"
    if not any(m.get("role") == "user" and m["content"].strip() for m in messages):
        return "the prompt has no non-empty user message"
    return None


def check_rows(path: Path, rows: list[Row], check_row: Callable | None, where: str, report: Report) -> None:
    bad: list[str] = []
    for row in rows:
        reason = _message_problem(row.messages)
        if reason is None and check_row is not None:
            try:
                check_row(row.ground_truth, row.extra_info)
            except ValueError as err:
                reason = str(err)
        if reason is not None:
            bad.append(f"row {row.number}: {reason}")
    if not bad:
        report.ok(f"{path}: {len(rows)} rows hold what {where} needs")
        return
    for line in bad[:SHOWN_BAD_ROWS]:
        report.problem(f"{path} {line}")
    if len(bad) > SHOWN_BAD_ROWS:
        report.problem(
            f"{path}: {len(bad) - SHOWN_BAD_ROWS} more bad rows of {len(rows)} (first {SHOWN_BAD_ROWS} above)"
        )


# ---------------------------------------------------------------- token lengths


def load_tokenizer(path: str, trust_remote_code: bool):
    from transformers import AutoTokenizer

    local = Path(path).expanduser().exists()
    return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, local_files_only=not local)


def prompt_token_lengths(tokenizer, rows: Sequence[Row], template_kwargs: Mapping) -> np.ndarray:
    """Prompt tokens as verl's RLHFDataset counts them (chat template + generation prompt)."""
    texts = [
        tokenizer.apply_chat_template(list(r.messages), add_generation_prompt=True, tokenize=False, **template_kwargs)
        for r in rows
    ]
    return np.array([len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]], dtype=np.int64)


def round_up(value: int, step: int = 1024) -> int:
    return int(-(-value // step) * step)


def check_prompt_lengths(path: Path, lengths: np.ndarray, data, max_drop: float, report: Report) -> None:
    limit = int(data.max_prompt_length)
    over = int((lengths > limit).sum())
    share = over / len(lengths)
    p50, p95, p99 = (int(np.percentile(lengths, q)) for q in (50, 95, 99))
    summary = f"prompt tokens p50 {p50} / p95 {p95} / max {int(lengths.max())} vs data.max_prompt_length={limit}"
    if not over:
        report.ok(f"{path}: {summary}: every row fits")
        return
    keep_99, keep_all = round_up(p99), round_up(int(lengths.max()))
    fit = f"data.max_prompt_length={keep_all} keeps all"
    if keep_99 < keep_all:
        fit = f"data.max_prompt_length={keep_99} keeps 99%, {keep_all} keeps all"
    if data.get("filter_overlong_prompts", True):
        text = f"{path}: {summary}: {over} rows ({share:.1%}) are over and dropped by data.filter_overlong_prompts"
        if share > max_drop:
            report.problem(f"{text}, more than --max-drop {max_drop:.0%}: {fit}")
        else:
            report.note(f"{text} ({fit})")
    else:
        report.problem(
            f"{path}: {summary}: {over} rows ({share:.1%}) are over; with filter_overlong_prompts=false verl's "
            f"agent loop cuts their beginning off (the instruction first): {fit}, or filter them"
        )


def judge_prompt_tokens(tokenizer, messages: list[dict], max_response_length: int) -> int:
    """Tokens of a judge prompt whose policy responses are each ``max_response_length`` long."""
    responses = sum(m["content"].count(_MARKER) for m in messages)
    empty = [{**m, "content": m["content"].replace(_MARKER, "")} for m in messages]
    text = tokenizer.apply_chat_template(empty, add_generation_prompt=True, tokenize=False)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"]) + responses * max_response_length


def longest_judge_prompt(tokenizer, rows: Sequence[Row], lengths: np.ndarray, build: Callable, config) -> int:
    """The longest judge prompt over the rows with the longest prompts and ground truths."""
    by_prompt = np.argsort(lengths)[::-1][:20]
    by_truth = sorted(range(len(rows)), key=lambda i: -len(json.dumps(rows[i].ground_truth, default=str)))[:20]
    group_size = int(config.actor_rollout_ref.rollout.n)
    kwargs = dict(config.reward.custom_reward_function.get("reward_kwargs") or {})
    longest = 0
    for index in {*map(int, by_prompt), *by_truth}:
        try:
            messages = build(rows[index], _MARKER, group_size, kwargs)
        except ValueError:  # a bad row: reported by check_rows
            continue
        longest = max(longest, judge_prompt_tokens(tokenizer, messages, int(config.data.max_response_length)))
    return longest


# ---------------------------------------------------------------- the judge


def _model_context(model_path: str | None) -> int | None:
    config = Path(str(model_path or "")).expanduser() / "config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_position_embeddings")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, int) else None


def ping_judge(base_url: str, api_key: str | None, timeout_s: float = 10.0) -> list[dict]:
    """The model cards of ``GET {base_url}/models``; raises ``ValueError`` saying what to change."""
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = json.load(response)
    except urllib.error.HTTPError as err:
        hint = {
            401: "the key was refused: check the API key variable (JUDGE_API_KEY_ENV)",
            403: "the key was refused: check the API key variable (JUDGE_API_KEY_ENV)",
            404: "no /models there: base_url should end with the API root, e.g. http://host:8000/v1",
        }.get(err.code, "is it an OpenAI-compatible server?")
        raise ValueError(f"judge {url} answered HTTP {err.code}: {hint}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ValueError(
            f"judge {url} is unreachable ({reason}): start it, or fix reward.reward_kwargs.judge.base_url (JUDGE_BASE_URL)"
        ) from None
    except ValueError:
        raise ValueError(f"judge {url} did not answer JSON: is it an OpenAI-compatible server?") from None
    cards = body.get("data") if isinstance(body, dict) else None
    if not isinstance(cards, list):
        raise ValueError(f"judge {url} answered without a 'data' list of models: is it an OpenAI-compatible server?")
    return [c for c in cards if isinstance(c, dict)]


def check_judge(config, settings, report: Report, ping: bool) -> int | None:
    """The judge's context length when known (it bounds the judge prompt check)."""
    hosted = config.reward.reward_model
    if hosted.get("enable"):
        # verl's vLLM server: rollout.max_model_len, else the GenRM's max_position_embeddings
        context = (hosted.get("rollout") or {}).get("max_model_len") or _model_context(hosted.model_path)
        known = f", context {context} tokens" if context else ""
        report.ok(f"judge: the GenRM verl hosts ({hosted.model_path}){known}; not pinged")
        return context
    judge = settings.judge
    key = None
    if judge.api_key_env:
        key = os.environ.get(judge.api_key_env)
        if not key:
            report.problem(
                f"judge API key: ${judge.api_key_env} is not set in this shell (reward.reward_kwargs.judge.api_key_env); "
                "set it here and on every node"
            )
    if not judge.base_url:
        report.problem("reward.reward_kwargs.judge.base_url (JUDGE_BASE_URL) is not set")
        return None
    if not ping:
        report.note(f"judge {judge.base_url}: not pinged (--no-ping)")
        return None
    try:
        cards = ping_judge(judge.base_url, key)
    except ValueError as err:
        report.problem(str(err))
        return None
    served = {str(card.get("id")): card for card in cards}
    if judge.model not in served:
        near = difflib.get_close_matches(str(judge.model), list(served), n=1)
        report.problem(
            f"judge {judge.base_url} serves {', '.join(served) or 'no model'}, not '{judge.model}': set "
            f"reward.reward_kwargs.judge.model (JUDGE_MODEL)" + (f" to '{near[0]}'" if near else "")
        )
        return None
    context = served[judge.model].get("max_model_len")  # vLLM and serve-judge report it
    context = context if isinstance(context, int) else None
    report.ok(f"judge {judge.base_url} serves '{judge.model}'" + (f", context {context} tokens" if context else ""))
    return context


def check_judge_prompt(longest: int, max_tokens: int, context: int | None, approximate: bool, report: Report) -> None:
    need = longest + max_tokens
    how = " (counted with the policy tokenizer)" if approximate else ""
    text = f"judge prompt at max_response_length: up to {longest} tokens{how} + judge.max_tokens {max_tokens} = {need}"
    if context is None:
        report.note(f"{text}; the judge's context is not known here: make sure it holds {need} tokens")
    elif need > context:
        report.problem(
            f"{text} > the judge's context {context}: long samples would fail or be cut; lower "
            "data.max_response_length or reward.reward_kwargs.judge.max_tokens, or serve the judge with a longer context"
        )
    else:
        report.ok(f"{text} <= the judge's context {context}")


# ---------------------------------------------------------------- the whole check


def reward_module(config):
    """The module of ``reward.custom_reward_function.path`` (``pkg://pkg.mod`` or a file), as verl loads it."""
    path = config.reward.custom_reward_function.get("path")
    if not path:
        return None
    if path.startswith("pkg://"):
        return importlib.import_module(path[len("pkg://") :])
    spec = importlib.util.spec_from_file_location("preflight_reward_fn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_preflight(
    config, remote: Iterable[str] = (), max_rows: int = 20_000, max_drop: float = 0.05, ping: bool = True
) -> Report:
    from .check import check_config
    from .config import ManagerConfig

    report = Report()
    try:
        for line in check_config(config):
            if line.startswith("API key env var"):  # check_judge reports the key
                continue
            (report.note if line.startswith("WARNING") else report.ok)(line.removeprefix("WARNING "))
    except Exception as err:  # noqa: BLE001 - any config error is one line of the report
        report.problem(f"config: {err}")
        return report
    module = reward_module(config)
    manager = config.reward.reward_manager
    ours = manager.get("source") == "importlib" and str(manager.module.get("path", "")).startswith("pkg://writing_rl")
    found = check_paths(config, set(remote), report)

    tokenizer = None
    model_path = config.actor_rollout_ref.model.get("tokenizer_path") or config.actor_rollout_ref.model.path
    if MODEL_KEY in found or (model_path and _HUB_ID.match(str(model_path))):
        try:
            tokenizer = load_tokenizer(str(model_path), bool(config.data.get("trust_remote_code", False)))
        except (OSError, ValueError) as err:
            report.note(f"prompt lengths not measured: no tokenizer at {model_path} here ({str(err).splitlines()[0]})")

    judge_tokenizer, approximate = tokenizer, True
    if GENRM_KEY in found:  # verl hosts a local GenRM: count the judge prompt with its own tokenizer
        try:
            judge_tokenizer, approximate = load_tokenizer(str(found[GENRM_KEY][0]), False), False
        except (OSError, ValueError) as err:
            report.note(f"judge prompt counted with the policy tokenizer: none at {found[GENRM_KEY][0]} ({err})")

    check_row = getattr(module, "preflight_row", None)
    build_judge = getattr(module, "preflight_judge_messages", None) if ours else None
    where = f"{config.reward.custom_reward_function.path}:{config.reward.custom_reward_function.name}"
    template_kwargs = dict(config.data.get("apply_chat_template_kwargs") or {})
    longest = 0
    for key in ("data.train_files", "data.val_files"):
        for path in found.get(key, []):
            rows = read_rows(path, config.data.get("prompt_key", "prompt"), max_rows, report)
            if not rows:
                continue
            check_rows(path, rows, check_row, where, report)
            if tokenizer is None:
                continue
            usable = [r for r in rows if _message_problem(r.messages) is None]
            lengths = prompt_token_lengths(tokenizer, usable, template_kwargs)
            check_prompt_lengths(path, lengths, config.data, max_drop, report)
            if build_judge is not None:
                longest = max(longest, longest_judge_prompt(judge_tokenizer, usable, lengths, build_judge, config))
    if ours and build_judge is not None:
        settings = ManagerConfig.from_verl(
            config, "verl-reward-router:0" if config.reward.reward_model.get("enable") else None
        )
        context = check_judge(config, settings, report, ping)
        if longest:
            check_judge_prompt(longest, int(settings.judge.max_tokens), context, approximate, report)
    return report


def add_arguments(parser) -> None:
    parser.add_argument("--config-name", default="writing_rl", help="overlay in hydra_configs/ (default: writing_rl)")
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
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for verl.trainer.main_ppo")


def run_from_args(args) -> int:
    from .verl_config import compose

    config = compose(args.config_name, args.overrides, args.config_dir)
    remote = [name for value in args.remote for name in re.split(r"[,\s]+", value) if name]
    report = run_preflight(config, remote, args.max_rows, args.max_drop, ping=not args.no_ping)
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


if __name__ == "__main__":
    raise SystemExit(main())
