"""``writing-rl monitor``: judge health per step from rollout dumps in verl's format."""

import json

import pytest

from writing_rl.tools.cli import main
from writing_rl.tools.monitor import monitor

from conftest import png_colours


def line(score, output, **keys):
    base = {"input": "Write a story.", "output": output, "gts": {"prompt": "p"}, "score": score, "step": 1}
    judge = {"judge_error": 0, "parse_error": 0, "judge_truncated": 0, "judge_refusal": 0, "format_error": 0}
    judge.update({"position_consistent": 1, "judge_latency_s": 1.0, "judge_calls": 2, "win": 1.0})
    return {**base, **judge, **keys}


def write_dump(directory, step, records):
    directory.mkdir(exist_ok=True)
    path = directory / f"{step}.jsonl"
    path.write_text("".join(json.dumps({**r, "step": step}) + "\n" for r in records))
    return path


@pytest.fixture
def run(tmp_path):
    """Two steps: step 1 healthy; step 2 with a judge error, a parse error, retries and a length hack."""
    rollouts = tmp_path / "rollouts"
    write_dump(
        rollouts,
        1,
        [
            line(1.0, "a b", judge_latency_s=1.0),
            line(0.0, "a b c d", judge_latency_s=2.0),
            line(0.5, "a b c", position_consistent=0, judge_latency_s=3.0),
            line(0.5, "a", position_consistent=-1, judge_latency_s=4.0),
        ],
    )
    write_dump(
        rollouts,
        2,
        [
            line(0.0, "short", judge_error=1, judge_calls=2, judge_latency_s=0.0, judge_retries=3),
            line(0.0, "a b", parse_error=1, judge_retries=0, judge_rate_limited=1),
            line(1.0, "a b c d e f g h", judge_retries=0),
            line(1.0, "a b c d e f g h i j", judge_retries=0, judge_tokens=40),
        ],
    )
    # a file that is not a step dump is ignored
    (rollouts / "notes.jsonl").write_text("{}\n")
    return rollouts


def test_health_per_step(run):
    steps = monitor(run)
    assert [s.step for s in steps] == [1, 2]
    first, second = steps
    assert first.samples == 4 and first.length_unit == "words"
    assert first.metrics["reward_mean"] == 0.5
    assert first.metrics["response_length_mean"] == 2.5
    assert first.metrics["judge/position_consistency"] == pytest.approx(2 / 3)
    assert first.metrics["judge/latency_p50_s"] == 2.5
    assert first.metrics["judge/calls_total"] == 8
    assert "judge/retries_total" not in first.metrics
    assert second.metrics["judge/error_rate"] == 0.25
    assert second.metrics["judge/parse_error_rate"] == 0.25
    assert second.metrics["judge/unreadable_rate"] == 0.25
    assert second.metrics["judge/retries_total"] == 3
    assert second.metrics["judge/rate_limited_total"] == 1
    assert second.metrics["judge/tokens_total"] == 40
    assert second.metrics["judge/reward_length_corr"] > 0.8  # long responses win: a length-hacking alarm
    assert first.metrics["judge/reward_length_corr"] < 0


def test_cli_table(run, capsys):
    assert main(["monitor", str(run)]) == 0
    out = capsys.readouterr().out
    header, step1, step2 = out.splitlines()[:3]
    assert header.split()[:4] == ["step", "samples", "reward", "length"]
    assert "judge err" in header and "429s" in header and "retries" in header
    assert step1.split()[:3] == ["1", "4", "0.500"]
    assert "25.0%" in step2  # the judge error rate of step 2
    assert step1.split()[-3:] == ["-", "-", "-"]  # retries, 429s, tokens: not in step 1's keys
    assert "length in words" in out


def test_cli_json(run, capsys):
    assert main(["monitor", str(run), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["step"] for r in records] == [1, 2]
    assert records[1]["judge/error_rate"] == 0.25 and records[0]["samples"] == 4


def test_cli_plot(run, tmp_path, capsys):
    out = tmp_path / "health.png"
    assert main(["monitor", str(run), "--plot", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert "#316eb4" in png_colours(out.read_bytes())  # the first line's colour is drawn


def test_cli_plot_without_matplotlib(run, tmp_path, capsys, no_matplotlib):
    assert main(["monitor", str(run), "--plot", str(tmp_path / "health.png")]) == 0
    assert "matplotlib is not installed" in capsys.readouterr().out
    assert not (tmp_path / "health.png").exists()


def test_token_lengths_when_the_dump_has_them(tmp_path):
    rollouts = tmp_path / "r"
    write_dump(rollouts, 3, [line(1.0, "x", response_length=100), line(0.0, "x y z", response_length=10)])
    (step,) = monitor(rollouts)
    assert step.length_unit == "tokens" and step.metrics["response_length_mean"] == 55
    assert step.metrics["judge/reward_length_corr"] == pytest.approx(1.0)


def test_v1_dumps_have_reward_and_length_only(tmp_path, capsys):
    # verl's v1 trainer dumps input, output, gts, score, step and uid: no reward extra info
    rollouts = tmp_path / "v1"
    write_dump(
        rollouts,
        1,
        [{"input": "p", "output": "a b", "gts": None, "score": 1.0, "uid": "u_0_0"}]
        + [{"input": "p", "output": "a b c", "gts": None, "score": 0.0, "uid": "u_1_0"}],
    )
    assert main(["monitor", str(rollouts)]) == 0
    out = capsys.readouterr().out
    assert "judge err" not in out.splitlines()[0]
    assert "no judge keys in these dumps" in out and "trainer.use_v1" in out


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: None, "no such directory"),
        (lambda d: d.write_text("x"), "not a directory"),
        (lambda d: d.mkdir(), "no <step>.jsonl rollout dumps"),
        (lambda d: write_dump(d, 1, []), "1.jsonl: no samples"),
        (lambda d: (d.mkdir(), (d / "2.jsonl").write_text('{"output": "a", "score": 1}\nnot json\n')), "2.jsonl:2"),
        (lambda d: write_dump(d, 1, [line(1.0, "a"), line("high", "b")]), "1.jsonl:2: score must be a number"),
        (lambda d: write_dump(d, 1, [line(1.0, "a", judge_error="yes")]), "1.jsonl:1: judge_error='yes'"),
        (lambda d: write_dump(d, 1, [line(1.0, None)]), "1.jsonl:1: output must be the response text"),
        (
            lambda d: write_dump(d, 1, [line(1.0, "a", response_length=3), line(1.0, "a")]),
            "response_length is on some lines",
        ),
    ],
)
def test_errors_name_the_place(tmp_path, capsys, setup, message):
    target = tmp_path / "rollouts"
    setup(target)
    assert main(["monitor", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("writing-rl monitor: error:") and message in err


def test_json_has_no_nan(tmp_path):
    import json

    from writing_rl.tools.monitor import StepHealth, as_json

    steps = [
        StepHealth(
            step=1,
            file="1.jsonl",
            samples=2,
            length_unit="tokens",
            metrics={"judge/reward_length_corr": float("nan"), "judge/error_rate": 0.5},
        )
    ]
    record = json.loads(as_json(steps))[0]
    assert record["judge/reward_length_corr"] is None and record["judge/error_rate"] == 0.5
