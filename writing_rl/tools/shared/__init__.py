"""What several command families of ``writing_rl/tools/`` share beyond ``writing_rl.offline``: verl's
trainers and their entry points (``trainers``) and the Ray cluster a run is submitted to (``cluster``)."""
