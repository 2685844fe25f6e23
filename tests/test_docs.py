"""The documentation agrees with the code: the site builds with ``mkdocs build --strict`` (a broken link or
anchor, or a page missing from the nav, fails), the configuration reference is what the code gives, every
``writing-rl`` and ``build_parquet.py`` command shown parses with the options it uses, and every Hydra key
shown exists in a shipped overlay's composed config."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import os
import re
import shlex
import subprocess
import sys

import pytest
from markdown import markdown as markdown_to_html
from omegaconf import OmegaConf

from conftest import REPO_DIR

PAGES = sorted([REPO_DIR / "README.md", *(REPO_DIR / "docs").rglob("*.md")])
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
HYDRA_ROOTS = ("actor_rollout_ref", "algorithm", "critic", "data", "reward", "trainer", "ray_kwargs")
HYDRA_KEY = re.compile(rf"^(\+{{0,2}})((?:{'|'.join(HYDRA_ROOTS)})(?:\.[A-Za-z_][\w]*)+)(=.*)?$")
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), REPO_DIR / name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def code_blocks(text: str) -> list[str]:
    return [block.replace("\\\n", " ") for block in FENCE.findall(text)]


def commands() -> list[tuple[str, list[str]]]:
    """(page, argv after the program) for every writing-rl / build_parquet.py command in a code block."""
    found = []
    for page in PAGES:
        for block in code_blocks(page.read_text(encoding="utf-8")):
            for line in block.splitlines():
                line = line.split(" #", 1)[0].strip()
                if "writing-rl " not in line and "build_parquet.py " not in line:
                    continue
                for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
                    words = shlex.split(part.replace("$(pwd)", "PWD"))
                    while words and (ENV.match(words[0]) or words[0] in ("$", "bash", "exec")):
                        words.pop(0)
                    if words[:1] == ["writing-rl"]:
                        found.append((page.relative_to(REPO_DIR).as_posix(), ["writing-rl", *words[1:]]))
                    elif len(words) > 1 and words[0].startswith("python") and words[1].endswith("build_parquet.py"):
                        found.append((page.relative_to(REPO_DIR).as_posix(), ["build_parquet.py", *words[2:]]))
    return found


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = (REPO_DIR / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    first_screen = "\n".join(lines[:60])
    assert "bash scripts/quickstart.sh" in first_screen and "bash scripts/test.sh" in first_screen


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO_DIR, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return site


def test_the_site_builds_strict(built_site):
    assert (built_site / "reference" / "config" / "index.html").is_file()
    brpo = (built_site / "methods" / "brpo" / "index.html").read_text(encoding="utf-8")
    assert '<div class="formula"><math' in brpo and "<mfrac>" in brpo  # formulas built into MathML
    assert '<span class="c1">' in (built_site / "getting-started" / "index.html").read_text(encoding="utf-8")


def test_the_site_reads_well_in_a_browser(built_site, tmp_path):
    """Every page in headless Chromium at a laptop's and a narrow window's width: nothing wider than the
    page, code highlighted with a copy button and not cut, formulas laid out, images loaded. .ci/run installs
    Chromium and sets WRITING_RL_REQUIRE_BROWSER=1 so that CI fails rather than skips here."""
    checker = load_script("scripts/check_docs_site.py")
    try:
        checker.find(checker.CHROMIUM, "chromium")
        checker.find(checker.DRIVER, "chromedriver")
        import selenium  # noqa: F401
    except (FileNotFoundError, ImportError) as missing:
        if os.environ.get("WRITING_RL_REQUIRE_BROWSER") == "1":
            raise
        pytest.skip(f"no headless browser here ({missing}): apt-get install chromium chromium-driver")
    problems = checker.check(built_site)
    if problems:  # pictures only when there is something to look at (they take most of the time)
        checker.check(built_site, screenshots=tmp_path / "screenshots")
    shots = tmp_path / "screenshots"
    assert not problems, f"{len(problems)} problem(s), screenshots in {shots}:\n" + "\n".join(problems)


def page_formulas(markdown: str, name: str = "page.md"):
    hook = load_script("scripts/mkdocs_math.py")
    page = type("Page", (), {"file": type("File", (), {"src_uri": name})()})()
    html = hook.on_page_markdown(markdown, page=page)
    return hook, page, html


def test_formulas_become_mathml_and_code_is_left_alone():
    markdown = (
        "Inline $`y_i`$ here, and the syntax itself: `` $`...`$ ``.\n\n$$\n\\frac{1}{K}\n$$\n\n"
        "```bash\necho $$\n$$\nx\n$$\necho $`y`$\n```\n\n- a list\n\n  ```\n  $`z`$\n  ```\n"
    )
    hook, page, stashed = page_formulas(markdown)
    assert "```bash\necho $$\n$$\nx\n$$\necho $`y`$\n```" in stashed  # the fence untouched
    assert "`` $`...`$ ``" in stashed and "  ```\n  $`z`$\n  ```" in stashed  # a code span, an indented fence
    html = hook.on_page_content(markdown_to_html(stashed, extensions=["fenced_code"]), page=page)
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline"><mrow><msub><mi>y</mi>' in html
    assert '<div class="formula"><math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mrow><mfrac>' in html
    assert "WRLMATH" not in html and "echo $$\n$$\nx\n$$\necho $`y`$" in html


@pytest.mark.parametrize("latex", [r"\fraction{1}{2}", r"x^"])
def test_a_formula_that_cannot_render_fails_the_build_naming_the_page(latex):
    with pytest.raises(ValueError, match=r"methods/x\.md: cannot render the formula"):
        page_formulas(f"$$\n{latex}\n$$\n", "methods/x.md")


def test_the_configuration_reference_is_current():
    reference = load_script("scripts/config_reference.py")
    assert reference.PAGE.read_text(encoding="utf-8") == reference.render(), (
        "docs/reference/config.md is stale: run python scripts/config_reference.py"
    )


def test_every_key_we_set_or_declare_has_a_description_in_the_reference():
    reference = load_script("scripts/config_reference.py")
    sections = reference.code_sections() + reference.reward_fn_sections() + reference.overlay_sections()
    undescribed = [
        f"{s.title or s.prefix}: {setting.key}" for s in sections for setting in s.settings if not setting.note
    ]
    assert not undescribed, f"keys with no comment (in the overlay or above the dataclass field): {undescribed}"
    # A comment of several lines is kept whole (BRPO's win_rule once lost its first line), read from the code.
    (brpo,) = [s for s in reference.overlay_sections() if s.prefix == "brpo"]
    notes = {setting.key: setting.note for setting in brpo.settings}
    assert notes["reward.custom_reward_function.reward_kwargs.win_rule"].startswith("mean: the average")
    assert notes["reward.custom_reward_function.reward_kwargs.win_rule"].endswith("in every comparison, else -1.")


def test_every_config_key_is_in_the_reference_and_every_key_there_in_the_code():
    from writing_rl.reward_loop.config import ManagerConfig
    from writing_rl.reward_loop.registry import extras
    from writing_rl.terms.builtin import BUILTIN

    def keys(cls, prefix: str) -> set[str]:
        found = set()
        for field in dataclasses.fields(cls):
            key = f"{prefix}.{field.name}"
            if "from" in field.metadata:  # filled from another section
                continue
            if field.name == "extras":  # each method extra's section, under its name
                with_settings = {name: e.settings for name, e in extras().items() if getattr(e, "settings", None)}
                found |= {key for name, cls in with_settings.items() for key in keys(cls, f"{prefix}.{name}")}
            elif field.name == "terms":
                found |= {f"{key}.{name}.{f.name}" for name, term in BUILTIN.items() for f in dataclasses.fields(term)}
            elif isinstance(field.default_factory, type) and dataclasses.is_dataclass(field.default_factory):
                found |= keys(field.default_factory, key)
            else:
                found.add(key)
        return found

    in_code = keys(ManagerConfig, "reward.reward_kwargs")
    page = (REPO_DIR / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    code_part = page.split("## The shipped overlays")[0]
    in_reference = set()
    for section, body in re.findall(r"^### `([\w.]+)`\n(.*?)(?=^### |\Z)", code_part, re.M | re.S):
        for row in re.findall(r"^\| (`[^|]+`) \| [^|]*\| [^|]*\| ([^\n]*)\|$", body, re.M):
            if not row[1].strip().startswith("the section "):
                in_reference |= {f"{section}.{key}" for key in re.findall(r"`(\w+)`", row[0])}
    assert in_code - in_reference == set(), "in the code, missing from docs/reference/config.md"
    assert in_reference - in_code == set(), "in docs/reference/config.md, not in the code"


@functools.lru_cache(maxsize=None)
def composed_keys() -> frozenset[str]:
    """Every key of every shipped overlay's composed config (with each genrm, entry and node preset, and the
    preset), and of
    verl's SFT trainer config (``scripts/train_genrm_sft.sh``)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from writing_rl.offline.compose import compose

    keys: set[str] = set()

    def walk(node, prefix: str) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                key = f"{prefix}.{name}" if prefix else str(name)
                keys.add(key)
                walk(value, key)

    overlays = [p.stem for p in (REPO_DIR / "hydra_configs").glob("*.yaml") if p.stem != "judge_base"]
    variants = [(name, ()) for name in overlays]
    variants += [("writing_rl", (f"+genrm={g}",)) for g in ("colocated", "standalone")]
    variants += [("writing_rl", ("+preset=writing_rl_original",)), ("writing_rl", ("+backend=cpu",))]
    variants += [("writing_rl", (f"+entry={e}",)) for e in ("fully_async", "one_step_off")]
    variants += [("writing_rl", (f"+node={n}",)) for n in ("one_gpu", "eight_gpus")]
    for name, overrides in variants:
        walk(OmegaConf.to_container(compose(name, overrides), resolve=False), "")
    GlobalHydra.instance().clear()
    with initialize_config_module("verl.trainer.config", version_base=None):
        walk(OmegaConf.to_container(hydra_compose("sft_trainer_engine"), resolve=False), "")
    GlobalHydra.instance().clear()
    return frozenset(keys)


def shown_hydra_keys() -> list[tuple[str, str, str]]:
    """(page, prefix, key) for each Hydra override in a code block and each full key in inline code."""
    shown = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        words = [w for block in code_blocks(text) for w in block.split()]
        words += INLINE.findall(FENCE.sub("", text))
        for word in words:
            match = HYDRA_KEY.match(word.strip("`'\",;()"))
            if match:
                shown.append((page.relative_to(REPO_DIR).as_posix(), match[1], match[2]))
    return shown


def test_the_docs_show_commands_and_keys():
    # the checks below are not vacuous: the docs show many of each
    assert len(commands()) >= 20 and len(shown_hydra_keys()) >= 100


@pytest.mark.parametrize("page,argv", commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v[:3]))
def test_each_command_shown_parses(page, argv, capsys):
    if argv[0] == "writing-rl":
        from writing_rl.tools.cli import build_parser
    else:
        build_parser = load_script("data_prep/build_parquet.py").build_parser
    parser, path = build_parser(), []
    options = {o for a in parser._actions for o in a.option_strings}
    for word in argv[1:]:
        if word.startswith("-"):
            continue
        choices = subparsers(parser)
        if not choices:
            break
        assert word in choices, f"{page}: {' '.join(argv)}: no subcommand {word!r} (there: {', '.join(choices)})"
        parser, path = choices[word], [*path, word]
        options |= {o for a in parser._actions for o in a.option_strings}
    for word in argv[1:]:
        flag = word.strip("[]").split("=", 1)[0]
        if flag.startswith("--"):
            assert flag in options, f"{page}: {' '.join(argv)}: {flag} is not an option of {' '.join(path) or argv[0]}"
    try:
        build_parser().parse_args(filled(argv))
    except SystemExit:
        pytest.fail(f"{page}: {' '.join(argv)}: argparse refuses it: {capsys.readouterr().err.strip()}")
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([*path, "--help"])
    assert done.value.code == 0 and "usage:" in capsys.readouterr().out


def filled(argv: list[str]) -> list[str]:
    """The words argparse gets from a command shown: an optional part's brackets dropped, ``...`` (more
    options) and a trailing ``&`` left out, a placeholder ``<name>`` given a value."""
    words = [word.strip("[]") for word in argv[1:] if word not in ("...", "&")]
    return [re.sub(r"<[^<>]+>", "placeholder", word) for word in words]


def test_a_command_shown_is_filled_in_for_argparse():
    assert filled(["writing-rl", "eval", "x", "[--exclude", "Focus]", "--out", "<dir>", "..."]) == [
        "eval", "x", "--exclude", "Focus", "--out", "placeholder"
    ]  # fmt: skip


def test_each_hydra_key_shown_exists():
    known = composed_keys()
    missing = []
    for page, plus, key in shown_hydra_keys():
        if key in known or (plus and key.rsplit(".", 1)[0] in known):
            continue
        missing.append(f"{page}: {plus}{key}")
    assert missing == [], "keys shown in the docs that no shipped overlay has (a new key needs a leading +)"


def test_each_config_group_shown_exists():
    shown = set()
    for page in PAGES:
        shown |= {
            (page.name, *m) for m in re.findall(r"\+(genrm|preset|node|entry)=(\w+)", page.read_text(encoding="utf-8"))
        }
    assert shown, "the docs show the genrm presets"
    for page, group, name in shown:
        assert (REPO_DIR / "hydra_configs" / group / f"{name}.yaml").is_file(), f"{page}: +{group}={name}"


PATH_SHOWN = re.compile(
    r"(?<![\w/.-])((?:writing_rl|reward_fns|data_prep|hydra_configs|scripts|bench|tests|examples)/[\w/.*-]*\w)"
)
SUBPACKAGE_SHOWN = re.compile(r"(?<![\w/.-])((?:reward_loop|judge|protocols|data|terms|genrm|tools)/[\w/]*\.py)")
MODULE_SHOWN = re.compile(r"(?<![\w/.-])((?:writing_rl|reward_fns)(?:\.\w+)+)")


def test_each_file_and_module_shown_exists():
    """Paths like ``writing_rl/judge/http.py`` and names like ``writing_rl.genrm.pool.GenRMPool`` in the docs
    name something that is there: a moved module fails here, not in a reader's hands."""
    import importlib

    missing = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for path in set(PATH_SHOWN.findall(text)):
            candidates = [REPO_DIR / path, REPO_DIR / f"{path}.py", page.parent / path]  # or beside the page
            if not any(c.exists() for c in candidates) and "*" not in path:
                missing.append(f"{page.name}: {path}")
        for path in set(SUBPACKAGE_SHOWN.findall(text)):  # short for writing_rl/<path>
            if not (REPO_DIR / "writing_rl" / path).exists():
                missing.append(f"{page.name}: {path}")
        for dotted in set(MODULE_SHOWN.findall(text)):
            parts = dotted.split(".")
            if parts[-1] in ("py", "yaml", "md", "json", "jsonl", "sh"):
                continue  # a file name
            for cut in range(len(parts), 0, -1):
                try:
                    target = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                try:
                    for attribute in parts[cut:]:
                        target = getattr(target, attribute)
                except AttributeError:
                    missing.append(f"{page.name}: {dotted}")
                break
            else:
                missing.append(f"{page.name}: {dotted}")
    assert sorted(missing) == [], "\n".join(sorted(missing))


MAP_ROOTS = ("writing_rl", "reward_fns", "data_prep", "bench")


def map_blocks(section: str) -> list[tuple[int, str]]:
    """(indent, text) of each bullet and paragraph, its lines joined; a paragraph has indent -1."""
    blocks: list[tuple[int, str]] = []
    for line in section.splitlines():
        bullet = re.match(r"( *)- ", line)
        if bullet:
            blocks.append((len(bullet[1]), line[bullet.end() :]))
        elif line.strip() and blocks and blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], f"{blocks[-1][1]} {line.strip()}")
        elif line.strip():
            blocks.append((-1, line.strip()))
        else:
            blocks.append((-1, ""))  # a blank line ends the block
    return [block for block in blocks if block[1]]


def architecture_map() -> set[str]:
    """The module and folder paths the map of docs/architecture.md names, each backticked name in the folder
    its bullet or paragraph is about: a paragraph led by a bold root (**`bench/`**), a bullet led by a
    folder (- `judge/`: ...), a bullet without one in its parent's folder. A folder named inside a bullet
    (`commands/` (...)) holds the names after it too; a path from a root (`writing_rl/data/`) is itself."""
    page = (REPO_DIR / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("\n## Map\n", 1)[1].split("\n## ", 1)[0]
    named: set[str] = set()
    root, scopes = None, []  # scopes: (indent, folder) of the bullets above
    for indent, text in map_blocks(section):
        if indent < 0:
            bold = re.match(r"\*\*`(\w+)/`\*\*", text)
            root, scopes = (bold[1] if bold else None), []
            folder, text = root, text[bold.end() :] if bold else text
        else:
            scopes = [(i, f) for i, f in scopes if i < indent]
            parent = scopes[-1][1] if scopes else root
            lead = re.match(r"`(\w+)/`", text)
            folder = f"{parent}/{lead[1]}" if lead and parent else parent
            text = text[lead.end() :] if lead else text
            scopes.append((indent, folder))
        if folder is None:
            continue
        named.add(folder)
        inner = None
        for token in re.findall(r"`([^`\s]+)`", text):
            name = token.removesuffix(".py").rstrip("/")
            if not re.fullmatch(r"[\w/]+", name):
                continue  # a command, a placeholder
            if name.split("/")[0] in MAP_ROOTS:
                named.add(name)  # a path from a root
            elif token.endswith("/"):
                inner = f"{folder}/{name}"
                named.add(inner)
            else:
                named |= {f"{folder}/{name}", *([f"{inner}/{name}"] if inner else [])}
    return named


def test_the_architecture_map_names_every_module():
    """docs/architecture.md is the one map of the code: every module and package of ours is on it, in its
    own folder (a protocols/prompts on the map does not stand for data/builders/prompts), so the map cannot
    fall behind a move."""
    named = architecture_map()
    missing = []
    for root in MAP_ROOTS:
        for path in (REPO_DIR / root).rglob("*.py"):
            if path.stem in ("__init__", "__main__") or "__pycache__" in path.parts:
                continue
            if path.relative_to(REPO_DIR).with_suffix("").as_posix() not in named:
                missing.append(path.relative_to(REPO_DIR).as_posix())
        for folder in (REPO_DIR / root).rglob("*/"):
            if folder.is_dir() and folder.name != "__pycache__":
                if folder.relative_to(REPO_DIR).as_posix() not in named:
                    missing.append(folder.relative_to(REPO_DIR).as_posix() + "/")
    assert missing == [], "not on the map in docs/architecture.md, in their folders: " + ", ".join(missing)
    assert "writing_rl/data/builders/prompts" in named and "writing_rl/data/prompts" not in named


def test_the_preflight_output_shown_is_what_check_config_prints():
    from writing_rl.offline.compose import compose
    from writing_rl.tools.preflight.config_checks import check_config

    page = (REPO_DIR / "docs" / "getting-started.md").read_text(encoding="utf-8")
    shown = {line.strip().removeprefix("ok").strip() for line in page.splitlines() if line.strip().startswith("ok ")}
    shown = {line for line in shown if line.startswith(("reward manager", "reward fn", "judge health", "curriculum"))}
    judge = ["reward.reward_kwargs.judge.base_url=http://127.0.0.1:41917/v1", "reward.reward_kwargs.judge.model=m"]
    printed = {line.replace(str(REPO_DIR) + "/", "") for line in check_config(compose("writing_rl", judge))}
    assert len(shown) == 4 and shown <= printed, shown - printed
