"""The failure guard: a reward worker's last samples, and the run stopped when too many of them failed in one way
(``reward.reward_kwargs.max_*_rate``), with the likely cause and an example. Kept by reward_loop/scoring.py; what
each failure pays is reward_loop/failures.py."""

from __future__ import annotations

from collections import deque

from writing_rl.protocols import Unreadable

# What a run of unreadable replies of each kind most likely means, and what to change.
_LIKELY_CAUSES = {
    "judge_truncated": "the judge runs out of tokens before its verdict: raise reward.reward_kwargs.judge.max_tokens",
    "judge_refusal": "the judge refuses the requests (a content filter): use another judge or filter the prompts",
    "never closed": "a reasoning judge runs out of tokens while thinking: raise reward.reward_kwargs.judge.max_tokens",
    "conflicting": "replies hold several verdicts: the judge hedges, or quotes verdict tokens the policy writes "
    "into its responses (look at the rollouts)",
    "quoted": "the only verdicts are quoted: the policy may be writing verdict tokens into its responses",
}
_DEFAULT_CAUSE = (
    "the judge does not end with what the reward reads: check the judge model, its template "
    "(reward.custom_reward_function.reward_kwargs.template) and reward.custom_reward_function.reward_kwargs.output"
)


class FailureRateExceeded(RuntimeError):
    """Too many of a worker's recent samples failed in one way: the run stops instead of training on noise."""


# The failure kinds the guard watches: the extra-info flag, its setting, and what it means.
GUARDED = {
    "judge_error": ("max_judge_error_rate", "had a judge call fail after all its retries"),
    "parse_error": ("max_parse_error_rate", "got a judge reply the reward could not read"),
    "group_incomplete": ("max_group_incomplete_rate", "belonged to a group whose rollouts never all arrived"),
    "term_error": ("max_term_error_rate", "had a reward term fail"),
}


class FailureGuard:
    """The last ``window`` samples a reward worker scored, and how many of them failed in each way
    (``GUARDED``); the run stops when a kind's share exceeds its limit once ``min_samples`` are in.

    The window is samples, not a batch: in verl's streaming mode each rollout reaches a random worker
    alone, so "a batch" is whatever arrived together (too few for a rate), while a worker's last
    samples are a random sample of the run's recent ones."""

    def __init__(self, limits: dict[str, float], window: int, min_samples: int):
        self.limits = limits  # kind -> max rate (1.0: never stops)
        self.min_samples = min_samples
        self.recent: deque[tuple[str, ...]] = deque(maxlen=window)
        self.counts = dict.fromkeys(GUARDED, 0)
        self.examples: dict[str, str] = {}
        self.unreadable_example: tuple[str, Unreadable] | None = None

    def remember(self, unreadable: list[tuple[str, Unreadable]]) -> None:
        """Keep one unreadable reply (text, why) to show if the guard trips."""
        if unreadable and self.unreadable_example is None:
            self.unreadable_example = unreadable[0]

    def example(self, kind: str, text: str) -> None:
        """Keep the latest example of a failure of ``kind`` (an error message) to show if the guard trips."""
        self.examples[kind] = text

    def add(self, info: dict) -> None:
        if len(self.recent) == self.recent.maxlen:
            for kind in self.recent[0]:
                self.counts[kind] -= 1
        failed = tuple(kind for kind in GUARDED if info.get(kind))
        self.recent.append(failed)
        for kind in failed:
            self.counts[kind] += 1
        if len(self.recent) < self.min_samples:
            return
        for kind, count in self.counts.items():
            rate = count / len(self.recent)
            if rate > self.limits.get(kind, 1.0):
                raise FailureRateExceeded(self._message(kind, rate))

    def _message(self, kind: str, rate: float) -> str:
        setting, what = GUARDED[kind]
        line = (
            f"{self.counts[kind]} of the last {len(self.recent)} samples this reward worker scored ({rate:.0%}) "
            f"{what} ({kind}), above reward.reward_kwargs.{setting}={self.limits[kind]:g} (the window: "
            f"reward.reward_kwargs.failure_window={self.recent.maxlen} samples of this worker, a random sample of "
            "the run's since verl sends each rollout to a random worker); stopping the run"
        )
        if kind == "parse_error":
            return line + ". " + self._unreadable_cause()
        example = self.examples.get(kind)
        return f"{line}. Example: {example}" if example else line

    def _unreadable_cause(self) -> str:
        if self.unreadable_example is None:
            return _DEFAULT_CAUSE
        text, why = self.unreadable_example
        cause = _LIKELY_CAUSES.get(why.kind) or next(
            (c for key, c in _LIKELY_CAUSES.items() if key in why), _DEFAULT_CAUSE
        )
        excerpt = text if len(text) <= 300 else f"{text[:150]} [...] {text[-150:]}"
        return f"Likely cause: {cause}. Example ({why.kind}: {why}): {excerpt!r}"
