"""``writing-rl eval eqbench-creative``: a policy on EQ-Bench Creative Writing v3, its rubric score and, against
other models' pieces, its TrueSkill rating (``..eqbench``)."""

from __future__ import annotations

from writing_rl.evaluation.kind import EvalKind, add_out


def add_arguments(p) -> None:
    p.add_argument("--prompts", required=True, help="the benchmark's creative_writing_prompts_v3.json")
    p.add_argument(
        "--responses",
        help="the policy's pieces: JSONL of {prompt_id, iteration, model, response} (model optional) or the "
        "benchmark's runs file (creative_bench_runs.json); required unless --write-requests (default: none)",
    )
    add_out(p)
    p.add_argument(
        "--model", help="the policy's model name in --responses when it holds several (default: its only one)"
    )
    p.add_argument(
        "--pairwise-against",
        action="append",
        metavar="PATH",
        help="other models' pieces (JSONL with model, a runs file, or a directory of them; repeat for more): adds "
        "the TrueSkill rating from pairwise verdicts, every pair of models on every prompt and iteration, both orders; "
        "anchored "
        "when deepseek/deepseek-r1 (1500) and meta-llama/llama-3.2-1b-instruct (200) are among them (default: none, the rubric only)",
    )
    p.add_argument(
        "--template",
        help="rubric judge prompt file: {writing_prompt} (the prompt with <SEED>, as the benchmark fills it), "
        "{seeded_prompt}, {test_model_response} (required), {creative_writing_criteria}, {lower_is_better_criteria}; "
        "the benchmark's data/creative_writing_judging_prompt.txt fits (default: our wording)",
    )
    p.add_argument(
        "--pairwise-template",
        help="pairwise judge prompt file: {writing_prompt}, {seeded_prompt}, {model_a_analysis}, {model_b_analysis}; "
        "the benchmark's data/pairwise_prompt.txt fits (default: our wording)",
    )
    p.add_argument(
        "--system-prompt", help="a system message before each judge request (default: none, as the benchmark)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the rubric bootstrap (default: 0)")
    g = p.add_argument_group("generation requests")
    g.add_argument(
        "--write-requests",
        metavar="FILE",
        help="write the generation inputs (JSONL: prompt_id, iteration, seed_modifier, prompt, ...) and stop: no judge (default: none)",
    )
    g.add_argument("--iterations", type=int, default=3, help="iterations in --write-requests (default: 3)")


def run(args, judge_settings) -> list[str]:
    from writing_rl.evaluation.eqbench import requests_only, run_eqbench_creative
    from writing_rl.evaluation.inputs import InputError

    if args.write_requests:
        return requests_only(args.prompts, args.iterations, args.write_requests, args.out)
    if not args.responses:
        raise InputError("--responses is required (unless --write-requests)")
    return run_eqbench_creative(
        args.prompts, args.responses, args.out, judge_settings(), model=args.model, against=args.pairwise_against or (),
        template=args.template, pairwise_template=args.pairwise_template, system_prompt=args.system_prompt,
        seed=args.seed, cache=args.cache, progress=not args.quiet,
    )  # fmt: skip


KIND = EvalKind(
    name="eqbench-creative",
    help="a policy on EQ-Bench Creative Writing v3: rubric score, and TrueSkill rating against other models",
    description=(
        "Judge a policy's pieces for the benchmark's 32 prompts (3 iterations, one seed modifier each) on its 22 "
        "criteria, 0-20, one judge call per piece; report the benchmark's rubric score (0-20 and x5 on 0-100) with "
        "its 500-draw task bootstrap, per-criterion and per-category means. With --pairwise-against, judge every "
        "pair of models on every prompt and iteration in both orders and report TrueSkill ratings as the benchmark "
        "computes them, anchored to its two anchor models when given. Failed calls and replies with no score are "
        "counted and left out, as the benchmark skips them; a rerun retries only those. Writes report.json, "
        "report.md, pieces.jsonl, comparisons.jsonl (pairwise), criteria.png and ratings.png (pairwise)."
    ),
    epilog=(
        "example: writing-rl eval eqbench-creative --prompts creative_writing_prompts_v3.json --responses "
        "pieces.jsonl --out runs/eqb --judge-url http://127.0.0.1:8000/v1 --judge-model judge"
    ),
    add_arguments=add_arguments,
    run=run,
    module="writing_rl.evaluation.eqbench",
    plot="criteria.png",
)
