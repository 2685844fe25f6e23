"""Reward terms: rule-based shaping added to any method's reward (``reward.reward_kwargs.terms``;
``shaping.py`` has the formula, ``builtin.py`` the built-in terms)."""

from writing_rl.terms.builtin import BUILTIN
from writing_rl.terms.sample import TermInput
from writing_rl.terms.shaping import RewardTerms

__all__ = ["BUILTIN", "RewardTerms", "TermInput"]
