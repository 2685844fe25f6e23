"""``writing-rl select``, margin-aware data selection: ``job`` (the settings of a run), ``select`` (read the
rows, judge, sum up), ``margins`` (the math: margins, ranking, budget and quotas) and ``outputs`` (what it
writes)."""
