"""``python -m writing_rl.tools.preflight``: the preflight of ``scripts/_launch.sh`` (``runner.main``)."""

from writing_rl.tools.preflight.runner import main

raise SystemExit(main())
