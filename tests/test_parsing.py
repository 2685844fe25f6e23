import pytest

from writing_rl.parsing import parse_verdict, strip_think


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
