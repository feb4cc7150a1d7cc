"""The HTML views without a browser: escaping, the page's structure and data, reading outputs,
the .html writer (resumable like .json), and `lfcli show` / `-o NAME.html` on the command line.
What a person sees in a real browser is tests/test_views_browser.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from checkpoints import task_checkpoints
from typer.testing import CliRunner

from lfcli.cli import app
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.io.page_rows import ROWS_BLOCK
from lfcli.pipelines.io.writers import open_writer, output_format, sidecar_path
from lfcli.pipelines.view.coref_page import N_COLOURS, NEAR_CHARS, chain_looks, chain_name, section_bounds
from lfcli.pipelines.view.page import dom_text, markup, script_json
from lfcli.pipelines.view.qa_page import ranked_answers
from lfcli.pipelines.view.show import read_output, render, show_rows, task_of

EVIL = 'He wrote <script>window.pwned = 1; document.title = "pwned"</script> & left </script><!-- "x"'
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def data_of(page: str) -> dict:
    raw = re.search(r'<script type="application/json" id="lfcli-data">(.*?)</script>', page, re.S).group(1)
    return json.loads(raw)


def coref_rows(text: str) -> list[dict]:
    """Chains over `text` by the words they name (Anna / she, the box), each named."""
    def spans(pattern):
        return [{"start": m.start(), "end": m.end(), "text": m.group()} for m in re.finditer(pattern, text)]
    return [{"id": "story.txt", "chains": [
        {"name": "Anna", "mentions": spans(r"\bAnna\b|\bshe\b|\bShe\b")},
        {"name": "the box", "mentions": spans(r"\bthe box\b|\bit\b")},
    ]}]


# -- the frame: escaping and markup -----------------------------------------------------------
def test_script_json_cannot_end_its_script_and_reads_back_the_same():
    value = {"t": EVIL, "u": "\u2028line\u2029", "n": float("nan")}
    text = script_json(value)
    assert "</script" not in text.lower() and "<!--" not in text and "<" not in text and "&" not in text
    assert json.loads(text) == {"t": EVIL, "u": "\u2028line\u2029", "n": None}


def test_markup_escapes_nests_and_cuts_crossing_spans():
    text = "<b>Anna</b> and her sister"
    out = markup(text, [(3, 7, "[", "]"), (16, 26, "{", "}"), (16, 19, "(", ")"), (12, 19, "<", ">")])
    # "and her" (12..19) opens first; "her sister" starts inside it and is cut at its end
    assert out == "&lt;b&gt;[Anna]&lt;/b&gt; <and {(her)}> sister"
    assert markup("a<b", []) == "a&lt;b"


def test_dom_text_keeps_offsets_where_html_parsing_would_shift_them():
    assert dom_text("a\r\nb\rc\x00d") == "a \nb\nc\ufffdd"
    assert len(dom_text("x\r\n" * 5)) == 15


# -- corefs -----------------------------------------------------------------------------------
def test_coref_page_escapes_text_and_carries_each_mention_in_utf16_units():
    text = "Anna\r\nopened the box 😀😀; she saw it. " + EVIL + " Anna smiled.\n\n" + "More. " * 1500 + "She left the box."
    rows = coref_rows(text)
    page = render("corefs", rows, {"story.txt": text})
    assert "window.pwned" in page and "<script>window.pwned" not in page
    assert "&lt;script&gt;window.pwned" in page and "http" not in page
    data = data_of(page)
    shown = dom_text(text)
    bounds = section_bounds(shown)
    assert len(bounds) == len(data["sections"]) > 1
    painted = []
    for (lo, hi), flat in zip(bounds, data["sections"]):
        units = shown[lo:hi].encode("utf-16-le")  # what JavaScript's string indexes count
        for k in range(0, len(flat), 3):
            s, e, c = flat[k: k + 3]
            painted.append((units[2 * s: 2 * e].decode("utf-16-le"), c))
    want = [(m["text"], rank) for rank, chain in enumerate(rows[0]["chains"]) for m in chain["mentions"]]
    assert sorted(painted) == sorted(want)  # every mention lands on its own words, emoji or not
    assert data["names"] == ["Anna", "the box"] and data["counts"] == [4, 3]
    assert re.search(r"\.c0\{background-color:#ffd166\}", page) and re.search(r"\.c1\{background-color:#8ecae6\}", page)


def test_coref_page_orders_chains_by_mentions_and_notes_a_text_that_is_not_the_jobs():
    text = "Anna met Bob. Bob said she was late. Bob left."
    rows = [{"id": "d", "chains": [
        {"name": "Anna", "mentions": [{"start": 0, "end": 4, "text": "Anna"}, {"start": 23, "end": 26, "text": "she"}]},
        {"name": "Bob", "mentions": [{"start": 9, "end": 12, "text": "Bob"}, {"start": 14, "end": 17, "text": "Bob"},
                                     {"start": 37, "end": 40, "text": "Bob"}]}]}]
    page = render("corefs", rows, {"d": text})
    names = re.findall(r'<span class="nm">(.*?)</span><span class="ct">(\d+)</span>', page)
    assert names == [("Bob", "3"), ("Anna", "2")]
    assert "do not match" not in page
    moved = render("corefs", rows, {"d": "XX" + text})
    assert "5 of 5 mentions do not match the text" in moved
    missing = render("corefs", rows + [{"id": "gone", "error": "not UTF-8 </script>"}], {})
    assert missing.count("text was not found") == 1 and "error: not UTF-8 &lt;/script&gt;" in missing


def test_chains_that_meet_in_the_text_never_look_the_same():
    """60 chains, more than there are colours: the first 24 take distinct plain colours; chain
    24, which plain cycling would give chain 0's colour (underlined), stands next to chain 0 and
    gets another colour; in the page every pair of chains with neighbouring mentions has its
    own CSS look."""
    words = [f"W{c}" for c in range(60)]
    filler = " . " + "filler " * 100
    # three mentions a chain (so ranks follow the words); the third run puts W0 between W23 and W24
    third = words[1:24] + ["W0"] + words[24:]
    text = " ".join(words) + filler + " ".join(reversed(words)) + filler + " ".join(third)
    rows = [{"id": "d", "chains": [
        {"name": w, "mentions": [{"start": m.start(), "end": m.end(), "text": w} for m in re.finditer(rf"\b{w}\b", text)]}
        for w in words]}]
    page = render("corefs", rows, {"d": text})
    look = dict(re.findall(r"\.c(\d+)\{([^}]*)\}", page))
    assert len({look[str(c)] for c in range(N_COLOURS)}) == N_COLOURS  # the first 24: distinct colours
    assert all("border-bottom" not in look[str(c)] for c in range(N_COLOURS))
    data = data_of(page)
    assert data["names"] == words and len(data["sections"]) == 1  # ranks are the words; one section's offsets
    flat = list(zip(data["sections"][0][::3], data["sections"][0][1::3], data["sections"][0][2::3]))
    met = {frozenset((a[2], b[2])) for a, b in zip(flat, flat[1:]) if a[2] != b[2] and b[0] - a[1] <= NEAR_CHARS}
    assert len(met) == 61 and {frozenset((0, 24)), frozenset((0, 23))} <= met  # 59 side by side, and W0's two
    assert all(look[str(a)] != look[str(b)] for a, b in met)
    assert look["24"].split(";")[0] != look["0"].split(";")[0]  # not chain 0's colour, underline or not
    spans = [(0, 2, 0), (3, 5, 1), (6, 8, 0)]
    assert chain_looks(2, spans) == [(0, 0), (1, 0)]


def test_chain_names_fall_back_on_a_proper_name_then_a_noun_phrase_then_what_the_pronouns_say():
    def chain(*texts, name=None, at=None):
        at = at or range(0, 10 * len(texts), 10)
        return {"name": name, "mentions": [{"start": s, "end": s + len(t), "text": t} for s, t in zip(at, texts)]}
    assert chain_name(chain("he", "Teodor", name="Old Teodor")) == "Old Teodor"
    assert chain_name(chain("He", "The captain", "Mr. Hollis", "him")) == "Mr. Hollis"
    assert chain_name(chain("he", "The old captain", "him", "the old captain", "a sailor")) == "the old captain"
    assert chain_name(chain("her", "SHE", "She", "hers", "she")) == "she (unnamed)"  # her and hers count as she
    assert chain_name(chain("ME", "me", "I", "my")) == "I (narrator)"  # no quotes: told, not said
    assert chain_name(chain("us", "we", "our")) == "we"
    assert chain_name(chain("they", "them", "it")) == "they (unnamed)"
    assert chain_name(chain("the Bank of  England")) == "the Bank of England"  # spaces folded
    assert chain_name(chain("Bank of England")) == "Bank of England"
    # an "I" heard in speech only is a speaker, not the narrator; one told mostly outside quotes is
    quotes = [{"start": 0, "end": 25, "speaker": None}, {"start": 40, "end": 60, "speaker": None}]
    assert chain_name(chain("I", "me", "I", at=(1, 12, 45)), quotes) == "I (unnamed speaker)"
    assert chain_name(chain("I", "me", "I", at=(1, 30, 70)), quotes) == "I (narrator)"
    assert chain_name({"name": None, "mentions": []}) == "(no text)"


def test_the_chain_list_shows_the_biggest_chains_first_named_or_not_each_with_a_title():
    """The narrator's "I", unnamed, is the biggest chain: it leads the list (and the page's
    data), titled; ties go by first mention."""
    text = "I I I I I Anna Anna Bob Bob Bob we us Tom Tom"
    spans = {w: [{"start": m.start(), "end": m.end(), "text": m.group()} for m in re.finditer(rf"\b(?:{w})\b", text)]
             for w in ("I", "Anna", "Bob", "we|us", "Tom")}
    rows = [{"id": "d", "quotes": [], "chains": [
        {"name": "Tom", "mentions": spans["Tom"]}, {"name": "Anna", "mentions": spans["Anna"]},
        {"name": None, "mentions": spans["we|us"]}, {"name": "Bob", "mentions": spans["Bob"]},
        {"name": None, "mentions": spans["I"]}]}]
    page = render("corefs", rows, {"d": text})
    names = re.findall(r'<span class="nm">(.*?)</span>', page)
    assert names == ["I (narrator)", "Bob", "Anna", "we", "Tom"]
    assert data_of(page)["names"] == names and data_of(page)["counts"] == [5, 3, 2, 2, 2]
    assert re.findall(r'<span class="ct">(\d+)</span>', page) == ["5", "3", "2", "2", "2"]


def test_sections_cut_at_paragraphs_and_cover_the_text():
    text = ("word " * 300 + "\n\n") * 40
    bounds = section_bounds(text, size=2000)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    assert all(text[hi - 1] == "\n" for _, hi in bounds[:-1])
    assert section_bounds("x" * 5000, size=2000) == [(0, 2000), (2000, 4000), (4000, 5000)]  # no break: hard cuts


# -- qa and classify --------------------------------------------------------------------------
def test_qa_page_ranks_answers_by_score_and_links_each_to_its_mark():
    text = "The lease runs five years. Rent is 36,000 a year. " + EVIL
    answers = [{"answer": "36,000", "start": 35, "end": 41, "score": 0.2},
               {"answer": "five years", "start": 15, "end": 25, "score": 0.7},
               {"answer": "gone", "start": 0, "end": 4, "score": 0.05}]
    row = {"id": "lease", "question": "How long <is> it?", **answers[1], "answers": answers}
    assert [a["answer"] for a in ranked_answers(row)] == ["five years", "36,000", "gone"]
    page = render("qa", [row, {"id": "bad", "error": "no question"}], {"lease": text})
    listed = re.findall(r'<a class="ans" href="#r0a(\d)">(.*?)</a>', page)
    assert listed == [("0", "five years"), ("1", "36,000")]  # "gone" is not at its offsets: no link
    assert 'id="r0a0" class="r1"' in page and 'id="r0a1" class="rn"' in page
    assert "not at its offsets" in page and "How long &lt;is&gt; it?" in page
    assert "<script>window" not in page and "http" not in page and "error: no question" in page
    single = render("qa", [{"id": "lease", "question": "q", "answer": "five years", "start": 15, "end": 25, "score": 0.7}],
                    {"lease": text})
    assert '<mark id="r0a0" class="r1"' in single and "0.700" in single


def test_qa_page_holds_each_document_once_however_many_questions():
    """Six questions on two long documents: each text is on the page once, in the first
    question's card, every question's answers marked there and linked from its own card."""
    books = {"hound.txt": "Sir Henry walked on the moor at night. " * 400,
             "dorian.txt": "Basil\nHallward painted the portrait in his studio. " * 400}
    rows = []
    for name, text in books.items():
        for q, word in (("Who?", "Sir Henry" if "hound" in name else "Basil\nHallward"), ("Where?", "moor" if "hound" in name else "studio"),
                        ("When?", "night" if "hound" in name else "portrait")):
            start = text.index(word)
            rows.append({"id": name, "question": q, "answer": " ".join(word.split()), "start": start,
                         "end": start + len(word), "score": 0.5})
    page = render("qa", rows, books)
    assert len(page) < sum(len(t) for t in books.values()) + 30_000
    assert page.count('class="box passage"') == 2
    for k in range(6):
        assert f'href="#r{k}a0"' in page and f'id="r{k}a0"' in page  # each answer linked to its mark
    assert page.count("the passage above") == 4
    assert "Basil Hallward" in page  # the answer reads on one line; its mark holds the source's line break


def test_classify_page_tables_every_row_with_sortable_values():
    rows = [{"id": "a.txt", "label": "law", "score": 0.9, "scores": {"law": 0.9, "news": 0.07, "fiction": 0.03}},
            {"id": "b.txt", "error": "empty document"},
            {"id": "c.txt", "label": "news", "score": 0.6, "scores": [("law", 0.1), ("news", 0.6), ("fiction", 0.3)]}]
    page = render("classify", rows, {"a.txt": EVIL, "c.txt": "short"})
    trs = re.findall(r'<tr( class="err")? data-order="(\d)" data-id="([^"]*)" data-label="([^"]*)" data-score="([^"]*)"', page)
    assert trs == [("", "0", "a.txt", "law", "0.9"), (' class="err"', "1", "b.txt", "", ""), ("", "2", "c.txt", "news", "0.6")]
    assert re.findall(r'<th data-sort="(\w+)"', page) == ["id", "label", "score"]
    bars = re.search(r'data-order="2".*?</tr>', page).group()
    assert [m for m in re.findall(r"<span class=\"l\" title=\"\w+\">(\w+)</span>", bars)] == ["news", "fiction", "law"]  # best first
    assert "&lt;script&gt;" in page and "<script>window" not in page and "http" not in page


def test_show_rows_takes_texts_by_id_or_in_the_rows_order():
    rows = [{"id": 0, "label": "law", "score": 0.9}, {"id": 1, "label": "news", "score": 0.8}]
    by_order = show_rows(rows, ["The court held.", "Rates rose."])
    assert "The court held." in by_order and "Rates rose." in by_order and "lfcli classify" in by_order
    assert "Rates rose." in show_rows(rows, {1: "Rates rose."}) and "text was not found" in show_rows(rows)


# -- which task, and reading outputs ----------------------------------------------------------
def test_task_of_prefers_the_job_record_and_refuses_vectors():
    assert task_of([{"id": "a", "error": "x"}, {"id": "b", "chains": []}]) == "corefs"
    assert task_of([{"id": "a", "answer": "x", "start": 0, "end": 1, "score": 0.5}]) == "qa"
    assert task_of([{"id": "a", "label": "x", "score": 1.0}]) == "classify"
    assert task_of([{"id": "a", "label": "x"}], {"command": "qa"}) == "qa"
    with pytest.raises(UsageError, match="embed rows are vectors"):
        task_of([{"id": "a", "embedding": [0.1]}])
    with pytest.raises(UsageError, match="not from classify, qa or corefs"):
        task_of([{"id": "a", "colour": "red"}])


def test_read_output_reads_jsonl_json_and_parquet_alike(tmp_path):
    rows = [{"id": "a", "label": "law", "score": 0.9, "scores": {"law": 0.9, "news": 0.1}}, {"id": "b", "error": "bad"}]
    (tmp_path / "o.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    (tmp_path / "o.json").write_text(json.dumps(rows))
    schema = pa.schema([("id", pa.string()), ("label", pa.string()), ("score", pa.float64()),
                        ("scores", pa.map_(pa.string(), pa.float64())), ("error", pa.string())])
    table = pa.Table.from_pylist([{"id": "a", "label": "law", "score": 0.9, "scores": [("law", 0.9), ("news", 0.1)]},
                                  {"id": "b", "error": "bad"}], schema=schema)
    pq.write_table(table, tmp_path / "o.parquet")
    for name in ("o.jsonl", "o.json", "o.parquet"):
        got, record = read_output(str(tmp_path / name))
        assert got == rows and record is None, name
    (tmp_path / "bad.jsonl").write_text('{"id": "a"}\nnot json\n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        read_output(str(tmp_path / "bad.jsonl"))
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read_output(str(tmp_path / "bad.parquet"))
    (tmp_path / "o.csv").write_text("id\n")
    with pytest.raises(UsageError, match="not an lfcli output"):
        read_output(str(tmp_path / "o.csv"))


# -- the .html writer -------------------------------------------------------------------------
def _draw(rows: list[dict]) -> str:
    return "<!DOCTYPE html>\n<html><body>\n<p>" + str(len(rows)) + " rows</p>\n</body></html>\n"


def rows_block(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index(ROWS_BLOCK)
    end = lines.index("</script>", start)
    return [json.loads(line) for line in lines[start + 1: end]]


def test_html_writer_keeps_rows_in_a_sidecar_until_it_draws_the_page(tmp_path):
    out = tmp_path / "page.html"
    assert output_format(str(out)) == "html" and sidecar_path(str(out)) == str(out) + ".parts.jsonl"
    with pytest.raises(UsageError, match="an .html output is a page"):
        open_writer(str(out))  # no page to draw
    evil = {"id": "x", "label": EVIL, "score": 0.5}
    w = open_writer(str(out), page=_draw)
    w.write({"id": "a", "label": "law", "score": 0.9})
    w.write(evil)
    assert not out.exists() and len(Path(w.sidecar).read_text().splitlines()) == 2
    w.close()
    page = out.read_text(encoding="utf-8")
    assert "<p>2 rows</p>" in page and not Path(str(out) + ".parts.jsonl").exists()
    block = page[page.index(ROWS_BLOCK):]
    assert block.count("</script>") == 1 and "<script>window" not in block
    assert rows_block(out) == [{"id": "a", "label": "law", "score": 0.9}, evil]


def test_html_output_resumes_after_a_crash_and_when_finished(tmp_path):
    out = tmp_path / "page.html"
    with pytest.raises(RuntimeError):
        with open_writer(str(out), page=_draw) as w:
            w.write({"id": "a", "label": "x"})
            raise RuntimeError("killed")
    assert not out.exists() and Path(str(out) + ".parts.jsonl").exists()
    with pytest.raises(UsageError, match="unfinished run"):
        open_writer(str(out), page=_draw)
    with open_writer(str(out), page=_draw, resume=True) as w:
        assert w.done_ids == {"a"}
        w.write({"id": "b", "label": "y"})
    assert [r["id"] for r in rows_block(out)] == ["a", "b"]
    with open_writer(str(out), page=_draw, resume=True) as w:  # a finished page: its rows come back
        assert w.done_ids == {"a", "b"}
        w.write({"id": "c", "label": "z"})
    assert [r["id"] for r in rows_block(out)] == ["a", "b", "c"] and "<p>3 rows</p>" in out.read_text()
    (tmp_path / "other.html").write_text("<html><body>hand made</body></html>")
    with pytest.raises(InputError, match="no rows in this page"):
        open_writer(str(tmp_path / "other.html"), page=_draw, resume=True)


# -- the command line -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    return task_checkpoints(tmp_path_factory.mktemp("ckpt"))


@pytest.fixture()
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("The court held that the contract was void. She said he would come back.")
    (folder / "b.txt").write_text(EVIL)
    return folder


def test_task_commands_write_a_page_and_resume_it(ckpts, docs, tmp_path):
    out = tmp_path / "labels.html"
    r = invoke("classify", docs, "-m", ckpts["classify"], "-o", out, "--quiet")
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert [row["id"] for row in rows_block(out)] == ["a.txt", "b.txt"]
    assert "&lt;script&gt;window.pwned" in page and "<script>window" not in page and "http" not in page
    assert json.loads((tmp_path / "labels.html.lfcli-job.json").read_text())["command"] == "classify"
    r = invoke("classify", docs, "-m", ckpts["classify"], "-o", out, "--resume")
    assert r.exit_code == 0 and "2 already in the output" in r.stderr
    assert out.read_text().count('<tr data-order=') == 2  # texts of skipped documents still drawn
    assert "The court held" in out.read_text()
    r = invoke("corefs", docs, "-m", ckpts["corefs"], "-o", tmp_path / "chains.html", "--quiet")
    assert r.exit_code == 0 and "data-k=" in (tmp_path / "chains.html").read_text()
    r = invoke("qa", docs, "-m", ckpts["qa"], "-q", "What was void?", "-k", "2", "-o", tmp_path / "qa.html", "--quiet")
    assert r.exit_code == 0 and 'class="answers"' in (tmp_path / "qa.html").read_text()


def test_pages_of_vectors_or_from_ray_are_usage_errors(ckpts, docs, tmp_path):
    r = invoke("embed", docs, "-m", ckpts["embed"], "-o", tmp_path / "v.html")
    assert r.exit_code == 2 and r.stderr.startswith("lfcli: error: embed rows are vectors") and r.stderr.count("\n") == 1
    r = invoke("classify", docs, "-m", ckpts["classify"], "--engine", "ray", "-o", tmp_path / "v.html")
    assert r.exit_code == 2 and "--engine ray writes a Parquet folder, not a page" in r.stderr
    assert list(tmp_path.glob("v.html*")) == []


def test_show_draws_an_output_over_its_documents(ckpts, docs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("classify", "docs", "-m", ckpts["classify"], "-o", "out.parquet", "--quiet").exit_code == 0
    r = invoke("show", "out.parquet", "--text", "docs", "-o", "page.html")
    assert r.exit_code == 0 and r.stderr == "lfcli: wrote page.html: 2 rows\n"
    page = (tmp_path / "page.html").read_text()
    assert "The court held" in page and "&lt;script&gt;" in page and "http" not in page
    assert invoke("show", "out.parquet", "-o", "page.html").exit_code == 2  # exists
    r = invoke("show", "out.parquet", "-o", "page.html", "-F", "--quiet")  # the record names docs/: no --text needed
    assert r.exit_code == 0 and r.stderr == "" and "The court held" in (tmp_path / "page.html").read_text()
    (docs / "a.txt").unlink()
    r = invoke("show", "out.parquet", "--text", "docs", "-o", "one.html")
    assert r.exit_code == 0 and "1 document not found in docs" in r.stderr
    assert "text was not found" in (tmp_path / "one.html").read_text()


def test_show_finds_the_inputs_from_any_folder_and_by_resolved_path(ckpts, docs, tmp_path, monkeypatch):
    """The job record keeps the folder the job ran in: `lfcli show` from another folder finds
    the inputs; `--text` names them as this folder sees them; a page without any text is an
    error (one line, exit 1, nothing written)."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(work)
    out = work / "out.jsonl"
    assert invoke("classify", "../docs/a.txt", "../docs/b.txt", "-m", ckpts["classify"], "-o", "out.jsonl",
                  "--quiet").exit_code == 0
    monkeypatch.chdir(elsewhere)
    r = invoke("show", str(out), "-o", "page.html")
    assert r.exit_code == 0 and r.stderr == "lfcli: wrote page.html: 2 rows\n", r.stderr
    assert "The court held" in (elsewhere / "page.html").read_text()
    monkeypatch.chdir(tmp_path)
    r = invoke("show", str(out), "--text", "docs/a.txt", "--text", "docs/b.txt", "-o", "byname.html")
    assert r.exit_code == 0 and "not found" not in r.stderr, r.stderr
    assert "The court held" in (tmp_path / "byname.html").read_text()
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.txt").write_text("Nothing of the job's.")
    r = invoke("show", str(out), "--text", "other", "-o", "empty.html")
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "no document of" in r.stderr, r.stderr
    assert not (tmp_path / "empty.html").exists()


def test_show_usage_and_input_errors_are_one_line(ckpts, docs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "a.txt", "label": "law", "score": 0.9}) + "\n")
    (tmp_path / "vectors.jsonl").write_text(json.dumps({"id": "a.txt", "embedding": [0.1, 0.2]}) + "\n")
    cases = [
        (("rows.jsonl", "--text", "docs"), 2, "show writes a page: give -o NAME.html"),
        (("rows.jsonl", "--text", "docs", "-o", "p.txt"), 2, "p.txt: the page must be a .html file"),
        (("rows.jsonl", "-o", "p.html"), 2, "rows.jsonl: its job record names no inputs that are still here; pass --text"),
        (("vectors.jsonl", "--text", "docs", "-o", "p.html"), 2, "embed rows are vectors"),
        (("missing.jsonl", "--text", "docs", "-o", "p.html"), 1, "missing.jsonl: no such file or folder"),
        (("rows.jsonl", "--text", "nodocs", "-o", "p.html"), 1, "nodocs: no such file or folder"),
        (("rows.jsonl", "--text", "docs", "-o", "no/p.html"), 1, "output folder no does not exist"),
    ]
    for args, code, message in cases:
        r = invoke("show", *args)
        assert r.exit_code == code and r.stderr.startswith("lfcli: error: ") and message in r.stderr, (args, r.stderr)
        assert r.stderr.count("\n") == 1
    assert not (tmp_path / "p.html").exists()


def test_qa_page_shows_each_question_with_its_id_small_beside_it():
    """The index and every card lead with the question, not the record's id (SQuAD ids: "806")."""
    rows = [{"id": "806", "question": "Who held the <court>?", "answer": "judge", "start": 4, "end": 9, "score": 0.4},
            {"id": "book.txt", "question_id": "q2", "question": "Where?" * 30, "answer": "x", "start": 0, "end": 1,
             "score": 0.1}]
    page = render("qa", rows, {"806": "The judge held the court.", "book.txt": "x marks it"})
    index = re.search(r'<nav class="docs".*?</nav>', page, re.S).group()
    assert 'Who held the &lt;court&gt;? <small class="id">806</small>' in index
    assert "…" in index and 'book.txt · q2</small>' in index  # a long question shortened, its question id beside
    heads = re.findall(r'<h2 class="q"><a href="#r(\d)">(.*?)</a> <small class="id">(.*?)</small></h2>', page)
    assert heads[0] == ("0", "Who held the &lt;court&gt;?", "806") and heads[1][2] == "book.txt · q2"
