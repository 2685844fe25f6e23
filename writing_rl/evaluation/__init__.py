"""``writing-rl eval``: what training bought, measured on the same judge layer as the rewards.

``stats`` (bootstrap intervals, Kendall tau, the length-controlled win rate) and ``report`` (report.json,
report.md, plots) are shared; each kind does its work in one module: ``writingbench``, ``winrate``,
``genrm_pairwise``, ``genrm_ranking``, ``rewardbench`` (over ``rewardbench_sets``: the benchmark's files and
weights). Every judge call goes through the offline tools' cached judge in ``--out``, so a rerun repeats no
call it already made and an interrupted run loses nothing it finished.

``writing-rl eval`` builds one subcommand per kind of ``kinds.KINDS``: each kind's declaration
(``kind.EvalKind``: its options and how it runs) in ``kinds/``, light enough for ``--help``.
"""
