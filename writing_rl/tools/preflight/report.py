"""What ``writing-rl preflight`` prints: one line per check (ok, note or PROBLEM), the problems kept apart."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # what was checked, and what the user should know

    def ok(self, text: str) -> None:
        self.lines.append(f"ok       {text}")

    def note(self, text: str) -> None:
        self.lines.append(f"note     {text}")

    def problem(self, text: str) -> None:
        self.problems.append(text)
        self.lines.append(f"PROBLEM  {text}")
