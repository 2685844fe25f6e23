"""Plain prompts -> verl RL rows for rewards that judge rollouts against each other (BRPO, GenRM group
ranking): no reference and no ground truth, just the request. The input row and the ``extra_info`` the reward
fns read: docs/genrm/training.md#plain-prompts-for-the-policys-rl.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from writing_rl.data import fields
from writing_rl.data.builder import BadRow
from writing_rl.data.schemas import rl_schema
from writing_rl.protocols import languages

MT_TEMPLATE = "Translate the following {src_lang} text into {trg_lang}. Reply with the translation only.\n\n{src_text}"

SCHEMA = rl_schema(
    [
        ("index", pa.int64()),
        ("split", pa.string()),
        ("prompt", pa.string()),
        ("src_text", pa.string()),
        ("src_lang", pa.string()),
        ("trg_lang", pa.string()),
        ("lang_pair", pa.string()),
    ]
)


@dataclass
class PromptsBuilder:
    prompt_key: str = "prompt"
    source_key: str = "src_text"
    src_lang_key: str = "src_lang"
    trg_lang_key: str = "trg_lang"
    lang_pair_key: str = "lang_pair"
    data_source: str | None = None
    system_prompt: str | None = None
    mt_template: str = MT_TEMPLATE
    schema: pa.Schema = SCHEMA
    consumes: ClassVar[tuple[str, ...]] = ("data_source",)  # a row's own data_source wins

    def build(self, row: dict, source_id: int, split: str) -> list[dict]:
        src_text = fields.text(row, self.source_key, required=False)
        src_lang = fields.language(row, self.src_lang_key)
        trg_lang = fields.language(row, self.trg_lang_key)
        lang_pair = fields.lang_pair(row, self.lang_pair_key)
        value = row.get(self.prompt_key)
        if isinstance(value, (list, tuple)):
            chat = fields.chat(row, self.prompt_key)
            users = [m["content"] for m in chat if m["role"] == "user" and m["content"].strip()]
            if not users or chat[-1]["role"] != "user":
                raise BadRow(self.prompt_key, "a chat prompt must end with a non-empty user message")
            request = users[-1]
        elif value is not None:
            request = fields.text(row, self.prompt_key)
            chat = [{"role": "user", "content": request}]
        elif src_text is not None:
            request = self._translation_request(src_text, src_lang, trg_lang, lang_pair)
            chat = [{"role": "user", "content": request}]
        else:
            raise BadRow(self.prompt_key, f"expected a prompt, or a source text '{self.source_key}' to translate")
        if self.system_prompt and chat[0]["role"] != "system":
            chat = [{"role": "system", "content": self.system_prompt}, *chat]
        translation = src_text is not None
        return [
            {
                "data_source": row.get("data_source")
                or self.data_source
                or ("translation" if translation else "writing"),
                "prompt": chat,
                "ability": "translation" if translation else "writing",
                "reward_model": {"style": "model", "ground_truth": None},
                "extra_info": {
                    "index": source_id,
                    "split": split,
                    "prompt": request,
                    "src_text": src_text,
                    "src_lang": src_lang,
                    "trg_lang": trg_lang,
                    "lang_pair": lang_pair,
                },
            }
        ]

    def _translation_request(self, src_text: str, src_lang, trg_lang, lang_pair) -> str:
        source, target = languages.resolve_languages(src_lang, trg_lang, lang_pair)
        if target is None:
            raise BadRow(
                self.trg_lang_key,
                f"a translation request needs the target language ({self.trg_lang_key} or {self.lang_pair_key})",
            )
        values = {"src_text": src_text, "src_lang": source or "source", "trg_lang": target}
        return _fill(self.mt_template, values)


def _fill(template: str, values: dict[str, str]) -> str:
    """One-pass fill of {src_text}/{src_lang}/{trg_lang}: braces in the source text stay as they are."""
    return re.sub(r"\{(src_text|src_lang|trg_lang)\}", lambda m: values[m.group(1)], template)
