"""Ranked GQM groups (GRRM) as data: one group read and validated from a raw row, and the Arrow table of
the verl RL rows built from many groups.

The input row and its column names (mapped by ``GroupReader``): docs/genrm/training.md. An RL row is an
original group or an augmented one (``gqm_augmentation``); ``extra_info.candidate_order`` maps its labels back
to the input's candidates.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from writing_rl.data import fields
from writing_rl.data.builder import BadRow
from writing_rl.data.schemas import CHAT, rl_schema
from writing_rl.protocols.gqm import LABELS, MAX_CANDIDATES
from writing_rl.protocols.languages import lang_pair_parts

DUPLICATES = ("keep", "drop", "reject")

RL_SCHEMA = rl_schema(
    [
        ("index", pa.int64()),
        ("split", pa.string()),
        ("prompt_type", pa.string()),
        ("src_lang", pa.string()),
        ("trg_lang", pa.string()),
        ("group_size", pa.int64()),
        ("candidate_order", pa.list_(pa.int64())),
        ("augmentation", pa.string()),
    ]
)


@dataclass
class RankedGroup:
    task: dict  # build_prompt's task arguments: source_text + languages, or writing_prompt
    candidates: list[str]
    scores: list[int]
    analysis: str | None
    src_lang: str | None
    trg_lang: str | None
    positions: list[int]  # each kept candidate's position in the input row

    @property
    def task_text(self) -> str:
        return self.task.get("source_text") or self.task["writing_prompt"]

    @property
    def classes(self) -> list[int]:
        """Candidate i's content class: identical texts share one."""
        first: dict[str, int] = {}
        return [first.setdefault(text.strip(), i) for i, text in enumerate(self.candidates)]


@dataclass
class GroupReader:
    """Reads and validates one ranked group from a raw row (column names are the CLI's mapping flags)."""

    source_key: str = "src_text"
    prompt_key: str = "prompt"
    src_lang_key: str = "src_lang"
    trg_lang_key: str = "trg_lang"
    lang_pair_key: str = "lang_pair"
    mt_key: str = "mt_texts"
    score_key: str = "scores"
    analysis_key: str | None = None
    duplicates: str = "keep"

    def read(self, row: dict) -> RankedGroup:
        source = fields.text(row, self.source_key, required=False)
        if source is not None:
            src_lang = fields.language(row, self.src_lang_key)
            trg_lang = fields.language(row, self.trg_lang_key)
            pair = fields.lang_pair(row, self.lang_pair_key)
            task = {"source_text": source, "src_lang": src_lang, "trg_lang": trg_lang, "lang_pair": pair}
            if pair and not (src_lang and trg_lang):
                pair_src, pair_trg = lang_pair_parts(pair)
                src_lang, trg_lang = src_lang or pair_src, trg_lang or pair_trg
        elif row.get(self.prompt_key) is not None:
            task = {"writing_prompt": fields.text(row, self.prompt_key)}
            src_lang = trg_lang = None
        else:
            raise BadRow(
                self.source_key,
                f"expected a source text '{self.source_key}' (translation) or a prompt '{self.prompt_key}' (writing)",
            )
        candidates = fields.text_list(row, self.mt_key, min_items=2)
        if len(candidates) > MAX_CANDIDATES:
            raise BadRow(self.mt_key, f"has {len(candidates)} candidates; GQM labels at most {MAX_CANDIDATES} (A-Z)")
        scores = fields.int_scores(row, self.score_key, len(candidates))
        positions = self._kept_positions(candidates, scores)
        analysis = fields.text(row, self.analysis_key, required=False, allow_empty=True) if self.analysis_key else None
        return RankedGroup(
            task,
            [candidates[i] for i in positions],
            [scores[i] for i in positions],
            analysis,
            src_lang,
            trg_lang,
            positions,
        )

    def _kept_positions(self, candidates: list[str], scores: list[int]) -> list[int]:
        """Input positions of the candidates kept under the duplicates policy."""
        first: dict[str, int] = {}
        keep = []
        for i, text in enumerate(candidates):
            j = first.setdefault(text.strip(), i)
            if j == i:
                keep.append(i)
                continue
            if scores[i] != scores[j]:
                raise BadRow(
                    self.score_key,
                    f"candidates {LABELS[j]} and {LABELS[i]} are identical but scored {scores[j]} and {scores[i]}",
                )
            if self.duplicates == "reject":
                raise BadRow(self.mt_key, f"candidates {LABELS[j]} and {LABELS[i]} are identical")
        if self.duplicates != "drop":
            return list(range(len(candidates)))
        if len(keep) < 2:
            raise BadRow(self.mt_key, "fewer than 2 distinct candidates once identical ones are dropped")
        return keep


@dataclass
class GroupRows:
    """One group's output rows, column by column (``rl_table`` assembles many)."""

    source_id: int
    split: str
    src_lang: str | None
    trg_lang: str | None
    prompts: list[bytes]  # UTF-8
    truths: list[str]
    orders: Sequence[tuple[int, ...]]  # input positions, in the order shown
    kinds: Sequence[str]

    def __len__(self) -> int:
        return len(self.orders)


def rl_table(
    groups: list[GroupRows], schema: pa.Schema, *, data_source: str, prompt_type: str, system_prompt: str | None
) -> pa.Table:
    """verl RL rows of ``schema`` (``RL_SCHEMA``) straight from the groups' column lists: no per-row dicts or
    tuples. ``system_prompt``, when given, goes before each GQM request."""
    chain = itertools.chain.from_iterable
    prompts = list(chain(g.prompts for g in groups))
    n = len(prompts)
    if system_prompt:  # messages: [system, user] per row
        per_row, roles = 2, ["system", "user"] * n
        contents = [system_prompt.encode()] * (2 * n)
        contents[1::2] = prompts
    else:
        per_row, roles, contents = 1, ["user"] * n, prompts
    content_offsets = _offsets(contents)
    if content_offsets[-1] > _MAX_STRING_BYTES and len(groups) > 1:  # past int32 string offsets: halve
        half = len(groups) // 2
        options = {"data_source": data_source, "prompt_type": prompt_type, "system_prompt": system_prompt}
        return pa.concat_tables(
            [rl_table(groups[:half], schema, **options), rl_table(groups[half:], schema, **options)]
        )
    messages = pa.StructArray.from_arrays(
        [pa.array(roles, pa.string()), _utf8_array(contents, content_offsets)], fields=list(CHAT.value_type)
    )
    message_offsets = pa.array(np.arange(0, per_row * n + 1, per_row, dtype=np.int32))
    chat = pa.ListArray.from_arrays(message_offsets, messages, type=CHAT)

    group_of_row = np.repeat(np.arange(len(groups)), np.fromiter(map(len, groups), np.int64, len(groups)))

    def per_group(values: list, type: pa.DataType) -> pa.Array:
        return pa.array(values, type).take(group_of_row)

    def repeated(value: str) -> pa.Array:
        return pa.repeat(pa.scalar(value, pa.string()), n)

    orders = list(chain(g.orders for g in groups))
    order_offsets = _offsets(orders)
    order_values = pa.array(np.fromiter(chain(orders), np.int64, int(order_offsets[-1])))
    extra = pa.StructArray.from_arrays(
        [
            per_group([g.source_id for g in groups], pa.int64()),
            per_group([g.split for g in groups], pa.string()),
            repeated(prompt_type),
            per_group([g.src_lang for g in groups], pa.string()),
            per_group([g.trg_lang for g in groups], pa.string()),
            pa.array(np.diff(order_offsets)),
            pa.ListArray.from_arrays(pa.array(order_offsets.astype(np.int32)), order_values),
            pa.array(list(chain(g.kinds for g in groups)), pa.string()),
        ],
        fields=list(schema.field("extra_info").type),
    )
    reward = pa.StructArray.from_arrays(
        [repeated("rule"), pa.array(list(chain(g.truths for g in groups)), pa.string())],
        fields=list(schema.field("reward_model").type),
    )
    columns = [repeated(data_source), chat, repeated("ranking"), reward, extra]
    return pa.Table.from_arrays(columns, schema=schema)


_MAX_STRING_BYTES = 2**31 - 1  # an Arrow string array's int32 offsets


def _offsets(items: list) -> np.ndarray:
    """Arrow offsets (int64) of variable-length items laid end to end."""
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, len(items)), out=offsets[1:])
    return offsets


def _utf8_array(values: list[bytes], offsets: np.ndarray) -> pa.Array:
    """A string array from UTF-8 bytes in one copy. No UTF-8 validation: every value is ``str.encode``
    output (``GroupPrompter.prompts_utf8``), so valid by construction."""
    if offsets[-1] > _MAX_STRING_BYTES:
        raise ValueError(f"one group's prompts hold {offsets[-1]} bytes, more than an Arrow string array can")
    data = pa.py_buffer(b"".join(values))
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets.astype(np.int32)), data)
