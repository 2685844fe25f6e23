from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="writing-rl",
    version="0.1.0",
    description="Judge-based (GenRM / LLM-judge) rewards for long-form writing and translation on stock verl 0.9",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10,<3.13",
    packages=find_packages(include=["writing_rl*", "reward_fns*", "data_prep*", "hydra_configs*"]),
    package_data={"hydra_configs": ["*.yaml", "*/*.yaml"], "writing_rl.tools.probe": ["data/*.jsonl"]},
    install_requires=[
        # torch comes with verl's dependencies; on CPU machines install torch==2.13.0 first (docs/getting-started.md).
        "verl>=0.9.1,<0.10",
        # Its job client (RAY_ADDRESS: writing_rl/tools/shared/cluster/) is in ray[default], which verl requires;
        # naming the extra here sends pip's resolver backtracking through every release of `datasets`.
        "ray>=2.40",
        "pathspec>=0.10",  # what a job's working directory upload leaves out, read as Ray reads it
        "aiohttp>=3.9",
        "hydra-core>=1.3",
        "omegaconf>=2.3",
        "numpy",
        "pandas",
        "pyarrow",
        "transformers",
        "tokenizers",
        "tqdm",
        "py3langid>=0.3",  # the `language` reward term (its model ships in the package)
        # What verl's default trainer (the v1 trainer, trainer.use_v1=true) imports at start and plain
        # `verl` does not install (verl's verl-core extra): TransferQueue, its data plane, and three modules.
        # writing_rl/tools/preflight/config_checks.py names them when one is missing.
        "TransferQueue>=0.1.10",
        "cachetools",
        "uvicorn",
        "fastapi",
        "psutil",  # the CPU backend's host memory figures
        "gguf>=0.10",  # transformers reads SmolLM2's GGUF with it (writing-rl model smollm2: writing_rl/models/)
    ],
    extras_require={
        # matplotlib: the tests draw the real plots (the [plot] extra). The docs extra: the docs build;
        # selenium: tests/test_docs.py looks at the built site in headless Chromium (Debian's chromium and
        # chromium-driver, which .ci/run installs).
        "test": [
            "pytest>=7",
            "openai>=1.0",
            "matplotlib>=3.7",
            "mkdocs>=1.6,<2",
            "mkdocs-material>=9.5,<10",
            "latex2mathml>=3.77",
            "selenium>=4.10",
            # property tests of the reward maths and rules (tests/test_properties_*.py)
            "hypothesis>=6.100",
        ],
        # scripts/mutation_score.py: the reward path's mutation score (not part of CI).
        "mutation": ["mutmut>=3.3,<4"],
        # The documentation site: mkdocs serve / mkdocs build --strict (mkdocs.yml; the Material theme, and
        # formulas turned into MathML at build time by scripts/mkdocs_math.py).
        "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10", "latex2mathml>=3.77"],
        # PNG plots of `writing-rl select`, `curriculum show --plot` and `eval`; without it they are skipped.
        "plot": ["matplotlib>=3.7"],
        # bench/*.py --profile: where a reward worker's CPU goes, by stage (bench/stages.py).
        "bench": ["py-spy>=0.3.14", "matplotlib>=3.7"],
        # GPU-only: never needed on CPU machines, imported lazily.
        "vllm": ["vllm>=0.10"],
        "gpu": ["vllm>=0.10", "flash-attn"],
    },
    entry_points={
        "console_scripts": ["writing-rl=writing_rl.tools.cli:main"],
        # verl imports them in every process: the methods' advantage estimators once verl imports core_algos; the
        # CPU backend only when VERL_PLATFORM=cpu.
        "verl.plugins": ["writing_rl=writing_rl.plugin", "writing_rl_cpu=writing_rl.cpu_backend.plugin"],
        # The packages whose modules hold reward methods (writing_rl/reward_loop/registry.py).
        "writing-rl.methods": ["writing_rl=reward_fns"],
        # Commands a method's package adds to `writing-rl` (writing_rl/tools/cli.py): add_commands(subparsers).
        "writing-rl.commands": ["curriculum=writing_rl.curriculum.cli:add_commands"],
    },
)
