"""verl's plugin entry point (group ``verl.plugins``), imported at the end of ``import verl`` in every process
of a run: what verl must know of in processes that never import our reward managers.

BRPO's advantage estimator (``algorithm.adv_estimator=brpo``, reward_loop/advantage.py) is registered when
verl imports ``core_algos``: fully-async's trainer computes advantages in an actor of its own that never
loads the reward manager, and verl looks the estimator up by name there. Nothing else changes: an estimator
no config names is never used. (The CPU backend has its own entry point, cpu_backend/plugin.py.)
"""

from writing_rl.import_hooks import after_import


def _register_estimator(core_algos) -> None:
    from writing_rl.reward_loop import advantage  # noqa: F401  (registers itself)


after_import({"verl.trainer.ppo.core_algos": _register_estimator})
