"""``writing-rl probe-judge``: a fixed battery of probes (battery.py) sent to a judge through the method's
own reward fn (placing.py), each in both positions against an honest answer, on the user's rows or the ones
we ship (rows.py); then the shares, intervals and verdicts (summary.py) and the reports (outputs.py).

Every judge call goes through the offline tools' cache (``OUT/judge_cache.sqlite`` unless ``cache``): a
rerun repeats no answered call. The self-consistency repeat is cached under a key of its own, so it is
asked once more of the judge, never answered from the first call's reply. Failed calls stop the run
before anything is written, unless allowed; a reply every call would get (401, 403, 404) stops it at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from writing_rl.judge import SampleJudge
from writing_rl.judge.config import JudgeConfig
from writing_rl.judge.errors import JudgeError, JudgeHTTPError
from writing_rl.offline.errors import JudgeFailures, judge_error_line
from writing_rl.offline.judge import STOP_STATUSES, ProgressLine, ToolJudge, open_judge, stop_on_failures
from writing_rl.protocols import strip_think
from writing_rl.protocols.languages import language_name
from writing_rl.reward_loop.probing import ProbePlacement
from writing_rl.settings import ConfigError
from writing_rl.terms.langid import identify
from writing_rl.tools.probe.battery import REPEATED, Probe, ProbeText, select_probes
from writing_rl.tools.probe.job import ProbeJob, probe_method
from writing_rl.tools.probe.placing import Comparison, Placer
from writing_rl.tools.probe.rows import ProbeRow, sample_rows, shipped_rows, user_rows
from writing_rl.tools.probe.summary import ProbeReport, summarise

TRANSLATE = "Translate the text below into {language}. Reply with the translation only, nothing else.\n\n{text}"


@dataclass(frozen=True)
class ProbeTarget:
    """The judge and the reward fn of a training config, as a run would use them."""

    method: str
    placement: ProbePlacement
    judge: JudgeConfig
    fn: Callable
    options: dict[str, Any]  # reward.custom_reward_function.reward_kwargs
    on_parse_error: str  # reward.reward_kwargs.on_parse_error


def load_target(method: str, config_name: str | None, overrides: Sequence[str], config_dir: str | None):
    """The judge and reward fn of ``config_name`` (default: the method's overlay), composed as ``main_ppo`` would."""
    from writing_rl.offline.compose import compose

    overlay = probe_method(method).method.probe.overlay
    return target_of(method, compose(config_name or overlay, overrides, config_dir))


def target_of(method: str, config) -> ProbeTarget:
    from writing_rl.reward_loop.config import ManagerConfig
    from writing_rl.reward_loop.reward_fn import load_reward_fn
    from writing_rl.settings import ConfigError

    known = probe_method(method)
    path = config.reward.custom_reward_function.get("path")
    if path != known.path:
        raise ConfigError(
            f"--method {method} needs reward.custom_reward_function.path={known.path}, the config has "
            f"{path}: pass the method's overlay with --config-name"
        )
    if not (config.reward.reward_kwargs.get("judge") or {}).get("base_url"):
        raise ConfigError("no judge endpoint: pass --judge-url URL (or reward.reward_kwargs.judge.base_url=URL)")
    settings = ManagerConfig.from_verl(config)
    fn = load_reward_fn(config)
    fn.check_options(settings.on_parse_error)
    return ProbeTarget(method, known.method.probe, settings.judge, fn.fn, fn.reward_kwargs, settings.on_parse_error)


def probe_rows(job: ProbeJob) -> list[ProbeRow]:
    if job.data is None:
        return sample_rows(shipped_rows(), job.rows, job.seed)
    rows = user_rows(job.data, job.method, job.responses, probe_method(job.method).method.probe.rows_hold_answer)
    return sample_rows(rows, job.rows, job.seed)


def comparisons_of(rows: list[ProbeRow], probes: Sequence[Probe], slots: Sequence[str], repeat: bool):
    """Every probe that applies to a row, in every slot; the repeats of the close calls at the end."""
    found = []
    for row in rows:
        text = ProbeText(row.prompt, row.honest, row.wrong_language)
        for probe in probes:
            reply = probe.build(text)
            if reply is not None and reply.strip() != row.honest.strip():
                found.extend(Comparison(row, probe.name, reply, slot) for slot in slots)
    if repeat:
        found += [replace(c, repeat=True) for c in found if c.probe in REPEATED]
    return found


def run_probe(job: ProbeJob, target: ProbeTarget) -> ProbeReport:
    """Probe the judge and write ``report.json``, ``report.md``, ``comparisons.jsonl`` and a PNG to ``job.out``."""
    from writing_rl.tools.probe.outputs import write_outputs

    probes = select_probes(list(job.probes))
    rows = probe_rows(job)
    placer = Placer(target.placement, target.options, target.on_parse_error)
    start = time.perf_counter()
    judge = open_judge(target.judge, job.cache_path)
    try:
        rows, replies, comparisons, stats = asyncio.run(_judge_all(job, target, judge, rows, probes, placer))
    except JudgeHTTPError as err:  # a STOP_STATUSES reply: every call would get it
        kept = (
            f". {len(judge)} judge replies are cached in {judge.path}: the same command resumes" if len(judge) else ""
        )
        raise JudgeFailures(f"{judge_error_line(err)}; stopped at the first such reply{kept}") from err
    finally:
        judge.close()
    errors = {"judge_error": sum(o == "error" for o in replies)} if "error" in replies else {}
    stop_on_failures(errors, len(replies), judge, job.allow_judge_errors)
    outcomes = [placer.as_paid(o) for o in replies]
    unread = [o == "unreadable" for o in replies]
    report = summarise(job, target, probes, rows, comparisons, outcomes, unread, stats, time.perf_counter() - start)
    report.outputs = write_outputs(job.out, report, comparisons, outcomes, unread)
    return report


async def _judge_all(job, target, judge: ToolJudge, rows, probes, placer):
    repeat_judge = ToolJudge(judge.judge, judge.path, model=judge.model, sampling={**judge.sampling, "probe_repeat": 1})
    translator = judge
    if job.translate_url or job.translate_model:
        settings = replace(target.judge, base_url=job.translate_url or target.judge.base_url,
                           model=job.translate_model or target.judge.model)  # fmt: skip
        translator = open_judge(settings, job.cache_path)
    limit = asyncio.Semaphore(max(1, target.judge.max_concurrency))
    untranslated = [i for i, row in enumerate(rows) if row.wrong_language is None]
    wanted = any(p.name == "wrong-language" for p in probes)
    bar = ProgressLine(len(untranslated) if wanted else 0, judge, enabled=job.progress)
    try:
        if wanted and untranslated:
            texts = await _gather([_translate(translator, rows[i].honest, other_language(rows[i].honest, job.wrong_language),
                                              limit, bar) for i in untranslated])  # fmt: skip
            for index, text in zip(untranslated, texts):
                rows[index] = replace(rows[index], wrong_language=text)
        comparisons = comparisons_of(rows, probes, placer.slots, job.repeat)
        bar.total += len(comparisons)
        outcomes = await _gather([_compare(placer, c, repeat_judge if c.repeat else judge, limit, bar)
                                  for c in comparisons])  # fmt: skip
    finally:
        bar.end_line()
        for client in {id(judge.judge): judge.judge, id(translator.judge): translator.judge}.values():
            close = getattr(client, "close", None)
            if close is not None:
                await close()
        repeat_judge.close()
        if translator is not judge:
            translator.close()
    return rows, outcomes, comparisons, {"cache": judge.stats, "repeat_cache": repeat_judge.stats}


async def _gather(calls: list) -> list:
    """Run the calls together; the first that raises cancels the others."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _compare(placer, comparison: Comparison, judge, limit: asyncio.Semaphore, bar: ProgressLine) -> str:
    """The outcome as read from the judge's reply, "unreadable" kept (``run_probe`` applies what the run pays)."""
    async with limit:
        sample = SampleJudge(judge)
        outcome = await placer.outcome(comparison, sample)
    for err in sample.errors:
        if isinstance(err, JudgeHTTPError) and err.status in STOP_STATUSES:
            raise err
    bar(1)
    return outcome


async def _translate(translator, text: str, language: str, limit: asyncio.Semaphore, bar: ProgressLine) -> str | None:
    """``text`` in ``language``, or None when the call failed or the reply holds no text (the
    wrong-language probe then leaves the row out)."""
    messages = [{"role": "user", "content": TRANSLATE.format(language=language, text=text)}]
    async with limit:
        try:
            reply = await translator.complete(messages)
        except JudgeHTTPError as err:
            if err.status in STOP_STATUSES:
                raise
            reply = None
        except JudgeError:
            reply = None
    bar(1)
    if reply is None or reply.finish_reason == "length":
        return None
    translated = (strip_think(reply.text) or "").strip()
    return translated if translated and translated != text.strip() else None  # an echo is no other language


def other_language(text: str, wanted: str) -> str:
    """``wanted``, unless ``text`` is already in it (a German answer put into German is no wrong-language
    probe): then English, or German when English was wanted."""
    try:
        found = language_name(identify(text))
    except (ConfigError, ValueError):  # no language identifier here: as asked
        return wanted
    if found != language_name(wanted):
        return wanted
    return "German" if found == "English" else "English"
