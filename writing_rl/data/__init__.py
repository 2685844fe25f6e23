"""Reading user data and writing verl parquet (the map: docs/architecture.md); ``data_prep/`` (the command
lines) and the offline tools build on it."""
