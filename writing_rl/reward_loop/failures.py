"""The failure policy, in one module: the rules that turn a failed or unreadable judgment into a reward, for
every method (through reward_loop/contract.py), the tournament's blame and the managers.

A failure must never pay more than a loss, or text that breaks the judge's format, or its calls, is a strategy.
What ``on_parse_error`` and ``on_judge_error`` pay, and the failures that always stop the step:
docs/judges/integrity.md and docs/reference/extra-info.md#failures-are-never-silent. Under ``loss`` a fn's own
result for a failed call never pays more than ``failure_score``; an ensemble's split (protocols/comparison.py:
``SPLIT_AS``) never more than a tie. The guard that stops a run whose recent samples fail too often:
reward_loop/failure_guard.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from writing_rl.protocols import Unreadable
from writing_rl.settings import ConfigError

if TYPE_CHECKING:  # (the judge client stays unloaded for a rule-based fn, which imports this through the contract)
    from writing_rl.judge import SampleJudge

ON_PARSE_ERROR = ("loss", "tie", "raise")


class UnreadableJudgeReply(RuntimeError):
    """A judge reply could not be read and ``on_parse_error=raise``: the training step stops."""


def raise_if_asked(failure: Unreadable, on_parse_error: str) -> None:
    """Stop the step on an unreadable reply when ``on_parse_error=raise``."""
    if on_parse_error not in ON_PARSE_ERROR:  # (a fn called directly; the managers pass a checked value)
        raise ConfigError(f"reward.reward_kwargs.on_parse_error={on_parse_error!r}: expected one of {ON_PARSE_ERROR}")
    if on_parse_error == "raise":
        raise UnreadableJudgeReply(
            f"a judge reply could not be read ({failure.kind}: {failure}); stopping the step "
            "(reward.reward_kwargs.on_parse_error=raise). Set it to loss to score such replies as losses."
        )


def fallback_outcome(failure: Unreadable, on_parse_error: str) -> str:
    """``"loss"`` or ``"tie"``: what an unreadable reply counts as. Never a win."""
    raise_if_asked(failure, on_parse_error)
    return "tie" if on_parse_error == "tie" else "loss"


def unreadable_flags(unreadable: Iterable[Unreadable]) -> dict[str, int]:
    """A sample's extra-info flags: any unreadable reply, any truncated one, any refusal."""
    kinds = {u.kind for u in unreadable}
    return {
        "parse_error": int(bool(kinds)),
        "judge_truncated": int("judge_truncated" in kinds),
        "judge_refusal": int("judge_refusal" in kinds),
    }


# HTTP statuses no response can cause: the API key, a permission, the model name or the URL is wrong.
CONFIGURATION_STATUSES = (401, 403, 404)


class JudgeFailure(RuntimeError):
    """A judge call failed after its retries and ``on_judge_error=raise``: the training step stops."""


@dataclass(frozen=True)
class FailurePolicy:
    on_judge_error: str  # loss, neutral or raise
    on_parse_error: str  # loss, tie or raise: what the fn makes of an unreadable reply
    loss: float  # what a failed sample is paid

    def check_calls(self, judge: SampleJudge) -> None:
        """Stops the step for a failed call that must stop it; returns otherwise."""
        misconfigured = next((e for e in judge.errors if is_configuration_error(e)), None)
        if misconfigured is not None:
            raise JudgeFailure(f"{misconfigured}. The step stops whatever on_judge_error says.") from misconfigured
        if judge.errors and self.on_judge_error == "raise":
            err = judge.errors[0]
            raise JudgeFailure(
                f"{err}. Stopping the step (reward.reward_kwargs.on_judge_error=raise); check the endpoint, "
                "or set on_judge_error=loss to pay failed samples a loss with judge_error=1 and go on."
            ) from err

    def pay(self, score: float, info: dict) -> float:
        """The score a sample is paid: under ``on_judge_error=loss``, a failed judge call no more than the loss."""
        if info.get("judge_error") and self.on_judge_error == "loss":
            return min(score, self.loss)
        return score


def is_configuration_error(err: Exception) -> bool:
    """A failure no response causes, which stops the step whatever on_judge_error says: a prompt over the
    judge's context, a wrong key / model / URL, the judge budget spent."""
    from writing_rl.judge import JudgeBudgetExceeded, JudgeContextLengthError, JudgeHTTPError

    if isinstance(err, (JudgeContextLengthError, JudgeBudgetExceeded)):
        return True
    return isinstance(err, JudgeHTTPError) and err.status in CONFIGURATION_STATUSES
