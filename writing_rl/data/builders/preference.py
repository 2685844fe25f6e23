"""Preference-pair builders (Writing-Zero's pairwise GenRM): ``{prompt, chosen, rejected[, critique]}``
-> GenRM SFT conversations or RL rows.

The request the GenRM sees, its two answer formats, the order-swap augmentation and the column names:
docs/genrm/training.md#a-pairwise-genrm-writing-zero. Under ``--no-swap`` the chosen response's slot is drawn
with the run's seed and the pair's content.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from writing_rl.data import fields
from writing_rl.data.builder import BadRow
from writing_rl.data.schemas import MESSAGES_SCHEMA, rl_schema
from writing_rl.protocols import gqm, gqm_prompt, strip_think, verdict_or_none
from writing_rl.protocols.comparison import SLOTS, comparison_messages, other_slot, shown, verdict_for
from writing_rl.protocols.prompts import PAIRWISE_SYSTEM

PROMPT_ALIASES = ("prompt", "question", "instruction", "input")
CHOSEN_ALIASES = ("chosen", "chosen_response", "response_chosen", "chosen_story")
REJECTED_ALIASES = ("rejected", "rejected_response", "response_rejected", "rejected_story")
OUTPUT_FORMATS = ("verdict", "scores")

RL_SCHEMA = rl_schema(
    [
        ("index", pa.int64()),
        ("split", pa.string()),
        ("output_format", pa.string()),
        ("chosen_slot", pa.string()),
        ("swapped", pa.bool_()),
    ]
)


@dataclass(frozen=True)
class CritiquedPair:
    prompt: str
    chosen: str
    rejected: str
    tie: bool
    critique: str | None  # written for the order with the chosen response in critique_slot
    critique_swapped: str | None  # written for the other order
    chosen_score: int | None
    rejected_score: int | None


@dataclass
class PairReader:
    prompt_key: str | None = None
    chosen_key: str | None = None
    rejected_key: str | None = None
    tie_key: str | None = None
    critique_key: str | None = None
    critique_swapped_key: str | None = None
    chosen_score_key: str | None = None
    rejected_score_key: str | None = None

    def read(self, row: dict) -> CritiquedPair:
        chosen_key = self._key(row, self.chosen_key, CHOSEN_ALIASES)
        rejected_key = self._key(row, self.rejected_key, REJECTED_ALIASES)
        chosen, chosen_turns = _response(row, chosen_key)
        rejected, _ = _response(row, rejected_key)
        prompt_key = self._key(row, self.prompt_key, PROMPT_ALIASES, required=chosen_turns is None)
        if prompt_key is not None:
            prompt = _prompt_text(row, prompt_key)
        else:
            prompt = _last_user_message(chosen_turns, chosen_key)
        tie = fields.boolean(row, self.tie_key) if self.tie_key else False
        if chosen.strip() == rejected.strip() and not tie:
            raise BadRow(rejected_key, "is identical to the chosen response (mark ties with --tie-key)")
        chosen_score = rejected_score = None
        if self.chosen_score_key or self.rejected_score_key:
            chosen_score = fields.int_score(row, self.chosen_score_key or "chosen_score")
            rejected_score = fields.int_score(row, self.rejected_score_key or "rejected_score")
            expected = "equal" if tie else "higher"
            if (chosen_score == rejected_score) != tie or (not tie and chosen_score < rejected_score):
                raise BadRow(
                    self.chosen_score_key or "chosen_score",
                    f"chosen score {chosen_score} vs rejected {rejected_score}: the chosen one must be {expected}",
                )
        critique = fields.text(row, self.critique_key, required=False) if self.critique_key else None
        swapped = fields.text(row, self.critique_swapped_key, required=False) if self.critique_swapped_key else None
        return CritiquedPair(prompt, chosen, rejected, tie, critique, swapped, chosen_score, rejected_score)

    def input_keys(self) -> set[str]:
        """Every column this reader may read (an unset key reads any of its aliases)."""
        keys = {v for k, v in vars(self).items() if k.endswith("_key") and isinstance(v, str)}
        return keys | {"chosen_score", "rejected_score", *CHOSEN_ALIASES, *REJECTED_ALIASES, *PROMPT_ALIASES}

    @staticmethod
    def _key(row: dict, key: str | None, aliases: tuple[str, ...], required: bool = True) -> str | None:
        if key is not None:
            return key
        for alias in aliases:
            if row.get(alias) is not None:
                return alias
        if not required:
            return None
        raise BadRow(aliases[0], f"no column among {', '.join(aliases)} (name it with the --*-key flags)")


@dataclass
class _PairBuilder:
    reader: PairReader = field(default_factory=PairReader)
    output_format: str = "verdict"
    swap: bool = True
    seed: int = 0
    system_prompt: str | None = None
    template: str | None = None  # judge template file for the verdict format (writing_rl.protocols.prompts)
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"--output-format must be one of {OUTPUT_FORMATS}, got {self.output_format!r}")

    def slots(self, pair: CritiquedPair) -> list[str]:
        """Which slot the chosen response takes in each output row."""
        if self.swap:
            return list(SLOTS)
        rng = random.Random(fields.content_seed(self.seed, pair.prompt, [pair.chosen, pair.rejected]))
        return [rng.choice(SLOTS)]

    def request(self, pair: CritiquedPair, chosen_slot: str, cot: bool = True) -> list[dict[str, str]]:
        if self.output_format == "scores":
            return gqm_prompt.build_messages(
                list(shown(pair.chosen, pair.rejected, chosen_slot)),
                writing_prompt=pair.prompt,
                prompt_type="score",
                cot=cot,
                system=self.system_prompt,
            )
        system = self.system_prompt or PAIRWISE_SYSTEM
        return comparison_messages(
            pair.prompt, pair.chosen, pair.rejected, chosen_slot, template=self.template, system=system
        )

    @staticmethod
    def label(pair: CritiquedPair, chosen_slot: str) -> str:
        return verdict_for("tie" if pair.tie else "win", chosen_slot)


@dataclass
class PrefRLBuilder(_PairBuilder):
    """Pairs -> verl RL rows with ``reward_model.ground_truth`` = the label ``A``/``B`` (``C``: tie);
    reward: ``reward_fns.preference`` (hydra_configs/genrm_pairwise_rl.yaml)."""

    data_source: str = "preference"
    schema: pa.Schema = RL_SCHEMA

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        pair = self.reader.read(row)
        out = []
        for slot in self.slots(pair):
            self.counts[f"chosen_{slot}"] += 1
            out.append(
                {
                    "data_source": self.data_source,
                    "prompt": self.request(pair, slot),
                    "ability": "preference",
                    "reward_model": {"style": "rule", "ground_truth": self.label(pair, slot)},
                    "extra_info": {
                        "index": source_id,
                        "split": split,
                        "output_format": self.output_format,
                        "chosen_slot": slot,
                        "swapped": slot == "B",
                    },
                }
            )
        return out

    def summary(self) -> list[str]:
        return [f"chosen response as A in {self.counts['chosen_A']} rows, as B in {self.counts['chosen_B']}"]


@dataclass
class PrefSFTBuilder(_PairBuilder):
    """Pairs -> ``messages`` conversations whose assistant turn is the critique (when given) and the
    label: ``[[A]]``/``[[B]]``/``[[C]]``, or for ``--output-format scores`` the score line (needs
    --chosen-score-key/--rejected-score-key).

    A critique names the responses by position, so it only fits the order it was written for
    (``critique_slot``: the chosen response's slot in it); the other order is written only when a
    critique for it exists too (``critique_swapped_key``). Pairs without critique swap freely.
    """

    critique_slot: str = "A"
    schema: pa.Schema = MESSAGES_SCHEMA

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        pair = self.reader.read(row)
        if self.output_format == "scores" and pair.chosen_score is None:
            raise BadRow("chosen_score", "--output-format scores needs --chosen-score-key and --rejected-score-key")
        other = other_slot(self.critique_slot)
        if pair.critique is not None:
            critiques = {self.critique_slot: pair.critique}
            if pair.critique_swapped is not None and self.swap:
                critiques[other] = pair.critique_swapped
            self.counts["order_specific"] += len(critiques) < len(self.slots(pair))
            plan = list(critiques.items())
        else:
            plan = [(slot, None) for slot in self.slots(pair)]
        out = []
        for slot, critique in plan:
            reasoning = self._clean(critique, self.label(pair, slot), slot) if critique else None
            if self.output_format == "scores":
                chosen_score, rejected_score = pair.chosen_score, pair.rejected_score
                scores = {slot: chosen_score, other_slot(slot): rejected_score}
                answer = gqm.gqm_response(reasoning, scores, "score", cot=reasoning is not None)
            else:
                label = self.label(pair, slot)
                answer = f"{reasoning}\n\n[[{label}]]" if reasoning else f"[[{label}]]"
            self.counts["with_critique" if reasoning else "verdict_only"] += 1
            messages = self.request(pair, slot, cot=reasoning is not None or self.output_format == "verdict")
            out.append(
                {
                    "messages": [*messages, {"role": "assistant", "content": answer}],
                    "extra_info": {"index": source_id, "split": split},
                }
            )
        return out

    def _clean(self, critique: str, label: str, slot: str) -> str:
        """The critique without a final verdict of its own (the label is appended); a verdict that
        contradicts the label means the critique belongs to the other order."""
        text = critique.strip()
        verdict = verdict_or_none(text)
        if verdict is not None and verdict != label:
            raise BadRow(
                self.reader.critique_key or "critique",
                f"ends with [[{verdict}]] but the chosen response is {slot} here (label {label}); "
                "set --critique-chosen-slot to the order the critique was written for",
            )
        if verdict is not None:
            text = text[: text.rfind(f"[[{verdict}]]")].rstrip()
        if not text or strip_think(text) is None:
            raise BadRow(self.reader.critique_key or "critique", "empty once its verdict is removed")
        return text

    def summary(self) -> list[str]:
        c = self.counts
        lines = [f"{c['with_critique']} answers with a critique, {c['verdict_only']} with the label only"]
        if c["order_specific"]:
            lines.append(
                f"  {c['order_specific']} pairs written in one order only: their critique names positions "
                "and no critique for the swapped order was given (--critique-swapped-key)"
            )
        return lines


def _response(row: dict, key: str) -> tuple[str, list[dict] | None]:
    """(response text, the chat it came from or None)."""
    value = row.get(key)
    if isinstance(value, str):
        if not value.strip():
            raise BadRow(key, "empty response")
        return value, None
    if isinstance(value, (list, tuple)):
        turns = fields.chat(row, key)
        replies = [t["content"] for t in turns if t["role"] == "assistant"]
        if not replies or not replies[-1].strip():
            raise BadRow(key, "a chat must end with a non-empty assistant message")
        return replies[-1], turns
    raise BadRow(key, f"expected a response text or a chat, got {fields.describe_value(value)}")


def _prompt_text(row: dict, key: str) -> str:
    value = row.get(key)
    if isinstance(value, (list, tuple)):
        return _last_user_message(fields.chat(row, key), key)
    return fields.text(row, key)  # type: ignore[return-value]


def _last_user_message(turns: list[dict] | None, key: str) -> str:
    users = [t["content"] for t in turns or [] if t["role"] == "user" and t["content"].strip()]
    if not users:
        raise BadRow(key, "no prompt column and no user message in the chat")
    return users[-1]
