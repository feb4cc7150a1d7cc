"""PDF inputs (pipelines/io/pdf_reader.py): text in page order, each row's `page`, and an error
row for a scanned, encrypted or damaged PDF. The PDFs are made here with fpdf2 (a dev extra)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from checkpoints import task_checkpoints
from lfcli.cli import app
from lfcli.pipelines.io.pdf_reader import page_of
from lfcli.pipelines.io.readers import iter_documents

fpdf = pytest.importorskip("fpdf", reason="the PDF tests make their PDFs with fpdf2: pip install 'lfcli[dev]'")
runner = CliRunner()

PAGES = ["The landlord is Anna Varga. The lease runs for five years.",
         "The tenant pays the rent on the first day of each month.",
         "Notice is due six months before the end of the term."]


def make_pdf(path, pages=PAGES, password=None, image=None):
    pdf = fpdf.FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if image is not None:
            pdf.image(str(image), x=10, y=10, w=50)
        else:
            pdf.multi_cell(0, 6, text)
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.output(str(path))
    return path


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    return task_checkpoints(tmp_path_factory.mktemp("ckpt"))


def rows_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_pdf_reads_its_pages_in_order_with_their_starts(tmp_path):
    doc = next(iter_documents([make_pdf(tmp_path / "lease.pdf")]))
    assert doc.error is None and doc.id.endswith("lease.pdf")
    assert [doc.text.index(p[:20]) for p in PAGES] == doc.pages  # each page's text starts where it says
    assert doc.pages[0] == 0 and doc.text.count("\n\n") >= 2  # pages apart by a blank line
    assert [page_of(doc.pages, o) for o in (0, doc.pages[1] - 1, doc.pages[1], len(doc.text) - 1)] == [1, 1, 2, 3]


def test_a_pdf_by_its_bytes_whatever_its_name_and_in_folders(tmp_path):
    make_pdf(tmp_path / "misnamed.txt")
    (tmp_path / "plain.txt").write_text("Plain text.")
    docs = list(iter_documents([tmp_path]))
    assert [d.id for d in docs] == ["misnamed.txt", "plain.txt"]
    assert "Anna Varga" in docs[0].text and "%PDF" not in docs[0].text and docs[1].pages is None


def test_qa_rows_say_the_page_of_the_answer(ckpts, tmp_path):
    pdf = make_pdf(tmp_path / "lease.pdf")
    r = runner.invoke(app, ["qa", str(pdf), "-m", str(ckpts["qa"]), "-q", "When is notice due?", "-k", "3", "--quiet"])
    assert r.exit_code == 0, r.output
    (row,) = rows_of(r.stdout)
    doc = next(iter_documents([pdf]))
    assert doc.text[row["start"]:row["end"]] == row["answer"]  # offsets into the extracted text
    assert row["page"] == page_of(doc.pages, row["start"])
    assert all(a["page"] == page_of(doc.pages, a["start"]) for a in row["answers"])
    out = tmp_path / "rows.parquet"
    assert runner.invoke(app, ["qa", str(pdf), "-m", str(ckpts["qa"]), "-q", "Who?", "-o", str(out), "--quiet"]).exit_code == 0
    import pyarrow.parquet as pq

    assert pq.read_table(out).column("page").to_pylist()[0] in (1, 2, 3)


def test_corefs_mentions_say_their_page(ckpts, tmp_path):
    pdf = make_pdf(tmp_path / "lease.pdf")
    r = runner.invoke(app, ["corefs", str(pdf), "-m", str(ckpts["corefs"]), "--quiet"])
    assert r.exit_code == 0, r.output
    doc = next(iter_documents([pdf]))
    mentions = [m for chain in rows_of(r.stdout)[0]["chains"] for m in chain["mentions"]]
    assert all(m["page"] == page_of(doc.pages, m["start"]) for m in mentions)


def test_scanned_encrypted_and_damaged_pdfs_are_error_rows(ckpts, tmp_path):
    from PIL import Image

    Image.new("RGB", (40, 20), "white").save(tmp_path / "scan.png")
    folder = tmp_path / "in"
    folder.mkdir()
    make_pdf(folder / "a_scanned.pdf", pages=["", ""], image=tmp_path / "scan.png")
    make_pdf(folder / "b_locked.pdf", password="secret")
    make_pdf(folder / "c_open.pdf", password="")  # an owner password only: readable
    (folder / "d_broken.pdf").write_bytes(b"%PDF-1.4\n" + b"\x00garbage" * 50)
    r = runner.invoke(app, ["embed", str(folder), "-m", str(ckpts["embed"]), "--quiet"])
    assert r.exit_code == 1  # some documents failed
    rows = {row["id"]: row for row in rows_of(r.stdout)}
    assert "no text layer" in rows["a_scanned.pdf"]["error"] and "OCR" in rows["a_scanned.pdf"]["error"]
    assert "encrypted" in rows["b_locked.pdf"]["error"] and "password" in rows["b_locked.pdf"]["error"]
    assert "error" not in rows["c_open.pdf"] and len(rows["c_open.pdf"]["embedding"]) == 32
    assert "PDF" in rows["d_broken.pdf"]["error"]


# -- text that is not UTF-8 (pipelines/io/inputs.py decode_text) --------------------------------------
def test_a_latin1_file_is_an_error_row_naming_the_options_or_read_with_them(ckpts, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "fievre.txt").write_bytes("Le patient a de la fièvre et une toux sèche depuis trois jours.".encode("cp1252"))
    (folder / "ok.txt").write_text("Plain UTF-8: naïve café.", encoding="utf-8")
    strict = list(iter_documents([folder]))
    assert "invalid UTF-8" in strict[0].error and "--encoding auto" in strict[0].error
    assert "--encoding-errors replace" in strict[0].error
    for encoding in ("auto", "cp1252"):
        docs = list(iter_documents([folder], encoding=encoding))[:2]
        assert "fièvre" in docs[0].text and "sèche" in docs[0].text
        if encoding == "auto":  # a UTF-8 file is read as UTF-8 by auto (a named encoding reads every file so)
            assert docs[1].text == "Plain UTF-8: naïve café."
    (folder / "privet.txt").write_bytes("Пациент жалуется на боль в груди уже три дня.".encode("cp1251"))
    (folder / "zazolc.txt").write_bytes("Zażółć gęślą jaźń, pacjent ma gorączkę.".encode("cp1250"))
    auto = {d.id: d.text for d in iter_documents([folder], encoding="auto")}
    assert auto["privet.txt"].startswith("Пациент") and auto["zazolc.txt"].startswith("Zażółć")
    r = runner.invoke(app, ["embed", str(folder), "-m", str(ckpts["embed"]), "--encoding", "auto", "--quiet"])
    assert r.exit_code == 0 and all("error" not in row for row in rows_of(r.stdout))
    r = runner.invoke(app, ["embed", str(folder), "-m", str(ckpts["embed"]), "--encoding", "klingon"])
    assert r.exit_code == 2 and "--encoding 'klingon'" in r.output
