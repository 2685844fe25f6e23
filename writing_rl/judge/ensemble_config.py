"""``reward.reward_kwargs.judge.ensemble``: several judges asked for every judgment, their readings combined
(``ensemble.py``, ``votes.py``; docs/judges/ensembles.md). Nothing here imports ``config.py`` (which holds this
section): a member, a whole judge, is built as ``type(base)``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Mapping

from writing_rl.settings import ConfigError, build, option

# What a judgment whose judges split (no value read by more than half of them) counts as.
SPLIT_RULES = ("tie", "loss", "unreadable")
# A member's keys that are the ensemble's, not one judge's: its judges hold one budget together.
NOT_PER_MEMBER = ("ensemble", "budget")
# A member's name is part of its metric keys (judge/ensemble/<name>/calls_total).
NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class EnsembleConfig:
    """Several judges vote on each judgment: ``reward.reward_kwargs.judge.ensemble`` (docs/judges/ensembles.md)."""

    # The judges, two or more, each asked every judgment: a mapping of keys of reward.reward_kwargs.judge that
    # override the judge's own (model, base_url, api_key_env, price, max_concurrency, ...; a section given
    # replaces the judge's), and a name for its metrics (default: its model's last path part). [] = one judge.
    members: list = option([])
    # What a split (no reading shared by more than half of the judges read) counts as: tie (a tie, verdict C),
    # loss, or unreadable (an unreadable reply: on_parse_error decides, counted as parse_error). A split never
    # pays more than a tie; a number (a score) is the judges' mean and never splits.
    split: str = option("tie", choices=SPLIT_RULES)
    # The fewest judges that must answer for a judgment: fewer answers are a failed call (judge_error). (Any
    # reply that cannot be read makes the judgment unreadable, whatever the quorum.)
    quorum: int = option(1, minimum=1)

    @property
    def on(self) -> bool:
        return bool(self.members)

    @property
    def calls_per_judgment(self) -> int:
        """The judge calls one judgment makes: one per judge."""
        return len(self.members) or 1

    def judges(self, base: Any, prefix: str) -> list[tuple[str, Any]]:
        """(name, config) of each member: ``base`` (the judge's config; its ensemble left out) with the member's
        keys, each checked as the judge's own are. ``prefix``: the judge section's key."""
        if not self.on:
            return []
        where = f"{prefix}.ensemble"
        if isinstance(self.members, (str, Mapping)) or len(self.members) < 2:
            raise ConfigError(
                f"{where}.members must list two or more judges (a mapping of judge keys each), got "
                f"{self.members!r}; one judge is the {prefix} section itself"
            )
        if self.quorum > len(self.members):
            raise ConfigError(f"{where}.quorum={self.quorum} is more than its {len(self.members)} members")
        shared = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.name != "ensemble"}
        judges = []
        for index, member in enumerate(self.members):
            key = f"{where}.members[{index}]"
            if not isinstance(member, Mapping):
                raise ConfigError(f"{key} must be a mapping of {prefix} keys (model, base_url, ...), got {member!r}")
            own = dict(member)
            name = own.pop("name", None)
            for taken in NOT_PER_MEMBER:
                if taken in own:
                    raise ConfigError(
                        f"{key}.{taken}: set on {prefix}.{taken}, not per judge: an ensemble's judges hold one "
                        f"{taken} together"
                    )
            config = build(type(base), {**shared, **own}, key)
            try:
                config.validate()
            except ConfigError as err:
                raise ConfigError(str(err).replace(f"{prefix}.", f"{key}.")) from None
            judges.append((self._name(name, config.model, key, [n for n, _ in judges]), config))
        return judges

    @staticmethod
    def _name(name: Any, model: str, key: str, taken: list[str]) -> str:
        if name is not None:
            if not isinstance(name, str) or not NAME.fullmatch(name):
                raise ConfigError(f"{key}.name={name!r}: expected letters, digits, '_', '.' or '-' (a metric key part)")
            if name in taken:
                raise ConfigError(f"{key}.name={name!r}: another member has that name")
            return name
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", model.rstrip("/").split("/")[-1])
        named, suffix = stem, 2
        while named in taken:
            named, suffix = f"{stem}-{suffix}", suffix + 1
        return named
