"""Arrow schemas of the parquet files the builders write (explicit, so every chunk has the same types)."""

from __future__ import annotations

import pyarrow as pa

# A chat: verl's `prompt` column and the SFT `messages` column.
CHAT = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))

# SFT conversations, read by verl's multi-turn SFT dataset and by LLaMA-Factory (sharegpt); both read
# only `messages`. extra_info says which input row a conversation came from (with the user's id and columns).
MESSAGES_SCHEMA = pa.schema(
    [("messages", CHAT), ("extra_info", pa.struct([("index", pa.int64()), ("split", pa.string())]))]
)


def rl_schema(extra_info: list[tuple[str, pa.DataType]], ground_truth: pa.DataType = pa.string()) -> pa.Schema:
    """verl RL rows: data_source, prompt (a chat), ability, reward_model {style, ground_truth}, extra_info."""
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", CHAT),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", ground_truth)])),
            ("extra_info", pa.struct(extra_info)),
        ]
    )
