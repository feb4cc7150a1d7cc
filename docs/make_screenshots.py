"""The README's pictures of the three pages: docs/view-corefs.png, view-qa.png, view-classify.png.

Runs the real commands on the bundled models over examples/ (`lfcli corefs` on the
lamplighter story, `lfcli qa -k 3` on examples/questions.jsonl, zero-shot `lfcli classify` on
examples/docs/), opens each page from disk in headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) at 1200x800 and saves what it shows.

    python docs/make_screenshots.py              # writes docs/view-*.png
    python docs/make_screenshots.py --keep DIR   # also keeps the pages in DIR
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLES = REPO / "examples"
MOST_BYTES = 300_000

# name -> the arguments after `lfcli` (run in examples/; the page is appended as -o), and a script run
# on the page before the picture (None: as it opens)
VIEWS = {
    "corefs": (["corefs", "docs/the_lamplighter.txt"], None),
    "qa": (["qa", "questions.jsonl", "--top-k", "3"], None),
    "classify": (["classify", "docs", "--labels", "medicine,law,news,fiction"],
                 "document.querySelector('th[data-sort=score]').click()"),
}


def browser(width: int, height: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size={width},{height}"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for the PNGs (default: docs/)")
    parser.add_argument("--keep", type=Path, default=None, help="also keep the pages here")
    parser.add_argument("--size", default="1200x800", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    width, height = map(int, args.size.split("x"))
    work = Path(tempfile.mkdtemp(prefix="lfcli-views-"))
    pages = args.keep or work
    pages.mkdir(parents=True, exist_ok=True)
    driver = browser(width, height)
    try:
        for name, (command, prepare) in VIEWS.items():
            page = pages / f"{name}.html"
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "lfcli", *command, "-o", str(page.resolve()), "--force", "--quiet"],
                           check=True, cwd=EXAMPLES)
            driver.get(page.resolve().as_uri())
            if prepare:
                driver.execute_script(prepare)
            time.sleep(0.3)  # let the corefs page paint what is on screen
            png = args.out / f"view-{name}.png"
            driver.save_screenshot(str(png))
            size = png.stat().st_size
            print(f"{png}: {size / 1000:.0f} KB ({time.perf_counter() - started:.1f} s)")
            if size > MOST_BYTES:
                print(f"  larger than {MOST_BYTES / 1000:.0f} KB: try a smaller --size", file=sys.stderr)
    finally:
        driver.quit()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
