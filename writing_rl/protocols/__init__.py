"""What is said to a judge and read back, as pure functions; the readers are re-exported here.

Every reward and offline tool reads judge and GenRM replies (and the answer part of a policy response) through
here, by the rules of docs/judges/integrity.md. Readers return their value or an ``Unreadable`` (a ``str``
reason with a ``kind``); model output never raises. By name:

- ``read_*`` read a whole reply, ``parse_*`` one line of it (a ranking, a scores line). (``read_writing_rl_task``,
  ``read_gold_ranking`` and ``read_rubric`` read a data row instead: a bad row is a data error and raises
  ``ValueError``.)
- ``check_*`` return None when the parts agree, else the ``Unreadable`` saying how they differ;
- ``*_or_none`` return None where the reader says ``Unreadable``, for callers that need only the value.
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
