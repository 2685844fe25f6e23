"""What a failure pays, in one object per reward worker: ``on_judge_error`` (a judge call that failed after
its retries), ``on_parse_error`` (a reply the reward fn cannot read, passed to the fn) and the method's loss
(``failure_score``: its ``METHOD.failure_score``, or ``reward.reward_kwargs.failure_score``).

A judge call that fails pays the loss under ``on_judge_error=loss`` (a fn's own result for it never pays
more), the fn's neutral result under ``neutral``, and stops the step under ``raise``; a failure no response
causes (a prompt over the judge's context, a wrong key, model or URL, the budget spent) always stops it.
"""

from __future__ import annotations

from dataclasses import dataclass

from writing_rl.judge import JudgeBudgetExceeded, JudgeContextLengthError, JudgeHTTPError, SampleJudge

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
    if isinstance(err, (JudgeContextLengthError, JudgeBudgetExceeded)):
        return True
    return isinstance(err, JudgeHTTPError) and err.status in CONFIGURATION_STATUSES
