"""What runs inside verl's reward workers (the map: docs/architecture.md)."""
