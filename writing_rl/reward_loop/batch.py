"""Build the ``DataProto``s verl's reward loop receives, from dataset rows and response texts: a whole
batch (``build_reward_batch``, batch mode) or one sample per call (``streaming_samples``, streaming mode).

Used by offline scoring, the tests and the benchmarks, so they all send verl's reward loop exactly
what a training step sends it: left-padded prompt tokens, right-padded response tokens, an attention
mask over both, and the row's non-tensor fields (``data_source``, ``reward_model``, ``extra_info``,
``uid``, ``raw_prompt``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch
from verl import DataProto


def _prompt_ids(tokenizer, prompt: Any) -> list[int]:
    if isinstance(prompt, str):
        return tokenizer.encode(prompt, add_special_tokens=False)
    messages = [dict(m) for m in prompt]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        text = "\n".join(m["content"] for m in messages)
    return tokenizer.encode(text, add_special_tokens=False)


def build_reward_batch(
    tokenizer,
    rows: Sequence[Mapping[str, Any]],
    responses: Sequence[str],
    uids: Sequence[str] | None = None,
) -> DataProto:
    """One sample per (row, response). ``rows`` hold verl RL fields: ``prompt`` (chat list or text),
    ``data_source``, ``reward_model``, optional ``extra_info``. Responses end with the EOS token, as a
    finished rollout does."""
    if len(rows) != len(responses):
        raise ValueError(f"{len(rows)} rows but {len(responses)} responses")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    prompts = [_prompt_ids(tokenizer, row["prompt"]) for row in rows]
    answers = [tokenizer.encode(text, add_special_tokens=False) + eos for text in responses]
    prompt_len = max(1, max(map(len, prompts)))
    response_len = max(1, max(map(len, answers)))

    n = len(rows)
    prompt_ids = torch.full((n, prompt_len), pad, dtype=torch.long)
    response_ids = torch.full((n, response_len), pad, dtype=torch.long)
    attention = torch.zeros((n, prompt_len + response_len), dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompts, answers)):
        if p:
            prompt_ids[i, prompt_len - len(p) :] = torch.tensor(p)
            attention[i, prompt_len - len(p) : prompt_len] = 1
        if r:
            response_ids[i, : len(r)] = torch.tensor(r)
            attention[i, prompt_len : prompt_len + len(r)] = 1

    def column(values: list) -> np.ndarray:
        array = np.empty(n, dtype=object)
        array[:] = values
        return array

    non_tensor = {
        "data_source": column([row.get("data_source", "unknown") for row in rows]),
        "reward_model": column([dict(row["reward_model"]) for row in rows]),
        "extra_info": column([dict(row.get("extra_info") or {}) for row in rows]),
        "raw_prompt": column([_as_chat(row["prompt"]) for row in rows]),
        "uid": column(list(uids) if uids is not None else [str(i) for i in range(n)]),
    }
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": attention,
        },
        non_tensors=non_tensor,
    )


def _as_chat(prompt: Any) -> list[dict]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(m) for m in prompt]


def streaming_samples(
    tokenizer,
    rows: Sequence[Mapping[str, Any]],
    responses: Sequence[str],
    uids: Sequence[str],
) -> list[DataProto]:
    """One single-sample ``DataProto`` per (row, response), as verl's agent loop sends a finished rollout
    to a reward worker in streaming mode (``AgentLoopWorker._compute_score``): prompt and response ids
    unpadded, the attention mask all ones, the row's fields as one-element arrays."""
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    samples = []
    for row, text, uid in zip(rows, responses, uids, strict=True):
        prompt = torch.tensor(_prompt_ids(tokenizer, row["prompt"]) or [0], dtype=torch.long)
        response = torch.tensor(tokenizer.encode(text, add_special_tokens=False) + eos, dtype=torch.long)
        input_ids = torch.cat([prompt, response])
        fields = {
            "data_source": row.get("data_source", "unknown"),
            "reward_model": dict(row["reward_model"]),
            "extra_info": dict(row.get("extra_info") or {}),
            "raw_prompt": _as_chat(row["prompt"]),
            "uid": uid,
        }
        one = np.empty(1, dtype=object)
        samples.append(
            DataProto.from_dict(
                tensors={
                    "prompts": prompt[None],
                    "responses": response[None],
                    "input_ids": input_ids[None],
                    "attention_mask": torch.ones_like(input_ids)[None],
                },
                non_tensors={key: _one(value, one) for key, value in fields.items()},
            )
        )
    return samples


def _one(value: Any, template: np.ndarray) -> np.ndarray:
    array = template.copy()
    array[0] = value
    return array
