"""verl on a CPU, through verl's plugin points (docs/train-on-a-laptop.md#how-it-plugs-into-verl): nothing
unless ``VERL_PLATFORM=cpu``; ``+backend=cpu`` (hydra_configs/backend/cpu.yaml) sets the rest of a CPU run."""
