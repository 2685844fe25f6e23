"""Check a GenRM SFT run on a laptop before it reaches GPUs: ``python -m data_prep.check_sft [--print] OVERRIDES``.

The checks: ``writing_rl.data.sft_check``; ``DRY_RUN=1 scripts/train_genrm_sft.sh`` runs this.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from writing_rl.data.sft_check import check_sft, compose_sft, trainer_import_problem  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m data_prep.check_sft", description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the composed config first (like --cfg job)")
    parser.add_argument("--sample", type=int, default=64, help="rows tokenized to check lengths (default 64)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of verl's sft_trainer_engine config")
    args = parser.parse_args(argv)
    try:
        config = compose_sft(args.overrides)
        if args.print:
            from omegaconf import OmegaConf

            print(OmegaConf.to_yaml(config))
        checked = check_sft(config, args.sample)
    except Exception as exc:  # a config or data error: report it, as check-config does
        print(f"check_sft: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    for line in checked:
        print(f"ok  {line}")
    problem = trainer_import_problem()  # a warning: the dry run may be on another machine than the run
    if problem:
        print(f"warn  {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
