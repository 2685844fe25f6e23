"""``writing-rl probe-judge``: can this judge be fooled? A fixed battery of probes sent through a method's
own reward fn (docs/trust-your-judge.md). ``job`` (``ProbeJob``), ``battery`` (the probes), ``rows``,
``placing`` (each method's way through its reward fn), ``run``, ``verdict`` (intervals and the flag rule),
``summary``, ``outputs``, ``preflight_probe`` (the small version ``writing-rl preflight --probe`` runs)."""
