"""The failure policy, in one module: the rules that turn a failed or unreadable judgment into a reward, for
every method (through reward_loop/contract.py), the tournament's blame and the managers.

An RL policy optimises against everything the reward path does, so a failure must never pay more than a loss:
otherwise text that breaks the judge's format, or its calls, is a strategy.

- A reply the reward cannot read (no verdict, conflicting verdicts, cut at the token limit, a refusal):
  ``reward.reward_kwargs.on_parse_error`` picks ``loss`` (the default), ``tie``, or ``raise`` (stop the step);
  the manager passes it to the reward fn, which counts the reply with ``unreadable_flags``.
- A judge call that failed after its retries (``FailurePolicy``, one per reward worker):
  ``reward.reward_kwargs.on_judge_error`` pays the method's loss (``failure_score``: its
  ``METHOD.failure_score``, or ``reward.reward_kwargs.failure_score``) under ``loss``, a fn's own result for it
  never paying more; the fn's neutral result under ``neutral``; and stops the step under ``raise``. A failure
  no response causes (a prompt over the judge's context, a wrong key, model or URL, the budget spent) always
  stops it.
- An ensemble's split (judge/votes.py: ``SPLIT_AS``) is read as a tie, a loss or an unreadable reply, which
  these rules then pay: never more than a tie.

The guard that stops a run whose recent samples fail too often is reward_loop/failure_guard.py.
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
