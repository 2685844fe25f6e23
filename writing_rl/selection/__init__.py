"""``writing-rl select``, margin-aware data selection (its modules: docs/architecture.md)."""
