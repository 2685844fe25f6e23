"""Judge health: how the judge is doing, where a person watching a run sees it (the modules:
docs/architecture.md; the routes to the tracker: docs/judges/health.md)."""
