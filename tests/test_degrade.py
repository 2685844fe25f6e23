"""Degraded copies with labels by construction (writing_rl/data/degrade.py) and the pairs and groups built from
the shipped SmolLM2 answers (data_prep/degraded_pairs.py), down to the pref-sft and gqm-rl builders."""

import json
import random
from collections import Counter

import pyarrow.parquet as pq
import pytest

from data_prep import degraded_pairs
from data_prep.build_parquet import main as build_parquet
from writing_rl.data import degrade
from writing_rl.data.degrade import ORIGINAL, RANK_SCORES, SEVERITY
from writing_rl.files import read_jsonl

from conftest import REPO_DIR

ANSWERS = REPO_DIR / "examples/real/smollm2_answers.jsonl"

STORY = (
    "The fox waited by the river. Rain fell on the reeds. A heron lifted into the grey sky.\n\n"
    "Then the fox crossed at the shallows. It did not look back."
)
POEM = "Salt wind on the pier,\nthe gulls argue over bread,\nthe tide keeps its time."
ONE_SENTENCE = "The lamp glows warm on the desk."
OTHERS = ("Recycling saves energy. It also keeps waste out of landfills.", "Dear Ms. Ortiz, thank you for the year.")


def sentences(text):
    return degrade.split_sentences(text).sentences


# --- sentences ---


def test_sentences_split_on_ends_and_line_breaks_and_keep_the_layout():
    assert sentences(STORY) == [
        "The fox waited by the river.",
        "Rain fell on the reeds.",
        "A heron lifted into the grey sky.",
        "Then the fox crossed at the shallows.",
        "It did not look back.",
    ]
    assert sentences(POEM) == ["Salt wind on the pier,", "the gulls argue over bread,", "the tide keeps its time."]
    assert sentences('She said "Stop!" Then she ran. Steps:\n1. Mix the flour.') == [
        'She said "Stop!"',
        "Then she ran.",
        "Steps:",
        "1. Mix the flour.",
    ]
    assert sentences("One. \n\nTwo.  Three") == ["One.", "Two.", "Three"]
    for text in (STORY, POEM, ONE_SENTENCE, "  padded.  ", "One. \n\nTwo.  Three"):
        assert degrade.split_sentences(text).text() == text.strip()
    assert sentences("") == [] and sentences("   ") == []


# --- each degradation ---


def test_repeated_says_one_sentence_twice_in_a_row():
    copy = degrade.repeated(STORY, random.Random(0))
    original, copied = sentences(STORY), sentences(copy)
    assert len(copied) == len(original) + 1
    twice = [s for s, n in Counter(copied).items() if n == 2]
    assert len(twice) == 1 and twice[0] in original
    at = copied.index(twice[0])
    assert copied[at + 1] == twice[0]  # right after itself
    assert copied[: at + 1] + copied[at + 2 :] == original  # nothing else changed
    assert "\n\n" in copy  # the paragraph break stays


def test_repeated_doubles_a_one_sentence_text_and_skips_an_empty_one():
    assert degrade.repeated(ONE_SENTENCE, random.Random(0)) == f"{ONE_SENTENCE} {ONE_SENTENCE}"
    assert degrade.repeated("", random.Random(0)) is None
    assert degrade.repeated("  \n ", random.Random(0)) is None


def test_shuffled_keeps_every_sentence_in_another_order():
    copy = degrade.shuffled(STORY, random.Random(0))
    assert copy != STORY
    assert sorted(sentences(copy)) == sorted(sentences(STORY))
    assert sentences(copy) != sentences(STORY)
    assert copy.count("\n\n") == 1  # the gaps stay where they were
    poem = degrade.shuffled(POEM, random.Random(0))
    assert poem.count("\n") == 2 and sorted(poem.split("\n")) == sorted(POEM.split("\n"))


@pytest.mark.parametrize(
    "text",
    [
        ONE_SENTENCE,
        "Two sentences. Only two.",  # under 3: a shuffle would just swap them
        "Yes. Yes. Yes.",  # every order reads the same
        "",
    ],
)
def test_shuffled_does_not_apply_under_three_sentences_or_when_all_orders_read_the_same(text):
    assert degrade.shuffled(text, random.Random(0)) is None


def test_shuffled_with_repeated_sentences_still_finds_an_order_that_reads_differently():
    text = "Go. Go. Stop."
    for seed in range(20):
        copy = degrade.shuffled(text, random.Random(seed))
        assert copy in ("Go. Stop. Go.", "Stop. Go. Go.")


def test_cut_keeps_the_first_forty_percent_of_the_words_and_stops_mid_sentence():
    copy = degrade.cut(STORY)
    words = STORY.split()
    assert copy.split() == words[: int(0.4 * len(words))]
    assert STORY.startswith(copy) and copy != STORY
    assert copy == "The fox waited by the river. Rain fell on the reeds. A"  # 12 of 30 words
    assert degrade.cut(POEM) == "Salt wind on the pier,\nthe"  # line breaks kept
    assert degrade.cut("Hello there", fraction=0.5) == "Hello"


@pytest.mark.parametrize("text", ["", "Hello.", "Hi"])
def test_cut_does_not_apply_when_nothing_would_be_left_out(text):
    assert degrade.cut(text) is None


def test_swapped_is_another_answer_never_the_original():
    assert degrade.swapped(STORY, random.Random(0), OTHERS) in OTHERS
    assert degrade.swapped(STORY, random.Random(0), []) is None
    assert degrade.swapped(STORY, random.Random(0), [STORY, f"  {STORY}\n", " "]) is None
    assert degrade.swapped(STORY, random.Random(0), [STORY, OTHERS[0]]) == OTHERS[0]


# --- all of them together ---


@pytest.mark.parametrize("text", [STORY, POEM, ONE_SENTENCE, "Go. Go. Stop.", "Yes. Yes. Yes."])
def test_copies_differ_from_the_original_and_from_each_other(text):
    copies = degrade.degraded_copies(text, OTHERS, seed=0)
    readings = [text.strip()] + [c.strip() for c in copies.values()]
    assert len(set(readings)) == len(readings)
    assert list(copies) == [name for name in SEVERITY if name in copies]  # mildest first


def test_which_degradations_apply():
    assert list(degrade.degraded_copies(STORY, OTHERS)) == ["repeated", "shuffled", "cut", "swapped"]
    assert list(degrade.degraded_copies(ONE_SENTENCE, OTHERS)) == ["repeated", "cut", "swapped"]
    assert list(degrade.degraded_copies(ONE_SENTENCE)) == ["repeated", "cut"]  # nothing to swap with
    assert list(degrade.degraded_copies("Hi")) == ["repeated"]


def test_copies_are_seeded_reproducible_and_the_seed_changes_each_draw():
    others = [f"Answer {i} to another prompt. It is about something else." for i in range(10)]
    first = degrade.degraded_copies(STORY, others, seed=0)
    assert degrade.degraded_copies(STORY, others, seed=0) == first
    draws = [degrade.degraded_copies(STORY, others, seed=s) for s in range(10)]
    for name in ("repeated", "shuffled", "swapped"):  # the ones with a choice
        assert len({d[name] for d in draws}) > 1, name
    assert len({d["cut"] for d in draws}) == 1  # no choice: always the same cut


def test_severity_scores_fall_strictly_from_the_original_to_the_worst_damage():
    order = [ORIGINAL, *SEVERITY]
    assert set(RANK_SCORES) == set(order)
    scores = [RANK_SCORES[name] for name in order]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert all(0 <= s <= 10 for s in scores)  # GQM's score range


# --- pairs and groups from the shipped answers ---


@pytest.fixture(scope="module")
def answers():
    return degraded_pairs.read_answers(ANSWERS)


@pytest.fixture(scope="module")
def rows(answers):
    return degraded_pairs.build(answers, heldout=0.2, seed=0, max_copies=4)


def test_shipped_answers_are_real_multi_sentence_answers_to_the_shipped_prompts(answers):
    prompts = {row["id"]: row["prompt"] for _, row in read_jsonl(REPO_DIR / "examples/real/writing_prompts.jsonl")}
    assert 60 <= len(answers) <= 100
    for a in answers:
        assert prompts[a["id"]] == a["prompt"]
        assert degrade.sentence_count(a["answer"]) >= 2


def test_heldout_prompts_and_their_answers_never_reach_train(rows, answers):
    train_ids = {r["prompt_id"] for kind in ("pairs", "groups") for r in rows[kind]["train"]}
    heldout_ids = {r["prompt_id"] for kind in ("pairs", "groups") for r in rows[kind]["heldout"]}
    assert train_ids and heldout_ids and not train_ids & heldout_ids
    heldout_texts = {a["answer"] for a in answers if a["id"] in heldout_ids}
    heldout_prompts = {a["prompt"] for a in answers if a["id"] in heldout_ids}
    for r in rows["pairs"]["train"]:
        assert r["prompt"] not in heldout_prompts
        assert not {r["chosen"], r["rejected"]} & heldout_texts  # no swapped copy from a held-out answer either
    for g in rows["groups"]["train"]:
        assert g["prompt"] not in heldout_prompts and not set(g["mt_texts"]) & heldout_texts


def test_every_pair_chooses_the_original_answer_over_a_differing_copy(rows, answers):
    original = {(a["id"], a["sample"]): a["answer"] for a in answers}
    for split in degraded_pairs.SPLITS:
        for pair in rows["pairs"][split]:
            assert pair["chosen"] == original[(pair["prompt_id"], pair["sample"])]
            assert pair["rejected"].strip() != pair["chosen"].strip()
            assert pair["degradation"] in SEVERITY
    ids = [p["id"] for split in degraded_pairs.SPLITS for p in rows["pairs"][split]]
    assert len(set(ids)) == len(ids)


def test_group_scores_follow_the_severity_order(rows, answers):
    original = {(a["id"], a["sample"]): a["answer"] for a in answers}
    orders = set()
    for split in degraded_pairs.SPLITS:
        for group in rows["groups"][split]:
            names, scores = group["degradations"], group["scores"]
            assert 3 <= len(names) <= 5 and names.count(ORIGINAL) == 1
            assert scores == [RANK_SCORES[n] for n in names]
            ranked = sorted(zip(names, scores), key=lambda pair: [ORIGINAL, *SEVERITY].index(pair[0]))
            assert all(a[1] > b[1] for a, b in zip(ranked, ranked[1:]))
            assert group["mt_texts"][names.index(ORIGINAL)] == original[(group["prompt_id"], group["sample"])]
            orders.add(names.index(ORIGINAL))
    assert len(orders) > 1  # the original is not always first


def test_max_copies_caps_each_group_and_keeps_the_original():
    answer = {"id": "p", "sample": 0, "prompt": "Write.", "answer": STORY}
    copies = degrade.degraded_copies(STORY, OTHERS)
    group = degraded_pairs.group_row(answer, copies, seed=0, max_copies=2)
    assert len(group["mt_texts"]) == 3 and ORIGINAL in group["degradations"]
    assert degraded_pairs.group_row(answer, {"cut": copies["cut"]}, seed=0) is None  # too few copies


def test_prompt_split_is_seeded_and_never_holds_out_everything():
    ids = [f"p{i}" for i in range(40)]
    split = degraded_pairs.split_prompts(ids, 0.2, seed=0)
    assert Counter(split.values()) == {"train": 32, "heldout": 8}
    assert degraded_pairs.split_prompts(ids, 0.2, seed=0) == split
    assert degraded_pairs.split_prompts(ids, 0.2, seed=1) != split
    assert Counter(degraded_pairs.split_prompts(["a", "b"], 0.9, seed=0).values()) == {"train": 1, "heldout": 1}
    assert set(degraded_pairs.split_prompts(ids, 0.0, seed=0).values()) == {"train"}


def test_the_script_writes_four_non_empty_files_the_same_on_a_rerun(tmp_path, capsys):
    names = [f"{kind}_{split}.jsonl" for kind in ("pairs", "groups") for split in degraded_pairs.SPLITS]
    texts = []
    for run in ("a", "b"):
        assert degraded_pairs.main(["--input", str(ANSWERS), "--output", str(tmp_path / run)]) == 0
        texts.append([(tmp_path / run / name).read_text(encoding="utf-8") for name in names])
    assert texts[0] == texts[1] and all(text.strip() for text in texts[0])
    assert "train:" in capsys.readouterr().out


# --- through the builders ---


def test_pref_sft_reads_the_pairs_as_they_are_and_writes_both_orders(tmp_path):
    assert degraded_pairs.main(["--input", str(ANSWERS), "--output", str(tmp_path / "pairs")]) == 0
    source = tmp_path / "pairs/pairs_train.jsonl"
    pairs = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    out = tmp_path / "sft"
    rc = build_parquet(["pref-sft", "--quiet", "--input", str(source), "--output", str(out), "--test-size", "0"])
    assert rc == 0
    written = pq.read_table(out / "train.parquet").to_pylist()
    assert len(written) == 2 * len(pairs)
    labels = Counter()
    for row in written:
        pair = pairs[row["extra_info"]["index"]]
        request, answer = row["messages"][-2]["content"], row["messages"][-1]["content"]
        assert row["extra_info"]["degradation"] == pair["degradation"]
        reasoning, verdict = answer.rsplit("\n\n", 1)
        label = verdict[2]
        labels[label] += 1
        other = "B" if label == "A" else "A"
        # the critique names the damage and the response it is in: the rejected one, whatever the order
        assert reasoning == degrade.critique(pair["degradation"], other) and verdict == f"[[{label}]]"
        # a copy may hold the original whole (its last sentence repeated), so find each response's own block
        shown = {slot: f"[Response {slot}]\n```\n{{}}\n```" for slot in "AB"}
        assert shown[label].format(pair["chosen"]) in request
        assert shown[other].format(pair["rejected"]) in request
    assert labels["A"] == labels["B"] == len(pairs)


def test_no_critique_leaves_the_reply_a_verdict_alone(tmp_path):
    assert degraded_pairs.main(["--input", str(ANSWERS), "--output", str(tmp_path / "pairs"), "--no-critique"]) == 0
    source = tmp_path / "pairs/pairs_train.jsonl"
    assert "critique" not in json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    rc = build_parquet(["pref-sft", "--quiet", "--input", str(source), "--output", str(tmp_path / "sft")])
    assert rc == 0
    replies = {row["messages"][-1]["content"] for row in pq.read_table(tmp_path / "sft/train.parquet").to_pylist()}
    assert replies == {"[[A]]", "[[B]]"}


def test_each_damage_has_a_critique_that_names_its_slot():
    for name in SEVERITY:
        a, b = degrade.critique(name, "A"), degrade.critique(name, "B")
        assert a.endswith("Response A.") and b.endswith("Response B.") and a.replace("A.", "B.") == b
    assert len({degrade.critique(name, "A") for name in SEVERITY}) == len(SEVERITY)
    for bad in (("original", "A"), ("cut", "C")):
        with pytest.raises(ValueError, match="expected a damage"):
            degrade.critique(*bad)


def test_gqm_rl_reads_the_groups_as_writing_groups(tmp_path):
    assert degraded_pairs.main(["--input", str(ANSWERS), "--output", str(tmp_path / "groups")]) == 0
    source = tmp_path / "groups/groups_train.jsonl"
    groups = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    out = tmp_path / "rl"
    rc = build_parquet(["gqm-rl", "--quiet", "--input", str(source), "--output", str(out), "--shuffle-augment", "1"])
    assert rc == 0
    written = pq.read_table(out / "train.parquet").to_pylist()
    assert len(written) == 2 * len(groups)
    for row in written:
        group = groups[row["extra_info"]["index"]]
        truth = json.loads(row["reward_model"]["ground_truth"])
        best = max(truth, key=truth.get)
        shown = row["extra_info"]["candidate_order"]
        assert group["degradations"][shown[ord(best) - ord("A")]] == ORIGINAL
        assert group["prompt"] in row["prompt"][-1]["content"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The sea was calm. Gulls circled the pier.", 0.0),
        ("The sea was calm. Gulls circled the pier. The sea was calm.", 1 / 3),  # a sentence said again
        ("The sea was calm. Gulls circled the", 1.0),  # stopped mid-sentence
        ("The sea was calm. The sea was calm. Gulls", 1 / 3 + 1.0),
        ('He said "stop." She asked (why?)', 0.0),  # closing quotes and brackets end a sentence
        ("", 1.0),
    ],
)
def test_damage_counts_repeated_sentences_and_an_unfinished_end(text, expected):
    assert degrade.damage(text) == pytest.approx(expected)


def test_damage_tells_each_cut_and_repeated_copy_from_its_original(answers):
    """On the shipped answers: nearly every cut or repeated copy shows more damage than its original (a cut that
    falls at a sentence's end leaves no mark; a letter signed "[Your Name]" reads as unfinished either way)."""
    more = seen = 0
    for answer in answers:
        copies = degrade.degraded_copies(answer["answer"], seed=0)
        original = degrade.damage(answer["answer"])
        for name in ("cut", "repeated"):
            if name in copies:
                more += degrade.damage(copies[name]) > original
                seen += 1
    assert seen >= 100 and more >= 0.85 * seen, (more, seen)
    assert degrade.damage_watch("writing", "A full sentence.", None, None) == 0.0


def _dump(folder, texts_by_step):
    import json

    folder.mkdir(parents=True, exist_ok=True)
    for step, texts in texts_by_step.items():
        (folder / f"{step}.jsonl").write_text("".join(json.dumps({"output": t}) + "\n" for t in texts))


def test_the_real_policy_runs_learning_check_follows_the_damage_of_its_rollouts_not_the_judge(tmp_path):
    """scripts/real_genrm.py's check on a policy trained against the GenRM: LEARN=1's z on verl's rollout dump,
    with the damage the pairs were labelled by (less is better)."""
    from test_docs import load_script

    check = load_script("scripts/real_genrm.py").learning_check
    whole, cut = "The tide came in. The boats rose with it.", "The tide came in. The boats rose with"
    repeated = "The tide came in. The tide came in."
    mending = {step: [cut] * (6 - step) + [whole] * step for step in range(6)}  # 6 texts a step, fewer cut
    _dump(tmp_path / "mending", mending)
    result = check(tmp_path / "mending")
    assert result["learned"] and result["z"] >= 3 and result["end"] < result["start"], result
    assert result["damage"][0] == 1.0 and result["damage"][5] == round(1 / 6, 4)
    worsening = {step: [whole] * (6 - step) + [repeated] * step for step in range(6)}
    _dump(tmp_path / "worsening", worsening)
    result = check(tmp_path / "worsening")
    assert not result["learned"] and result["gain"] < 0, result
    _dump(tmp_path / "short", {step: [whole] for step in range(5)})
    assert check(tmp_path / "short") is None  # fewer steps than two windows: no check
    assert check(tmp_path / "none") is None


def test_the_real_genrms_figures_per_damage_count_verdicts_and_named_damages(tmp_path):
    """scripts/real_genrm.py's breakdown of a GenRM's held-out replies: per damage, the verdicts that chose the
    original and the critiques that named the damage the pair was made with."""
    from test_docs import load_script

    by_damage = load_script("scripts/real_genrm.py").by_damage
    assert degraded_pairs.main(["--input", str(ANSWERS), "--output", str(tmp_path / "pairs")]) == 0
    source = tmp_path / "pairs/pairs_heldout.jsonl"
    rc = build_parquet(["pref-sft", "--quiet", "--input", str(source), "--output", str(tmp_path / "data/heldout")])
    assert rc == 0 and (tmp_path / "data/heldout/train.parquet").exists()
    rows = pq.read_table(tmp_path / "data/heldout/train.parquet").to_pylist()
    kinds = Counter(row["extra_info"]["degradation"] for row in rows)
    own = [row["messages"][-1]["content"] for row in rows]  # the labels themselves: all right, all named
    assert by_damage(own, tmp_path / "data") == {k: {"pairs": n, "correct": n, "named": n} for k, n in kinds.items()}
    constant = by_damage(["[[B]]"] * len(rows), tmp_path / "data")  # every pair in both orders: half right
    assert constant == {k: {"pairs": n, "correct": n // 2, "named": 0} for k, n in kinds.items()}
    wrong = [reply.replace("Response A", "Response X").replace("[[A]]", "[[B]]") for reply in own]
    assert all(c["correct"] == c["pairs"] // 2 for c in by_damage(wrong, tmp_path / "data").values())
