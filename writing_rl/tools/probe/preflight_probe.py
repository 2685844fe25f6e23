"""``writing-rl preflight --probe``: a small probe battery on the training config's own judge and reward fn,
reported as preflight lines: a judge whose replies the reward cannot read, or a flagged probe, is a problem,
an inconclusive probe a note.

The rows are four of the ones we ship (a preflight reads no user file it may not reach); the probes are
``battery.PREFLIGHT_PROBES`` in both positions, plus the position bias over them; no self-consistency
repeats. Its outputs go to a temp directory, kept (and named in the report) only when there is a problem.
``writing-rl probe-judge`` runs the whole battery."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from writing_rl.tools.probe.battery import PREFLIGHT_PROBES
from writing_rl.tools.probe.job import ProbeJob, probe_methods
from writing_rl.tools.probe.summary import UNREADABLE_ADVICE, readable_counts
from writing_rl.tools.probe.verdict import FAILED, FLAGGED, INCONCLUSIVE, NO_DATA

PREFLIGHT_ROWS = 4


def method_of(config) -> str | None:
    """The probe-able method whose fn the config names, or None."""
    path = config.reward.custom_reward_function.get("path")
    return next((name for name, known in probe_methods().items() if known.path == path), None)


def probe_check(config, report) -> None:
    """Run the small battery and add its lines to the preflight ``report``."""
    from writing_rl.tools.probe.run import run_probe, target_of

    method = method_of(config)
    if method is None:
        path = config.reward.custom_reward_function.get("path")
        report.note(f"judge probe skipped: {path} is not a method probe-judge knows ({', '.join(probe_methods())})")
        return
    if config.reward.reward_model.get("enable"):
        report.note("judge probe skipped: verl hosts the GenRM, which runs only inside training")
        return
    out = Path(tempfile.mkdtemp(prefix="writing-rl-probe-"))
    job = ProbeJob(method=method, out=out, rows=PREFLIGHT_ROWS, probes=PREFLIGHT_PROBES, repeat=False,
                   progress=False)  # fmt: skip
    try:
        summary = run_probe(job, target_of(method, config)).summary
    except Exception as err:  # noqa: BLE001 - any failure of the probe is one line of the report
        shutil.rmtree(out, ignore_errors=True)
        report.problem(f"judge probe ({method}): {' '.join(str(err).splitlines())}")
        return
    if not summary["flagged"] and not summary["failed"]:
        shutil.rmtree(out, ignore_errors=True)
    readable_check(summary["readable"], report, out)
    for name, share in [*((p["name"], p) for p in summary["probes"]), ("position-bias", summary["position_bias"])]:
        status = share["status"]
        if status in (NO_DATA, "not applicable"):
            continue
        line = (f"judge probe {name}: the judge fell for it in {share['hits']}/{share['n']} comparisons "
                f"(95% CI {share['ci95'][0]:.2f}-{share['ci95'][1]:.2f}, limit {share['threshold']:.2f})")  # fmt: skip
        if status == FLAGGED:
            report.problem(f"{line}: a policy can learn it; see docs/trust-your-judge.md (report in {out})")
        elif status == INCONCLUSIVE:
            report.note(f"{line}: inconclusive on a few rows; run writing-rl probe-judge --method {method}")
        else:
            report.ok(line)


def readable_check(readable: dict, report, out: Path) -> None:
    """The share of judge replies the reward could read: a problem below its limit (the probes then measure
    the reply reader, and training would pay losses or ties instead of verdicts)."""
    if readable["status"] == NO_DATA:
        return
    line = f"judge probe readable: {readable_counts(readable)}"
    if readable["status"] == FAILED:
        report.problem(f"{line}: the reward cannot read this judge's verdicts; {UNREADABLE_ADVICE} (report in {out})")
    else:
        report.ok(line)
