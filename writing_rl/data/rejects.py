"""The reject rule of a build (``driver.run``): a bad row is kept for ``--rejects``, with where it is and
what was wrong, and stops the build unless ``--skip-bad``; the ``--rejects`` file is written all-or-nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from writing_rl.data.readers import Located
from writing_rl.files import atomic_path


class StopAtBadRow(Exception):
    """A bad row without --skip-bad: the build stops, with this message after the input's path."""

    def __init__(self, record: Located, field: str, reason: str):
        what = f"field '{field}': {reason}" if field else reason
        super().__init__(
            f"{record.where} rejected: {what} (pass --skip-bad to skip bad rows and report them in --rejects)"
        )


@dataclass
class Rejects:
    skip_bad: bool
    records: list[dict[str, Any]] = field(default_factory=list)

    def add(self, record: Located, position: int, field: str, reason: str) -> None:
        """Keep the bad row at ``position`` (0-based in the input); raise ``StopAtBadRow`` unless ``skip_bad``."""
        self.records.append(reject_record(record, position, field, reason))
        if not self.skip_bad:
            raise StopAtBadRow(record, field, reason)

    def write(self, path: str | None) -> None:
        """The ``--rejects`` JSONL file, when one is asked for."""
        if not path:
            return
        with atomic_path(path) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                for record in self.records:
                    f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def reject_record(record: Located, position: int, field: str, reason: str) -> dict[str, Any]:
    """A ``--rejects`` line: where (the 1-based ``line`` of JSONL/CSV records; ``row``, the record's
    0-based position in the input), what was wrong, and the record (``data``) or its raw ``text``."""
    where: dict[str, Any] = {"where": record.where}
    if record.unit == "line":
        where["line"] = record.number
    out = {**where, "row": position, "field": field, "reason": reason, "data": record.row}
    if record.text is not None:
        out["text"] = record.text
    return out
