"""Look at the built docs site in a real headless browser (Chromium through Selenium) and list what a
reader would find broken, page by page, at a laptop's and a narrow window's width:

- a table, code block, formula, image or line of text wider than the page's column (cut off or
  pushing the page sideways), a code block whose lines run past its edge,
- a code block in a named language with no highlighting, or with no copy button,
- a formula the browser did not lay out as mathematics, an image that did not load.

    python scripts/check_docs_site.py [--site DIR] [--screenshots DIR]

builds the site (mkdocs build --strict) unless --site names a built one, serves it on 127.0.0.1 and
exits 1 listing the problems. Needs Chromium and its driver (Debian: apt-get install chromium
chromium-driver) and `pip install -e .[docs]`. tests/test_docs.py runs it."""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
WIDTHS = (1280, 820)  # a laptop; a narrow window (the side navigation folds away below 960)
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")

# Runs in the page; returns a list of problems (strings). Waits on nothing: the caller polls `ready` first.
MEASURE = """
const column = document.querySelector('.md-content__inner');
if (!column) return ['no .md-content__inner: not a page of the site'];
// The content area, margins included: what the reader sees between the navigation and the page's edge.
const edge = Math.min(document.querySelector('.md-content').getBoundingClientRect().right, window.innerWidth) + 1;
const problems = [];
const quote = el => el.tagName.toLowerCase() + ' "' + el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 70) + '"';
for (const el of column.querySelectorAll('table, pre, img, .formula, p, li, h1, h2, h3, h4')) {
  const right = Math.max(...Array.from(el.getClientRects(), r => r.right), 0);
  if (right > edge) problems.push(`${Math.round(right - edge)} px wider than the page: ${quote(el)}`);
}
for (const el of column.querySelectorAll(':not(pre) > code')) {
  const right = Math.max(...Array.from(el.getClientRects(), r => r.right), 0);
  if (right > edge) problems.push(`code ${Math.round(right - edge)} px past the page's edge: ${quote(el)}`);
}
for (const block of column.querySelectorAll('div.highlight')) {
  const named = Array.from(block.classList).some(c => c.startsWith('language-') && c !== 'language-text');
  const pre = block.querySelector('pre');
  if (named && !block.querySelector('pre span[class]')) problems.push(`not highlighted: ${quote(pre)}`);
  if (!block.querySelector('[data-md-type=copy]')) problems.push(`no copy button: ${quote(pre)}`);
  const code = block.querySelector('pre > code');
  if (code.scrollWidth > code.clientWidth + 1) problems.push(`code block cut (lines run past its edge): ${quote(pre)}`);
}
for (const formula of column.querySelectorAll('.formula')) {
  if (formula.scrollWidth > formula.clientWidth + 1) problems.push(`formula cut (scrolls sideways): ${quote(formula)}`);
}
for (const math of column.querySelectorAll('math')) {
  const box = math.getBoundingClientRect();
  if (box.height === 0) problems.push(`formula not shown: ${quote(math)}`);
  for (const frac of math.querySelectorAll('mfrac')) {
    const [top, bottom] = Array.from(frac.children, c => c.getBoundingClientRect());
    if (!(top.bottom <= bottom.top + 1)) problems.push(`formula not laid out as mathematics: ${quote(math)}`);
  }
}
for (const img of column.querySelectorAll('img')) {
  if (!img.complete || img.naturalWidth === 0) problems.push(`image did not load: ${img.getAttribute('src')}`);
}
return problems;
"""
# Material adds the copy buttons once its script has run.
READY = """
const blocks = document.querySelectorAll('.md-content div.highlight').length;
const buttons = document.querySelectorAll('.md-content div.highlight [data-md-type=copy]').length;
return document.readyState === 'complete' && buttons >= blocks;
"""


def find(candidates: tuple[str, ...], name: str) -> str:
    for path in candidates:
        if Path(path).is_file():
            return path
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found (Debian: apt-get install chromium chromium-driver)")
    return found


def build_site(site: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO_DIR, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"mkdocs build failed:\n{done.stderr[-4000:]}")


@contextlib.contextmanager
def served(site: Path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = find(CHROMIUM, "chromium")
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
    ):  # fmt: skip
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(options=options, service=Service(find(DRIVER, "chromedriver")))
        try:
            yield driver
        finally:
            driver.quit()


def wait_until_ready(driver, deadline_s: float = 30.0) -> bool:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if driver.execute_script(READY):
            return True
        time.sleep(0.05)
    return False


def pages_of(site: Path) -> list[str]:
    return sorted(
        path.relative_to(site).as_posix()
        for path in site.rglob("index.html")
        if not path.relative_to(site).as_posix().startswith(("assets/", "search/"))
    )


def check(site: Path, screenshots: Path | None = None) -> list[str]:
    """Every problem found, as 'page (width px): problem'."""
    problems = []
    with served(site) as root, browser() as driver:
        for width in WIDTHS:
            driver.set_window_size(width, 900)
            for page in pages_of(site):
                driver.get(f"{root}/{page}")
                if not wait_until_ready(driver):
                    problems.append(f"{page} ({width} px): the page's script never finished (no copy buttons)")
                    continue
                problems += [f"{page} ({width} px): {p}" for p in driver.execute_script(MEASURE)]
                if screenshots is not None:
                    name = page.removesuffix("index.html").strip("/") or "home"
                    shot = screenshots / str(width) / f"{name}.png"
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    height = driver.execute_script("return document.documentElement.scrollHeight")
                    driver.set_window_size(width, min(height, 12000))  # the whole page in one picture
                    driver.save_screenshot(str(shot))
                    driver.set_window_size(width, 900)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one in a temporary directory)")
    parser.add_argument("--screenshots", type=Path, help="save a screenshot of each page at each width here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="site-") as scratch:
        site = args.site
        if site is None:
            site = Path(scratch) / "site"
            build_site(site)
        problems = check(site, args.screenshots)
        pages = len(pages_of(site))
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) in {pages} pages x {len(WIDTHS)} widths")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
