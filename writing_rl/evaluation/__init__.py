"""``writing-rl eval``: what training bought, measured on the same judge layer as the rewards.

Its modules: docs/architecture.md; the kinds, their reports and how to add one: docs/evaluation.md.
"""
