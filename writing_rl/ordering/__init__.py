"""``writing-rl order-references``: candidate references ordered by judged quality (modules: docs/architecture.md)."""
