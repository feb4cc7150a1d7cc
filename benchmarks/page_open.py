"""Benchmark: how fast a whole novel's corefs page opens and scrolls in a real browser.

The page of `lfcli corefs book.txt -o chains.html` holds a novel (700 KB of text, 20,000+
mentions); its script paints each section of the text when it comes near the screen. This
opens such a page in headless Chromium (Debian's chromium and chromium-driver, driven by
selenium) and times, per round: opening it from disk until the load event, the mentions
painted then, and scrolling to the end a screen per frame (the whole scroll and its slowest
frame). Text: the first 700 KB of Tess of the d'Urbervilles from ../shared/data, else
generated prose; chains: every name used eight times or more, and the pronouns.

    python benchmarks/page_open.py            # 5 rounds
    python benchmarks/page_open.py --quick    # 1 round
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
NOVEL = "110_tess_of_the_durbervilles_a_pure_woman.txt"
# Scroll a screen per frame to the end; then the time, the slowest frame, the last section's
# painted mentions and its index.
SCROLL_TO_END = """
    const done = arguments[arguments.length - 1], t0 = performance.now();
    let worst = 0, last = t0;
    function step() {
      const now = performance.now(); worst = Math.max(worst, now - last); last = now;
      window.scrollBy(0, 4000);
      if (innerHeight + scrollY < document.documentElement.scrollHeight - 2) return requestAnimationFrame(step);
      requestAnimationFrame(() => requestAnimationFrame(() => {
        const secs = document.querySelectorAll('.sec'), lastSec = secs[secs.length - 1];
        done([performance.now() - t0, worst, lastSec.querySelectorAll('.m').length, lastSec.dataset.k]);
      }));
    }
    requestAnimationFrame(step);"""


def why_no_browser() -> str | None:
    """Why headless Chromium cannot be driven here (what to install), or None."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return "no Chromium: apt-get install chromium chromium-driver"
    try:
        import selenium  # noqa: F401  (optional: lfcli's dev extra)
    except ImportError:
        return "no selenium: pip install selenium (in lfcli's dev extra)"
    return None


def start_browser():
    """Headless Chromium at 1200 x 800, driven by selenium."""
    from selenium import webdriver  # optional: lfcli's dev extra
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,800"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def novel_text(data: Path | None = None) -> str:
    """700 KB of a LitBank novel when the shared data is here, else of generated prose."""
    source = (data or common.shared_data_dir()) / "litbank" / "original" / NOVEL
    if source.exists():
        return source.read_text(encoding="utf-8")[:700_000]
    names = ["Tess", "Angel", "Alec", "Joan", "Marian", "Izz", "Retty", "Crick"]
    lines, k = [], 0
    while sum(map(len, lines)) < 700_000:
        a, b = names[k % 8], names[(k * 3 + 1) % 8]
        lines.append(f"{a} looked at {b} and she said that he would come back, and {b} told {a} it was late.\n\n")
        k += 1
    return "".join(lines)[:700_000]


def novel_rows(text: str) -> list[dict]:
    """Chains made from the words: each name used eight times or more, and the pronouns."""
    words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[A-Za-z][a-z]*", text)]
    counts = Counter(w for _, _, w in words if w[0].isupper())
    usual = set("The A I It He She They We You But And Then When What There Her His In Of This That As So If".split())
    names = {w for w, n in counts.items() if n >= 8 and w not in usual}
    pronouns = {"she": "she", "her": "she", "he": "he", "him": "he", "his": "he", "they": "they", "them": "they",
                "it": "it", "its": "it", "i": "I", "me": "I", "my": "I", "you": "you", "your": "you", "we": "we",
                "us": "we", "who": "who", "which": "who", "that": "that"}
    chains: dict[str, list[dict]] = {}
    for s, e, w in words:
        key = w if w in names else pronouns.get(w.lower())
        if key:
            chains.setdefault(key, []).append({"start": s, "end": e, "text": w})
    return [{"id": "novel.txt", "chains": [{"name": k if k in names else None, "mentions": v} for k, v in chains.items()]}]


def open_and_scroll(browser, path: Path) -> dict:
    """One round on a page already written at `path`: open, count, scroll to the end."""
    started = time.perf_counter()
    browser.get(path.resolve().as_uri())
    opened = time.perf_counter() - started
    first = browser.execute_script("return document.querySelectorAll('.m').length")
    took, worst, painted_last, k = browser.execute_async_script(SCROLL_TO_END)
    return {"open_s": opened, "painted_at_open": first, "scroll_s": took / 1000, "worst_frame_ms": worst,
            "painted_last": painted_last, "last_section": k}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 5; --quick 1)")
    p.add_argument("--quick", action="store_true", help="one round")
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 5)
    if (why := why_no_browser()) is not None:
        raise SystemExit(why)
    from lfcli.pipelines.view.show import render  # lazy: pyarrow, after the checks

    text = novel_text()
    rows = novel_rows(text)
    mentions = sum(len(c["mentions"]) for c in rows[0]["chains"])
    info = common.machine_info(common.resolve_device("cpu"))
    common.print_header("The corefs page of a novel in headless Chromium", info)
    browser = start_browser()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "novel.html"
            path.write_text(render("corefs", rows, {"novel.txt": text}), encoding="utf-8")
            print(f"{len(text.encode()):,} bytes of text, {mentions:,} mentions in {len(rows[0]['chains'])} chains; "
                  f"page {path.stat().st_size:,} bytes; {rounds} round(s)")
            runs = [open_and_scroll(browser, path) for _ in range(rounds)]
    finally:
        browser.quit()
    common.print_table(["round", "open s", "painted at open", "scroll to end s", "slowest frame ms"],
                       [[i + 1, f"{r['open_s']:.2f}", r["painted_at_open"], f"{r['scroll_s']:.2f}",
                         f"{r['worst_frame_ms']:.0f}"] for i, r in enumerate(runs)])
    summary = {k: statistics.median(r[k] for r in runs) for k in ("open_s", "scroll_s", "worst_frame_ms")}
    print("medians: open {open_s:.2f} s, scroll to end {scroll_s:.2f} s, slowest frame {worst_frame_ms:.0f} ms".format(**summary))
    results = {"benchmark": "page_open", "machine": info, "bytes": len(text.encode()), "mentions": mentions,
               "runs": runs, "median": summary}
    common.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
