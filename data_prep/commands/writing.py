"""``writing-rl``: prompts with criteria and references, easiest first -> Writing-RL rows
(``writing_rl.data.builders.writing``)."""

from __future__ import annotations

from data_prep.commands.builder_options import BuilderOptions
from data_prep.commands.options import SYSTEM_PROMPT, add_subcommand
from writing_rl.data.builders.writing import WritingRLBuilder


def add_writing_rl(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "writing-rl",
        help="prompts (+ criteria, references easiest first) -> Writing-RL rows",
        description=(
            "Each input row: a prompt, optional criteria (a string, a list, or WritingBench's checklist) and "
            "optional references (string or list, easiest first). Output rows carry reward_model.ground_truth = "
            "{prompt, target, criteria, id} with ids dense 0..N-1 and extra_info.index = id; your own id is "
            "extra_info.source_id (--id-key) and your other columns (domain, source...) are kept in extra_info."
        ),
        example="--input prompts.jsonl --output data/writing --test-size 200",
    )
    options = BuilderOptions(WritingRLBuilder)
    options.add(
        p,
        {
            "prompt_key": "column of the prompt",
            "references_key": "input column with the reference list",
            "criteria_key": "column of the criteria: a string, a list of strings, or WritingBench's checklist (a list "
            "of {name, criteria_description, '1-2': ..., ...}, also as JSON text), rendered for the judge",
            "data_source": "data_source when the row has none",
            "system_prompt": SYSTEM_PROMPT,
        },
    )
    p.set_defaults(make_builder=options.builder)
