"""``writing-rl preflight`` and ``writing-rl check-config``, checks by concept: ``config_checks`` (verl's
``validate_config``, our reward settings, the paths the config names), ``data_checks`` (rows against the
reward fn, prompt tokens), ``judge_checks`` (the endpoint, its model and key, the judge prompt against its
context), ``report`` (one line per check) and ``runner`` (the whole preflight, its options and ``main``).
``python -m writing_rl.tools.preflight`` runs it (``__main__``)."""
