"""The kinds of ``writing-rl eval``, one declaration (``KIND``, an ``..kind.EvalKind``) per module, in the
order ``writing-rl eval --help`` lists them. A new kind: its work module in ``evaluation/``, its declaration
here, and one line in ``KINDS``."""

from __future__ import annotations

from writing_rl.evaluation.kinds import (
    arenahard,
    eqbench,
    genrm_pairwise,
    genrm_ranking,
    judgebench,
    ppe,
    rewardbench,
    rmbench,
    winrate,
    writingbench,
)

KINDS = (
    writingbench.KIND,
    winrate.KIND,
    genrm_pairwise.KIND,
    genrm_ranking.KIND,
    rewardbench.KIND,
    rmbench.KIND,
    judgebench.KIND,
    ppe.KIND,
    arenahard.KIND,
    eqbench.KIND,
)
