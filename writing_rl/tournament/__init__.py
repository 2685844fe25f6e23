"""Tournament group rewards, the pure part: schedules (who meets whom among one prompt's answers),
aggregations (each answer's reward in [0, 1] from the judged games) and the judge's consistency measures."""

from writing_rl.tournament.aggregation import (
    AGGREGATIONS,
    Result,
    aggregate,
    bradley_terry,
    bradley_terry_strengths,
    copeland,
    pair_outcomes,
    win_rate,
)
from writing_rl.tournament.metrics import intransitive_triples, position_consistency
from writing_rl.tournament.schedules import (
    ADAPTIVE,
    SCHEDULES,
    Bracket,
    calls_per_rollout,
    k_opponents,
    round_robin,
    swiss_round,
    swiss_rounds_default,
)

__all__ = [
    "ADAPTIVE",
    "AGGREGATIONS",
    "SCHEDULES",
    "Bracket",
    "Result",
    "aggregate",
    "bradley_terry",
    "bradley_terry_strengths",
    "calls_per_rollout",
    "copeland",
    "intransitive_triples",
    "k_opponents",
    "pair_outcomes",
    "position_consistency",
    "round_robin",
    "swiss_round",
    "swiss_rounds_default",
    "win_rate",
]
