"""verl's plugin entry point (group ``verl.plugins``), imported at the end of ``import verl`` in every process
of a run: what verl must know of in processes that never import our reward managers, and the managers' names.

Our reward managers join verl's registry of reward managers (``ParallelRewardManager``,
``GroupRewardManager``) once verl imports it, so an overlay names one as verl's own are named
(``reward.reward_manager.name=GroupRewardManager``, ``source: register``). A manager module imported first,
by importlib, registers itself when it finishes (reward_loop/manager.py, ``register_with_verl``).

The methods' advantage estimators (``RewardMethod.advantage_estimators``: BRPO's ``algorithm.adv_estimator=brpo``,
reward_loop/advantage.py) are registered when verl imports ``core_algos``: fully-async's trainer computes
advantages in an actor of its own that never loads the reward manager, and verl looks an estimator up by name
there. Nothing else changes: an estimator no config names is never used. (The CPU backend has its own entry point, cpu_backend/plugin.py.)
"""

import importlib
import logging
import sys

from writing_rl.import_hooks import after_import


def _register_estimators(core_algos) -> None:
    # Runs in every verl process once core_algos loads: a method module that fails to import must not take verl
    # down with it (a config naming its estimator then fails with verl's own unknown-estimator error).
    from writing_rl.reward_loop.advantage import register_estimators

    try:
        register_estimators()
    except Exception as err:  # noqa: BLE001 - any failure of an installed method's module
        logging.getLogger("writing_rl").warning("writing-rl: the methods' advantage estimators not registered: %s", err)


def _register_managers(reward_managers) -> None:
    from writing_rl.reward_loop.registry import MANAGER_MODULES

    if any(name in sys.modules for name in MANAGER_MODULES):
        return  # one is being imported (and imported verl's registry): it registers itself and the others
    for name in MANAGER_MODULES:
        importlib.import_module(name)  # (registers itself)


after_import(
    {
        "verl.trainer.ppo.core_algos": _register_estimators,
        "verl.experimental.reward_loop.reward_manager": _register_managers,
    }
)
