"""verl on a CPU, through verl's plugin points: a platform, a rollout backend, the FSDP engines
registered for the ``cpu`` device, and four small shims (``shims``).

Loaded by verl itself when it is imported: our package declares the entry point
``verl.plugins: writing_rl_cpu = writing_rl.cpu_backend.plugin``. It does nothing unless
``VERL_PLATFORM=cpu``; ``+backend=cpu`` (hydra_configs/backend/cpu.yaml) sets the rest of a CPU run.
"""
