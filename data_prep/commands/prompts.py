"""``prompts``: plain prompts, or source texts to translate -> RL rows for BRPO and GenRM group ranking
(``writing_rl.data.builders.prompts``)."""

from __future__ import annotations

from data_prep.commands.builder_options import BuilderOptions
from data_prep.commands.options import LANGUAGE_COLUMNS, SYSTEM_PROMPT, add_subcommand
from writing_rl.data.builders.prompts import PromptsBuilder


def add_prompts(subparsers) -> None:
    p = add_subcommand(
        subparsers,
        "prompts",
        help="plain prompts -> RL rows for BRPO / GenRM group-ranking training",
        description=(
            "Each input row: a prompt (text or chat) or, for translation, a source text with its languages. "
            "Output: verl RL rows without ground truth; extra_info carries the request text (prompt) and "
            "the translation fields (src_text, src_lang, trg_lang, lang_pair) that the group rewards read."
        ),
        example="--input wmt_sources.jsonl --output data/mt_prompts --test-size 200",
    )
    options = BuilderOptions(PromptsBuilder)
    columns = {
        "prompt_key": "the request, a text or a chat",
        "source_key": "source text to translate (when there is no prompt)",
        **LANGUAGE_COLUMNS,
    }
    options.add(p.add_argument_group("input columns"), columns)
    options.add(
        p,
        {
            "mt_template": "request built from a source text; fields {src_text} {src_lang} {trg_lang}",
            "data_source": "data_source when the row has none (default: writing, or translation)",
            "system_prompt": SYSTEM_PROMPT,
        },
    )
    p.set_defaults(make_builder=options.builder)
