"""Judge health of a batch verl's trainer holds (reward_loop/health/batch.py) and the trainers of our entry points
(reward_loop/health/entry/) that add it to each step's metrics; fully-async's metrics filed under their own step.
The trainer runs that show it end to end are in tests/test_tracker_judge_metrics.py."""

import numpy as np
import pytest
import torch
from verl import DataProto
from verl.experimental.fully_async_policy.detach_utils import MetricsAggregator
from verl.experimental.fully_async_policy.fully_async_trainer import FullyAsyncTrainer
from verl.trainer.ppo.ray_trainer import RayPPOTrainer

from writing_rl.reward_loop.health.batch import StepHealth, batch_health
from writing_rl.reward_loop.health.entry.fully_async import _JudgeHealthFullyAsyncTrainer, keep_running_totals
from writing_rl.reward_loop.health.entry.trainers import JudgeHealthPPOTrainer, JudgeHealthSteps


def scored_batch(costs=(0.5, 0.25, 0.0, 0.25)) -> DataProto:
    """Four samples as verl's trainer holds them: rewards in rm_scores (on the last response token), the reward
    extra info one array per key named in meta_info, the responses' tokens in response_mask."""
    n, width = len(costs), 4
    lengths = [1, 2, 3, 4]
    rewards = [1.0, 0.0, 0.5, 1.0]
    rm_scores, mask = torch.zeros(n, width), torch.zeros(n, width, dtype=torch.long)
    for i, (length, reward) in enumerate(zip(lengths, rewards)):
        mask[i, :length] = 1
        rm_scores[i, length - 1] = reward
    extra = {
        "judge_calls": np.array([2, 2, 2, 2]),
        "judge_error": np.array([0, 1, 0, 0]),
        "parse_error": np.array([0, 0, 1, 0]),
        "judge_latency_s": np.array([0.1, 0.2, 0.3, 0.4]),
        "judge_cost": np.array(costs),
    }
    return DataProto.from_dict(
        tensors={"rm_scores": rm_scores, "response_mask": mask},
        non_tensors={**extra, "uid": np.array(["a", "a", "b", "b"], dtype=object)},
        meta_info={"reward_extra_keys": list(extra)},
    )


def test_a_batch_gives_the_judge_numbers_of_its_samples():
    metrics = batch_health(scored_batch())
    assert metrics["judge/samples_total"] == 4
    assert metrics["judge/calls_total"] == 8
    assert metrics["judge/error_rate"] == 0.25 and metrics["judge/parse_error_rate"] == 0.25
    assert metrics["judge/cost_total"] == pytest.approx(1.0)
    assert metrics["judge/latency_p50_s"] == pytest.approx(0.25)
    assert metrics["judge/reward_length_corr"] == pytest.approx(float(np.corrcoef([1, 2, 3, 4], [1, 0, 0.5, 1])[0, 1]))
    assert "judge/uid" not in str(metrics)  # only the reward extra info verl names is read


def test_each_step_adds_its_cost_to_the_run_so_far_and_a_batch_it_cannot_read_costs_no_step(caplog):
    health = StepHealth()
    assert health(scored_batch())["judge/cost_cumulative"] == pytest.approx(1.0)
    assert health(scored_batch((1.0, 0, 0, 0)))["judge/cost_cumulative"] == pytest.approx(2.0)
    unscored = DataProto.from_dict(tensors={"responses": torch.zeros(2, 3)})
    assert health(unscored) == {}
    assert "no judge/ metrics this step" in caplog.text


def test_the_legacy_trainer_adds_judge_health_to_the_actor_update_metrics_it_logs(monkeypatch):
    """verl's legacy fit adds reduce_metrics(actor_output.meta_info["metrics"]) to the step's metrics as named."""
    actor_metrics = {"actor/pg_loss": 0.5}
    monkeypatch.setattr(
        RayPPOTrainer, "_update_actor", lambda self, batch: DataProto(meta_info={"metrics": dict(actor_metrics)})
    )
    trainer = object.__new__(JudgeHealthPPOTrainer)
    output = trainer._update_actor(scored_batch())
    assert output.meta_info["metrics"]["actor/pg_loss"] == 0.5
    assert output.meta_info["metrics"]["judge/calls_total"] == 8
    assert trainer._update_actor(scored_batch()).meta_info["metrics"]["judge/cost_cumulative"] == pytest.approx(2.0)


def test_the_separate_trainers_add_judge_health_where_they_collect_a_step_metrics():
    class Trainer:
        def _fit_collect_metrics(self, batch):
            self.metrics["critic/score/mean"] = 0.625

    class WithHealth(JudgeHealthSteps, Trainer):
        pass

    trainer = WithHealth()
    trainer.metrics = {"training/global_step": 1}
    trainer._fit_collect_metrics(scored_batch())
    assert trainer.metrics["critic/score/mean"] == 0.625 and trainer.metrics["judge/samples_total"] == 4


class RecordingTracker:
    def __init__(self):
        self.records = []

    def log(self, data, step):
        self.records.append((step, dict(data)))


def fully_async_trainer(cls):
    """verl's fully-async trainer as far as its step's end needs it (no Ray, no workers)."""
    trainer = object.__new__(cls)
    trainer.metrics_aggregator = MetricsAggregator(total_gpus=1)
    trainer.logger = RecordingTracker()
    trainer.message_queue_client = type("Queue", (), {"get_queue_size_sync": lambda self: 0})()
    trainer.required_samples, trainer.local_trigger_step, trainer.global_steps = 4, 1, 1
    trainer.progress_bar = type("Bar", (), {"update": lambda self, n: None})()
    trainer._cycle_end = None
    return trainer


def run_steps(trainer, steps: int) -> list[tuple[int, dict]]:
    """``steps`` steps of verl's fit_step order with a weight update after each (trigger_parameter_sync_step=1):
    the version advances, the cycle's aggregate is logged, then the step's metrics join the aggregate."""
    for step in range(1, steps + 1):
        trainer.current_param_version = step
        trainer.metrics = {"training/global_step": step, "critic/score/mean": step / 10, "judge/cost_cumulative": step}
        trainer._fit_log_aggregated_training_metrics({})
        trainer._fit_postprocess_step()
    return [(step, data) for step, data in trainer.logger.records if "critic/score/mean" in data]


def test_fully_async_metrics_of_each_step_are_filed_under_that_step():
    logged = run_steps(fully_async_trainer(_JudgeHealthFullyAsyncTrainer), 2)
    assert [(step, data["training/global_step"], data["critic/score/mean"]) for step, data in logged] == [
        (1, 1, 0.1), (2, 2, 0.2),
    ]  # fmt: skip


def test_verl_fully_async_trainer_files_a_step_under_the_next_and_logs_the_last_one_only_at_the_end():
    """What ours corrects (reward_loop/health/entry/fully_async.py): this fails once verl files them right."""
    logged = run_steps(fully_async_trainer(FullyAsyncTrainer.__ray_actor_class__), 2)
    assert [(step, data["training/global_step"]) for step, data in logged] == [(2, 1)]


def test_a_cycle_of_several_steps_keeps_the_last_running_cost():
    aggregator = MetricsAggregator(total_gpus=1)
    keep_running_totals(aggregator)
    for cost in (1.0, 3.0):
        aggregator.add_step_metrics({"judge/cost_cumulative": cost, "judge/cost_total": 1.0}, 4)
    aggregated = aggregator.get_aggregated_metrics()
    assert aggregated["judge/cost_cumulative"] == 3.0 and aggregated["judge/cost_total"] == 2.0


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"trainer": {"use_v1": False}}, "`python -m writing_rl.reward_loop.health.entry.main_ppo` runs it"),
        ({"trainer": {}, "async_training": {}}, "verl's own `python -m verl.experimental.fully_async_policy"),
        ({"trainer": {}, "rollout": {}}, "(TRAINER=one-step-off does)"),
        ({"trainer": {"v1": {"trainer_mode": "sync", "sampler": {"custom_sampler": {"path": None}}}}}, "WARNING"),
    ],
)
def test_the_preflight_names_the_route_of_each_trainer_judge_health(config, says):
    from omegaconf import OmegaConf

    from writing_rl.tools.shared.trainers import judge_health_route

    assert says in judge_health_route(OmegaConf.create(config))


def test_the_entry_points_replace_only_names_verl_still_uses_and_stop_when_one_is_gone():
    import types

    import verl.experimental.fully_async_policy.fully_async_main as fully_async_main
    import verl.experimental.one_step_off_policy.main_ppo as one_step_off_main
    import verl.trainer.main_ppo_v0 as main_ppo_v0

    from writing_rl.reward_loop.health.entry.swap import replace, replace_in

    # the names our entry points point at their subclasses, where verl 0.9.1 reads them
    assert hasattr(main_ppo_v0, "TaskRunner") and hasattr(one_step_off_main, "OneStepTaskRunner")
    assert hasattr(fully_async_main, "FullyAsyncTaskRunner")
    for method, name in (
        (main_ppo_v0.TaskRunner.__ray_actor_class__.run, "RayPPOTrainer"),
        (one_step_off_main.OneStepTaskRunner.__ray_actor_class__.run, "OneStepOffRayTrainer"),
        (fully_async_main.FullyAsyncTaskRunner.__ray_actor_class__._create_trainer, "FullyAsyncTrainer"),
    ):
        assert name in method.__code__.co_names
    stand_in = types.ModuleType("verl.some_entry")
    with pytest.raises(RuntimeError, match="verl's verl.some_entry no longer uses TaskRunner"):
        replace(stand_in, "TaskRunner", object)

    def build():
        return sorted([])  # reads the global "sorted"

    with pytest.raises(RuntimeError, match="no longer uses RayPPOTrainer"):
        replace_in(build, "RayPPOTrainer", object)
    namespace = {"__builtins__": __builtins__}
    exec("def build():\n    return Trainer()", namespace)
    replace_in(namespace["build"], "Trainer", list)
    assert namespace["build"]() == []
