"""The HTML views in a real browser: headless Chromium (Debian's chromium and chromium-driver)
driven by selenium opens each page from disk and checks what a person sees: a chain's colour
on its mentions, one chain highlighted, answers best first and the jump to their passage, the
classify table sorted by a click, a quote's speaker on hover, a document's `<script>` shown and never run, no request
leaving the page, and a whole novel's page painting only what is near the screen, then its
last chapter when scrolled there (how fast: benchmarks/page_open.py).
Skipped, saying what to install, where Chromium, chromedriver or selenium is missing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from shared_data import DATA

from lfcli.pipelines.view.show import render

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from page_open import novel_rows, novel_text, open_and_scroll, start_browser, why_no_browser  # noqa: E402

EVIL = 'He wrote <script>window.pwned = 1; document.title = "pwned"</script> and left.'
TITLE = "lfcli corefs"


@pytest.fixture(scope="module")
def browser():
    if (why := why_no_browser()) is not None:
        pytest.skip(why)
    driver = start_browser()
    yield driver
    driver.quit()


def open_page(browser, path: Path, page: str) -> None:
    path.write_text(page, encoding="utf-8")
    browser.get(path.resolve().as_uri())


def wait_for(browser, condition: str, seconds: float = 10) -> None:
    """Until the page's JavaScript `condition` holds: a page paints its text's sections as
    they come into view, after the load event `browser.get` waits for."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, seconds).until(lambda b: b.execute_script(f"return Boolean({condition})"))


def requests_made(browser) -> list[str]:
    return browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")


def ran_nothing(browser, title: str) -> bool:
    return browser.execute_script("return window.pwned === undefined && document.title") == title


def spans(text: str, pattern: str) -> list[dict]:
    return [{"start": m.start(), "end": m.end(), "text": m.group()} for m in re.finditer(pattern, text)]


# -- corefs -----------------------------------------------------------------------------------
def story_rows(text: str) -> list[dict]:
    return [{"id": "story.txt", "chains": [
        {"name": "Anna", "mentions": spans(text, r"\bAnna\b|\b[Ss]he\b|\bher\b")},
        {"name": None, "mentions": spans(text, r"\bher box\b|\bit\b")},  # "her" nests inside "her box"
    ]}]


def test_a_chain_has_one_colour_and_a_click_highlights_it_alone(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    text = "Anna opened her box 😀. She said it was empty.\r\n" + EVIL + "\n\nAnna left; she took it."
    open_page(browser, tmp_path / "story.html", render("corefs", story_rows(text), {"story.txt": text}))
    wait_for(browser, "document.querySelector('.m.c1')")
    colours = browser.execute_script("""
        const bg = el => getComputedStyle(el).backgroundColor;
        return [0, 1].map(c => Array.from(document.querySelectorAll('.m.c' + c)).map(
            el => [el.textContent, bg(el)]).concat([['swatch', bg(document.querySelector('.sw.c' + c))]]));""")
    anna, box = colours
    assert [t for t, _ in anna] == ["Anna", "her", "She", "Anna", "she", "swatch"]
    assert [t for t, _ in box] == ["her box", "it", "it", "swatch"]  # on its words, after the emoji too
    assert {c for _, c in anna} == {"rgb(255, 209, 102)"} and {c for _, c in box} == {"rgb(142, 202, 230)"}
    browser.find_element(By.CSS_SELECTOR, 'li[data-c="1"]').click()
    seen = browser.execute_script("""
        const look = el => [getComputedStyle(el).backgroundColor, getComputedStyle(el).boxShadow];
        return [document.body.dataset.chain, look(document.querySelector('.m.c0')), look(document.querySelector('.m.c1'))];""")
    assert seen[0] == "1"
    assert seen[1] == ["rgba(0, 0, 0, 0)", "none"]  # Anna faded
    assert seen[2][0] == "rgb(142, 202, 230)" and seen[2][1] != "none"  # the box outlined
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    assert browser.execute_script("return document.body.dataset.chain") == ""
    shown = browser.find_element(By.CSS_SELECTOR, "article").text
    assert "<script>window.pwned = 1;" in shown and ran_nothing(browser, TITLE)
    assert requests_made(browser) == []


def test_hovering_a_quote_names_its_speaker_and_highlights_the_speakers_chain(browser, tmp_path):
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.by import By

    text = "\u201cI am tired,\u201d said Anna. Tom laughed.\n\n\u201cSo am I.\u201d\n\n\u201cWho knows?\u201d"
    rows = [{"id": "d", "chains": [{"name": "Tom", "mentions": spans(text, r"\bTom\b")},
                                   {"name": "Anna", "mentions": spans(text, r"\bAnna\b|(?<=\u201c)I\b")}],
             "quotes": [{"start": m.start(), "end": m.end(), "speaker": who} for m, who in
                        zip(re.finditer("\u201c[^\u201d]*\u201d", text), (1, 0, None))]}]
    open_page(browser, tmp_path / "quotes.html", render("corefs", rows, {"d": text}))
    wait_for(browser, "document.querySelectorAll('.q').length == 3")
    said = browser.execute_script("return Array.from(document.querySelectorAll('.q')).map(q => [q.textContent, q.title])")
    assert said == [["\u201cI am tired,\u201d", "said by Anna"], ["\u201cSo am I.\u201d", "said by Tom"],
                    ["\u201cWho knows?\u201d", "speaker not found"]]
    assert browser.execute_script("return document.querySelector('.q .m').textContent") == "I"  # its mentions inside
    ActionChains(browser).move_to_element(browser.find_elements(By.CSS_SELECTOR, ".q")[1]).perform()
    assert browser.execute_script("return document.body.dataset.chain") == browser.execute_script(
        "return Array.from(document.querySelectorAll('li[data-c]')).find(li => li.textContent.startsWith('Tom')).dataset.c")


def test_chains_side_by_side_look_different_past_the_palette(browser, tmp_path):
    """60 chains whose mentions stand side by side: as a reader sees them (computed style),
    each two neighbours differ in colour or underline, and the chain picked alone keeps its look."""
    from selenium.webdriver.common.by import By

    words = [f"W{c}" for c in range(60)]
    text = " ".join(words) + "\n\n" + " ".join(["W0 W24 W48"] * 5) + "\n\n" + " ".join(reversed(words))
    rows = [{"id": "d", "chains": [{"name": w, "mentions": spans(text, rf"\b{w}\b")} for w in words]}]
    open_page(browser, tmp_path / "many.html", render("corefs", rows, {"d": text}))
    wait_for(browser, "document.querySelectorAll('.m').length >= 135")
    seen = browser.execute_script("""
        const look = el => { const s = getComputedStyle(el); return s.backgroundColor + ' ' + s.borderBottomStyle; };
        return Array.from(document.querySelectorAll('.m')).map(el => [el.textContent, look(el)]);""")
    assert len(seen) == 60 + 15 + 60
    assert all(a[1] != b[1] for a, b in zip(seen, seen[1:]) if a[0] != b[0]), seen
    assert len({look for _, look in seen}) == 60
    assert any(look.endswith(("solid", "dashed", "dotted")) for _, look in seen)  # the second cue, past 24 colours
    c = browser.execute_script("return Array.from(document.querySelectorAll('.m')).find(el => el.textContent === 'W30')"
                               ".className.match(/c(\\d+)/)[1]")
    # clicked from script: no pointer left hovering over another chain's mention after the scroll
    browser.execute_script("arguments[0].click()", browser.find_element(By.CSS_SELECTOR, f'li[data-c="{c}"]'))
    picked = browser.execute_script(f"""
        const s = getComputedStyle(document.querySelector('.m.c{c}')), o = getComputedStyle(document.querySelector('.m:not(.c{c})'));
        return [s.backgroundColor, s.boxShadow, o.backgroundColor, o.borderBottomColor];""")
    assert picked[0] != "rgba(0, 0, 0, 0)" and picked[1] != "none"  # the chosen chain at once
    assert picked[2] == "rgba(0, 0, 0, 0)" and picked[3] == "rgba(0, 0, 0, 0)"  # the others faded, underline too


def test_typing_in_the_chain_box_filters_the_list_by_title(browser, tmp_path):
    """The "find a chain" box hides every chain whose title does not hold what is typed (the
    list items' own display rule must not show them again), and shows them all once cleared."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    names = ["Anna", "Bob", "Boris", "Carla", "Dmitri", "Edith", "Fyodor", "Greta", "Hugo", "Ilse", "Jonas", "Karl",
             "Lotte", "Max"]
    text = " ".join(names) + ". I said so. I left. I came back. " + " ".join(names[:3])
    rows = [{"id": "d", "quotes": [], "chains": [{"name": n, "mentions": spans(text, rf"\b{n}\b")} for n in names]
             + [{"name": None, "mentions": spans(text, r"\bI\b")}]}]
    open_page(browser, tmp_path / "filter.html", render("corefs", rows, {"d": text}))

    def shown():
        return browser.execute_script("""return Array.from(document.querySelectorAll('.chains li'))
            .filter(li => li.getBoundingClientRect().height > 0 && getComputedStyle(li).display !== 'none')
            .map(li => li.querySelector('.nm').textContent);""")

    assert shown()[:4] == ["I (narrator)", "Anna", "Bob", "Boris"] and len(shown()) == 15
    box = browser.find_element(By.CSS_SELECTOR, ".chains input")
    box.send_keys("bo")
    assert shown() == ["Bob", "Boris"]
    box.send_keys("r")
    assert shown() == ["Boris"]
    box.send_keys(Keys.BACKSPACE, Keys.BACKSPACE, Keys.BACKSPACE, "narr")
    assert shown() == ["I (narrator)"]
    box.send_keys("x")
    assert shown() == []
    box.clear()
    box.send_keys(" ")  # an input event with nothing but space typed: every chain again
    assert len(shown()) == 15


# -- qa ---------------------------------------------------------------------------------------
def test_answers_are_listed_best_first_and_jump_to_their_passage(browser, tmp_path):
    from selenium.webdriver.common.by import By

    text = ("Preamble. " * 300 + "The lease runs for five years from 1 March. The rent is 36,000 a year. "
            + EVIL + " Notice is due six months before the end.")
    found = {w: text.index(w) for w in ("five years", "36,000", "six months")}
    answers = [{"answer": w, "start": s, "end": s + len(w), "score": p}
               for (w, s), p in zip(found.items(), (0.55, 0.05, 0.3))]
    row = {"id": "lease", "question": "How long <b>is</b> it?", **answers[0], "answers": answers}
    open_page(browser, tmp_path / "qa.html", render("qa", [row], {"lease": text}))
    listed = [li.text.split("\n")[0] for li in browser.find_elements(By.CSS_SELECTOR, "ol.answers > li")]
    assert listed == ["five years 0.550", "six months 0.300", "36,000 0.050"]
    badges = [b.text for b in browser.find_elements(By.CSS_SELECTOR, ".passage sup.rank")]
    assert badges == ["1 · 0.550", "3 · 0.050", "2 · 0.300"]  # in text order, each with its rank and score
    box = browser.find_element(By.CSS_SELECTOR, ".box")
    assert box.get_property("scrollTop") == 0
    browser.find_element(By.LINK_TEXT, "six months").click()
    where = browser.execute_script("""
        const m = document.querySelector('mark:target'), b = document.querySelector('.box');
        const r = m.getBoundingClientRect(), q = b.getBoundingClientRect();
        return [location.hash, m.textContent, r.top >= q.top && r.bottom <= q.bottom, b.scrollTop];""")
    assert where[:3] == ["#r0a1", "six months", True] and where[3] > 0  # scrolled down to it in the passage
    assert "How long <b>is</b> it?" in browser.find_element(By.CSS_SELECTOR, ".q").text
    assert ran_nothing(browser, "lfcli qa") and requests_made(browser) == []


# -- classify ---------------------------------------------------------------------------------
def test_the_table_sorts_by_score_and_label_on_click(browser, tmp_path):
    from selenium.webdriver.common.by import By

    rows = [{"id": "a.txt", "label": "news", "score": 0.5, "scores": {"news": 0.5, "law": 0.3, "fiction": 0.2}},
            {"id": "b.txt", "error": "empty document"},
            {"id": "c.txt", "label": "fiction", "score": 0.9, "scores": {"fiction": 0.9, "law": 0.1}},
            {"id": "d.txt", "label": "law", "score": 0.7, "scores": {"law": 0.7, "news": 0.3}}]
    open_page(browser, tmp_path / "labels.html", render("classify", rows, {"a.txt": EVIL, "c.txt": "x", "d.txt": "y"}))

    def order():
        return [tr.get_attribute("data-id") for tr in browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")]

    assert order() == ["a.txt", "b.txt", "c.txt", "d.txt"]
    score = browser.find_element(By.CSS_SELECTOR, 'th[data-sort="score"]')
    score.click()
    assert order() == ["c.txt", "d.txt", "a.txt", "b.txt"] and score.get_attribute("aria-sort") == "descending"
    score.click()
    assert order() == ["a.txt", "d.txt", "c.txt", "b.txt"]  # the error row stays last
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="label"]').click()
    assert order() == ["c.txt", "d.txt", "a.txt", "b.txt"] and score.get_attribute("aria-sort") is None
    bars = browser.execute_script("""return Array.from(document.querySelectorAll('tr[data-id="a.txt"] .bar > i'))
        .map(i => i.getBoundingClientRect().width / i.parentElement.getBoundingClientRect().width);""")
    assert [round(w, 2) for w in bars] == [0.5, 0.3, 0.2]
    assert ran_nothing(browser, "lfcli classify") and requests_made(browser) == []


def test_score_bars_line_up_from_row_to_row(browser, tmp_path):
    """Labels of any length: every row's bars start at the same x, in the table and in the
    documents' cards, so a reader compares scores down a column."""
    labels = ["law", "a very long label about medicine and health", "news", "fiction and other stories"]

    def row(name, order):
        probs = dict(zip([labels[i] for i in order], (0.6, 0.25, 0.1, 0.05)))
        return {"id": name, "label": labels[order[0]], "score": 0.6, "scores": probs}

    rows = [row("a.txt", (0, 2, 3, 1)), row("b.txt", (1, 0, 2, 3)), row("c.txt", (2, 3, 0, 1))]
    open_page(browser, tmp_path / "bars.html", render("classify", rows, {r["id"]: "text" for r in rows}))
    where = browser.execute_script("""
        const xs = sel => Array.from(document.querySelectorAll(sel)).map(b => Math.round(b.getBoundingClientRect().left));
        return [xs('table.rows tbody .bar'), xs('section.card[id^="r"] .bar'), xs('.summary .bar')];""")
    table, cards, summary = where
    assert len(table) == 9 and len(set(table)) == 1, table
    assert len(cards) == 12 and len(set(cards)) == 1, cards
    assert len(set(summary)) == 1, summary
    widths = browser.execute_script("""return Array.from(document.querySelectorAll('table.rows tbody .bar'))
        .map(b => Math.round(b.getBoundingClientRect().width));""")
    assert len(set(widths)) == 1  # the same scale in every row


# -- a whole novel ----------------------------------------------------------------------------
def test_a_novel_paints_only_what_is_near_the_screen_and_scrolling_paints_its_end(browser, tmp_path):
    """A whole novel's page paints its sections as they come near the screen (how fast:
    benchmarks/page_open.py)."""
    text = novel_text(DATA)
    rows = novel_rows(text)
    mentions = sum(len(c["mentions"]) for c in rows[0]["chains"])
    assert len(text.encode()) >= 690_000 and mentions > 20_000
    path = tmp_path / "novel.html"
    path.write_text(render("corefs", rows, {"novel.txt": text}), encoding="utf-8")
    seen = open_and_scroll(browser, path)
    assert 0 < seen["painted_at_open"] < mentions / 10, seen  # only the sections near the screen are painted
    assert seen["painted_last"] > 0
    assert browser.execute_script(f"return JSON.parse(document.getElementById('lfcli-data').textContent)"
                                  f".sections[{seen['last_section']}].length / 3") == seen["painted_last"]
    assert requests_made(browser) == []
