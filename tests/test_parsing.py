import pytest

from writing_rl.parsing import parse_score_pair, parse_verdict, strip_think


@pytest.mark.parametrize(
    "response, answer",
    [
        ("Just an answer.", "Just an answer."),
        ("  padded answer \n", "padded answer"),
        ("<think>plan the story</think>The story.", "The story."),
        ("<think>a</think> middle <think>b</think> final", "final"),  # up to the last closing tag
        ("reasoning whose <think> tag sat in the prompt</think>\n\nAnswer", "Answer"),
        ("<think>ran out of tokens while reasoning", None),
        ("<think>closed but nothing after</think>   ", None),
        ("", None),
        ("   \n ", None),
    ],
)
def test_strip_think(response, answer):
    assert strip_think(response) == answer


@pytest.mark.parametrize(
    "output, verdict",
    [
        ("Reasoning... [[A]]", "A"),
        ("B is better.\n[[B]]", "B"),
        ("Equally good: [[C]]", "C"),
        ("At first [[A]] seemed right, but on reflection [[B]]", "B"),  # the last token wins
        ("[[B]] is my verdict. Final verdict: [[A]]", "A"),
        ("no verdict here", None),
        ("[[D]] is not a verdict", None),
        ("[A] single brackets", None),
        ("[[ A ]] spaced", None),
        ("[[a]] lower case", None),
        ("<think>maybe [[A]]</think>After thinking: [[B]]", "B"),
        ("<think>leaning [[A]]</think>I cannot decide.", None),  # a verdict while thinking is not an answer
        ("<think>[[A]] but the judge was cut off", None),
        ("", None),
    ],
)
def test_parse_verdict(output, verdict):
    assert parse_verdict(output) == verdict


@pytest.mark.parametrize(
    "output, scores",
    [
        ("Reasoning.\nA: 7, B: 4", (7, 4)),
        ("Reasoning.\nB: 3, A: 9\n\n", (9, 3)),  # either order; trailing blank lines
        ("**A: 7, B: 4**", (7, 4)),  # markdown emphasis
        ("A:7,B:4", (7, 4)),
        ("**A: 7**, **B: 4**", (7, 4)),  # emphasis per item
        ("A: **7**, B: `4`", (7, 4)),
        ("Final scores: A: 7, B: 4", (7, 4)),
        ("Scores: B: 2, A: 8.", (8, 2)),
        ("Verdict below.\n```\nA: 6, B: 6\n```", (6, 6)),  # inside a code fence
        ("A: 7\nB: 4", None),  # one score per line: the last line alone has one
        ("Total: A: 7, B: 4", None),  # only a scores label is dropped
        ("<think>A: 1, B: 2</think>\nA: 5, B: 5", (5, 5)),  # scores considered while thinking do not count
        ("<think>A: 1, B: 2", None),  # reasoning never closed
        ("A: 7", None),  # B missing
        ("A: 7, A: 4", None),  # A twice
        ("A: 11, B: 2", None),  # outside 0-10
        ("A: 7, B: 4\nSo A wins.", None),  # not the last line
        ("[[A]]", None),
        ("", None),
    ],
)
def test_parse_score_pair(output, scores):
    assert parse_score_pair(output) == scores
