"""What a reward manager hands the reward fn besides the sample, for the parameters the fn declares (the list:
docs/methods/your-own.md#the-contract): ``judge`` always; each extra the method asks for
(``RewardMethod.extras``) under its name, None when the run switched the extra off.
"""

from __future__ import annotations

from typing import Any

from writing_rl.reward_loop.contract import is_validation


class FnExtras:
    def __init__(self, config, scoring, reward_model_tokenizer=None):
        reward_fn = scoring.reward_fn  # (loaded once per worker, by WorkerScoring)
        self.accepted = reward_fn.parameters
        self.scoring = scoring
        rollout = config.actor_rollout_ref.rollout
        self.train_group_size = int(rollout.n)
        self.val_group_size = int(rollout.val_kwargs.n)
        self.judge_tokenizer = reward_model_tokenizer
        asked = () if reward_fn.method is None else reward_fn.method.extras
        # name -> the extra's worker side (None: switched off in this run); only for a fn that takes it
        self.services = {extra.name: extra.start(config, scoring) for extra in asked if extra.name in self.accepted}

    def service(self, name: str):
        """The worker side of the extra ``name`` (None when off or not asked for)."""
        return self.services.get(name)

    def expected_size(self, extra_info: dict) -> int:
        if extra_info.get("group_size") is not None:
            return int(extra_info["group_size"])
        if is_validation(extra_info):
            return self.val_group_size
        return self.train_group_size

    def for_call(
        self, judge, fields: dict | None = None, late: bool = False, with_extras: bool = True
    ) -> dict[str, Any]:
        """The keyword arguments for one call of the fn: ``fields``, verl's non-tensor fields of the
        sample (per-sample managers), give ``uid`` and ``group_size``; ``with_extras=False``: the extras
        get None (a call that judges nothing)."""
        extras: dict[str, Any] = {"judge": judge}
        if "on_parse_error" in self.accepted:
            extras["on_parse_error"] = self.scoring.failure.on_parse_error
        if "judge_tokenizer" in self.accepted:
            extras["judge_tokenizer"] = self.judge_tokenizer
        for name, service in self.services.items():
            extras[name] = service.for_call(late) if service is not None and with_extras else None
        if fields is not None and "uid" in self.accepted:
            extras["uid"] = None if fields.get("uid") is None else str(fields["uid"])
        if fields is not None and "group_size" in self.accepted:
            extras["group_size"] = self.expected_size(dict(fields.get("extra_info") or {}))
        return extras

    def for_shadow(self, judge, trained: dict, fields: dict | None = None) -> dict[str, Any]:
        """The keyword arguments for the shadow judge's call (reward_loop/shadow/): those of the training call,
        with the shadow's ``judge``, each extra's shadow side (``trained``: the training call's extra info),
        and unreadable replies counted as losses, never raised."""
        extras = self.for_call(judge, fields, with_extras=False)
        for name, service in self.services.items():
            extras[name] = None if service is None else service.for_shadow(trained)
        if "on_parse_error" in self.accepted:
            extras["on_parse_error"] = "loss"
        return extras
