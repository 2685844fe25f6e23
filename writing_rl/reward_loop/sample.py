"""One sample of verl's batch as a reward fn sees it: its response decoded (``ResponseReader``), its fields and
its request as text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from writing_rl.protocols import THINK_CLOSE, THINK_OPEN
from writing_rl.terms import TermInput


@dataclass(frozen=True)
class Sample:
    """One sample as verl sends it, decoded."""

    response: str
    response_length: int  # valid response tokens
    fields: dict  # verl's non-tensor fields: data_source, reward_model, extra_info, uid, raw_prompt ...

    @property
    def ground_truth(self) -> Any:
        return self.fields["reward_model"].get("ground_truth")

    @property
    def prompt(self) -> str:
        return prompt_text(self.fields.get("raw_prompt"), self.ground_truth)

    def for_terms(self) -> TermInput:
        return TermInput(
            self.response,
            self.response_length,
            self.prompt,
            self.fields.get("data_source"),
            self.ground_truth,
            dict(self.fields.get("extra_info") or {}),
        )


class ResponseReader:
    """A worker's way from verl's batch to a ``Sample``, with the policy's tokenizer."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        special = set(getattr(tokenizer, "all_special_tokens", []) or [])
        self._special_think_tags = special & {THINK_OPEN, THINK_CLOSE}
        self._other_special_tokens = sorted(special - self._special_think_tags, key=len, reverse=True)

    def read(self, item) -> Sample:
        """One sample of verl's batch (a ``DataProto`` item), its response decoded."""
        fields = item.non_tensor_batch
        if "reward_model" not in fields:
            raise RuntimeError(
                "the batch verl sent to the reward manager has no 'reward_model' field (ground truth). "
                "verl 0.9's v1 trainer drops it when the reward model runs colocated: set "
                "trainer.use_v1=false, or host the GenRM standalone (reward.reward_model.enable_resource_pool=true)"
            )
        response_ids = item.batch["responses"]
        valid_length = int(item.batch["attention_mask"][-response_ids.shape[-1] :].sum())
        return Sample(self._decode(response_ids[:valid_length]), valid_length, fields)

    def _decode(self, token_ids) -> str:
        """The response text without special tokens, except reasoning tags (``<think>``, ``</think>``)
        that some tokenizers mark special: the reward fns need them to drop the reasoning."""
        if not self._special_think_tags:
            return self.tokenizer.decode(token_ids, skip_special_tokens=True)
        text = self.tokenizer.decode(token_ids, skip_special_tokens=False)
        for token in self._other_special_tokens:
            text = text.replace(token, "")
        return text


def prompt_text(raw_prompt: Any, ground_truth: Any) -> str:
    """The request as text: the last user turn of verl's raw chat, else ``ground_truth['prompt']``."""
    if raw_prompt is not None:
        turns = list(raw_prompt) if isinstance(raw_prompt, (list, tuple, np.ndarray)) else []
        for turn in reversed(turns):
            if isinstance(turn, dict) and turn.get("role") == "user":
                return str(turn.get("content", ""))
    if isinstance(ground_truth, dict) and isinstance(ground_truth.get("prompt"), str):
        return ground_truth["prompt"]
    return ""
