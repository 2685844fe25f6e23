"""What is said to a judge and read back, as pure functions: prompts (``prompts``, ``gqm_prompt``), a
response made safe to quote (``quoting``), Writing-RL's rows (``pairwise_task``), GQM's labels and
languages (``gqm``, ``languages``), and the readers re-exported here (``text``, ``pairwise``, ``gqm_reply``)
for everything a judge or a GenRM writes and for the answer part of a policy response.

Every reward and offline tool reads replies through here, by one set of rules a policy cannot game:

- A judge's reasoning block is dropped only at the start of its reply; a ``<think>`` elsewhere is text.
- Quoted material (fenced blocks, ``>`` quotes, "double-quoted" spans) does not count as the judge's answer.
- A reply holding two different verdicts, rankings or scores is unreadable, never a win for either.
- A reply cut at the judge's token limit, or a refusal, is unreadable (``read_reply``).

Readers return their value or an ``Unreadable`` (a ``str`` reason with a ``kind``: ``parse_error``,
``judge_truncated``, ``judge_refusal``); model output never raises. By name:

- ``read_*`` of a reply read the whole reply, ``parse_*`` one line of it (a ranking, a scores line): the
  value or an ``Unreadable``. (``read_writing_rl_task``, ``read_gold_ranking`` and ``read_rubric`` read a
  data row instead: a bad row is a data error and raises ``ValueError``.)
- ``check_*`` return None when the parts agree, else the ``Unreadable`` saying how they differ;
- ``*_or_none`` (``verdict_or_none``, ``score_pair_or_none``) are readers for callers that need only the
  value: None where the reader says ``Unreadable``.
"""

from writing_rl.protocols.gqm_reply import (
    LENIENT,
    STRICT,
    GQMOutput,
    check_consistent,
    parse_ranking,
    parse_scores,
    read_gqm_output,
)
from writing_rl.protocols.pairwise import (
    PAIRWISE_OUTPUTS,
    VERDICTS,
    Comparison,
    read_comparison,
    read_json_score,
    read_score_pair,
    read_verdict,
    score_pair_or_none,
    verdict_or_none,
)
from writing_rl.protocols.text import (
    THINK_CLOSE,
    THINK_OPEN,
    UNREADABLE_KINDS,
    Unreadable,
    read_reply,
    split_reasoning,
    strip_think,
    without_quotes,
)

__all__ = [
    "LENIENT",
    "PAIRWISE_OUTPUTS",
    "STRICT",
    "THINK_CLOSE",
    "THINK_OPEN",
    "UNREADABLE_KINDS",
    "VERDICTS",
    "Comparison",
    "GQMOutput",
    "Unreadable",
    "check_consistent",
    "parse_ranking",
    "parse_scores",
    "read_comparison",
    "read_gqm_output",
    "read_json_score",
    "read_reply",
    "read_score_pair",
    "read_verdict",
    "score_pair_or_none",
    "split_reasoning",
    "strip_think",
    "verdict_or_none",
    "without_quotes",
]
