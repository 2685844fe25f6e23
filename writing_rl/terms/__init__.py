"""Reward terms: rule-based shaping added to any method's reward (``reward.reward_kwargs.terms``;
``shaping.py`` has the formula, ``builtin.py`` the built-in terms), and
watches: measures of the text logged beside the reward, never paid (``reward.reward_kwargs.watch``: ``watch.py``)."""

from writing_rl.terms.builtin import BUILTIN
from writing_rl.terms.sample import TermInput
from writing_rl.terms.shaping import RewardTerms
from writing_rl.terms.watch import Watches

__all__ = ["BUILTIN", "RewardTerms", "TermInput", "Watches"]
