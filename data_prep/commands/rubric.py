"""``rubric``: prompts with rubrics (ours, Rubrics as Rewards', WritingBench's checklists) -> rows for the
rubric reward (``writing_rl.data.builders.rubric``)."""

from __future__ import annotations

from data_prep.commands.options import add_subcommand
from writing_rl.data.builders.rubric import RubricBuilder


def add_rubric(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "rubric",
        help="prompts with rubrics -> RL rows for the rubric reward",
        description=(
            "Each input row: a prompt (prompt, query or question) and its rubric (rubric, checklist or rubrics): "
            "criteria as {criterion, weight}, Rubrics as Rewards' {title, description, weight} or WritingBench's "
            "{name, criteria_description}. Output rows carry reward_model.ground_truth = {prompt, rubric: "
            "[{criterion, weight}]} for hydra_configs/rubric.yaml; a negative weight is a pitfall."
        ),
        example="--input benchmark_all.jsonl --output data/rubric --test-size 100",
    )
    p.add_argument("--prompt-key", help="column of the prompt (default: the first of prompt, query, question)")
    p.add_argument("--rubric-key", help="column of the rubric (default: the first of rubric, checklist, rubrics)")
    p.add_argument("--data-source", default="rubric", help="data_source when the row has none")
    p.add_argument("--system-prompt", help="system message put before each prompt (default: none)")
    p.set_defaults(
        make_builder=lambda a: RubricBuilder(
            prompt_key=a.prompt_key, rubric_key=a.rubric_key, data_source=a.data_source, system_prompt=a.system_prompt
        )
    )
