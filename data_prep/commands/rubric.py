"""``rubric``: prompts with rubrics (ours, Rubrics as Rewards', WritingBench's checklists) -> rows for the
rubric reward (``writing_rl.data.builders.rubric``)."""

from __future__ import annotations

from data_prep.commands.builder_options import BuilderOptions
from data_prep.commands.options import SYSTEM_PROMPT, add_subcommand
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
    options = BuilderOptions(RubricBuilder)
    options.add(
        p,
        {
            "prompt_key": "column of the prompt (default: the first of prompt, query, question)",
            "rubric_key": "column of the rubric (default: the first of rubric, checklist, rubrics)",
            "data_source": "data_source when the row has none",
            "system_prompt": SYSTEM_PROMPT,
        },
    )
    p.set_defaults(make_builder=options.builder)
