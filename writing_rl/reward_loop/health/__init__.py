"""Judge health: how the judge is doing, where a person watching a run sees it.

``metrics`` (a step's ``judge/...`` numbers from the samples' extra info, also read by ``writing-rl
monitor``), ``sampler`` (verl v1's replay buffer reporting them: the v1 trainers' route to the tracker),
``batch`` and ``entry/`` (the route under the legacy, fully-async and one-step-off trainers: verl's trainers,
through entry points of ours, adding a step's health from the batch they hold) and ``batch_summary`` (each
worker's log line per batch: outcomes, failures, judge latency, retries, 429s).
"""
