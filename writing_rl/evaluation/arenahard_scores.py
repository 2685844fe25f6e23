"""Arena-Hard-Auto v2.0's scoring, as lmarena/arena-hard-auto computes it (read at commit 196f6b8): verdict labels
read from a judge reply, each battle's two games turned into weighted rows, the bootstrapped win rate against the
baseline, and the style-controlled Bradley-Terry score (length and markdown density). The rules and where each
comes from: docs/writing-benchmarks.md, Arena-Hard v2. Deviations: the bootstraps draw from a seeded generator (the official
ones are unseeded), and a degenerate style feature is zeroed where the official code stops on an assertion.
"""

from __future__ import annotations

import math
import re
from typing import Mapping, Sequence

import numpy as np

# The official regex_patterns (config/arena-hard-v2.0.yaml), tried in order on the upper-cased reply.
PATTERNS = (re.compile(r"\[\[([AB<>=]+)\]\]"), re.compile(r"\[([AB<>=]+)\]"))
WEIGHT = 3  # a strong verdict counts as this many rows (show_result.py load_judgments' weight)
# Each label as rows from the point of view of "A wins"; a strong verdict repeats its row WEIGHT times.
A_POINTS = {
    "A>B": (1,), "A>>B": (1,) * WEIGHT, "A=B": (0.5,), "A<<B": (0,) * WEIGHT, "A<B": (0,),
    "B>A": (0,), "B>>A": (0,) * WEIGHT, "B=A": (0.5,), "B<<A": (1,) * WEIGHT, "B<A": (1,),
}  # fmt: skip
ROUNDS = 100
QUANTILES = (0.05, 0.95)  # a 90% interval, as the leaderboard shows it
STYLE_FEATURES = ("length", "headers", "lists", "bold")
METADATA_COUNTS = ("header_count", "list_count", "bold_count")  # after token_len, in the order of STYLE_FEATURES


def read_label(reply: str) -> str | None:
    """The verdict label of a reply: the last match of the first pattern that matches at all; None when none does.
    A label outside ``A_POINTS`` (e.g. ``A>=B``) is returned as read: the caller counts it as unreadable."""
    text = reply.upper()
    for pattern in PATTERNS:
        found = [m for m in pattern.findall(text) if m]
        if found:
            return found[-1]
    return None


def battle_rows(game1: str | None, game2: str | None) -> list[float] | None:
    """The model's rows of one battle (game 1: baseline as A, game 2: model as A): game 2's points for A, then
    one minus game 1's. None when either label is missing or unknown: the whole battle is dropped."""
    if game1 not in A_POINTS or game2 not in A_POINTS:
        return None
    return [float(p) for p in A_POINTS[game2]] + [1.0 - p for p in A_POINTS[game1]]


def interval_of(samples: np.ndarray, centre: float) -> dict[str, float]:
    low, high = np.quantile(samples, QUANTILES)
    return {"win_rate": float(centre), "lower": float(low), "upper": float(high)}


def bootstrap_win_rates(
    rows: Mapping[str, Sequence[float]], rng: np.random.Generator, rounds: int = ROUNDS
) -> dict[str, dict[str, float]]:
    """Per model: the mean over ``rounds`` resamples (with replacement, of the model's own rows) of the mean row,
    and the 5% and 95% quantiles of those means. Each round draws for the models in sorted order, one index per row.
    """
    models = sorted(m for m in rows if len(rows[m]))
    values = {m: np.asarray(rows[m], dtype=float) for m in models}
    means = {m: np.empty(rounds) for m in models}
    for r in range(rounds):
        for m in models:
            n = values[m].size
            means[m][r] = values[m][rng.integers(0, n, size=n)].mean()
    return {m: interval_of(means[m], means[m].mean()) for m in models}


# ---- style features ---------------------------------------------------------------------------------------------

_CODE_BLOCK = re.compile(r"```([^`]*)```")
_HEADERS = tuple(re.compile(rf"^#{{{k}}}\s", re.MULTILINE) for k in range(1, 7))
_ORDERED, _UNORDERED = re.compile(r"^\s*\d+\.\s", re.MULTILINE), re.compile(r"^\s*[-*+]\s", re.MULTILINE)
_BOLD_STARS, _BOLD_UNDERSCORES = re.compile(r"\*\*[^*\n]+\*\*"), re.compile(r"__[^_\n]+__")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"  # kana, CJK ideographs, Hangul syllables
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Our stand-in for the official token_len (tiktoken's gpt-4o encoding, which cannot be installed offline
    here): words, CJK characters (one each: a run of them is no word) and punctuation marks. On the 750 official
    o3-mini answers its median ratio to token_len is 0.96 (5-95%: 0.65-1.29)."""
    return len(_TOKEN.findall(text))


def markdown_metadata(answer: str) -> dict:
    """An answer's metadata in the official layout, counted by add_markdown_info.py's rules: the text between
    each pair of triple backticks is deleted wherever it occurs (the fences stay), then headers, list items and
    bold spans are counted. token_len is ``count_tokens``."""
    text = answer
    for inside in _CODE_BLOCK.findall(answer):
        text = text.replace(inside, "")
    return {
        "token_len": count_tokens(answer),
        "header_count": {f"h{k}": len(p.findall(text)) for k, p in enumerate(_HEADERS, start=1)},
        "list_count": {"ordered": len(_ORDERED.findall(text)), "unordered": len(_UNORDERED.findall(text))},
        "bold_count": {"**": len(_BOLD_STARS.findall(text)), "__": len(_BOLD_UNDERSCORES.findall(text))},
    }


def style_vector(metadata: Mapping) -> tuple[int, ...]:
    """(token_len, headers, list items, bold spans): each count dict summed."""
    return (metadata["token_len"], *(sum(metadata[key].values()) for key in METADATA_COUNTS))


def style_differences(model: Sequence[Sequence[int]], baseline: Sequence[Sequence[int]]):
    """The four style columns of the fit, one row per outcome row, as a float32 tensor: the length difference
    over the sum, each markdown density (count / (length + 1)) as difference over (sum + 1), then every column
    z-scored (unbiased std). Degenerate cases the official code stops on: two empty answers have length
    difference 0, and a column without spread is all zeros."""
    import torch

    m, b = torch.tensor(model, dtype=torch.float32), torch.tensor(baseline, dtype=torch.float32)
    columns = torch.zeros_like(m)
    total = m[:, 0] + b[:, 0]
    columns[:, 0] = torch.where(total == 0, torch.zeros_like(total), (m[:, 0] - b[:, 0]) / total)
    m_density, b_density = m[:, 1:] / (m[:, :1] + 1), b[:, 1:] / (b[:, :1] + 1)
    columns[:, 1:] = (m_density - b_density) / (m_density + b_density + 1)
    if len(columns) < 2:
        return torch.zeros_like(columns)
    spread = torch.std(columns, dim=0)
    normalised = (columns - torch.mean(columns, dim=0)) / spread
    normalised[:, spread == 0] = 0.0
    return normalised


def fit_bradley_terry(features, outcomes, indices=None):
    """Coefficients of a Bradley-Terry fit, logits ``features @ c`` against the soft outcomes (0, 0.5, 1): summed
    binary cross-entropy minimised by L-BFGS (lr 0.1, at most 50 iterations, tolerances 1e-9), every coefficient
    starting at 0.5, as utils/math_utils.py fit_pairwise_model does."""
    import torch
    import torch.nn.functional as F

    if indices is not None:
        features, outcomes = features[indices], outcomes[indices]
    coefs = torch.full((features.shape[1],), 0.5, dtype=torch.float32, requires_grad=True)
    optimiser = torch.optim.LBFGS([coefs], lr=0.1, max_iter=50, tolerance_grad=1e-9, tolerance_change=1e-9)

    def loss():
        optimiser.zero_grad()
        value = F.binary_cross_entropy_with_logits(features @ coefs, outcomes, reduction="sum")
        value.backward()
        return value

    optimiser.step(loss)
    return coefs.detach()


def style_controlled_win_rates(
    models: Sequence[str],
    outcomes: Sequence[float],
    model_style: Sequence[Sequence[int]],
    baseline_style: Sequence[Sequence[int]],
    baseline: str,
    rng: np.random.Generator,
    rounds: int = ROUNDS,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per model (one outcome row each in ``models``): the median over ``rounds`` bootstrap fits of
    exp(c_model) / (exp(c_model) + exp(c_baseline)) with its 5% and 95% quantiles, the baseline included (0.5);
    and the median coefficient of each style feature. One design row per outcome row: +1 in the model's column,
    -1 in the baseline's (columns: the sorted model names with the baseline), then the style columns."""
    import torch

    names = sorted(set(models) | {baseline})
    column = {name: i for i, name in enumerate(names)}
    design = torch.zeros((len(models), len(names)), dtype=torch.float32)
    for row, name in enumerate(models):
        design[row, column[name]] = 1.0
        design[row, column[baseline]] = -1.0
    features = torch.cat([design, style_differences(model_style, baseline_style)], dim=1)
    targets = torch.tensor(outcomes, dtype=torch.float32)
    draws = rng.integers(0, len(models), size=(rounds, len(models)))
    fits = torch.stack([fit_bradley_terry(features, targets, draws[r]) for r in range(rounds)])
    strength = torch.exp(fits[:, : len(names)])
    shares = (strength / (strength + strength[:, column[baseline] : column[baseline] + 1])).double().numpy()
    scores = {}
    for name, i in column.items():
        samples = shares[:, i]
        scores[name] = interval_of(samples, float(np.quantile(samples, 0.5)))
    style = torch.quantile(fits[:, len(names) :], 0.5, dim=0).tolist()
    return scores, dict(zip(STYLE_FEATURES, style))


def leaderboard(
    scored: Sequence[Mapping],
    baseline: str,
    style: Mapping[str, Mapping[str, tuple]] | None,
    rng: np.random.Generator,
    rounds: int = ROUNDS,
) -> tuple[dict[str, dict[str, float]], dict[str, float] | None]:
    """Each model's score (the baseline's 0.5 included) from its scored battles (``uid``, ``model`` and the rows in
    ``scores``, in file order): bootstrapped win rates, or with ``style`` (each answer's style vector by model and
    uid) the style-controlled scores and the style coefficients."""
    if style is None or not scored:
        by_model: dict[str, list[float]] = {}
        for battle in scored:
            by_model.setdefault(battle["model"], []).extend(battle["scores"])
        return {**bootstrap_win_rates(by_model, rng, rounds), baseline: interval_of(np.array([0.5]), 0.5)}, None
    rows = [(battle, s) for battle in scored for s in battle["scores"]]
    return style_controlled_win_rates(
        [b["model"] for b, _ in rows], [s for _, s in rows], [style[b["model"]][b["uid"]] for b, _ in rows],
        [style[baseline][b["uid"]] for b, _ in rows], baseline, rng, rounds,
    )  # fmt: skip


def display(score: Mapping[str, float]) -> tuple[float, str]:
    """The leaderboard's ``Scores (%)`` and ``CI (%)`` cells: ``(57.3, "(-1.2 / +1.4)")``."""
    s, low, high = score["win_rate"], score["lower"], score["upper"]
    if any(math.isnan(v) for v in (s, low, high)):
        return float("nan"), "–"
    return round(s * 100, 1), f"(-{round((s - low) * 100, 1)} / +{round((high - s) * 100, 1)})"
