"""Scripted judges with known answers: for the offline-tool tests (select, order-references), as server scripts,
and in-process (``TableJudge``) for the reward fns' property tests."""

from __future__ import annotations

import json
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from writing_rl.judge import JudgeReply, JudgeTimeout
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings
from writing_rl.protocols.prompts import read_pairwise_request

from judge_server import Reply, default_script


def pair_of(request: dict) -> tuple[str, str]:
    """(Response A, Response B) of a pairwise judge request."""
    shown = read_pairwise_request(request["messages"][-1]["content"])
    assert shown, "not a pairwise request"
    return shown[1], shown[2]


def verdict(letter: str) -> Reply:
    return Reply(content=f"Weighed both.\n[[{letter}]]")


def table_judge(beats: dict[tuple[str, str], str]) -> Callable[[dict, int], Reply]:
    """A judge reading its verdict from ``beats[(A text, B text)]`` ("A", "B" or "C")."""

    def script(request: dict, index: int) -> Reply:
        return verdict(beats[pair_of(request)])

    return script


def first_position_judge(request: dict, index: int) -> Reply:
    """Always prefers whichever response it sees first."""
    return verdict("A")


def failing_when(condition: Callable[[str, str], bool], reply: Reply | None = None):
    """The default judge, except requests whose (A, B) texts meet ``condition`` get ``reply`` (HTTP 400)."""
    failure = reply or Reply(status=400, body=b'{"error": "scripted failure"}')

    def script(request: dict, index: int) -> Reply:
        return failure if condition(*pair_of(request)) else default_script(request, index)

    return script


def write_jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


class TableJudge:
    """An in-process judge answering each ordered pair (text shown first, text shown second) from a table: "A",
    "B", "C", "garbled" (a reply that cannot be read) or "fail" (the call fails after its retries)."""

    def __init__(self, table: dict[tuple[str, str], str]):
        self.table = table
        self.asked: list[tuple[str, str]] = []

    async def complete(self, messages):
        _, a, b = read_pairwise_request(messages[-1]["content"])
        self.asked.append((a, b))
        verdict = self.table[(a, b)]
        if verdict == "fail":
            raise JudgeTimeout("http://judge/v1", "no reply", attempts=3)
        if verdict == "garbled":
            return JudgeReply("Both have merits; I cannot choose.", "stop", 0.01)
        return JudgeReply(f"Reasons.\n[[{verdict}]]", "stop", 0.01)


def settings_for(server) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="genrm", max_retries=0))


def report_of(out) -> dict:
    return json.loads((out / "report.json").read_text())


def lines_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_parquet(path, rows) -> str:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)
