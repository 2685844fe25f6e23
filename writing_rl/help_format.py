"""The help formatter of our command lines (``writing-rl`` and ``data_prep/build_parquet.py``): text
wrapped line by line, examples kept whole, every option's default shown."""

from __future__ import annotations

import argparse
import textwrap


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped line by line (their own line breaks kept; indented lines kept
    whole; a wrapped example indented under its first line); every option's help ends with its default."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(self._fill_line(line, width, indent) for line in text.splitlines())

    @staticmethod
    def _fill_line(line: str, width: int, indent: str) -> str:
        if not line or line[0].isspace():
            return indent + line
        hang = "  " if line.startswith(("example", "then")) else ""
        return textwrap.fill(  # commands and paths are not split at their hyphens
            line, width, initial_indent=indent, subsequent_indent=indent + hang, break_on_hyphens=False
        )

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, argparse.SUPPRESS) or action.default is False:
            return text
        if not action.option_strings or action.required:
            return text
        return f"{text} (default: {action.default})"
