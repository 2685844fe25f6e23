"""Reward terms on top of any method's reward: ``reward.reward_kwargs.terms``.

The formula, a term of your own (``fn: {path, name}``), the extra-info keys and the rule that a failed sample
never gains from the terms (``RewardTerms.shape``): docs/reward-terms.md. The built-in terms: ``builtin.py``.
"""

from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from writing_rl.settings import ConfigError, build, check_keywords, plain, require
from writing_rl.terms.builtin import BUILTIN
from writing_rl.terms.sample import TermInput

PREFIX = "reward.reward_kwargs.terms"
TERM_ARGUMENTS = ("data_source", "solution_str", "ground_truth", "extra_info")  # what FnTerm passes


@dataclass(frozen=True)
class FnTerm:
    """A term of your own: ``fn: {path, name}`` and keyword arguments for it."""

    weight: float
    fn: Callable
    kwargs: dict = field(default_factory=dict)

    async def value(self, sample: TermInput) -> float:
        result = self.fn(
            data_source=sample.data_source,
            solution_str=sample.response,
            ground_truth=sample.ground_truth,
            extra_info=dict(sample.extra_info),
            **self.kwargs,
        )
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, dict):
            result = result.get("score")
        if not isinstance(result, numbers.Real) or isinstance(result, bool):
            raise TypeError(f"returned {type(result).__name__}, expected a float or a dict with 'score'")
        return float(result)


def load_fn(setting: str, spec: Any) -> Callable:
    """The function ``spec`` = ``{path, name}`` names (``setting``: its key, for the error)."""
    key = f"{setting}.fn"
    require(
        isinstance(spec, dict) and isinstance(spec.get("path"), str) and isinstance(spec.get("name"), str),
        f"{key} must be {{path: <file or pkg://module>, name: <function>}}, got {spec!r}",
    )
    from verl.utils.import_utils import load_extern_object

    try:
        return load_extern_object(module_path=spec["path"], object_name=spec["name"])
    except (AttributeError, ImportError, FileNotFoundError, RuntimeError) as err:
        raise ConfigError(f"{key}: cannot load {spec['name']!r} from {spec['path']!r}: {err}") from err


def _term(name: str, raw: Any, response_length: int | None):
    key = f"{PREFIX}.{name}"
    require(isinstance(raw, dict), f"{key} must be a mapping of settings (weight, ...), got {raw!r}")
    weight = raw.get("weight", 0.0)
    require(
        isinstance(weight, numbers.Real) and not isinstance(weight, bool) and math.isfinite(weight),
        f"{key}.weight must be a finite number, got {weight!r}",
    )
    if name in BUILTIN:
        # (built-in terms are penalties: a negative weight would pay the behaviour they punish)
        require(weight >= 0, f"{key}.weight must be >= 0 (a penalty term; 0 turns it off), got {weight}")
        term = build(BUILTIN[name], raw, key)
        if name == "overlong" and term.max_length is None:
            term = replace(term, max_length=response_length)
        if term.weight:  # (an off term's keys and types are still checked, by build)
            term.check(key)
        return term
    if "fn" not in raw:
        raise ConfigError(
            f"unknown term {name!r} under {PREFIX}: the built-in terms are {', '.join(BUILTIN)}; "
            "a term of your own needs fn: {path, name}"
        )
    kwargs = {k: v for k, v in raw.items() if k not in ("weight", "fn")}
    fn = load_fn(key, raw["fn"])
    check_keywords(fn, kwargs, key, f"{raw['fn']['path']}:{raw['fn']['name']}", TERM_ARGUMENTS)
    return FnTerm(float(weight), fn, kwargs)


async def value_each(
    measures: Mapping[str, Any], sample: TermInput, failed: float, what: str
) -> tuple[dict[str, float], str | None]:
    """Each measure's value on ``sample`` (``failed`` for one that raised or gave no finite number: any such
    failure is counted by the caller), and the first failure's message."""
    values, error = {}, None
    for name, measure in measures.items():
        try:
            value = measure.value(sample)
            value = await value if inspect.isawaitable(value) else value
            if not math.isfinite(value):
                raise ValueError(f"returned {value}")
            values[name] = float(value)
        except Exception as exc:  # noqa: BLE001 (any failure of a measure is a counted failure of the sample)
            values[name] = failed
            error = error or f"{what} {name!r} failed: {type(exc).__name__}: {exc}"
    return values, error


class RewardTerms:
    """The terms that are on (weight != 0), in the order they were listed."""

    def __init__(self, terms: Mapping[str, Any] | None = None):
        self.terms = dict(terms or {})

    @classmethod
    def from_config(cls, raw: Any, response_length: int | None = None) -> RewardTerms:
        require(raw is None or hasattr(raw, "items"), f"{PREFIX} must be a mapping of term names to settings")
        raw = plain(raw or {})
        terms = {name: _term(str(name), settings or {}, response_length) for name, settings in raw.items()}
        return cls({name: term for name, term in terms.items() if term.weight != 0})

    def __bool__(self) -> bool:
        return bool(self.terms)

    async def values(self, sample: TermInput) -> tuple[dict[str, float], str | None]:
        """Each term's raw value (0.0 for a failed one), and the first failure's message."""
        return await value_each(self.terms, sample, failed=0.0, what="reward term")

    async def shape(
        self, score: float, info: dict, sample: TermInput, failure_score: float, failed: bool
    ) -> tuple[float, dict, str | None]:
        """The sample's reward with the terms, its extra info with theirs, and a term's failure message.
        ``failed``: the method already counted a failure for this sample."""
        values, error = await self.values(sample)
        weighted = {name: self.terms[name].weight * value for name, value in values.items()}
        info = {**info, "reward/method": score, **{f"term/{n}": v for n, v in values.items()}}
        info["term_error"] = int(error is not None)
        if failed or error is not None:
            return min(score, failure_score) + sum(min(0.0, w) for w in weighted.values()), info, error
        return score + sum(weighted.values()), info, None
