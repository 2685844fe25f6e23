"""Properties of the judge-reply readers (writing_rl/protocols/: pairwise.py, comparison.py, gqm_reply.py, rubric.py)
on arbitrary text, drawn by hypothesis with a fixed seed: the rules of writing_rl/protocols/__init__.py (a reasoning
block only at the start, quoted material never the judge's answer, two different verdicts never a win, model output
never raises)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from writing_rl.protocols import (
    LENIENT,
    STRICT,
    Unreadable,
    parse_ranking,
    parse_scores,
    read_comparison,
    read_gqm_output,
    read_json_score,
    read_score_pair,
    read_verdict,
)
from writing_rl.protocols.comparison import outcome, read_outcome
from writing_rl.protocols.gqm import format_ranking, format_scores, gqm_response, labels_for, ranking_from_scores
from writing_rl.protocols.rubric import Criterion, read_criterion_score, read_rubric_scores, rubric_reward

PROPERTY = settings(
    derandomize=True, database=None, deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow]
)

MIRROR = {"win": "loss", "tie": "tie", "loss": "win"}
TOKENS = ["[[A]]", "[[B]]", "[[C]]"]
# Pieces of judge replies and of the responses they quote: verdicts, score lines, quotes, fences, reasoning tags.
FRAGMENTS = st.sampled_from(
    [
        *TOKENS,
        "[[A]], [[B]] or [[C]]",
        "A: 7, B: 4",
        "B: 2, A: 9",
        "Scores: A: 5, B: 5",
        "```",
        "~~~",
        "> ",
        '"',
        "\u201c",
        "\u201d",
        "<think>",
        "</think>",
        "\n",
        "\n\n",
        " ",
        "Response A is better",
        '{"score": 7}',
        "B > A",
    ]
)
TEXT = st.lists(FRAGMENTS | st.text(max_size=12), max_size=14).map("".join)
# Prose that cannot quote, open a reasoning block or hold a verdict, score or ranking line.
PLAIN = st.text(alphabet="abcdefghij klmnop,.!?()-", max_size=40)


def plain_lines(max_lines: int = 4):
    return st.lists(PLAIN, max_size=max_lines).map("\n".join)


# ---------------------------------------------------------------- model output never raises


@PROPERTY
@given(TEXT | st.text())
def test_no_reader_raises_on_any_text(text):
    readers = [
        lambda: read_verdict(text),
        lambda: read_score_pair(text),
        lambda: read_json_score(text),
        lambda: read_rubric_scores(text, 3),
        lambda: read_criterion_score(text),
        lambda: parse_ranking(text, 3, strict=False),
        lambda: parse_scores(text, 3, strict=False),
        *(lambda output=output: read_comparison(text, output, 1) for output in ("verdict", "scores", "auto")),
        *(
            lambda prompt_type=prompt_type, preset=preset: read_gqm_output(text, 3, prompt_type=prompt_type, **preset)
            for prompt_type in ("score", "ranking", "ranking_score")
            for preset in (STRICT, LENIENT)
        ),
    ]
    for read in readers:
        read()


# ---------------------------------------------------------------- pairwise verdicts


@PROPERTY
@given(TEXT, st.sampled_from(["verdict", "scores", "auto"]), st.integers(0, 3))
def test_the_same_reply_read_for_the_other_slot_gives_the_mirrored_outcome(text, output, tie_margin):
    first, second = read_outcome(text, "A", output, tie_margin), read_outcome(text, "B", output, tie_margin)
    assert isinstance(first, Unreadable) == isinstance(second, Unreadable)
    if not isinstance(first, Unreadable):
        assert second == MIRROR[first]


@PROPERTY
@given(st.text().filter(lambda t: not any(token in t for token in TOKENS)))
def test_text_without_a_verdict_token_is_never_read_as_a_verdict(text):
    assert isinstance(read_verdict(text), Unreadable)
    assert isinstance(read_outcome(text, "A", "verdict"), Unreadable)


@PROPERTY
@given(plain_lines(), plain_lines(), plain_lines(), st.permutations(TOKENS[:2]), st.sampled_from(["verdict", "auto"]))
def test_a_reply_that_states_two_verdicts_is_unreadable_never_a_win(before, between, after, tokens, output):
    text = "\n".join([before, f"My verdict: {tokens[0]}", between, f"Final: {tokens[1]}", after])
    assert isinstance(read_verdict(text), Unreadable)
    for slot in "AB":
        assert isinstance(read_outcome(text, slot, output), Unreadable)
    same_line = f"{before}\n{tokens[0]} and also {tokens[1]}\n{after}"
    assert isinstance(read_verdict(same_line), Unreadable)


@PROPERTY
@given(plain_lines(), plain_lines(), st.sampled_from(TOKENS), st.integers(1, 3))
def test_one_verdict_however_often_repeated_is_read(before, after, token, times):
    text = "\n".join([before, *[f"Verdict: {token}"] * times, after])
    assert read_verdict(text) == token[2]


@PROPERTY
@given(
    plain_lines(),
    PLAIN,
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3),
    st.sampled_from(TOKENS + [None]),
    st.sampled_from(["fence", "tilde fence", "block quote", "double quotes", "curly quotes"]),
)
def test_verdicts_inside_quoted_material_never_count(prose, quoted_text, fakes, own, quoting):
    """A judge quoting a response that ends in fake verdicts: its own verdict (outside the quote) is read, and
    without one the reply is unreadable."""
    fake = f"{quoted_text} {' '.join(fakes)}"
    quoted = {
        "fence": f"```\n{fake}\n```",
        "tilde fence": f"~~~~\n{fake}\n~~~~",
        "block quote": f"> {fake}",
        "double quotes": f'The response ends with "{fake}" which I ignore.',
        "curly quotes": f"The response ends with \u201c{fake}\u201d which I ignore.",
    }[quoting]
    text = "\n".join([prose, quoted] + ([f"Verdict: {own}"] if own else []))
    if own is None:
        assert isinstance(read_verdict(text), Unreadable)
    else:
        assert read_verdict(text) == own[2]


@PROPERTY
@given(PLAIN, TEXT, st.sampled_from(TOKENS), st.sampled_from(["fence", "block quote", "double quotes"]))
def test_a_quoted_response_however_it_is_written_never_gives_another_verdict_than_the_judges(
    prose, response, own, quoting
):
    """The response may close the judge's quote early, open a reasoning block or a fence, or end in fake verdicts:
    the reply reads as the judge's own verdict or as unreadable, never as another verdict."""
    quoted = {
        "fence": f"```\n{response}\n```",
        "block quote": "\n".join(f"> {line}" for line in response.split("\n")),
        "double quotes": '"' + response.replace("\n", " ") + '"',
    }[quoting]
    read = read_verdict(f"{prose}\n{quoted}\nVerdict: {own}")
    assert isinstance(read, Unreadable) or read == own[2]


@PROPERTY
@given(st.text().filter(lambda t: "</think>" not in t), st.sampled_from(TOKENS), plain_lines())
def test_anything_inside_the_leading_reasoning_block_is_not_the_answer(reasoning, token, prose):
    assert read_verdict(f"<think>{reasoning}</think>\n{prose}\nVerdict: {token}") == token[2]
    assert isinstance(read_verdict(f"<think>{reasoning}</think>\n{prose}"), Unreadable)
    assert isinstance(read_verdict(f"<think>{reasoning}\n{token}"), Unreadable)  # never closed: no answer


@PROPERTY
@given(plain_lines(), st.sampled_from(TOKENS))
def test_a_line_listing_all_three_verdicts_chooses_none(prose, token):
    options = "Answer with [[A]], [[B]] or [[C]]."
    assert isinstance(read_verdict(f"{prose}\n{options}"), Unreadable)
    assert read_verdict(f"{prose}\n{options}\nVerdict: {token}") == token[2]


# ---------------------------------------------------------------- pairwise scores


SCORE = st.integers(0, 10)


@PROPERTY
@given(plain_lines(), SCORE, SCORE, st.booleans(), st.sampled_from(["{}", "**{}**", "Scores: {}", "`{}`"]))
def test_a_score_pair_in_either_label_order_and_dressing_reads_back(prose, a, b, b_first, dressing):
    line = f"B: {b}, A: {a}" if b_first else f"A: {a}, B: {b}"
    text = f"{prose}\n{dressing.format(line)}"
    assert read_score_pair(text) == (a, b)


@PROPERTY
@given(plain_lines(), SCORE, SCORE, st.integers(0, 10))
def test_scores_within_the_margin_tie_and_otherwise_the_higher_wins_whichever_slot_the_candidate_is_in(
    prose, a, b, margin
):
    text = f"{prose}\nA: {a}, B: {b}"
    verdict = "C" if abs(a - b) <= margin else ("A" if a > b else "B")
    assert read_comparison(text, "scores", margin).verdict == verdict
    for slot in "AB":
        assert read_outcome(text, slot, "scores", margin) == outcome(verdict, slot)


@PROPERTY
@given(plain_lines(), SCORE, SCORE, SCORE, SCORE)
def test_an_echoed_score_line_that_disagrees_with_the_last_makes_the_reply_unreadable(prose, a, b, fake_a, fake_b):
    text = f"{prose}\nA: {fake_a}, B: {fake_b}\nMy scores:\nA: {a}, B: {b}"
    read = read_score_pair(text)
    if (fake_a, fake_b) == (a, b):
        assert read == (a, b)
    else:
        assert isinstance(read, Unreadable)


@PROPERTY
@given(plain_lines(), SCORE, SCORE, st.sampled_from(TOKENS))
def test_under_auto_a_verdict_that_disagrees_with_the_scores_is_unreadable(prose, a, b, token):
    text = f"{prose}\n{token}\nA: {a}, B: {b}"
    implied = "C" if a == b else ("A" if a > b else "B")
    read = read_comparison(text, "auto")
    if token[2] == implied:
        assert read.verdict == implied
    else:
        assert isinstance(read, Unreadable)


# ---------------------------------------------------------------- GQM rankings and scores


@st.composite
def scores_of(draw, min_n=2, max_n=6):
    n = draw(st.integers(min_n, max_n))
    labels = labels_for(n)
    return dict(zip(labels, draw(st.lists(SCORE, min_size=n, max_size=n))))


@PROPERTY
@given(scores_of(), st.randoms(use_true_random=False))
def test_a_ranking_and_scores_line_read_back_whatever_order_they_are_written_in(scores, rng):
    labels = tuple(scores)
    ranking = ranking_from_scores(scores)
    written = [[label for label in tier] for tier in ranking]
    for tier in written:
        rng.shuffle(tier)
    line = " > ".join(" = ".join(tier) for tier in written)
    assert parse_ranking(line, labels) == ranking
    assert parse_ranking(f"**{line.replace(' ', '')}**", labels, strict=False) == ranking
    order = list(labels)
    rng.shuffle(order)
    assert parse_scores(format_scores(scores, order), labels) == scores


@PROPERTY
@given(scores_of(), PLAIN.filter(str.strip), st.sampled_from(["score", "ranking", "ranking_score"]))
def test_a_canonical_genrm_answer_reads_back_its_scores_and_ranking(scores, analysis, prompt_type):
    text = gqm_response(analysis, scores, prompt_type)
    read = read_gqm_output(text, len(scores), prompt_type=prompt_type)
    assert read.ranking == ranking_from_scores(scores)
    assert read.scores == (None if prompt_type == "ranking" else scores)


@PROPERTY
@given(scores_of(), scores_of(), PLAIN.filter(str.strip), st.booleans())
def test_a_candidates_fake_final_block_counts_only_when_quoted_and_never_overrides_the_genrms(
    scores, fake, analysis, quoted
):
    """A GenRM that echoes a candidate's final block unquoted, with a different ranking, is unreadable; quoted, the
    echo is ignored."""
    n = len(scores)
    fake = dict(zip(labels_for(n), (list(fake.values()) * n)[:n]))
    echo = format_ranking(ranking_from_scores(fake))
    shown = f"```\n{echo}\n```" if quoted else echo
    text = gqm_response(f"{analysis}\nCandidate A ends with:\n{shown}", scores, "ranking_score")
    read = read_gqm_output(text, n, prompt_type="ranking_score")
    if quoted or ranking_from_scores(fake) == ranking_from_scores(scores):
        assert read.scores == scores
    else:
        assert isinstance(read, Unreadable)


# ---------------------------------------------------------------- rubric replies and reward


def rubric_reply(scores, prose="Reasons.") -> str:
    entries = [{"id": i, "score": s} for i, s in enumerate(scores, start=1)]
    return f"{prose}\n{json.dumps({'scores': entries})}"


RUBRIC_SCORES = st.lists(st.integers(1, 10), min_size=1, max_size=6)


@PROPERTY
@given(RUBRIC_SCORES, PLAIN, st.booleans())
def test_a_rubric_reply_reads_back_its_scores_in_criterion_order(scores, prose, fenced):
    text = rubric_reply(scores, prose)
    if fenced:
        head, obj = text.rsplit("\n", 1)
        text = f"{head}\n```json\n{obj}\n```"
    assert read_rubric_scores(text, len(scores)) == [float(s) for s in scores]


@PROPERTY
@given(RUBRIC_SCORES, st.data())
def test_a_rubric_reply_missing_repeating_or_misnumbering_a_criterion_or_out_of_range_is_unreadable(scores, data):
    n = len(scores)
    entries = [{"id": i, "score": s} for i, s in enumerate(scores, start=1)]
    broken = data.draw(st.sampled_from(["missing", "repeated", "out of range", "bad id"]))
    k = data.draw(st.integers(0, n - 1))
    if broken == "missing":
        del entries[k]
    elif broken == "repeated":
        entries.append(dict(entries[k]))
    elif broken == "out of range":
        entries[k]["score"] = data.draw(st.sampled_from([0, 11, -3, 10.5, "7", None, True]))
    else:
        entries[k]["id"] = data.draw(st.sampled_from([0, n + 1, "1", None, True]))
    assert isinstance(read_rubric_scores(f"Reasons.\n{json.dumps({'scores': entries})}", n), Unreadable)


@PROPERTY
@given(RUBRIC_SCORES, RUBRIC_SCORES)
def test_a_responses_copied_rubric_scores_never_become_the_judges(scores, fake):
    """The response's own scores object echoed before the judge's: they must agree, else the reply is unreadable."""
    fake = (fake * len(scores))[: len(scores)]
    text = f"The response writes:\n{json.dumps({'scores': [{'id': i + 1, 'score': s} for i, s in enumerate(fake)]})}\n"
    read = read_rubric_scores(text + rubric_reply(scores), len(scores))
    if fake == scores:
        assert read == [float(s) for s in scores]
    else:
        assert isinstance(read, Unreadable)


@PROPERTY
@given(st.integers(1, 10), PLAIN, PLAIN.filter(lambda t: t.strip() != ""))
def test_a_critic_reply_is_read_only_from_the_object_that_ends_it(score, reason, after):
    reply = f"Reasons.\n{json.dumps({'score': score, 'reason': reason})}"
    assert read_criterion_score(reply) == float(score)
    assert isinstance(read_criterion_score(f"{reply}\n{after}"), Unreadable)


CRITERIA = st.lists(
    st.tuples(st.floats(-5, 5).filter(lambda w: abs(w) > 1e-3), st.integers(1, 10)), min_size=1, max_size=6
).filter(lambda items: any(w > 0 for w, _ in items))


@PROPERTY
@given(CRITERIA, st.data())
def test_the_rubric_reward_lies_in_0_1_rises_with_a_requirement_and_falls_with_a_pitfall(items, data):
    criteria = [Criterion(f"c{i}", w) for i, (w, _) in enumerate(items)]
    scores = [float(s) for _, s in items]
    reward = rubric_reward(criteria, scores)
    assert 0.0 <= reward <= 1.0
    k = data.draw(st.integers(0, len(items) - 1))
    raised = list(scores)
    raised[k] = min(10.0, raised[k] + data.draw(st.integers(1, 9)))
    moved = rubric_reward(criteria, raised)
    assert moved >= reward - 1e-12 if criteria[k].weight > 0 else moved <= reward + 1e-12
    best = [10.0 if c.weight > 0 else 1.0 for c in criteria]
    worst = [1.0 if c.weight > 0 else 10.0 for c in criteria]
    assert rubric_reward(criteria, best) == pytest.approx(1.0) and rubric_reward(criteria, worst) == 0.0
