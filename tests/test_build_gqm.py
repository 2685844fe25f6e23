"""`build_parquet.py gqm-rl` / `gqm-sft`: ranked groups -> GRRM RLVR rows and SFT conversations."""

import json
import math
import random
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from data_prep.build_parquet import main as build
from reward_fns.ranking_accuracy import compute_score
from writing_rl import protocols
from writing_rl.data.builders import gqm_rows
from writing_rl.data.builders.gqm import GQMRLBuilder, clean_analysis
from writing_rl.data.builders.gqm_augmentation import augmentation_plan, sample_shuffles, sample_subgroups
from writing_rl.data.fields import content_seed
from writing_rl.protocols import gqm, gqm_prompt


def group(i, n=4, lang=("zh", "en"), **extra):
    rng = random.Random(i)
    return {
        "src_text": f"第{i}句：今天的天气很好。",
        "src_lang": lang[0],
        "trg_lang": lang[1],
        "mt_texts": [f"Translation {j} of sentence {i}: the weather is nice today ({'x' * j})." for j in range(n)],
        "scores": [rng.randint(0, 10) for _ in range(n)],
        "analysis": f"A is literal.\nB is fluent.\nOverall the group for sentence {i} is decent.",
        **extra,
    }


def run(tmp_path, command, rows, *flags, name="groups.jsonl"):
    source = tmp_path / name
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    return build([command, "--quiet", "--input", str(source), "--output", str(out), *flags]), out


def read(out, split="train"):
    return pq.read_table(out / f"{split}.parquet").to_pylist()


# ---------------------------------------------------------------- augmentation (pure)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("k", [1, 4, 30])
def test_subgroups_and_shuffles_are_distinct_capped_and_never_the_original(n, k):
    rng = random.Random(n * 100 + k)
    classes = list(range(n))
    subgroups = sample_subgroups(classes, k, rng)
    assert len(subgroups) == min(k, max(0, 2**n - n - 2))
    assert len(set(subgroups)) == len(subgroups)
    assert all(2 <= len(s) <= n - 1 and list(s) == sorted(s) for s in subgroups)
    shuffles = sample_shuffles(classes, k, rng)
    assert len(shuffles) == min(k, math.factorial(n) - 1)
    assert len(set(shuffles)) == len(shuffles) and tuple(range(n)) not in shuffles
    assert all(sorted(s) == classes for s in shuffles)


def test_duplicate_candidates_shuffle_and_subgroup_by_content():
    classes = [0, 0, 2]  # candidates 0 and 1 are identical
    shuffles = sample_shuffles(classes, 10, random.Random(1))
    readings = {tuple(classes[i] for i in s) for s in shuffles}
    assert len(shuffles) == 2 == len(readings)  # 3!/2! - 1 arrangements that read differently
    assert (0, 0, 2) not in readings
    subgroups = sample_subgroups(classes, 10, random.Random(1))
    assert sorted(tuple(classes[i] for i in s) for s in subgroups) == [(0, 0), (0, 2)]


def test_plan_is_deterministic_per_seed_and_counts_each_kind():
    plan = augmentation_plan(list(range(4)), 4, 4, random.Random(7))
    assert plan == augmentation_plan(list(range(4)), 4, 4, random.Random(7))
    assert plan != augmentation_plan(list(range(4)), 4, 4, random.Random(8))
    kinds = [kind for _, kind in plan]
    assert kinds.count("original") == 1 and kinds.count("shuffle") == 4 and kinds.count("subgroup") == 4
    sizes = {len(order) for order, kind in plan if kind == "subgroup"}
    assert kinds.count("subgroup_shuffle") == sum(
        min(4, math.factorial(len(o)) - 1) for o, k in plan if k == "subgroup"
    )
    assert sizes <= {2, 3}


def reference_plan(classes, subgroups, shuffles, rng):
    """augmentation_plan spelled out from the two samplers (its fast path must draw exactly this)."""
    plan = []
    for base in [tuple(range(len(classes))), *sample_subgroups(classes, subgroups, rng)]:
        plan.append((base, "original" if len(base) == len(classes) else "subgroup"))
        kind = "shuffle" if len(base) == len(classes) else "subgroup_shuffle"
        for order in sample_shuffles([classes[i] for i in base], shuffles, rng):
            plan.append((tuple(base[i] for i in order), kind))
    return plan


def test_plan_equals_the_samplers_composed_for_distinct_and_repeated_candidates():
    for case in range(400):
        r = random.Random(case)
        n = r.randint(2, 9)  # past the permutation tables (7) too
        raw = list(range(n)) if case % 3 else [r.randint(0, n // 2) for _ in range(n)]
        first = {}
        classes = [first.setdefault(c, i) for i, c in enumerate(raw)]
        k_sub, k_shuf = r.randint(0, 5), r.randint(0, 8)
        assert augmentation_plan(classes, k_sub, k_shuf, random.Random(case)) == reference_plan(
            classes, k_sub, k_shuf, random.Random(case)
        ), (classes, k_sub, k_shuf)


def test_content_seed_is_pinned():
    """Seeds decide every augmented row: changing the hash would silently reshuffle rebuilt datasets."""
    assert content_seed(0, "src", ["a", "b"]) == 5352172844968077388
    assert content_seed(7, "第1句", ["x"]) == 8852996296530534750
    assert content_seed(3, "p", "q", ()) == 4736417908493521238


# ---------------------------------------------------------------- gqm-rl


def test_rl_rows_carry_prompt_ground_truth_and_order_that_the_reward_reads(tmp_path):
    rows = [group(i) for i in range(6)]
    rc, out = run(tmp_path, "gqm-rl", rows, "--subgroup-augment", "2", "--shuffle-augment", "2")
    assert rc == 0
    written = read(out)
    by_group = defaultdict(list)
    for row in written:
        by_group[row["extra_info"]["index"]].append(row)
    assert sorted(by_group) == list(range(6))
    for index, members in by_group.items():
        source = rows[index]
        prompts = [m["prompt"][0]["content"] for m in members]
        assert len(set(prompts)) == len(prompts)  # every augmented row asks something different
        for row in members:
            info = row["extra_info"]
            order = info["candidate_order"]
            assert info["group_size"] == len(order) and info["src_lang"] == "zh" and info["trg_lang"] == "en"
            assert row["data_source"] == "gqm" and row["ability"] == "ranking"
            expected_prompt = gqm_prompt.build_prompt(
                [source["mt_texts"][i] for i in order], source_text=source["src_text"], src_lang="zh", trg_lang="en"
            )
            assert row["prompt"] == [{"role": "user", "content": expected_prompt}]
            truth = json.loads(row["reward_model"]["ground_truth"])
            assert truth == {gqm.LABELS[j]: source["scores"][i] for j, i in enumerate(order)}
            # a perfect answer earns the maximum reward; the reward reads this row as is
            answer = gqm.gqm_response("Careful analysis.", truth, "ranking_score")
            assert compute_score(row["data_source"], answer, row["reward_model"]["ground_truth"], info)["score"] == 2.0
        kinds = sorted(m["extra_info"]["augmentation"] for m in members)
        assert kinds.count("original") == 1 and kinds.count("shuffle") == 2 and kinds.count("subgroup") == 2


def test_small_groups_get_all_they_have_and_the_summary_reconciles(tmp_path, capsys):
    rows = [group(0, n=2), group(1, n=3), group(2, n=4)]
    rc, out = run(tmp_path, "gqm-rl", rows, "--subgroup-augment", "4", "--shuffle-augment", "10")
    assert rc == 0
    counts = defaultdict(int)
    for row in read(out):
        counts[row["extra_info"]["index"]] += 1
    # N=2: no subgroups, 2!-1 = 1 shuffle. N=3: 3 pair subgroups (1 shuffle each) + 5 shuffles.
    # N=4: 4 of the 10 subgroups + 10 shuffles of the group (23 exist).
    assert counts[0] == 1 + 1
    assert counts[1] == 1 + 5 + 3 * (1 + 1)
    four = 1 + 10  # the sizes of its subgroups decide the rest
    assert counts[2] > four
    out_text = capsys.readouterr().out
    total = sum(counts.values())
    assert "read 3 rows: accepted 3, rejected 0" in out_text
    assert f"check: read 3 = written {total} / factor {total / 3:.2f} + rejected 0" in out_text
    assert "2 groups were too small for the asked augmentation" in out_text


def test_reruns_are_identical_and_the_seed_changes_augmentation(tmp_path):
    rows = [group(i) for i in range(5)]
    flags = ("--subgroup-augment", "3", "--shuffle-augment", "3", "--test-size", "2")
    _, out = run(tmp_path, "gqm-rl", rows, *flags, "--seed", "1")
    first = read(out) + read(out, "test")
    _, out = run(tmp_path, "gqm-rl", rows, *flags, "--seed", "1", "--chunk-size", "7")
    assert read(out) + read(out, "test") == first  # chunking does not change anything
    _, out = run(tmp_path, "gqm-rl", rows, *flags, "--seed", "2")
    assert read(out) + read(out, "test") != first
    # augmented copies never straddle the split
    for split in ("train", "test"):
        indices = {r["extra_info"]["index"] for r in read(out, split)}
        other = {r["extra_info"]["index"] for r in read(out, "test" if split == "train" else "train")}
        assert not indices & other


def test_batches_past_the_string_offset_limit_are_split_without_changing_rows(monkeypatch):
    builder = GQMRLBuilder(subgroup_augment=2, shuffle_augment=2, system_prompt="You rank.")
    groups = [builder.build(group(i), i, "train") for i in range(4)]
    whole = builder.to_table(groups)
    whole.validate(full=True)  # the prompt column is built from raw UTF-8 buffers
    sizes = sorted(sum(len(p) + len(b"You rank.") for p in g.prompts) for g in groups)
    assert sizes[0] + sizes[1] > sizes[-1]  # so a limit of the largest group leaves one group per batch
    monkeypatch.setattr(gqm_rows, "_MAX_STRING_BYTES", sizes[-1])
    split = builder.to_table(groups)
    split.validate(full=True)
    assert split.column("prompt").num_chunks == 4
    assert split.to_pylist() == whole.to_pylist()


def test_duplicates_are_dropped_by_default_and_order_maps_to_input_positions(tmp_path):
    row = group(0, n=4)
    row["mt_texts"][2] = row["mt_texts"][0] + "  "  # identical once stripped
    row["scores"][2] = row["scores"][0]
    rc, out = run(tmp_path, "gqm-rl", [row], "--shuffle-augment", "3")
    assert rc == 0
    written = read(out)
    assert all(r["extra_info"]["group_size"] == 3 and 2 not in r["extra_info"]["candidate_order"] for r in written)
    assert sorted(written[0]["extra_info"]["candidate_order"]) == [0, 1, 3]

    rc, out = run(tmp_path, "gqm-rl", [row], "--shuffle-augment", "30", "--duplicates", "keep")
    prompts = [r["prompt"][0]["content"] for r in read(out)]
    assert len(prompts) == math.factorial(4) // 2 and len(set(prompts)) == len(prompts)

    rc, _ = run(tmp_path, "gqm-rl", [row], "--duplicates", "reject")
    assert rc == 2
    row["scores"][2] = (row["scores"][0] + 1) % 11
    for policy in ("keep", "drop"):
        rc, _ = run(tmp_path, "gqm-rl", [row], "--duplicates", policy)
        assert rc == 2


BAD_ROWS = [
    ({"scores": [1, 2, 3]}, "scores", "has 3 scores for 4 candidates"),
    ({"scores": [1, 2, 3, 11]}, "scores", "score 3 must be an integer from 0 to 10"),
    ({"scores": [1, 2, 3, 4.5]}, "scores", "score 3 must be an integer"),
    ({"mt_texts": ["only one"], "scores": [3]}, "mt_texts", "at least 2 items"),
    ({"mt_texts": ["a", ""], "scores": [3, 4]}, "mt_texts", "item 1 must be a non-empty string"),
    ({"src_text": None}, "src_text", "expected a source text"),
    ({"src_lang": "xx"}, "src_lang", "unknown language code"),
    ({"mt_texts": [f"t{i}" for i in range(27)], "scores": [1] * 27}, "mt_texts", "at most 26"),
]


@pytest.mark.parametrize("change,field,reason", BAD_ROWS)
def test_bad_rows_are_reported_with_row_field_and_reason_and_nothing_is_written(
    tmp_path, capsys, change, field, reason
):
    rows = [group(0), {**group(1), **change}, group(2)]
    rejects = tmp_path / "rejects.jsonl"
    rc, out = run(tmp_path, "gqm-rl", rows, "--rejects", str(rejects))
    assert rc == 2
    err = capsys.readouterr().err
    assert "line 2 rejected" in err and f"field '{field}'" in err and reason in err
    assert not (out / "train.parquet").exists() and list(out.glob(".*.tmp")) == []
    (record,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert record["row"] == 1 and record["field"] == field and reason in record["reason"]


def test_skip_bad_keeps_dense_group_ids_and_counts(tmp_path, capsys):
    rows = [group(0), {**group(1), "scores": [1]}, group(2), {**group(3), "mt_texts": "not a list"}]
    rc, out = run(tmp_path, "gqm-rl", rows, "--skip-bad", "--shuffle-augment", "1")
    assert rc == 0
    assert sorted({r["extra_info"]["index"] for r in read(out)}) == [0, 1]
    text = capsys.readouterr().out
    assert (
        "read 4 rows: accepted 2, rejected 2" in text and "check: read 4 = written 4 / factor 2.00 + rejected 2" in text
    )


def test_ranking_prompt_type_writing_groups_lang_pair_and_system_prompt(tmp_path):
    rows = [
        {
            "prompt": "Write a limerick about a cat.",
            "mt_texts": ["cat one", "cat two", "cat three"],
            "scores": [3, 8, 3],
        },
        {
            "src_text": "Guten Morgen",
            "lang_pair": "de-en",
            "mt_texts": ["Good morning", "Morning good"],
            "scores": [9, 2],
        },
    ]
    rc, out = run(tmp_path, "gqm-rl", rows, "--prompt-type", "ranking", "--system-prompt", "You rank.")
    assert rc == 0
    writing, mt = read(out)
    assert writing["reward_model"]["ground_truth"] == "B > A = C"
    assert writing["prompt"][0] == {"role": "system", "content": "You rank."}
    assert "Response A:" in writing["prompt"][1]["content"] and writing["extra_info"]["src_lang"] is None
    assert "from German into English" in mt["prompt"][1]["content"]
    assert (mt["extra_info"]["src_lang"], mt["extra_info"]["trg_lang"]) == ("de", "en")
    assert mt["extra_info"]["prompt_type"] == "ranking"
    answer = "The first is right.\n### Final Ranking:\nA > B"
    assert compute_score("gqm", answer, mt["reward_model"]["ground_truth"], mt["extra_info"])["score"] == 1.0


# ---------------------------------------------------------------- gqm-sft


def test_sft_conversations_end_with_the_final_block_and_read_back(tmp_path):
    rows = [group(i) for i in range(3)]
    rows[1]["analysis"] += "\n\n### Final Ranking:\nB > A > C > D\nScores: A: 1, B: 2, C: 3, D: 4"
    rc, out = run(tmp_path, "gqm-sft", rows, "--test-size", "1")
    assert rc == 0
    conversations = read(out) + read(out, "test")
    assert len(conversations) == 3
    for row in conversations:
        user, assistant = row["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        source = next(r for r in rows if r["src_text"] in user["content"])
        scores = dict(zip("ABCD", source["scores"]))
        assert assistant["content"].endswith(
            f"### Final Ranking:\n\n{gqm.format_ranking(gqm.ranking_from_scores(scores))}\n\n"
            f"### Scores:\n\n{gqm.format_scores(scores)}\n"
        )
        parsed = protocols.read_gqm_output(assistant["content"], 4)
        assert isinstance(parsed, protocols.GQMOutput) and parsed.scores == scores
        assert "B > A > C > D" not in assistant["content"]  # the annotator's own verdict lines are dropped
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["out_train"]["file_name"] == "train.parquet" and info["out_test"]["formatting"] == "sharegpt"
    assert info["out_train"]["columns"] == {"messages": "messages"}


def test_sft_empty_analysis_is_rejected_unless_no_cot(tmp_path, capsys):
    no_analysis = group(2)
    del no_analysis["analysis"]
    rows = [group(0), {**group(1), "analysis": "   "}, no_analysis]
    rc, _ = run(tmp_path, "gqm-sft", rows)
    assert rc == 2 and "field 'analysis': empty analysis" in capsys.readouterr().err
    rc, out = run(tmp_path, "gqm-sft", rows, "--no-cot", "--prompt-type", "score")
    assert rc == 0
    answers = [r["messages"][1]["content"] for r in read(out)]
    assert answers == [gqm.format_scores(dict(zip("ABCD", r["scores"])), "ABCD") + "\n" for r in rows]
    assert "Do not write an analysis" in read(out)[0]["messages"][0]["content"]


def test_a_build_that_accepts_no_row_fails_and_writes_nothing(tmp_path, capsys):
    rows = [{**group(0), "scores": [1]}, {**group(1), "mt_texts": []}]
    rejects = tmp_path / "rejects.jsonl"
    rc, out = run(tmp_path, "gqm-rl", rows, "--skip-bad", "--rejects", str(rejects))
    assert rc == 2 and "no row accepted out of 2" in capsys.readouterr().err
    assert not (out / "train.parquet").exists() and len(rejects.read_text().splitlines()) == 2


def test_clean_analysis_drops_only_trailing_verdict_lines():
    labels = ("A", "B", "C")
    text = "B reads best.\nRanking:\nB > A = C\n\n**Scores**: \nB: 8, A: 5, C: 5\n"
    assert clean_analysis(text, labels) == ("B reads best.", 4)
    assert clean_analysis("B > A = C is my guess.\nThen more text.", labels) == (
        "B > A = C is my guess.\nThen more text.",
        0,
    )
    assert clean_analysis("B > A = C", labels) == ("", 1)


def test_verl_multiturn_sft_dataset_loads_the_sft_parquet(tmp_path, tokenizer):
    """verl's own SFT dataset class (what verl.trainer.sft_trainer builds) reads our parquet, and only
    the assistant turn carries loss."""
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    rows = [group(i, n=2) for i in range(3)]
    rc, out = run(tmp_path, "gqm-sft", rows, "--system-prompt", "You rank translations.")
    assert rc == 0
    config = {"messages_key": "messages", "max_length": 4096, "truncation": "error", "pad_mode": "no_padding"}
    dataset = MultiTurnSFTDataset(str(out / "train.parquet"), tokenizer, config)
    assert len(dataset) == 3
    item = dataset[0]
    learned = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()].tolist())
    conversation = read(out)[0]["messages"]
    assert conversation[2]["content"].strip() in learned
    assert conversation[1]["content"][:40] not in learned

    from writing_rl.data.sft_check import check_sft, compose_sft

    config = compose_sft(
        [
            f"data.train_files={out / 'train.parquet'}",
            f"model.path={tokenizer.name_or_path}",
            "data.max_length=4096",
            "data.train_batch_size=8",
            "trainer.n_gpus_per_node=8",
        ]
    )
    checked = check_sft(config, sample=3)
    assert any("3 rows of 'messages' chats" in line for line in checked)
    assert any(line.startswith("verl MultiTurnSFTDataset on 3 rows: longest") for line in checked)
    short = compose_sft(
        [
            f"data.train_files={out / 'train.parquet'}",
            f"model.path={tokenizer.name_or_path}",
            "data.max_length=50",
            "data.train_batch_size=8",
            "trainer.n_gpus_per_node=8",
        ]
    )
    with pytest.raises(ValueError, match="> data.max_length=50"):
        check_sft(short, sample=3)
