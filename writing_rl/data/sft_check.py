"""Checks of a GenRM SFT run before it reaches GPUs (the logic of ``python -m data_prep.check_sft``, which
``DRY_RUN=1 scripts/train_genrm_sft.sh`` runs).

Composes verl's own SFT config (``sft_trainer_engine``, what ``python -m verl.trainer.sft_trainer`` runs) with
the Hydra overrides, then checks what fails late on a cluster (the list: docs/genrm/training.md, "2. SFT"). The
chats must be what verl's MultiTurnSFTDataset and LLaMA-Factory's sharegpt format read: {role, content} turns
with an assistant turn; the length check applies under ``data.truncation=error``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

ROLES = {"system", "user", "assistant", "tool"}


def compose_sft(overrides: Sequence[str]):
    """verl's SFT trainer config with these overrides, as ``verl.trainer.sft_trainer`` composes it."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose(config_name="sft_trainer_engine", overrides=list(overrides))


def check_sft(config, sample: int = 64) -> list[str]:
    """Raise ValueError on the first problem; return what was checked."""
    from verl.utils.config import omega_conf_to_dataclass

    checked = []
    for section in ("engine", "optim", "checkpoint"):
        omega_conf_to_dataclass(config[section])
    checked.append("engine, optim and checkpoint build verl's config dataclasses")

    ranks = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    batch = int(config.data.train_batch_size)
    if batch % ranks:
        raise ValueError(f"data.train_batch_size={batch} does not divide over {ranks} data-parallel ranks")
    checked.append(f"global batch {batch} over {ranks} ranks")

    key = config.data.messages_key
    files = _files(config.data.train_files) + _files(config.data.get("val_files"))
    if not files:
        raise ValueError("data.train_files is not set")
    for path in files:
        rows = check_messages_parquet(path, key)
        checked.append(f"{path}: {rows} rows of '{key}' chats")

    tokenizer_dir = config.model.get("tokenizer_path") or config.model.path
    if tokenizer_dir and Path(str(tokenizer_dir)).expanduser().is_dir():
        longest = longest_sample(files[0], config, str(Path(str(tokenizer_dir)).expanduser()), sample)
        limit = int(config.data.max_length)
        if longest > limit and config.data.truncation == "error":
            raise ValueError(
                f"a sample of {files[0]} has {longest} tokens > data.max_length={limit} "
                "(raise data.max_length, or set data.truncation=left|right)"
            )
        checked.append(f"verl MultiTurnSFTDataset on {sample} rows: longest {longest} tokens (max_length {limit})")
    else:
        checked.append(f"model.path {tokenizer_dir} is not a local directory: token lengths not checked")
    return checked


def check_messages_parquet(path: str, key: str = "messages") -> int:
    """Number of rows; raises ValueError naming the row when a chat is not trainable."""
    import pyarrow.parquet as pq

    if not Path(path).exists():
        raise ValueError(f"{path}: no such file")
    parquet = pq.ParquetFile(path)
    if key not in parquet.schema_arrow.names:
        raise ValueError(f"{path}: no '{key}' column (has {parquet.schema_arrow.names}); set data.messages_key")
    row = 0
    for batch in parquet.iter_batches(batch_size=10_000, columns=[key]):
        for chat in batch.column(key).to_pylist():
            _check_chat(chat, f"{path} row {row}")
            row += 1
    if not row:
        raise ValueError(f"{path}: no rows")
    return row


def longest_sample(path: str, config, tokenizer_dir: str, sample: int) -> int:
    """Token length of the longest of the first ``sample`` rows, tokenized by verl's MultiTurnSFTDataset."""
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    head = pq.ParquetFile(path).read_row_group(0).slice(0, sample)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    data_config = dict(config.data)
    data_config.update(truncation="right", max_length=10**9, pad_mode="no_padding")
    with tempfile.TemporaryDirectory() as tmp:
        sample_path = str(Path(tmp) / "sample.parquet")
        pq.write_table(head, sample_path)
        dataset = MultiTurnSFTDataset(sample_path, tokenizer, data_config)
        return max(len(dataset[i]["input_ids"]) for i in range(len(dataset)))


def trainer_import_problem() -> str | None:
    """Why ``verl.trainer.sft_trainer`` cannot be imported here, or None. verl 0.9.1's SFT trainer imports
    uvicorn and fastapi (through its rollout utilities) without declaring them; vLLM brings both, so
    they are missing only where vLLM is not installed."""
    try:
        import verl.trainer.sft_trainer  # noqa: F401
    except ImportError as exc:
        return (
            f"verl.trainer.sft_trainer cannot be imported here ({exc}); install what it needs where the run "
            "starts (verl's SFT trainer imports uvicorn and fastapi: pip install uvicorn fastapi, or writing-rl[gpu])"
        )
    return None


def _check_chat(chat, where: str) -> None:
    if not isinstance(chat, list) or not chat:
        raise ValueError(f"{where}: expected a non-empty list of {{role, content}} messages")
    for i, message in enumerate(chat):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise ValueError(f"{where}: message {i} must have a role in {sorted(ROLES)} and a text content")
    if not any(m["role"] == "assistant" and m["content"].strip() for m in chat):
        raise ValueError(f"{where}: no assistant message to learn from")


def _files(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]
