"""scripts/mutations.py's list of deliberate breaks stays true to the code: each break's text occurs exactly
once in its file, the tests named to catch it exist, every reward fn and built-in term has a break, and
docs/development.md names each one. The breaks themselves are not run here (minutes each): run
``python scripts/mutations.py``."""

from __future__ import annotations

import re

import pytest
from test_docs import load_script

from conftest import REPO_DIR

mutations = load_script("scripts/mutations.py")
BREAKS = mutations.BREAKS


@pytest.mark.parametrize("item", BREAKS, ids=lambda b: b.name)
def test_each_break_applies_once_and_names_tests_that_exist(item):
    text = (REPO_DIR / item.path).read_text(encoding="utf-8")
    assert text.count(item.old) == 1, f"{item.name}: its text occurs {text.count(item.old)} times in {item.path}"
    assert item.new != item.old and item.what and item.tests
    for test in item.tests:
        path, _, name = test.partition("::")
        source = (REPO_DIR / path).read_text(encoding="utf-8")
        assert not name or re.search(rf"^def {re.escape(name)}\(", source, re.M), f"{item.name}: no test {test}"


def test_breaks_cover_every_reward_and_term_and_the_page_names_them():
    names = [b.name for b in BREAKS]
    assert len(set(names)) == len(names)
    broken = {b.path for b in BREAKS}
    rewards = {p.relative_to(REPO_DIR).as_posix() for p in (REPO_DIR / "reward_fns").glob("[!_]*.py")}
    assert rewards <= broken, f"reward fns with no break: {sorted(rewards - broken)}"
    from writing_rl.terms.builtin import BUILTIN

    terms = [b for b in BREAKS if b.path == "writing_rl/terms/builtin.py"]
    assert {t for t in BUILTIN if not any(b.name.startswith(t) for b in terms)} == set()
    page = (REPO_DIR / "docs" / "development.md").read_text(encoding="utf-8")
    assert [n for n in names if f"`{n}`" not in page] == [], "breaks docs/development.md does not name"


def test_a_break_is_applied_to_a_copy_and_a_stale_one_is_refused(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\nx = 1\ny = 2\n")
    item = mutations.Break("b", "m.py", "y = 2", "y = 3", ("tests/t.py",), "y off by one")
    original = mutations.apply(tmp_path, item)
    assert original == "x = 1\nx = 1\ny = 2\n" and (tmp_path / "m.py").read_text().endswith("y = 3\n")
    with pytest.raises(ValueError, match="occurs 2 times in m.py, not once"):
        mutations.apply(tmp_path, mutations.Break("b", "m.py", "x = 1", "x = 0", (), ""))
