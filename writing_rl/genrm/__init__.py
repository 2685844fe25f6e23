"""Hosting a GenRM on Ray: engines (transformers, vLLM), replicas, the least-loaded pool and the
OpenAI-compatible server behind ``writing-rl serve-judge`` (docs/architecture.md)."""
