"""What the run's training steps will ask of the judge, before they start: the judge calls (from the method's
``METHOD.calls_per_rollout``, the steps and the rollouts per step), the most they can cost at ``judge.price``,
and whether ``judge.budget`` covers them, so that a budget too small stops the preflight, not step 800.

Counted: training steps' first tries. Not counted: validation, retries, hedged copies, the shadow judge.
"""

from __future__ import annotations

from typing import Sequence

from writing_rl.tools.preflight.report import Report


def training_steps(config, train_rows: int) -> int:
    """verl's step count: ``trainer.total_training_steps`` when set, else epochs x full batches of the data."""
    steps = config.trainer.get("total_training_steps")
    if steps:
        return int(steps)
    return (train_rows // int(config.data.train_batch_size)) * int(config.trainer.total_epochs)


def check_run_spend(
    config, judge, rows: Sequence, train_rows: int, calls_per_rollout, prompt_tokens: int | None, report: Report
) -> None:
    """``rows``: training rows read (the calls per rollout are their mean); ``train_rows``: the training set's
    size; ``prompt_tokens``: the longest judge prompt measured, with responses at max_response_length."""
    if calls_per_rollout is None or not rows or not train_rows:
        return
    group_size = int(config.actor_rollout_ref.rollout.n)
    kwargs = dict(config.reward.custom_reward_function.get("reward_kwargs") or {})
    per_rollout = sum(calls_per_rollout(row, group_size, kwargs) for row in rows) / len(rows)
    per_rollout *= judge.ensemble.calls_per_judgment  # each judgment asks every judge of an ensemble
    steps = training_steps(config, train_rows)
    rollouts = int(config.data.train_batch_size) * group_size
    calls = round(steps * rollouts * per_rollout)
    report.ok(
        f"judge calls for the run: {steps} training steps x {rollouts} rollouts x {per_rollout:.3g} calls = "
        f"{calls:,} (first tries; validation, retries and a shadow judge come on top)"
    )
    budget = judge.budget
    if budget.calls is not None and calls > budget.calls:
        covered = int(budget.calls // max(1, rollouts * per_rollout))
        report.problem(
            f"reward.reward_kwargs.judge.budget.calls={budget.calls:,} covers about {covered} of the run's {steps} "
            f"steps ({calls:,} calls): the run would stop there. Raise the budget or shorten the run "
            "(trainer.total_training_steps)"
        )
    if prompt_tokens is None:
        return
    max_tokens = judge.max_tokens or 0
    most_tokens = calls * (prompt_tokens + max_tokens)
    bound = f"every prompt as long as the longest measured ({prompt_tokens:,} tokens), every reply max_tokens"
    if judge.price.priced:
        most_cost = judge.price.cost(calls * prompt_tokens, calls * max_tokens)
        report.ok(f"judge cost for the run: at most {most_cost:,.2f} at judge.price ({bound})")
        if budget.cost is not None and most_cost > budget.cost:
            report.note(
                f"judge.budget.cost={budget.cost:,.2f} may stop the run before its end: it can cost up to "
                f"{most_cost:,.2f}. `writing-rl probe-judge` reports the tokens of a typical call"
            )
    if budget.tokens is not None and most_tokens > budget.tokens:
        report.note(
            f"judge.budget.tokens={budget.tokens:,} may stop the run before its end: up to {most_tokens:,} "
            f"tokens ({bound})"
        )
