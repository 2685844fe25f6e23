"""BRPO's advantage: verl's own compute_advantage with the estimator our verl plugin registers in every verl
process, including one that never loads our reward managers (fully-async's trainer actor)."""

import json
import subprocess
import sys

from conftest import REPO_DIR

# In a fresh interpreter that imports verl and none of our reward code, as fully-async's trainer: compose
# brpo.yaml, then compute advantages.
DRIVER = """
import json, sys
import numpy as np, torch
from verl import DataProto
from verl.trainer.ppo.ray_trainer import compute_advantage
from writing_rl.offline.compose import compose

config = compose("brpo", ["actor_rollout_ref.model.path=/unused"])
assert not {"writing_rl.reward_loop.group_manager", "writing_rl.reward_loop.manager"} & set(sys.modules)
rewards = [[0.0, 1.0, -1.0, 1.0], [-1.0, 0.0, 0.5, 1.0]]
mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]] * 2, dtype=torch.float32)
token_rewards = torch.zeros(8, 4)
for row, value in enumerate(sum(rewards, [])):
    token_rewards[row, int(mask[row].sum()) - 1] = value
data = DataProto.from_dict(
    tensors={"token_level_rewards": token_rewards, "response_mask": mask},
    non_tensors={"uid": np.array(["g1"] * 4 + ["g2"] * 4, dtype=object)},
)
out = compute_advantage(data, config.algorithm.adv_estimator, config=config.algorithm)
print(json.dumps({"estimator": config.algorithm.adv_estimator, "advantages": out.batch["advantages"].tolist()}))
"""


def test_brpo_rewards_are_the_advantage_and_the_reference_gets_none():
    result = subprocess.run([sys.executable, "-c", DRIVER], capture_output=True, text=True, cwd=REPO_DIR, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["estimator"] == "brpo"
    advantages = out["advantages"]
    rewards = [0.0, 1.0, -1.0, 1.0, -1.0, 0.0, 0.5, 1.0]
    masks = [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]] * 2
    for row, (reward, mask) in enumerate(zip(rewards, masks)):
        assert advantages[row] == [reward * m for m in mask]  # each response token carries the reward


def test_check_config_wants_the_plugin_that_registers_brpo_loaded(monkeypatch):
    import pytest

    from writing_rl.offline.compose import compose
    from writing_rl.settings import ConfigError
    from writing_rl.tools.preflight.config_checks import check_config

    config = compose("brpo", ["actor_rollout_ref.model.path=/m", "reward.reward_kwargs.judge.base_url=http://127.0.0.1:9/v1",
                              "reward.reward_kwargs.judge.model=m"])  # fmt: skip
    monkeypatch.delenv("VERL_USE_EXTERNAL_PLUGINS", raising=False)
    assert "advantage estimator brpo: verl plugin writing_rl installed" in check_config(config)
    for policy in ("none", "writing_rl_cpu,other"):
        monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", policy)
        with pytest.raises(ConfigError, match=f"VERL_USE_EXTERNAL_PLUGINS={policy} keeps verl from loading"):
            check_config(config)
    monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", "writing_rl_cpu,writing_rl")
    check_config(config)
