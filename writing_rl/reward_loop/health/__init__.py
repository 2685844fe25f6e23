"""Judge health: how the judge is doing, where a person watching a run sees it.

``metrics`` (a step's ``judge/...`` numbers from the samples' extra info, also read by ``writing-rl
monitor``), ``sampler`` (verl v1's replay buffer reporting them: the route to the tracker) and
``batch_summary`` (each worker's log line per batch: outcomes, failures, judge latency, retries, 429s).
"""
