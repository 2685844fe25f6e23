"""``writing-rl``: prompts with criteria and references, easiest first -> Writing-RL rows
(``writing_rl.data.builders.writing``)."""

from __future__ import annotations

from data_prep.commands.options import add_subcommand
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
    p.add_argument("--prompt-key", default="prompt", help="column of the prompt")
    p.add_argument("--references-key", default="references", help="input column with the reference list")
    p.add_argument(
        "--criteria-key",
        default="criteria",
        help="column of the criteria: a string, a list of strings, or WritingBench's checklist (a list of "
        "{name, criteria_description, '1-2': ..., ...}, also as JSON text), rendered for the judge",
    )
    p.add_argument("--data-source", default="writing", help="data_source when the row has none")
    p.add_argument("--system-prompt", help="system message put before each prompt (default: none)")
    p.set_defaults(
        make_builder=lambda a: WritingRLBuilder(
            prompt_key=a.prompt_key,
            references_key=a.references_key,
            criteria_key=a.criteria_key,
            data_source=a.data_source,
            system_prompt=a.system_prompt,
        )
    )
