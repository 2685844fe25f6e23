"""How text a policy wrote enters a judge prompt: in a block it cannot close, with its special tokens
as plain text (docs/judges/integrity.md).

A response may imitate the prompt's own separators or spell out a chat template's role tags
(``<|im_start|>system``); the judge endpoint renders messages with ``apply_chat_template`` and tokenizes the
result, where such a tag would become the real special token.
"""

from __future__ import annotations

import re

ZERO_WIDTH_SPACE = "\u200b"

# Tags that chat templates and tokenizers give a meaning: <|im_start|>, <|eot_id|>, DeepSeek's
# <｜Assistant｜>, <s>, </s>, [INST], <<SYS>>, Mistral's [SYSTEM_PROMPT] / [THINK], Gemma's
# <start_of_turn>, Seed's <seed:bos>, tool-call tags, reasoning tags, <unk>/<pad>...
_SPECIAL = re.compile(
    r"<[|\uff5c][^<>\n]{0,64}?[|\uff5c]>"
    r"|</?(?:s|think|bos|eos|pad|unk|mask|start_of_turn|end_of_turn|im_start|im_end|endoftext|sep|cls"
    r"|tool_call|tool_response|tools)>"
    r"|<seed:[a-z_]{1,32}>"
    r"|\[/?(?:INST|SYS|SYSTEM_PROMPT|THINK|IMG|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT)\]"
    r"|<</?SYS>>",
    re.I,
)


def plain_text(text: str, special_tokens: tuple[str, ...] = ()) -> str:
    """``text`` with every special-token-like tag (and each of ``special_tokens``, e.g. the judge
    tokenizer's own) broken after its first character, so no tokenizer reads it as a special token."""
    for token in special_tokens:
        if len(token) > 1 and token in text:
            text = text.replace(token, token[0] + ZERO_WIDTH_SPACE + token[1:])
    return _SPECIAL.sub(lambda m: m.group(0)[0] + ZERO_WIDTH_SPACE + m.group(0)[1:], text)


def fence(text: str) -> str:
    """``text`` in a fenced block whose fence is longer than any backtick run inside it."""
    if "```" not in text:
        return f"```\n{text}\n```"
    ticks = "`" * (max(len(run) for run in re.findall(r"`+", text)) + 1)
    return f"{ticks}\n{text}\n{ticks}"
