"""Entry points that put ``judge/...`` in verl's tracker under the trainers without a replay buffer.

verl 0.9.1's ``legacy``, ``fully-async`` and ``one-step-off`` trainers build each step's metrics in code that loads
no user class (docs/judges/health.md names the lines). What verl offers instead is the recipe's route: an entry
point of one's own that hands ``verl.trainer.main_ppo.run_ppo`` its own ``task_runner_class``, which builds a
subclass of verl's trainer. Ours add the step's judge health (reward_loop/health/batch.py) where the trainer
gathers the step's metrics, and change nothing else:

    python -m writing_rl.reward_loop.health.entry.main_ppo ...      # legacy (trainer.use_v1=false); v1 as verl's
    python -m writing_rl.reward_loop.health.entry.fully_async ...   # verl.experimental.fully_async_policy
    python -m writing_rl.reward_loop.health.entry.one_step_off ...  # verl.experimental.one_step_off_policy

``TRAINER=legacy|fully-async|one-step-off`` in the scripts runs them (writing_rl/tools/shared/trainers.py).
"""
