"""`writing-rl eval arena-hard`: Arena-Hard-Auto v2.0 scored as lmarena/arena-hard-auto scores it.

Differential tests: transcriptions of the official code (lmarena/arena-hard-auto at commit
196f6b826783b3da7310e361a805fa36f0be83f3: gen_judgment.py get_score; show_result.py load_judgments,
print_leaderboard, format_confidence_interval, print_leaderboard_with_style_features; utils/math_utils.py
fit_pairwise_model, bootstrap_pairwise_model, one_hot_encode, to_winrate_probabilities; utils/add_markdown_info.py
count_markdown_elements, remove_pattern) are fed the same random verdicts, texts and resample draws as our scoring,
and must agree. End to end: both readers against a scripted judge on 127.0.0.1, failures counted, resume from the
cache, bad rows named, the CLI."""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pandas as pd
import pytest
import torch

from writing_rl.evaluation import arenahard_scores as scoring
from writing_rl.evaluation.arenahard import run_arena_hard
from writing_rl.evaluation.inputs import InputError
from writing_rl.evaluation.kinds.arenahard import KIND
from writing_rl.judge.config import JudgeConfig
from writing_rl.offline.judge import JudgeSettings
from writing_rl.tools.commands.evaluation import add_eval

from judge_server import Reply, default_script, quality
from offline_helpers import pair_of, report_of, write_jsonl

# ---- transcriptions of the official code ------------------------------------------------------------------------

OFFICIAL_PATTERNS = [r"\[\[([AB<>=]+)\]\]", r"\[([AB<>=]+)\]"]  # config/arena-hard-v2.0.yaml regex_patterns


def official_get_score(judgment, patterns):  # gen_judgment.py get_score
    for pattern in patterns:
        pattern = re.compile(pattern)
        matches = pattern.findall(judgment.upper())
        matches = [m for m in matches if m != ""]
        if len(set(matches)) > 0:
            return matches[-1].strip("\n")
    return None


def official_load_judgments(records, weight=3):  # show_result.py load_judgments, from records instead of files
    data = pd.DataFrame(records)
    null_indices = data.games.map(
        lambda x: x[0] is None or x[1] is None or x[0]["score"] is None or x[1]["score"] is None
    )
    _data = data[~null_indices].reset_index(drop=True)
    nulls = len(data) - len(_data)
    label_to_score = {
        "A>B": [1], "A>>B": [1] * weight, "A=B": [0.5], "A<<B": [0] * weight, "A<B": [0],
        "B>A": [0], "B>>A": [0] * weight, "B=A": [0.5], "B<<A": [1] * weight, "B<A": [1],
    }  # fmt: skip
    _data["scores"] = _data.games.map(
        lambda x: label_to_score[x[1]["score"]] + [1 - s for s in label_to_score[x[0]["score"]]]
    )
    battles = _data[["uid", "model", "category", "scores"]].explode("scores").reset_index(drop=True)
    return battles, nulls


def official_format_confidence_interval(mean_scores, lower_scores, upper_scores, baseline=None):
    leaderboard = pd.merge(mean_scores, lower_scores, on="model").merge(upper_scores, on="model")
    raw = leaderboard.copy()
    leaderboard["Scores (%)"] = leaderboard["scores"].map(lambda x: round(x * 100, 1))
    leaderboard["CI (%)"] = leaderboard.apply(
        lambda row: (
            f"(-{round((row['scores'] - row['lower']) * 100, 1)} / +{round((row['upper'] - row['scores']) * 100, 1)})"
        ),
        axis=1,
    )
    _leaderboard = leaderboard.rename(columns={"model": "Model"}).drop(columns=["lower", "upper", "scores"])
    if baseline:
        _leaderboard = pd.concat(
            [_leaderboard, pd.DataFrame({"Model": baseline, "Scores (%)": 50.0, "CI (%)": "(-0.0 / +0.0)"}, index=[0])]
        )
    return _leaderboard.sort_values(by="Scores (%)", ascending=False).reset_index(drop=True), raw


def official_print_leaderboard(battles, baseline, random_state):  # show_result.py print_leaderboard, RNG injected
    _battles = battles.drop(columns=["category"])[["model", "scores"]]
    _battles["model"] = _battles["model"].map(lambda x: x.split("/")[-1])
    bootstraps = pd.concat(
        [
            _battles.groupby("model").sample(frac=1.0, replace=True, random_state=random_state).groupby("model").mean()
            for _ in range(100)
        ]
    )
    bootstraps["scores"] = bootstraps["scores"].astype(float)
    mean_scores = bootstraps.groupby("model").mean().reset_index()
    lower_scores = bootstraps.groupby("model").quantile(0.05).reset_index().rename(columns={"scores": "lower"})
    upper_scores = bootstraps.groupby("model").quantile(0.95).reset_index().rename(columns={"scores": "upper"})
    return official_format_confidence_interval(mean_scores, lower_scores, upper_scores, baseline)


class OfficialBTModel(torch.nn.Module):  # utils/math_utils.py BTModel
    def __init__(self, num_components):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.nn.init.constant_(torch.empty(num_components), 0.5))

    def forward(self):
        return self.logits, None


def official_fit_pairwise_model(features, outcomes, indices=None, lr=0.1, tol=1e-9, max_epochs=50):
    if indices is not None:  # utils/math_utils.py fit_pairwise_model with loss_type="bt" (bt_loss)
        features = features[indices]
        outcomes = outcomes[indices]
    model = OfficialBTModel(num_components=features.shape[1])
    optimizer = torch.optim.LBFGS(
        model.parameters(), lr=lr, max_iter=max_epochs, tolerance_grad=tol, tolerance_change=tol
    )

    def closure():
        optimizer.zero_grad()
        logits, eta = model()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            features @ logits, outcomes.float(), reduction="sum"
        )
        loss.backward()
        return loss

    optimizer.step(closure)
    logits, eta = model()
    return logits.detach()


def official_one_hot_encode(items, baseline):  # utils/math_utils.py one_hot_encode
    unique_items = sorted(set(items + [baseline]))
    item_to_index = {item: idx for idx, item in enumerate(unique_items)}
    one_hot_matrix = []
    for item in items:
        one_hot_vector = [0] * len(unique_items)
        one_hot_vector[item_to_index[item]] = 1
        one_hot_vector[item_to_index[baseline]] = -1
        one_hot_matrix.append(one_hot_vector)
    return torch.tensor(one_hot_matrix, dtype=torch.float32), unique_items


def official_to_winrate_probabilities(coefs, models, baseline_model):  # utils/math_utils.py
    baseline_idx = models.index(baseline_model)
    exp_coefs = torch.exp(coefs)
    probs = torch.zeros(coefs.shape[0], coefs.shape[1])
    for idx in range(len(models)):
        if models[idx] == baseline_model:
            probs[:, idx] = 0.5
        probs[:, idx] = exp_coefs[:, idx] / (exp_coefs[:, idx] + exp_coefs[:, baseline_idx])
    return probs


def official_style_leaderboard(battles, style_metadata, baseline, boot_idxs):
    """show_result.py print_leaderboard_with_style_features with -f length markdown; bootstrap_pairwise_model's
    np.random.randint draws injected as ``boot_idxs``."""
    model_features = battles.apply(lambda row: style_metadata[row["model"]][row["uid"]], axis=1).tolist()
    baseline_features = battles.apply(lambda row: style_metadata[baseline][row["uid"]], axis=1).tolist()
    model_feature_tensor = torch.tensor(
        [[v if isinstance(v, int) else sum(v.values()) for k, v in m.items()] for m in model_features],
        dtype=torch.float32,
    )
    baseline_feature_tensor = torch.tensor(
        [[v if isinstance(v, int) else sum(v.values()) for k, v in m.items()] for m in baseline_features],
        dtype=torch.float32,
    )
    final_feature_tensor = torch.zeros_like(model_feature_tensor)
    final_feature_tensor[:, 0] = (model_feature_tensor[:, 0] - baseline_feature_tensor[:, 0]) / (
        model_feature_tensor[:, 0] + baseline_feature_tensor[:, 0]
    )
    model_md_density = model_feature_tensor[:, 1:] / (model_feature_tensor[:, :1] + 1)
    baseline_md_density = baseline_feature_tensor[:, 1:] / (baseline_feature_tensor[:, :1] + 1)
    final_feature_tensor[:, 1:] = (model_md_density - baseline_md_density) / (
        model_md_density + baseline_md_density + 1
    )
    normalized_feature_tensor = (final_feature_tensor - torch.mean(final_feature_tensor, axis=0)) / torch.std(
        final_feature_tensor, axis=0
    )
    assert not normalized_feature_tensor.isnan().any()
    outcomes = torch.tensor(battles.scores.tolist())
    model_features, unique_models = official_one_hot_encode(battles.model.tolist(), baseline=baseline)
    all_features = torch.cat([model_features, normalized_feature_tensor], dim=1)
    num_features = 4
    coefs = torch.stack(
        [official_fit_pairwise_model(all_features, outcomes, boot_idxs[i]) for i in range(len(boot_idxs))]
    )
    table = pd.DataFrame(
        columns=unique_models,
        data=official_to_winrate_probabilities(coefs[:, :-num_features], unique_models, baseline).tolist(),
    )
    leaderboard, raw = official_format_confidence_interval(
        table.quantile(0.5).to_frame("scores").reset_index().rename(columns={"index": "model"}),
        table.quantile(0.05).to_frame("lower").reset_index().rename(columns={"index": "model"}),
        table.quantile(0.95).to_frame("upper").reset_index().rename(columns={"index": "model"}),
    )
    return leaderboard, raw, torch.quantile(coefs[:, -num_features:], 0.5, axis=0)


def official_count_markdown_elements(markdown_text):  # utils/add_markdown_info.py, after remove_pattern
    pattern = re.compile("```([^`]*)```")
    for block in pattern.findall(markdown_text):
        markdown_text = markdown_text.replace(block, "")
    return {
        "header_count": {f"h{k}": len(re.findall(rf"^#{{{k}}}\s", markdown_text, re.MULTILINE)) for k in range(1, 7)},
        "list_count": {
            "ordered": len(re.findall(r"^\s*\d+\.\s", markdown_text, re.MULTILINE)),
            "unordered": len(re.findall(r"^\s*[-*+]\s", markdown_text, re.MULTILINE)),
        },
        "bold_count": {
            "**": len(re.findall(r"\*\*[^*\n]+\*\*", markdown_text)),
            "__": len(re.findall(r"__[^_\n]+__", markdown_text)),
        },
    }


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny L-BFGS fits run several times faster on one thread on a shared machine; restored after each test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---- random material ----------------------------------------------------------------------------------------------

KNOWN = list(scoring.A_POINTS)
ODD = ["A>=B", "AB", "A", "B", "=", "B<<<A"]  # labels the patterns can read but the table lacks


def random_records(rng, models=("m-one", "m-two", "m-three"), uids=40, unknown=True) -> list[dict]:
    def game():
        draw = rng.random()
        if draw < 0.04:
            return None  # a failed call
        if draw < 0.08:
            return {"score": None}  # nothing read
        if unknown and draw < 0.11:
            return {"score": str(rng.choice(ODD))}
        return {"score": str(rng.choice(KNOWN))}

    records = [
        {"uid": f"u{u}", "model": m, "category": "creative_writing", "games": [game(), game()]}
        for u in range(uids)
        for m in models
    ]
    order = rng.permutation(len(records))
    return [records[i] for i in order]


def our_battles(records) -> tuple[list[dict], int]:
    """The scored battles (uid, model, rows) as ``scoring.leaderboard`` takes them, and how many were dropped."""
    scored = []
    for r in records:
        rows = scoring.battle_rows(*(None if g is None else g["score"] for g in r["games"]))
        if rows is not None:
            scored.append({"uid": r["uid"], "model": r["model"], "scores": rows})
    return scored, len(records) - len(scored)


def without_unknown(records) -> list[dict]:
    """Our rule for a label outside the table (the official code raises KeyError): the game counts as unread."""
    return [
        {**r, "games": [g if g is None or g["score"] in KNOWN + [None] else {"score": None} for g in r["games"]]}
        for r in records
    ]


# ---- differential tests -------------------------------------------------------------------------------------------


def test_our_reader_is_get_score_on_random_replies():
    rng = np.random.default_rng(5)
    alphabet = list("[[]]AB<>==ab xX\n") + ["[[", "]]", "[[A>>B]]", "[B>A]", "[[A=B]] "]
    replies = ["".join(rng.choice(alphabet, size=rng.integers(0, 30))) for _ in range(20000)]
    replies += ["Verdict: [[A>>B]] then [[B>A]]", "[A>B] and [[a=b]]", "[[]] [A]", "no label", "[[A>=B]]"]
    mismatches = [r for r in replies if scoring.read_label(r) != official_get_score(r, OFFICIAL_PATTERNS)]
    assert mismatches == []
    assert sum(official_get_score(r, OFFICIAL_PATTERNS) is not None for r in replies) > 5000
    assert scoring.read_label("Verdict: [[A>>B]] then [[B>A]]") == "B>A"  # the last match
    assert scoring.read_label("[A>B] and [[a=b]]") == "A=B"  # the double-bracket pattern first, upper-cased


def test_rows_scores_and_intervals_are_print_leaderboards_under_the_same_draws():
    compared = 0
    for draw in range(12):
        rng = np.random.default_rng(100 + draw)
        records = random_records(rng, uids=int(rng.integers(5, 40)))
        with pytest.raises(KeyError):  # the official code stops on a label outside its table; we count it unread
            official_load_judgments(records)
        records = without_unknown(records)
        battles, nulls = official_load_judgments(records)
        scored, dropped = our_battles(records)
        assert dropped == nulls
        for model, group in battles.groupby("model"):  # the same rows in the same order
            assert [float(s) for s in group.scores] == [s for b in scored if b["model"] == model for s in b["scores"]]
        seed = 1000 + draw
        ours, _ = scoring.leaderboard(scored, "gemini-2.0-flash-001", None, np.random.default_rng(seed))
        board, raw = official_print_leaderboard(battles, "gemini-2.0-flash-001", np.random.default_rng(seed))
        for _, row in raw.iterrows():
            mine = ours[row["model"]]
            assert abs(mine["win_rate"] - row["scores"]) < 1e-12
            assert abs(mine["lower"] - row["lower"]) < 1e-12 and abs(mine["upper"] - row["upper"]) < 1e-12
            compared += 1
        shown = {m: scoring.display(s) for m, s in ours.items()}
        assert [shown[m] for m in board["Model"]] == list(zip(board["Scores (%)"], board["CI (%)"]))  # baseline too
    assert compared == 36


def test_markdown_counts_follow_add_markdown_info():
    rng = np.random.default_rng(9)
    pieces = ["# ", "## ", "###### ", "####### ", "1. ", "  2. ", "- ", "* ", "+ ", "**bold**", "__under__", "**",
              "__", "```", "```py\nx = 1\n", "word ", "\n", "\n\n", "  ", "10.", "#tag ", "*a*", "`"]  # fmt: skip
    for _ in range(3000):
        text = "".join(rng.choice(pieces, size=rng.integers(0, 25)))
        ours = scoring.markdown_metadata(text)
        assert {k: v for k, v in ours.items() if k != "token_len"} == official_count_markdown_elements(text), text
    assert scoring.count_tokens("Hello, world! It's 3.5") == 10  # words and punctuation marks, one by one
    assert scoring.count_tokens("藍の空, blue sky") == 6  # a CJK character is one


def test_bradley_terry_fit_is_fit_pairwise_models():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(10):
        n, k = int(rng.integers(10, 200)), int(rng.integers(2, 9))
        features = torch.tensor(rng.normal(size=(n, k)), dtype=torch.float32)
        outcomes = torch.tensor(rng.choice([0.0, 0.5, 1.0], size=n), dtype=torch.float32)
        indices = rng.integers(0, n, size=n)
        for picked in (None, indices):
            ours = scoring.fit_bradley_terry(features, outcomes, picked)
            theirs = official_fit_pairwise_model(features, outcomes, picked)
            worst = max(worst, float((ours - theirs).abs().max()))
    assert worst < 1e-6


def random_metadata(rng) -> dict:
    return {
        "token_len": int(rng.integers(1, 900)),
        "header_count": {f"h{k}": int(rng.integers(0, 3) * (rng.random() < 0.3)) for k in range(1, 7)},
        "list_count": {"ordered": int(rng.integers(0, 9)), "unordered": int(rng.integers(0, 9))},
        "bold_count": {"**": int(rng.integers(0, 6)), "__": int(rng.integers(0, 2))},
    }


def test_style_control_is_print_leaderboard_with_style_features_under_the_same_draws():
    for draw, rounds in ((0, scoring.ROUNDS), (1, 20)):
        rng = np.random.default_rng(40 + draw)
        baseline = "o3-mini-2025-01-31"
        records = without_unknown(random_records(rng, models=("m-one", "m-two"), uids=25))
        metadata = {m: {f"u{u}": random_metadata(rng) for u in range(25)} for m in ("m-one", "m-two", baseline)}
        battles, _ = official_load_judgments(records)
        n = len(battles)
        board, raw, coefficients = official_style_leaderboard(
            battles, metadata, baseline, np.random.default_rng(draw).integers(0, n, size=(rounds, n))
        )
        style = {m: {u: scoring.style_vector(meta) for u, meta in by_uid.items()} for m, by_uid in metadata.items()}
        scored, _ = our_battles(records)
        ours, our_coefficients = scoring.leaderboard(scored, baseline, style, np.random.default_rng(draw), rounds)
        for _, row in raw.iterrows():
            mine = ours[row["model"]]
            assert abs(mine["win_rate"] - row["scores"]) < 1e-6
            assert abs(mine["lower"] - row["lower"]) < 1e-6 and abs(mine["upper"] - row["upper"]) < 1e-6
        for _, row in board.iterrows():
            assert scoring.display(ours[row["Model"]]) == (row["Scores (%)"], row["CI (%)"])
        assert np.allclose(list(our_coefficients.values()), coefficients.numpy(), atol=1e-6)


def test_degenerate_style_columns_are_zeroed_where_the_official_code_stops():
    same = [(10, 0, 2, 1), (0, 0, 0, 0)]
    columns = scoring.style_differences(same, [(5, 0, 2, 1), (0, 0, 0, 0)])
    assert not columns.isnan().any()
    assert columns[:, 1].tolist() == [0.0, 0.0]  # no headers anywhere: no spread
    assert scoring.style_differences([(3, 1, 1, 1)], [(4, 1, 1, 1)]).tolist() == [[0.0] * 4]  # one row


# ---- end to end ---------------------------------------------------------------------------------------------------

SHOWN = re.compile(
    r"<\|The Start of Assistant A's Answer\|>\n(.*?)\n<\|The End of Assistant A's Answer\|>.*?"
    r"<\|The Start of Assistant B's Answer\|>\n(.*?)\n<\|The End of Assistant B's Answer\|>",
    re.S,
)


def arena_judge(request, index) -> Reply:
    """Five labels by the 'good minus bad' difference, after a single-bracket decoy the reader must pass over."""
    a, b = SHOWN.search(request["messages"][-1]["content"]).groups()
    d = quality(a) - quality(b)
    label = "A>>B" if d >= 2 else "A>B" if d == 1 else "A=B" if d == 0 else "B>A" if d == -1 else "B>>A"
    return Reply(content=f"Assistant [A] first. My final verdict: [[{label}]]")


QUESTIONS = [
    {"uid": "c1", "category": "creative_writing", "subcategory": "creative_writing", "prompt": "A story."},
    {"uid": "c2", "category": "creative_writing", "subcategory": "creative_writing", "prompt": "A tale."},
    {"uid": "c3", "category": "creative_writing", "subcategory": "creative_writing", "prompt": "A poem."},
    {"uid": "c4", "category": "creative_writing", "subcategory": "creative_writing", "prompt": "A line."},
    {"uid": "h1", "category": "hard_prompt", "subcategory": "coding", "prompt": "Sort a list."},
    {"uid": "h2", "category": "hard_prompt", "subcategory": "math", "prompt": "2+2?"},
]
BASELINE = {"c1": "a plain story", "c2": "good story", "c3": "bad poem", "c4": "plain", "h1": "## Sort\nsorted(x)",
            "h2": "4"}  # fmt: skip
POLICY_A = {"c1": "good good story", "c2": "good tale", "c3": "plain poem", "h1": "good **sorted**", "h2": "good 4"}
POLICY_B = {
    "c1": "bad story",
    "c2": "bad bad tale",
    "c3": "plain bad poem",
    "c4": "good",
    "h1": "bad",
    "h2": "- 4\n- four",
}
ROWS_A = [1.0] * 6 + [0.5, 0.5] + [1.0, 1.0]  # c1 much better in both games, c2 equal, c3 better; c4 unanswered
ROWS_B = [0.0, 0.0] + [0.0] * 6 + [0.5, 0.5] + [1.0, 1.0]


def answer_rows(model, answers, metadata=True) -> list[dict]:
    rows = []
    for uid, text in answers.items():
        messages = [{"role": "user", "content": "..."}, {"role": "assistant", "content": {"answer": text}}]
        row = {"uid": uid, "ans_id": f"{model}-{uid}", "model": model, "messages": messages, "tstamp": 1.0}
        if metadata:
            row["metadata"] = scoring.markdown_metadata(text)
        rows.append(row)
    return rows


@pytest.fixture
def files(tmp_path):
    paths = {
        "questions": write_jsonl(tmp_path / "question.jsonl", QUESTIONS),
        "a": write_jsonl(tmp_path / "policy-a.jsonl", answer_rows("policy-a", POLICY_A, metadata=False)),
        "b": write_jsonl(tmp_path / "policy-b.jsonl", answer_rows("policy-b", POLICY_B)),
        "gemini": write_jsonl(tmp_path / "gemini.jsonl", answer_rows("gemini-2.0-flash-001", BASELINE)),
        "o3": write_jsonl(tmp_path / "o3.jsonl", answer_rows("o3-mini-2025-01-31", BASELINE)),
    }
    return paths


def settings_for(server) -> JudgeSettings:
    return JudgeSettings(JudgeConfig(base_url=server.base_url, model="judge", max_retries=0))


def test_creative_writing_is_scored_as_print_leaderboard(tmp_path, files, judge_server):
    server = judge_server(script=arena_judge)
    out = tmp_path / "out"
    printed = run_arena_hard(files["questions"], [files["a"], files["b"]], [files["gemini"]], str(out),
                             settings_for(server), progress=False)  # fmt: skip
    assert len(server.requests) == 2 * (3 + 4)  # policy-a has no answer to c4
    first = server.requests[0]["messages"]
    assert first[0]["role"] == "system" and "[[B>>A]]" in first[0]["content"]
    assert first[1]["content"] == (
        "<|User Prompt|>\nA story.\n\n<|The Start of Assistant A's Answer|>\na plain story\n<|The End of Assistant "
        "A's Answer|>\n\n<|The Start of Assistant B's Answer|>\ngood good story\n<|The End of Assistant B's Answer|>"
    )  # game 1: the baseline as A
    expected = scoring.bootstrap_win_rates({"policy-a": ROWS_A, "policy-b": ROWS_B}, np.random.default_rng(0))
    report = report_of(out)
    entry = report["categories"]["creative_writing"]
    assert report["headline"] == "creative_writing" and not entry["style_control"]
    for model in ("policy-a", "policy-b"):
        got = entry["models"][model]
        assert {k: got[k] for k in ("win_rate", "lower", "upper")} == expected[model]
        assert (got["score"], got["ci"]) == scoring.display(expected[model])
    assert entry["models"]["policy-a"]["rows"] == 10 and entry["models"]["policy-a"]["missing_answers"] == 1
    assert entry["models"]["gemini-2.0-flash-001"]["score"] == 50.0
    assert report["failures"]["judge_error"] == 0 and report["failures"]["battles_dropped"] == 0
    assert any("metadata computed (absent, or --recount-metadata) for policy-a (5)" in n for n in report["notes"])
    a, b = (scoring.display(expected[m]) for m in ("policy-a", "policy-b"))
    assert printed[0] == (f"Arena-Hard-Auto v2.0 creative_writing (no style control, baseline gemini-2.0-flash-001 "
                          f"50.0): policy-a {a[0]} {a[1]}, policy-b {b[0]} {b[1]}")  # fmt: skip
    md = (out / "report.md").read_text()
    assert f"| policy-a | {a[0]} | {a[1]} | 3 / 3 (1 unanswered) | 10 |" in md
    assert "| gemini-2.0-flash-001 | 50.0 | (-0.0 / +0.0) | baseline | – |" in md
    judged = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert judged[0]["games"] == [{"score": "B>>A"}, {"score": "A>>B"}] and judged[0]["scores"] == [1.0] * 6

    sent = len(server.requests)  # resume: a rerun answers every call from the cache
    run_arena_hard(files["questions"], [files["a"], files["b"]], [files["gemini"]], str(out), settings_for(server),
                   progress=False)  # fmt: skip
    assert len(server.requests) == sent and report_of(out)["judge"]["cache_hits"] == 14


def test_the_pairwise_reader_sends_our_genrms_prompt(tmp_path, files, judge_server):
    server = judge_server(script=default_script)  # [[A]]/[[B]]/[[C]] by 'good minus bad'
    out = tmp_path / "out"
    run_arena_hard(files["questions"], [files["a"]], [files["gemini"]], str(out), settings_for(server),
                   reader="pairwise", progress=False)  # fmt: skip
    assert pair_of(server.requests[0]) == ("a plain story", "good good story")  # game 1: the baseline as A
    assert pair_of(server.requests[1]) == ("good good story", "a plain story")
    assert server.requests[0]["messages"][0]["content"].startswith("You are a careful, impartial judge")
    entry = report_of(out)["categories"]["creative_writing"]["models"]["policy-a"]
    assert entry["rows"] == 6  # no strong verdicts: two rows a battle
    expected = scoring.bootstrap_win_rates({"policy-a": [1.0, 1.0, 0.5, 0.5, 1.0, 1.0]}, np.random.default_rng(0))
    assert {k: entry[k] for k in ("win_rate", "lower", "upper")} == expected["policy-a"]
    assert "pairwise reader" in " ".join(report_of(out)["notes"])


def test_failed_unreadable_and_unknown_games_drop_their_battle_and_a_rerun_retries_only_failures(
    tmp_path, files, judge_server
):
    failing = {"on": True}

    def script(request, index):
        user = request["messages"][-1]["content"]
        if failing["on"] and "A story." in user:
            return Reply(status=500, body=b'{"error": "down"}')
        if "A tale." in user:
            return Reply(content="They are both fine.")
        if "A poem." in user:
            return Reply(content="[[A>=B]]")
        return arena_judge(request, index)

    server = judge_server(script=script)
    out = tmp_path / "out"
    args = (files["questions"], [files["b"]], [files["gemini"]], str(out), settings_for(server))
    lines = run_arena_hard(*args, progress=False)
    report = report_of(out)
    failures = report["failures"]
    assert (failures["judge_error"], failures["unreadable"], failures["unknown_labels"]) == (2, 4, 2)
    assert failures["battles_dropped"] == 3 and report["battles"] == 4
    assert report["categories"]["creative_writing"]["models"]["policy-b"]["rows"] == 2  # c4 alone
    assert "battles dropped 3 of 4" in lines[1]
    sent = len(server.requests)
    failing["on"] = False
    run_arena_hard(*args, progress=False)
    assert len(server.requests) == sent + 2  # the failed calls only; unreadable replies are answers, cached
    assert report_of(out)["failures"]["battles_dropped"] == 2
    run_arena_hard(*args, progress=False)
    assert len(server.requests) == sent + 2  # nothing left to ask


def test_bad_rows_and_options_are_named(tmp_path, files):
    settings = JudgeSettings(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m"))

    def fails(match, questions=files["questions"], answers=(files["a"],), baselines=(files["gemini"],), **kw):
        with pytest.raises(InputError, match=match):
            run_arena_hard(questions, list(answers), list(baselines), str(tmp_path / "x"), settings, progress=False,
                           **kw)  # fmt: skip

    def rows(name, records):
        return write_jsonl(tmp_path / name, records)

    fails(r"q.jsonl:2: missing prompt", questions=rows("q.jsonl", [QUESTIONS[0], {"uid": "c9", "category": "c"}]))
    fails(r"q.jsonl:2: uid 'c1' appears twice", questions=rows("q.jsonl", QUESTIONS[:1] * 2))
    good = answer_rows("p", {"c1": "x"})[0]
    bad_answer = {**good, "messages": [good["messages"][0], {"role": "assistant", "content": {"text": "x"}}]}
    fails(r"p.jsonl:1: messages\[-1\].content.answer must be a string, got NoneType",
          answers=[rows("p.jsonl", [bad_answer])])  # fmt: skip
    fails(r"p.jsonl:1: metadata.token_len must be a count",
          answers=[rows("p.jsonl", [{**good, "metadata": {**good["metadata"], "token_len": "12"}}])])  # fmt: skip
    fails(r"p.jsonl:1: metadata.bold_count must map names to counts",
          answers=[rows("p.jsonl", [{**good, "metadata": {**good["metadata"], "bold_count": 3}}])])  # fmt: skip
    fails(r"p.jsonl:2: model 'q', but line 1 has 'p' \(one model a file\)",
          answers=[rows("p.jsonl", [good, {**good, "uid": "c2", "model": "q"}])])  # fmt: skip
    fails(r"p.jsonl:1: uid must be a string, got int 7", answers=[rows("p.jsonl", [{**good, "uid": 7}])])
    fails(r"p.jsonl:2: a second answer to uid 'c1' \(the first: line 1\)", answers=[rows("p.jsonl", [good, good])])
    fails(r"g.jsonl: no answer to question 'c2' \(creative_writing\)",
          baselines=[rows("g.jsonl", answer_rows("g", {"c1": "x", "c3": "y", "c4": "z"}))])  # fmt: skip
    fails(r"no baseline for hard_prompt: pass --baseline hard_prompt=PATH", category="all",
          baselines=[f"creative_writing={files['gemini']}"])  # fmt: skip
    fails(r"no question of category 'poetry' \(its categories: creative_writing, hard_prompt\)", category="poetry")
    fails(r"policy-a.jsonl: model 'policy-a' is a baseline", baselines=[files["a"]])
    fails(r"policy-a.jsonl: model 'policy-a' again", answers=[files["a"], files["a"]])
    fails(
        r"--template .*t.txt: missing \{ANSWER_B\}", template=str(_write(tmp_path / "t.txt", "{QUESTION} {ANSWER_A}"))
    )
    fails(r"--reader must be one of arena-hard, pairwise", reader="scores")
    fails(r"no such file: .*nothing.jsonl", answers=[str(tmp_path / "nothing.jsonl")])


def _write(path, text):
    path.write_text(text)
    return path


def test_the_cli_scores_every_category_with_style_control_for_hard_prompts(tmp_path, files, judge_server, capsys):
    server = judge_server(script=arena_judge)
    parser = argparse.ArgumentParser(prog="writing-rl")
    add_eval(parser.add_subparsers(dest="command"), kinds=(KIND,))
    out = tmp_path / "all"
    args = parser.parse_args([
        "eval", "arena-hard", "--questions", files["questions"], "--answers", files["a"], files["b"],
        "--baseline", f"creative_writing={files['gemini']}", "--baseline", f"hard_prompt={files['o3']}",
        "--category", "all", "--out", str(out), "--judge-url", server.base_url, "--judge-model", "judge", "--quiet",
        "--seed", "3",
        "--system-prompt", "Judge fairly; end with [[A>B]] or the like.",
    ])  # fmt: skip
    assert args.handler(args) == 0
    printed = capsys.readouterr().out
    report = report_of(out)
    assert (
        list(report["categories"]) == ["creative_writing", "hard_prompt"] and report["headline"] == "creative_writing"
    )
    hard = report["categories"]["hard_prompt"]
    assert hard["style_control"] and set(hard["style_coefficients"]) == {"length", "headers", "lists", "bold"}
    assert hard["models"]["o3-mini-2025-01-31"]["score"] == 50.0 and hard["baseline"] == "o3-mini-2025-01-31"
    assert not report["categories"]["creative_writing"]["style_control"] and report["seed"] == 3
    assert server.requests[-1]["messages"][0]["content"] == "Judge fairly; end with [[A>B]] or the like."
    assert "Arena-Hard-Auto v2.0 hard_prompt (style control, baseline o3-mini-2025-01-31 50.0): policy-a" in printed
    md = (out / "report.md").read_text()
    assert "## hard_prompt: 2 questions, baseline o3-mini-2025-01-31, style control (length, markdown)" in md
    assert "Style coefficients (median): length " in md
    assert (out / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert len(server.requests) == 2 * (3 + 4 + 2 + 2)
