"""What ``scripts/quickstart.sh`` prints after each ``writing-rl score`` step: one judged example (what
the judge saw, what it replied, what the response was paid), how many replies could be read and the judge's
position bias, and the parse-error rate, with the reason when it is high.

    python -m writing_rl.tools.quickstart_report runs/quickstart/pairwise --responses examples/rollouts.jsonl

Reads the ``scores.jsonl`` and ``transcripts.jsonl`` that ``writing-rl score`` wrote to that directory
(score always keeps the transcripts). Pairwise (Writing-RL) and BRPO records are told apart by their keys.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from writing_rl.files import read_jsonl
from writing_rl.protocols import Unreadable, read_verdict, strip_think, verdict_or_none
from writing_rl.protocols.prompts import read_pairwise_request

PROMPT_CHARS = 200
ANSWER_CHARS = 160
REASONING_CHARS = 300
# Above this share of judged samples without a verdict, a real judge gets a hint on what to fix.
HIGH_PARSE_ERROR_RATE = 0.2
INTEGRITY_PAGE = "docs/judges/integrity.md"
POLICY = "the policy's response"


@dataclass(frozen=True)
class JudgeView:
    """The request and the two answers as the judge saw them."""

    prompt: str
    a: str
    b: str


@dataclass(frozen=True)
class ScoredResponses:
    """The scored responses file: each response's line number and its answer as the reward judged it."""

    name: str
    lines: list[int]
    answers: list[str | None]  # closed <think> dropped; None: no answer

    @classmethod
    def read(cls, path: str | Path) -> ScoredResponses:
        numbered = [(number, strip_think(str(r.get("response", "")))) for number, r in read_jsonl(path)]
        return cls(str(path), [n for n, _ in numbered], [a for _, a in numbered])


@dataclass(frozen=True)
class Example:
    sample: int  # index into scores.jsonl / transcripts.jsonl / the responses file
    call: int  # index into that sample's judge calls


def one_line(text: str) -> str:
    """``text`` on one line: newlines shown as ⏎, other whitespace runs as one space, control characters
    (the untrained judge emits them) as ·, so nothing printed can move the terminal's cursor."""
    chars = []
    for ch in text.strip():
        if ch == "\n":
            chars.append(" ⏎ ")
        elif ch.isspace():
            chars.append(" ")
        elif not ch.isprintable():
            chars.append("·")
        else:
            chars.append(ch)
    return re.sub(r" {2,}", " ", "".join(chars))


def head(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` on one line, ending in … when cut."""
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


# Replies the reward reads as unreadable whatever they hold: cut at max_tokens, or refused by the endpoint.
UNREAD_FINISH = ("length", "content_filter")


def has_verdict(call: dict) -> bool:
    return call.get("reply") is not None and verdict_or_none(call["reply"]) is not None


def read_verdict_of(call: dict) -> str | None:
    """The verdict the reward read from a call: None for no reply, a cut or refused one, or one without a verdict."""
    if call.get("reply") is None or call.get("finish_reason") in UNREAD_FINISH:
        return None
    return verdict_or_none(call["reply"])


def choose_example(records: list[dict], transcripts: list[dict]) -> Example | None:
    """The most telling judged sample, the same on every run of the same files: the first whose reward
    came from a verdict (no parse error), else the first with any verdict, else the first with a judge
    reply, else the first with a failed call; None when no sample reached the judge."""
    tiers = (
        lambda record, calls: not record.get("parse_error") and any(map(has_verdict, calls)),
        lambda record, calls: any(map(has_verdict, calls)),
        lambda record, calls: any(c.get("reply") is not None for c in calls),
        lambda record, calls: bool(calls),
    )
    for wanted in tiers:
        for index, (record, transcript) in enumerate(zip(records, transcripts)):
            if wanted(record, transcript["calls"]):
                return Example(index, _shown_call(transcript["calls"]))
    return None


def _shown_call(calls: list[dict]) -> int:
    """The call to show: the first with a verdict, else the first with a reply, else the first."""
    for wanted in (has_verdict, lambda c: c.get("reply") is not None):
        for index, call in enumerate(calls):
            if wanted(call):
                return index
    return 0


def judge_view(messages: list[dict]) -> JudgeView | None:
    """Request, Response A and Response B from the judge's user message; None for a custom template."""
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    shown = read_pairwise_request(user)
    return JudgeView(*shown) if shown else None


def slot_labels(sample: int, view: JudgeView, records: list[dict], responses: ScoredResponses) -> dict[str, str]:
    """Who wrote A and B: the policy's response (this sample), and the reference it was judged against."""
    mine = responses.answers[sample]
    labels = {}
    for slot, text in (("A", view.a), ("B", view.b)):
        if mine is not None and text.strip() == mine:
            labels[slot] = POLICY
        else:
            labels[slot] = _reference_label(sample, text, records, responses)
    if list(labels.values()).count(POLICY) != 1:  # both or neither: say nothing wrong
        return {"A": "", "B": ""}
    return labels


def _reference_label(sample: int, text: str, records: list[dict], responses: ScoredResponses) -> str:
    record = records[sample]
    if "is_reference" not in record:
        level = record.get("curriculum/level")
        return "the reference answer" + ("" if level is None else f", curriculum level {level}")
    siblings = [j for j, r in enumerate(records) if r["row"] == record["row"] and responses.answers[j] == text.strip()]
    where = f" on line {responses.lines[siblings[0]]}" if siblings else ""
    return f"the rollout{where}, BRPO's bootstrapped reference for this prompt"


def verdict_text(reply: str | None, error: str | None, labels: dict[str, str]) -> str:
    if reply is None:
        return f"none: the judge call failed ({head(error or 'no reply', 120)})"
    verdict = read_verdict(reply)
    if isinstance(verdict, Unreadable):
        return f"none: {verdict} (a parse error)"
    if verdict == "C":
        return "[[C]]: a tie"
    who = labels.get(verdict)
    return f"[[{verdict}]]: {verdict} is better" + (f", {who}" if who else "")


def reward_text(record: dict, calls: list[dict]) -> str:
    reward = f"{record['reward']:g}"
    brpo = "is_reference" in record
    if record.get("format_error"):
        return f"{reward}: the response has no answer (format error), not judged"
    if brpo and record["is_reference"]:
        if record.get("parse_error"):
            return f"{reward}: the group's bootstrapped reference; no comparison with it could be read, so it loses"
        return f"{reward}: the group's bootstrapped reference, not judged"
    if calls and not any(map(has_verdict, calls)):
        return f"{reward}: no verdict, counted as a loss (reward.reward_kwargs.on_parse_error)"
    if brpo:
        meaning = {1.0: "preferred to the reference", -1.0: "the reference preferred", 0.0: "a tie"}
        return f"{reward}: " + meaning.get(record["reward"], "the mean over the judged orders")
    outcomes = {key: record[key] for key in ("win", "tie", "loss") if record.get(key)}
    if list(outcomes.values()) == [1]:
        return f"{reward}: a {next(iter(outcomes))}"
    return f"{reward}: " + ", ".join(f"{key} {share:g}" for key, share in outcomes.items()) if outcomes else reward


def example_lines(records: list[dict], transcripts: list[dict], responses: ScoredResponses) -> list[str]:
    example = choose_example(records, transcripts)
    if example is None:
        return ["-- no sample reached the judge (every response was a format error or a reference)"]
    record, calls = records[example.sample], transcripts[example.sample]["calls"]
    call = calls[example.call]
    which = f", judge call {example.call + 1} of {len(calls)}" if len(calls) > 1 else ""
    line = responses.lines[example.sample]
    lines = [f"-- one judged example: line {line} of {responses.name} ({record['key']}{which})"]
    view = judge_view(call["messages"])
    labels: dict[str, str] = {"A": "", "B": ""}
    if view is None:
        lines.append(f"   judge saw  {head(call['messages'][-1]['content'], PROMPT_CHARS)}")
    else:
        labels = slot_labels(example.sample, view, records, responses)
        lines.append(f"   prompt     {head(view.prompt, PROMPT_CHARS)}")
        for slot, text in (("A", view.a), ("B", view.b)):
            who = f"[{labels[slot]}] " if labels[slot] else ""
            lines.append(f"   {slot}          {who}{head(text, ANSWER_CHARS)}")
    lines.append(f"   verdict    {verdict_text(call.get('reply'), call.get('error'), labels)}")
    if call.get("reply") is not None:
        lines.append(f"   reasoning  {head(call['reply'], REASONING_CHARS) or '(empty reply)'}")
    lines.append(f"   reward     {reward_text(record, calls)}")
    return lines


def reading_lines(transcripts: list[dict]) -> list[str]:
    """How many of the judge's replies could be read, and its position bias: the share of its decisions for
    the answer shown first, and, over the comparisons judged in both orders with both replies read, how often
    it kept its choice when the answers swapped places."""
    replies = [call for t in transcripts for call in t["calls"] if call.get("reply") is not None]
    if not replies:
        return []
    verdicts = [read_verdict_of(call) for call in replies]
    read = [v for v in verdicts if v is not None]
    lines = [f"-- readable judge replies: {len(read)} of {len(replies)} ({len(read) / len(replies):.0%})"]
    if not read:
        return lines + ["   position bias: no data (no reply could be read)"]
    decided = [v for v in read if v in ("A", "B")]
    first = f"{decided.count('A')} of {len(decided)} decisions for the answer shown first (A)" if decided else "no A/B decision"
    swapped = [pair for t in transcripts if (pair := _both_orders(t["calls"])) is not None]
    kept = sum(_kept_choice(*pair) for pair in swapped)
    orders = f"; kept its choice when the answers swapped places: {kept} of {len(swapped)}" if swapped else ""
    return lines + [f"   position bias: {first}{orders}"]


def _both_orders(calls: list[dict]) -> tuple[str, str] | None:
    """The verdicts of a comparison judged in both orders (the second call shows A and B swapped), both read."""
    if len(calls) != 2 or any(call.get("reply") is None for call in calls):
        return None
    views = [judge_view(call["messages"]) for call in calls]
    verdicts = [read_verdict_of(call) for call in calls]
    if None in views or None in verdicts or (views[0].a, views[0].b) != (views[1].b, views[1].a):
        return None
    return verdicts[0], verdicts[1]


def _kept_choice(first: str, second: str) -> bool:
    return {first, second} == {"A", "B"} or first == second == "C"


def parse_error_lines(records: list[dict], untrained: bool, max_tokens: int | None, out_dir: str) -> list[str]:
    """The parse-error rate over the samples that reached the judge, and why it is high when it is."""
    judged = [r for r in records if r.get("judge_calls")]
    if not judged:
        return []
    errors = sum(1 for r in judged if r.get("parse_error"))
    rate = errors / len(judged)
    skipped = len(records) - len(judged)
    also = (
        f"; the table's parse_error_rate divides by all {len(records)} samples, {skipped} not judged" if skipped else ""
    )
    lines = [f"-- parse errors: {errors} of {len(judged)} judged samples ({rate:.0%}{also})"]
    budget = f"JUDGE_MAX_TOKENS={max_tokens}" if max_tokens else "JUDGE_MAX_TOKENS"
    if untrained and errors:
        tokens = f"up to {max_tokens} random tokens" if max_tokens else "random tokens"
        lines.append(
            f"   why: the tiny untrained judge writes {tokens}, so its replies hold no "
            f"[[A]]/[[B]]/[[C]] verdict: each is a parse error; {_parse_error_pay(records)}, see {INTEGRITY_PAGE}. "
            "Give JUDGE_MODEL or JUDGE_BASE_URL for real verdicts."
        )
    elif not untrained and rate > HIGH_PARSE_ERROR_RATE:
        lines.append(
            f"   hint: the judge may run out of tokens before its verdict line (raise {budget}, i.e. "
            "reward.reward_kwargs.judge.max_tokens) or not follow the [[A]]/[[B]]/[[C]] verdict format "
            f"(a thinking model needs room for its <think> block; a small model, such as the 135M SmolLM2, seldom "
            f"writes it until SFT'd on it: docs/genrm/training.md); read {out_dir}/transcripts.jsonl"
        )
    return lines


def _parse_error_pay(records: list[dict]) -> str:
    if "is_reference" in records[0]:
        return "an unreadable comparison counts as a loss (-1), and so does a reference none of whose comparisons reads"
    paid = {r["reward"] for r in records if r.get("parse_error") and r.get("judge_calls")}
    here = f", {paid.pop():g} here" if len(paid) == 1 else ""
    return f"such a sample pays a loss{here} (reward.reward_kwargs.on_parse_error=loss; tie pays the tie score)"


def report(out_dir: str, responses: str, untrained: bool = False, max_tokens: int | None = None) -> str:
    records = [record for _, record in read_jsonl(Path(out_dir) / "scores.jsonl")]
    transcripts = [record for _, record in read_jsonl(Path(out_dir) / "transcripts.jsonl")]
    scored = ScoredResponses.read(responses)
    if not (len(records) == len(transcripts) == len(scored.answers)):
        raise ValueError(
            f"{out_dir}: {len(records)} scores and {len(transcripts)} transcripts for {len(scored.answers)} "
            f"responses in {responses}: not the output of one `writing-rl score` run on that file"
        )
    lines = example_lines(records, transcripts, scored)
    lines += reading_lines(transcripts)
    lines += parse_error_lines(records, untrained, max_tokens, out_dir)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m writing_rl.tools.quickstart_report",
        description="One judged example and the parse-error rate of a `writing-rl score` output directory.",
    )
    parser.add_argument("out", help="the --out directory of writing-rl score")
    parser.add_argument("--responses", required=True, help="the --responses file it scored")
    parser.add_argument("--untrained", action="store_true", help="the judge was the tiny untrained model")
    parser.add_argument("--max-tokens", type=int, help="the judge's completion budget, named in the hints")
    args = parser.parse_args(argv)
    print(report(args.out, args.responses, args.untrained, args.max_tokens))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
