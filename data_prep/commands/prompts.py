"""``prompts``: plain prompts, or source texts to translate -> RL rows for BRPO and GenRM group ranking
(``writing_rl.data.builders.prompts``)."""

from __future__ import annotations

from data_prep.commands.options import add_subcommand
from writing_rl.data.builders.prompts import MT_TEMPLATE, PromptsBuilder


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
    g = p.add_argument_group("input columns")
    g.add_argument("--prompt-key", default="prompt", help="the request, a text or a chat")
    g.add_argument("--source-key", default="src_text", help="source text to translate (when there is no prompt)")
    g.add_argument("--src-lang-key", default="src_lang", help="source language, code or name")
    g.add_argument("--trg-lang-key", default="trg_lang", help="target language, code or name")
    g.add_argument("--lang-pair-key", default="lang_pair", help='language pair like "en-zh" (when src/trg are absent)')
    p.add_argument(
        "--mt-template",
        default=MT_TEMPLATE,
        help="request built from a source text; fields {src_text} {src_lang} {trg_lang}",
    )
    p.add_argument("--data-source", help="data_source when the row has none (default: writing, or translation)")
    p.add_argument("--system-prompt", help="system message put before each prompt (default: none)")
    p.set_defaults(
        make_builder=lambda a: PromptsBuilder(
            prompt_key=a.prompt_key,
            source_key=a.source_key,
            src_lang_key=a.src_lang_key,
            trg_lang_key=a.trg_lang_key,
            lang_pair_key=a.lang_pair_key,
            data_source=a.data_source,
            system_prompt=a.system_prompt,
            mt_template=a.mt_template,
        )
    )
