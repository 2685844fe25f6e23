"""MkDocs hook: formulas written in LaTeX become MathML when the site is built, so they render in any
current browser with no script and no network (the same source renders on GitHub).

Display formulas are a ``$$`` line, the LaTeX, and a closing ``$$`` line; inline formulas are
``$`...`$`` (GitHub's syntax). Code blocks and code spans are left alone. A formula latex2mathml cannot read fails
the build, naming the page and the formula."""

from __future__ import annotations

import re

from latex2mathml.converter import convert

# What is left alone: fenced blocks (indented too, in a list) and code spans of two or more backticks (one
# backtick cannot hold the inline syntax, which has backticks of its own).
CODE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$|(``+)(?!`).+?(?<!`)\2(?!`)", re.M | re.S)
DISPLAY = re.compile(r"^\$\$[ \t]*\n(.+?)\n\$\$[ \t]*$", re.M | re.S)
INLINE = re.compile(r"\$`([^`\n]+)`\$")
TOKEN = "WRLMATH{:04d}X"

_formulas: dict[str, dict[str, str]] = {}


UNKNOWN_COMMAND = re.compile(r">(\\[A-Za-z]+)<")  # latex2mathml prints a command it does not know as text


def _mathml(latex: str, display: str, page: str) -> str:
    try:
        mathml = convert(latex.strip(), display=display)
    except Exception as error:  # latex2mathml's errors name the token, not the formula
        raise ValueError(
            f"{page}: cannot render the formula {latex.strip()!r}: {type(error).__name__} {error}"
        ) from error
    unknown = UNKNOWN_COMMAND.search(mathml)
    if unknown:
        raise ValueError(f"{page}: cannot render the formula {latex.strip()!r}: unknown command {unknown[1]}")
    return mathml


def on_page_markdown(markdown: str, page, **_) -> str:
    formulas = _formulas.setdefault(page.file.src_uri, {})
    formulas.clear()

    def stash(html: str) -> str:
        token = TOKEN.format(len(formulas))
        formulas[token] = html
        return token

    def outside_code(text: str) -> str:
        text = DISPLAY.sub(lambda m: "\n" + stash(_mathml(m[1], "block", page.file.src_uri)) + "\n", text)
        return INLINE.sub(lambda m: stash(_mathml(m[1], "inline", page.file.src_uri)), text)

    parts, last = [], 0
    for code in CODE.finditer(markdown):
        parts += [outside_code(markdown[last : code.start()]), code[0]]
        last = code.end()
    parts.append(outside_code(markdown[last:]))
    return "".join(parts)


def on_page_content(html: str, page, **_) -> str:
    for token, mathml in _formulas.pop(page.file.src_uri, {}).items():
        if mathml.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"'):
            html = html.replace(f"<p>{token}</p>", f'<div class="formula">{mathml}</div>')
        html = html.replace(token, mathml)
    return html
