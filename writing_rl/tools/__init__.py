"""The offline commands of ``writing-rl`` (cli + commands/), each a runner over the modules that do the work
(docs/architecture.md)."""
