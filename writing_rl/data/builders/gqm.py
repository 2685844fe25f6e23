"""GQM builders (GRRM) for ``build_parquet.py gqm-rl`` / ``gqm-sft``: ranked candidate groups -> RLVR rows
or GenRM SFT conversations.

Reading a group from a raw row and assembling the RL table live in ``gqm_rows``, the subgroup and
shuffle augmentation of RL rows (seeded by the run's seed and the group's content) in
``gqm_augmentation``; these builders put them together with the GQM prompt and answer.
"""

from __future__ import annotations

import operator
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import pyarrow as pa

from writing_rl import protocols
from writing_rl.data import fields
from writing_rl.data.builder import BadRow
from writing_rl.data.builders.gqm_augmentation import augmentation_plan
from writing_rl.data.builders.gqm_rows import RL_SCHEMA, GroupReader, GroupRows, rl_table
from writing_rl.data.schemas import MESSAGES_SCHEMA
from writing_rl.protocols import gqm, gqm_prompt

_TRUTH_MEMO_SIZE = 1 << 15


@lru_cache(maxsize=4096)
def _picker(order: tuple[int, ...]) -> operator.itemgetter:
    """``_picker(order)(values)`` is ``tuple(values[i] for i in order)`` (orders hold 2 items or more)."""
    return operator.itemgetter(*order)


@dataclass
class GQMRLBuilder:
    """Ranked groups -> verl RL rows for GRRM's RLVR (reward: ``reward_fns.ranking_accuracy``)."""

    reader: GroupReader = field(default_factory=lambda: GroupReader(duplicates="drop"))
    prompt_type: str = "ranking_score"
    subgroup_augment: int = 0
    shuffle_augment: int = 0
    seed: int = 0
    data_source: str = "gqm"
    system_prompt: str | None = None
    template: str | None = None
    schema: pa.Schema = RL_SCHEMA
    counts: Counter = field(default_factory=Counter)
    _truth_memo: dict[tuple[int, ...], str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.prompt_type not in gqm.PROMPT_TYPES:
            raise ValueError(f"--prompt-type must be one of {gqm.PROMPT_TYPES}, got {self.prompt_type!r}")
        if self.subgroup_augment < 0 or self.shuffle_augment < 0:
            raise ValueError("--subgroup-augment and --shuffle-augment must be >= 0")

    def build(self, row: dict, source_id: int, split: str) -> GroupRows:
        group = self.reader.read(row)
        classes = group.classes
        rng = random.Random(fields.content_seed(self.seed, group.task_text, group.candidates))
        orders, kinds = zip(*augmentation_plan(classes, self.subgroup_augment, self.shuffle_augment, rng))
        self._count(kinds, classes)
        prompter = gqm_prompt.GroupPrompter(
            group.candidates, **group.task, prompt_type=self.prompt_type, template=self.template
        )
        prompts = prompter.prompts_utf8(orders)
        truths = self._ground_truths(group.scores, orders)
        positions = group.positions
        if positions != list(range(len(positions))):  # dropped duplicates: report input positions
            orders = [tuple([positions[i] for i in order]) for order in orders]
        return GroupRows(source_id, split, group.src_lang, group.trg_lang, prompts, truths, orders, kinds)

    def _ground_truths(self, scores: list[int], orders: Sequence[tuple[int, ...]]) -> list[str]:
        """``ground_truth_text`` of each order's scores, memoised by the scores shown (few distinct ones:
        at most 11^N for N candidates, and most groups are small)."""
        memo, prompt_type = self._truth_memo, self.prompt_type
        truths = []
        for order in orders:
            shown = _picker(order)(scores)
            truth = memo.get(shown)
            if truth is None:
                if len(memo) >= _TRUTH_MEMO_SIZE:
                    memo.clear()
                truth = memo[shown] = gqm.ground_truth_text(prompt_type, shown)
            truths.append(truth)
        return truths

    def to_table(self, groups: list[GroupRows]) -> pa.Table:
        """The RL rows of many groups (``rl_table``), in one Arrow table."""
        return rl_table(
            groups,
            self.schema,
            data_source=self.data_source,
            prompt_type=self.prompt_type,
            system_prompt=self.system_prompt,
        )

    def _count(self, kinds: Sequence[str], classes: list[int]) -> None:
        self.counts.update(kinds)  # original, shuffle, subgroup, subgroup_shuffle
        subgroups_short = self.subgroup_augment and kinds.count("subgroup") < self.subgroup_augment
        shuffles_short = self.shuffle_augment and kinds.count("shuffle") < self.shuffle_augment
        self.counts["groups_capped"] += bool(subgroups_short or shuffles_short)
        self.counts["groups_with_duplicates"] += len(set(classes)) < len(classes)

    def summary(self) -> list[str]:
        c = self.counts
        lines = [
            f"augmentation: {c['original']} groups, {c['shuffle']} shuffles, {c['subgroup']} subgroups, "
            f"{c['subgroup_shuffle']} subgroup shuffles"
        ]
        if c["groups_capped"]:
            lines.append(
                f"  {c['groups_capped']} groups were too small for the asked augmentation (at most 2^N-N-2 "
                "subgroups and N!-1 shuffles of N candidates) and got all they have"
            )
        if c["groups_with_duplicates"]:
            lines.append(f"  {c['groups_with_duplicates']} groups kept identical candidates (--duplicates keep)")
        return lines


@dataclass
class GQMSFTBuilder:
    """Ranked groups with an analysis -> ``messages`` conversations (GenRM SFT cold start).

    The assistant turn is the analysis followed by the final block of the prompt type, exactly what the
    strict reader of the RLVR reward accepts (each target is checked). No augmentation: the analysis
    names candidates by label, so reordering them would make it wrong.
    """

    reader: GroupReader = field(default_factory=lambda: GroupReader(analysis_key="analysis"))
    prompt_type: str = "ranking_score"
    cot: bool = True
    system_prompt: str | None = None
    template: str | None = None
    schema: pa.Schema = MESSAGES_SCHEMA
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.prompt_type not in gqm.PROMPT_TYPES:
            raise ValueError(f"--prompt-type must be one of {gqm.PROMPT_TYPES}, got {self.prompt_type!r}")

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        group = self.reader.read(row)
        labels = gqm.labels_for(len(group.candidates))
        scores = dict(zip(labels, group.scores))
        analysis = None
        if self.cot:
            analysis, dropped = clean_analysis(group.analysis or "", labels)
            if not analysis:
                raise BadRow(
                    str(self.reader.analysis_key), "empty analysis (pass --no-cot to train answers without one)"
                )
            self.counts["analysis_tail_dropped"] += dropped
        prompt = gqm_prompt.build_prompt(
            group.candidates, **group.task, prompt_type=self.prompt_type, cot=self.cot, template=self.template
        )
        response = gqm.gqm_response(analysis, scores, self.prompt_type, cot=self.cot)
        check = protocols.read_gqm_output(
            response, labels, prompt_type=self.prompt_type, variant="default" if self.cot else "no_cot"
        )
        if isinstance(check, str):
            raise BadRow(str(self.reader.analysis_key), f"the answer built from it does not read back: {check}")
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        return [{"messages": messages, "extra_info": {"index": source_id, "split": split}}]

    def summary(self) -> list[str]:
        dropped = self.counts["analysis_tail_dropped"]
        if not dropped:
            return []
        return [f"removed {dropped} trailing ranking/score lines from analyses (the final block restates them)"]


def clean_analysis(analysis: str, labels: Sequence[str]) -> tuple[str, int]:
    """The analysis without trailing lines that already state the verdict (a ranking or scores line, or
    a heading for one): the final block that follows restates it. Returns (text, lines removed)."""
    lines = analysis.strip().splitlines()
    removed = 0
    while lines:
        last = lines[-1].strip()
        if last and not _states_verdict(last, labels):
            break
        lines.pop()
        removed += bool(last)
    return "\n".join(lines).strip(), removed


_VERDICT_HEADING = re.compile(
    r"^[#*\s]*(?:final\s+|overall\s+)?(?:ranking|rankings|scores?)\s*\**\s*[:：]?\s*\**\s*", re.I
)


def _states_verdict(line: str, labels: Sequence[str]) -> bool:
    """A ranking or scores line, a heading for one, or both on one line ("Scores: A: 7, B: 5")."""
    heading = _VERDICT_HEADING.match(line)
    rest = line[heading.end() :] if heading else line
    if heading and not rest.strip():
        return True
    if not isinstance(protocols.parse_ranking(rest, labels, strict=False), str):
        return True
    return not isinstance(protocols.parse_scores(rest, labels, strict=False), str)
