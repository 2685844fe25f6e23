"""The reward-fn contract: everything a reward fn written for our managers imports from ``writing_rl.reward_loop``.

``reward_fns/`` import from this module only (tests/test_layout.py checks it); a fn of yours should too.

A reward method is one module: its fn, its options and one declaration registered with the fn,
``METHOD = register(compute_score, RewardMethod(...))``, that our managers, ``writing-rl check-config`` and
the preflight read (loaded once, as verl loads the fn: reward_loop/reward_fn.py). docs/methods/your-own.md
shows a whole one.

A per-sample fn (``ParallelRewardManager``) has verl's ``custom_reward_function`` signature plus keyword
arguments the manager passes when the fn declares them::

    async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *,
                            judge, curriculum=None, uid=None, group_size=1, on_parse_error="loss",
                            **options) -> dict

A group fn (``GroupRewardManager``) scores every rollout of a prompt at once, each a ``Member``::

    async def compute_score(members: list[Member], *, judge, on_parse_error="loss", **options) -> list[dict]

What the manager passes, to a fn whose signature names it (reward_loop/fn_extras.py): ``judge`` (a
``SampleJudge``), ``judge_tokenizer`` (the GenRM's, when verl hosts it), ``uid`` and ``group_size`` (the
sample's group), ``on_parse_error`` (``reward.reward_kwargs.on_parse_error``), and each extra the method asks
for in ``RewardMethod.extras`` under the extra's name (Writing-RL's ``curriculum``, writing_rl/curriculum/extra.py).
Everything else in the call is the fn's options.

Either fn returns ``{"score": float, <numeric extra keys>}`` per sample, the same keys for every sample,
and catches ``JudgeError`` itself (its neutral result).

Options: a frozen dataclass (``RewardMethod.options``) whose fields use ``option(default, choices=...,
minimum=...)`` where a value is bounded, with a comment above each field (the config reference prints it);
the fn reads its keyword arguments with ``read_options(Options, given)``. The same declaration is checked
when ``writing-rl check-config``, the preflight or a reward worker starts (reward_loop/fn_options.py), so a
misspelt or out-of-range option stops the run before any rollout. What this module gives a fn:

- ``RewardMethod``: the declaration, and ``register(fn, method)``: the fn's;
- ``MethodExtra``: what a service a method asks for (``RewardMethod.extras``) provides each worker;
- ``Member``: one rollout of a group; ``is_validation(extra_info)``: a validation row (``split`` test/val/validation);
- ``option`` and ``read_options``: the options, as above;
- ``ProbePlacement``: how ``writing-rl probe-judge`` places a probe in the fn's calls, with the helpers a
  placement uses (``probe_failure``, ``by_sign``, ``uid_where``, ``probe_group``, ``PROBE_FIRST``);
- the failure policy for unreadable judge replies (reward_loop/failures.py): ``fallback_outcome``
  (``"loss"`` or ``"tie"``, never a win),
  ``raise_if_asked`` (stop the step when ``on_parse_error=raise``) and ``unreadable_flags`` (the sample's
  ``parse_error`` / ``judge_truncated`` / ``judge_refusal`` extra-info keys).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from writing_rl.reward_loop import registry
from writing_rl.reward_loop.advantage import reward_as_advantage
from writing_rl.reward_loop.failures import ON_PARSE_ERROR, fallback_outcome, raise_if_asked, unreadable_flags
from writing_rl.reward_loop.fn_options import read_options
from writing_rl.reward_loop.probing import PROBE_FIRST, ProbePlacement, by_sign, probe_failure, uid_where
from writing_rl.settings import option

__all__ = [
    "PROBE_FIRST",
    "Member",
    "MethodExtra",
    "ProbePlacement",
    "RewardMethod",
    "by_sign",
    "fallback_outcome",
    "is_validation",
    "option",
    "probe_failure",
    "probe_group",
    "raise_if_asked",
    "read_options",
    "register",
    "reward_as_advantage",
    "uid_where",
    "unreadable_flags",
]


@dataclass(frozen=True)
class RewardMethod:
    """What a reward fn's module declares as ``METHOD``, besides the fn."""

    # failure_score(**reward_kwargs) -> float: what a failed sample is paid (a judge call that failed, a
    # group that never completed): the method's loss. reward.reward_kwargs.failure_score overrides it.
    failure_score: Callable[..., float]
    # The fn's options (reward.custom_reward_function.reward_kwargs): a frozen dataclass of option() fields;
    # None: a fn that takes none besides what the manager passes.
    options: type | None = None
    # The reward.reward_kwargs.on_parse_error values the fn honours.
    on_parse_error: tuple[str, ...] = ON_PARSE_ERROR
    # check_row(ground_truth, extra_info) -> None: raises ValueError for a row the fn cannot score (the
    # preflight runs it on the training and validation rows).
    check_row: Callable[..., None] | None = None
    # judge_messages(row, response, group_size, reward_kwargs) -> messages: one judge call of the row with
    # every policy response replaced by ``response`` (the preflight measures it against the judge's context).
    judge_messages: Callable[..., list] | None = None
    # calls_per_rollout(row, group_size, reward_kwargs) -> float: the judge calls one rollout of the row costs
    # when every call succeeds the first time (a group call shared by its rollouts); the preflight's estimate
    # of a run's judge calls, checked against judge.budget.
    calls_per_rollout: Callable[..., float] | None = None
    # Services the fn asks for (a MethodExtra each), passed under their names: Writing-RL's curriculum.
    extras: tuple[MethodExtra, ...] = ()
    # Advantage estimators the method adds to verl, as (name, fn) pairs: ``algorithm.adv_estimator=<name>``
    # (reward_loop/advantage.py registers them in every process; ``reward_as_advantage`` is one).
    advantage_estimators: tuple[tuple[str, Callable], ...] = ()
    # How `writing-rl probe-judge` puts a probe in the fn's judge calls (reward_loop/probing.py); None: the
    # method cannot be probed.
    probe: ProbePlacement | None = None
    # A short name for messages and reports; default: the fn's module.
    name: str | None = None


class ExtraForWorker(Protocol):
    """One reward worker's side of a ``MethodExtra``."""

    def for_call(self, late: bool) -> Any:
        """What the fn gets for one call; ``late``: a member scored on its own after its group was (its group
        already had its turn)."""

    def for_shadow(self, trained: dict) -> Any:
        """What the fn gets when the shadow judge scores again what the training call scored (``trained``:
        that call's extra info): nothing the shadow call does may change the run's state."""


class MethodExtra(Protocol):
    """A service a method asks for in ``RewardMethod.extras``: the managers start it in each reward worker
    and pass what it gives under ``name`` to a fn whose signature names it."""

    name: str
    # Optional, for an extra with settings of its own:
    # - ``settings``: a class whose ``from_verl(config)`` reads ``reward.reward_kwargs.<name>`` from verl's config
    #   (every run reads it, so a typo fails at start); a worker finds them in ``scoring.settings.extras[name]``;
    # - ``offline``: what ``writing-rl score`` sets in that section (scoring offline changes no run's state);
    # - ``preflight(settings) -> str | None``: the preflight's line about them (raises ConfigError for settings
    #   a run cannot start with).

    def start(self, config: Any, scoring: Any) -> ExtraForWorker | None:
        """The worker's side (``config``: verl's; ``scoring``: the worker's ``WorkerScoring``), or None when
        the run switched it off (the fn then gets None)."""


def register(fn: Callable, method: RewardMethod) -> RewardMethod:
    """Declares ``method`` as ``fn``'s: the managers, ``check-config`` and the preflight read it from the fn
    verl loads (``reward.custom_reward_function``), and the registry (reward_loop/registry.py) lists it by name
    for the tools that iterate over every method. Returns ``method``, for ``METHOD = register(fn, ...)``."""
    if not isinstance(method, RewardMethod):
        raise TypeError(f"register({fn.__qualname__}, ...): expected a RewardMethod, got {type(method).__name__}")
    target = getattr(fn, "__func__", fn)
    target.reward_method = method if method.name else dataclasses.replace(method, name=fn.__module__)
    registry.record(target, target.reward_method)
    return target.reward_method


@dataclass(frozen=True)
class Member:
    """What one rollout brings to its group."""

    uid: str  # verl's group id: the same for every rollout of one prompt
    text: str  # the decoded response
    response_length: int  # valid response tokens
    prompt: str  # the request as text (last user turn)
    data_source: str
    ground_truth: Any
    extra_info: dict


def probe_group(row: Any, uid: str, texts: list[str]) -> list[Member]:
    """A group of ``texts`` answering a probe-judge row (reward_loop/probing.py) under ``uid``."""
    return [Member(uid, text, 0, row.prompt, row.data_source, row.ground_truth, row.extra_info) for text in texts]


VALIDATION_SPLITS = ("test", "val", "validation")


def is_validation(extra_info: dict | None) -> bool:
    """A validation row, by the convention our builders and verl's example preprocessors follow."""
    return str((extra_info or {}).get("split", "")).lower() in VALIDATION_SPLITS
