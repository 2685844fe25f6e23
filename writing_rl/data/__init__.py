"""Reading user data and writing verl parquet: readers (JSONL, JSON, CSV, parquet, datasets dirs, with
line numbers), the builder contract and train/test split (``builder``), the build run (``driver``: one
pass over the input, rejects, atomic outputs) and the columns it keeps (``kept_columns``), field checks,
schemas, the row builders of every kind (``builders/``) and the check of a GenRM SFT run (``sft_check``).
``data_prep/`` (``build_parquet.py``, ``check_sft.py``: the command lines) and the offline tools build on it."""
