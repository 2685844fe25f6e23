"""The extra-info keys of a run with a shadow judge (light: ``writing-rl monitor`` reads them)."""

from __future__ import annotations

# The extra-info keys of a run with a shadow, and their values on a sample that carries no result. Counts
# and sums over the shadow results a sample carries (usually none or one); shadow_drift, shadow_train_gain
# and shadow_gain are the worker's drift watch when the sample left (-1: fewer than two windows yet).
SHADOW_KEYS: dict[str, int | float] = {
    "shadow_samples": 0,  # shadowed samples both judges scored
    "shadow_failed": 0,  # shadowed samples the shadow could not score (a failed call, an unreadable reply)
    "shadow_skipped": 0,  # samples chosen while max_pending shadow calls were in flight
    "shadow_train_reward_sum": 0.0,  # the training judge's rewards of the shadow_samples
    "shadow_reward_sum": 0.0,  # the shadow's rewards of the same samples
    "shadow_agree_sum": 0,  # of them, those whose two rewards agree (within agree_within)
    "shadow_calls": 0,  # the shadow's judge calls, tokens and cost
    "shadow_tokens": 0,
    "shadow_cost": 0.0,
    "shadow_drift": -1,
    "shadow_train_gain": 0.0,
    "shadow_gain": 0.0,
}
