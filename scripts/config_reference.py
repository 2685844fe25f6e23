"""Write docs/reference/config.md, the configuration reference, from the code and the shipped overlays.

    python scripts/config_reference.py           # rewrite the page
    python scripts/config_reference.py --check   # exit 1 when the page is not what the code gives

Two sources, so the page cannot drift from either: the config dataclasses that read ``reward.reward_kwargs``
(each field's default and the comment written above it), and every YAML file in ``hydra_configs/`` (each
key it sets, its value and its comment). ``tests/test_docs.py`` runs the check.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from a checkout
PAGE = REPO / "docs" / "reference" / "config.md"
OVERLAYS = REPO / "hydra_configs"
CODE_PREFIX = "reward.reward_kwargs"  # documented from the dataclasses, not from judge_base.yaml
FN_PREFIX = "reward.custom_reward_function.reward_kwargs"  # each reward fn's RewardOptions
# ManagerConfig's (and JudgeConfig's) fields documented as sections of their own (extras: one section per extra)
SECTIONS = ("judge", "groups", "extras", "terms", "price", "budget", "ensemble", "shadow")


@dataclass(frozen=True)
class Setting:
    key: str  # relative to the section
    default: str
    note: str
    allowed: str = ""  # the field's option() bounds: "≥ 1", "> 0", "0–1", "one of: a, b"
    section_note: str = ""  # an overlay's key: the nearest comment above its section (when it has none of its own)


@dataclass(frozen=True)
class Section:
    prefix: str
    source: str
    summary: str
    settings: tuple[Setting, ...]
    title: str = ""  # the heading; default: the prefix


def code_sections() -> list[Section]:
    from writing_rl.judge.config import JudgeBudget, JudgeConfig, JudgePrice
    from writing_rl.judge.ensemble_config import EnsembleConfig
    from writing_rl.reward_loop.config import GroupConfig, ManagerConfig, ShadowConfig
    from writing_rl.reward_loop.registry import extras
    from writing_rl.terms.builtin import BUILTIN

    classes = [
        (CODE_PREFIX, ManagerConfig),
        (f"{CODE_PREFIX}.judge", JudgeConfig),
        (f"{CODE_PREFIX}.judge.price", JudgePrice),
        (f"{CODE_PREFIX}.judge.budget", JudgeBudget),
        (f"{CODE_PREFIX}.judge.ensemble", EnsembleConfig),
        (f"{CODE_PREFIX}.groups", GroupConfig),
        *((f"{CODE_PREFIX}.{name}", e.settings) for name, e in extras().items() if getattr(e, "settings", None)),
        (f"{CODE_PREFIX}.shadow", ShadowConfig),
        *((f"{CODE_PREFIX}.terms.{name}", cls) for name, cls in BUILTIN.items()),
    ]
    return [section_of(prefix, cls) for prefix, cls in classes]


def reward_fn_sections() -> list[Section]:
    """Each registered method's options (``RewardMethod.options``; ``RewardOptions`` in ours), by module."""
    from writing_rl.reward_loop.registry import methods

    sections = []
    for method in sorted(methods().values(), key=lambda m: m.module):
        if method.method.options is not None:
            section = section_of(FN_PREFIX, method.method.options)
            sections.append(dataclasses.replace(section, title=method.path))
    return sections


def section_of(prefix: str, cls: type) -> Section:
    from writing_rl.reward_loop.registry import extras
    from writing_rl.settings import allowed

    notes = field_comments(cls)
    settings = []
    for f in dataclasses.fields(cls):
        if "from" in f.metadata:  # filled from another section (verl's trainer, ...), not a setting
            continue
        if cls.__name__ == "ShadowConfig" and f.name == "judge":  # a JudgeConfig of its own
            default, note = "", f"the keys of `{CODE_PREFIX}.judge` above (max_concurrency 16 by default)"
        elif f.name == "extras":  # one section per method extra, each under its own name
            for name in (name for name, e in extras().items() if getattr(e, "settings", None)):
                settings.append(Setting(name, "", f"the section `{prefix}.{name}` below (a method's extra)", ""))
            continue
        elif f.name in SECTIONS:
            default, note = "", f"the section `{prefix}.{f.name}` below"
        elif f.name == "watch":  # a mapping of names to functions, none by default
            default, note = "{}", notes.get(f.name, "")
        else:
            value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            default, note = yaml_value(value), notes.get(f.name, "")
        settings.append(Setting(f.name, default, note, allowed(f)))
    source = inspect.getsourcefile(cls)
    summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ").replace("``", "`")
    summary = summary.replace(f"`{prefix}`: ", "").replace(f": `{prefix}`.", ".").replace(f"`{prefix}`", "this section")
    return Section(prefix, f"{Path(source).relative_to(REPO)}: {cls.__name__}", summary, tuple(settings))


def field_comments(cls: type) -> dict[str, str]:
    """Each field's comment: the ``#`` lines right above it, or above the run of fields it belongs to,
    and a comment at the end of its line."""
    lines, _ = inspect.getsourcelines(cls)
    text = "".join(lines).splitlines()
    body = ast.parse("".join(lines)).body[0].body
    comments: dict[str, str] = {}
    current = ""
    for node in body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        above = []
        row = node.lineno - 2
        while row >= 0 and text[row].strip().startswith("#"):
            above.insert(0, text[row].strip().lstrip("#").strip())
            row -= 1
        if above:
            current = " ".join(above)
        elif row >= 0 and not text[row].strip():
            current = ""  # a blank line ends a commented run of fields
        inline = text[node.lineno - 1].split("  # ", 1)[1].strip() if "  # " in text[node.lineno - 1] else ""
        comments[node.target.id] = " ".join(part for part in (current, inline) if part)
    return comments


def yaml_value(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(list(value) if isinstance(value, tuple) else value)
    return str(value)


KEY_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_+][\w.+-]*):(?:\s+(?P<rest>.*))?$")


def overlay_settings(path: Path) -> tuple[str, list[Setting]]:
    """(the first paragraph of the file's header comment, every key it sets with its value and the comment
    above or beside it)."""
    header: list[str] = []
    pending: list[str] = []
    stack: list[tuple[int, str]] = []
    settings: list[Setting] = []
    seen_key = False
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped:
            if not seen_key and pending:
                header += pending
            pending = []
            continue
        if stripped.startswith("#"):
            text = stripped.lstrip("#").strip()
            if not stripped.startswith("# @package"):
                pending.append(text)
            continue
        match = KEY_LINE.match(line)
        if stripped.startswith("- ") or not match:
            pending = []
            continue
        seen_key = True
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = ".".join([k for _, k, _ in stack] + [match["key"]])
        value, _, inline = (match["rest"] or "").partition(" #")
        note = " ".join(pending + ([inline.strip()] if inline.strip() else []))
        pending = []
        section = next((n for _, _, n in reversed(stack) if n), "")  # the nearest comment above its section
        stack.append((indent, match["key"], note))
        if key == "defaults" or key.startswith("hydra"):
            continue
        if value.strip() or note:
            settings.append(Setting(key, value.strip() or "(section)", note, section_note=section))
    while header and not header[0]:
        header.pop(0)
    first_paragraph = " ".join(header[: header.index("")] if "" in header else header)
    return re.sub(r":$", ".", first_paragraph), settings


def documented_in_code() -> dict[str, str]:
    """Full key -> the comment of its field in the code: reward.reward_kwargs and each reward fn's options
    (``reward.custom_reward_function.reward_kwargs.<option>@<fn>``)."""
    notes = {f"{section.prefix}.{s.key}": s.note for section in code_sections() for s in section.settings}
    for section in reward_fn_sections():
        notes.update({f"{FN_PREFIX}.{s.key}@{section.title}": s.note for s in section.settings})
    return notes


def described(settings: list[Setting], code: dict[str, str]) -> list[Setting]:
    """A key the overlay sets without a comment of its own is described by its field's comment in the code, else
    by the nearest comment above its section."""
    fn = next((s.default for s in settings if s.key == "reward.custom_reward_function.path"), None)
    return [
        s if s.note else dataclasses.replace(s, note=_code_note(code, s.key, fn) or s.section_note) for s in settings
    ]


def _code_note(code: dict[str, str], key: str, fn: str | None) -> str:
    """The comment of ``key`` in the code: the fn's option (an overlay without a fn of its own, a preset: the
    option's comment where every method that has it agrees), else a setting's."""
    if f"{key}@{fn}" in code:
        return code[f"{key}@{fn}"]
    options = {note for name, note in code.items() if name.startswith(f"{key}@")}
    return options.pop() if fn is None and len(options) == 1 else code.get(key, "")


def overlay_sections() -> list[Section]:
    sections = []
    code = documented_in_code()
    for path in sorted(OVERLAYS.rglob("*.yaml"), key=lambda p: (len(p.parts), p.name != "judge_base.yaml", p.name)):
        header, settings = overlay_settings(path)
        # judge_base.yaml lists every reward.reward_kwargs default (documented from the code above); the
        # other overlays' keys there are overrides of those defaults, shown with their overlay.
        base = path.name == "judge_base.yaml"
        kept = tuple(s for s in described(settings, code) if not (base and s.key.startswith(f"{CODE_PREFIX}.")))
        sections.append(
            Section(str(path.relative_to(OVERLAYS).with_suffix("")), str(path.relative_to(REPO)), header, kept)
        )
    return sections


def runs(settings: tuple[Setting, ...]) -> list[list[Setting]]:
    """Consecutive settings that share one comment, together (one table row)."""
    grouped: list[list[Setting]] = []
    for setting in settings:
        if grouped and setting.note and setting.note == grouped[-1][0].note:
            grouped[-1].append(setting)
        else:
            grouped.append([setting])
    return grouped


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    out = [
        "# Configuration reference",
        "",
        "Generated by `python scripts/config_reference.py` from the code and the shipped overlays; do not edit",
        "by hand (`tests/test_docs.py` fails when this page and the code disagree). How the settings fit",
        "together: [Configuration](../configuration.md).",
        "",
        "## Judge and infrastructure: `reward.reward_kwargs`",
        "",
        "Read once per reward worker; an unknown key or a value out of range stops the run at start (and",
        "`writing-rl check-config` finds it before). *allowed*: the bounds each field declares (`option(...)`,",
        "writing_rl/settings.py), here and for the method options below; blank where a field declares none",
        "(the reward terms check their values in their own code).",
        "",
    ]
    out += code_tables(code_sections())
    out += [
        "## Method options: `reward.custom_reward_function.reward_kwargs`",
        "",
        "Each reward method declares its options (`METHOD.options`, `RewardOptions` in ours); `writing-rl check-config`, the",
        "preflight and the reward workers' start refuse an unknown option or a value out of bounds.",
        "",
    ]
    out += code_tables(reward_fn_sections())
    out += [
        "## The shipped overlays",
        "",
        "What each file in `hydra_configs/` sets on top of verl's `ppo_trainer`, and why (the keys under",
        "`reward.reward_kwargs` and each method's options are described above).",
        "",
    ]
    for section in overlay_sections():
        out += [
            f"### `{section.prefix}`",
            "",
            f"`{section.source}`" + (f": {section.summary}" if section.summary else ""),
            "",
        ]
        if section.settings:
            out += ["| key | value | |", "|---|---|---|"]
            out += [f"| `{s.key}` | `{cell(s.default)}` | {cell(s.note)} |" for s in section.settings]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def code_tables(sections: list[Section]) -> list[str]:
    out = []
    for section in sections:
        out += [f"### `{section.title or section.prefix}`", "", f"{section.summary} (`{section.source}`)", ""]
        out += ["| key | default | allowed | |", "|---|---|---|---|"]
        for run in runs(section.settings):
            keys = ", ".join(f"`{s.key}`" for s in run)
            defaults = ", ".join(f"`{cell(s.default)}`" for s in run if s.default)
            bounds = {s.allowed for s in run}
            allowed = bounds.pop() if len(bounds) == 1 else "; ".join(s.allowed or "any" for s in run)
            out.append(f"| {keys} | {defaults} | {cell(allowed)} | {cell(run[0].note)} |")
        out.append("")
    return out


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(REPO)} is stale: run python scripts/config_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
