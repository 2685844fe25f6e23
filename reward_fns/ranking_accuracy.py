"""GRRM's RLVR reward: how well a GenRM's GQM answer ranks (and scores) a group against the annotation.

verl entry point (rule-based, no judge; runs under verl's built-in ``naive`` reward manager):
``reward.custom_reward_function.path=pkg://reward_fns.ranking_accuracy`` (name ``compute_score``);
options under ``reward.custom_reward_function.reward_kwargs`` (hydra_configs/grrm_rlvr.yaml).

Ground truth, as in GRRM's released RL parquet or ours (``build_parquet.py gqm-rl``): the score dict
``{"A": 9, "B": 7, ...}`` as JSON text or a dict -> the answer must end with a ranking and scores;
or a ranking string ``B > A = C`` -> the answer ends with a ranking.

- ranking reward: the share of candidate pairs whose order the predicted ranking gets right (a tie
  where the truth has an order, or an order where it has a tie, is wrong);
- score reward (score dicts only): the mean over pairs of ``margin_rewards[|Δtruth − Δpredicted|]``
  with Δ the score difference of the pair: {0: 1.0, 1: 0.6, 2: 0.2, more: 0};
- score = (ranking reward + score reward) x ``score_scale``, in [0, 2 x score_scale].
A malformed answer scores 0 with ``valid_answer=0``; see ``writing_rl.protocols.read_gqm_output`` for the
format rules of each ``variant`` (default: reasoning then the final block; ``no_cot``; ``zero``). The
ground truth, the reading and both terms are ``writing_rl.protocols.gqm_task``'s, shared with
``writing-rl eval genrm-ranking``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl.protocols import gqm
from writing_rl.protocols.gqm_task import (
    MARGIN_REWARDS,
    answer_terms,
    margin_score,
    prompt_type_for,
    ranking_agreement,
    read_answer,
    read_gold_ranking,
)
from writing_rl.reward_loop.contract import RewardMethod, option, read_options, register

# The ground truth and the two terms live in writing_rl.protocols.gqm_task (writing-rl eval genrm-ranking
# reports the same terms); re-exported here for code that imported them from this module.
__all__ = ["MARGIN_REWARDS", "compute_score", "margin_score", "preflight_row", "ranking_agreement", "read_gold_ranking"]


@dataclass(frozen=True)
class RewardOptions:
    """``reward.custom_reward_function.reward_kwargs`` of ``pkg://reward_fns.ranking_accuracy``."""

    # The answer's format: default (reasoning, then the final block), no_cot (the final block only) or
    # zero (reasoning about every candidate first; writing_rl/protocols/gqm.py).
    variant: str = option("default", choices=gqm.VARIANTS)
    # What the answer must end with: score, ranking or ranking_score; null: the row's
    # extra_info.prompt_type, else ranking_score for a score-dict truth and ranking for a ranking truth.
    prompt_type: str | None = option(None, choices=(None, *gqm.PROMPT_TYPES))
    # score = (ranking reward + score reward) x score_scale.
    score_scale: float = 1.0
    # The score reward of a pair by |Δtruth − Δpredicted| (0, 1, 2, ...; larger: 0).
    margin_rewards: list = option(list(MARGIN_REWARDS))
    # The final block's section headers are required (GRRM's format).
    require_headers: bool = True
    # zero variant: reasoning characters required per candidate before the final block.
    min_reasoning_chars: int = option(gqm.MIN_REASONING_CHARS, minimum=0)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping | None = None,
    *,
    reward_router_address: str | None = None,  # passed by verl when it hosts a reward model; unused
    reward_model_tokenizer: Any = None,  # likewise
    **given: Any,
) -> dict[str, float]:
    """Score one GenRM answer. Always the same keys: score, valid_answer, ranking_reward, score_reward.

    ``prompt_type``: what the answer must end with; default ``extra_info["prompt_type"]`` when the row
    has it, else ``ranking_score`` for a score-dict truth and ``ranking`` for a ranking truth.
    """
    options = read_options(RewardOptions, given)
    truth_scores, truth_ranking, labels = read_gold_ranking(ground_truth, extra_info)
    prompt_type = prompt_type_for(options.prompt_type, extra_info, truth_scores)
    answer = read_answer(
        solution_str,
        labels,
        prompt_type,
        variant=options.variant,
        require_headers=options.require_headers,
        min_reasoning_chars=options.min_reasoning_chars,
    )
    if isinstance(answer, str):
        return _result(0.0, valid=0)
    ranking_reward, score_term = answer_terms(answer, truth_scores, truth_ranking, options.margin_rewards)
    score_reward = score_term or 0.0
    total = (ranking_reward + score_reward) * float(options.score_scale)
    return _result(total, valid=1, ranking_reward=ranking_reward, score_reward=score_reward)


def _result(total: float, valid: int, ranking_reward: float = 0.0, score_reward: float = 0.0) -> dict[str, float]:
    return {
        "score": float(total),
        "valid_answer": valid,
        "ranking_reward": float(ranking_reward),
        "score_reward": float(score_reward),
    }


def preflight_row(ground_truth: Any, extra_info: Mapping | None = None) -> None:
    """A GQM row with gold scores or a gold ranking of at least two candidates (writing-rl preflight)."""
    read_gold_ranking(ground_truth, extra_info)


def failure_score(**_: Any) -> float:
    """What a failed sample is paid: a malformed answer's score."""
    return 0.0


METHOD = register(
    compute_score,
    RewardMethod(
        name="grrm_ranking_accuracy", options=RewardOptions, failure_score=failure_score, check_row=preflight_row
    ),
)
