"""Tests of lfcli.pipelines.io.readers on real files (no mocks)."""

from __future__ import annotations

import io
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.io.inputs import ENCODING_HINT
from lfcli.pipelines.io.readers import Document, iter_documents


def _docs(*inputs, **kw) -> list[Document]:
    kw.setdefault("fields", ("question",))  # qa's document field, as `lfcli qa` asks the readers for it
    return list(iter_documents(list(inputs), **kw))


def test_the_readers_keep_the_fields_they_are_asked_for_and_no_others(tmp_path):
    """The readers know no task: the fields a document keeps are the caller's (a task's spec)."""
    path = _write(tmp_path / "r.jsonl", json.dumps({"id": "a", "text": "T.", "question": "Q?", "hint": "H"}) + "\n")
    assert list(iter_documents([path]))[0].fields == {}
    assert list(iter_documents([path], fields=("hint",)))[0].fields == {"hint": "H"}


def _write(path, data: bytes | str) -> str:
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _jsonl(path, records) -> str:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    return _write(path, "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# plain files


def test_plain_file_is_one_document_with_path_as_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write("notes/case.md", "# Ruling\n\nThe appeal is dismissed.\n")
    docs = _docs("notes/case.md")
    assert docs == [Document(id="notes/case.md", text="# Ruling\n\nThe appeal is dismissed.\n")]
    # an absolute path stays as given
    full = str(tmp_path / "notes" / "case.md")
    assert [d.id for d in _docs(full)] == [full]


def test_any_extension_is_text_and_bom_is_dropped(tmp_path):
    path = _write(tmp_path / "chapter.data", b"\xef\xbb\xbfIt was a cold morning in M\xc3\xbcnster.")
    (doc,) = _docs(path)
    assert doc.text == "It was a cold morning in Münster."
    assert doc.error is None and doc.fields == {}


def test_invalid_utf8_reports_file_and_byte_offset(tmp_path):
    path = _write(tmp_path / "bad.txt", b"Patient notes: temp 38\xb0C, stable.")
    (doc,) = _docs(path)
    assert doc.text is None
    assert doc.error == f"{path}: invalid UTF-8 at byte offset 22 (byte 0xb0); {ENCODING_HINT}"
    assert "\n" not in doc.error
    # the offset counts the BOM as well: it is the offset in the file
    path2 = _write(tmp_path / "bom.txt", b"\xef\xbb\xbfab\xffc")
    (doc2,) = _docs(path2)
    assert "byte offset 5 " in doc2.error


def test_replace_mode_decodes_with_replacement_character(tmp_path):
    path = _write(tmp_path / "bad.txt", b"temp 38\xb0C")
    (doc,) = _docs(path, encoding_errors="replace")
    assert doc.error is None
    assert doc.text == "temp 38\ufffdC"


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n  "])
def test_empty_and_whitespace_documents_are_errors(tmp_path, content):
    path = _write(tmp_path / "empty.txt", content)
    (doc,) = _docs(path)
    assert doc.text is None
    assert doc.error == f"{path}: empty document"


def test_missing_path_raises_input_error_at_call_time(tmp_path):
    good = _write(tmp_path / "a.txt", "text")
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(InputError) as info:
        iter_documents([good, missing])  # no iteration needed
    assert str(info.value) == f"{missing}: no such file or folder"
    assert info.value.exit_code == 1


def test_broken_symlink_is_an_input_error(tmp_path):
    link = tmp_path / "link.txt"
    os.symlink(tmp_path / "gone.txt", link)
    with pytest.raises(InputError, match="broken symbolic link"):
        iter_documents([str(link)])


def test_bad_options_are_usage_errors(tmp_path):
    path = _write(tmp_path / "a.txt", "x")
    with pytest.raises(UsageError):
        iter_documents([])
    with pytest.raises(UsageError):
        iter_documents([path], encoding_errors="ignore")
    with pytest.raises(UsageError):
        iter_documents([path], input_format="csv")


def test_single_string_input_is_accepted(tmp_path):
    path = _write(tmp_path / "a.txt", "x")
    assert [d.text for d in iter_documents(path)] == ["x"]


# ---------------------------------------------------------------------------
# folders


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "corpus"
    _write(root / "b.txt", "second")
    _write(root / "a.txt", "first")
    _write(root / "news" / "2024" / "z.txt", "deep")
    _write(root / "news" / "brief.md", "markdown")
    _write(root / ".hidden.txt", "hidden file")
    _write(root / ".git" / "config.txt", "hidden folder")
    _write(root / "news" / ".cache" / "x.txt", "hidden nested folder")
    _jsonl(root / "records.jsonl", [{"id": "r1", "text": "rec one"}, {"text": "rec two"}])
    pq.write_table(pa.table({"text": ["pq zero", "pq one"]}), root / "table.parquet")
    return root


def test_folder_walk_is_recursive_sorted_and_skips_hidden(tree):
    docs = _docs(str(tree))
    assert [d.id for d in docs] == [
        "a.txt",
        "b.txt",
        "news/2024/z.txt",
        "news/brief.md",
        "records.jsonl:r1",
        "records.jsonl:1",
        "table.parquet:0",
        "table.parquet:1",
    ]
    assert [d.text for d in docs] == ["first", "second", "deep", "markdown", "rec one", "rec two", "pq zero", "pq one"]
    assert all(d.error is None for d in docs)
    assert _docs(str(tree)) == docs  # deterministic


def test_folder_glob_filters_relative_paths(tree):
    assert [d.id for d in _docs(str(tree), glob="*.txt")] == ["a.txt", "b.txt", "news/2024/z.txt"]
    assert [d.id for d in _docs(str(tree), glob="news/*.md")] == ["news/brief.md"]
    assert [d.id for d in _docs(str(tree), glob="**/*.md")] == ["news/brief.md"]
    assert [d.id for d in _docs(str(tree), glob="**/a.txt")] == ["a.txt"]
    assert [d.id for d in _docs(str(tree), glob="*.jsonl")] == ["records.jsonl:r1", "records.jsonl:1"]


def test_folder_without_matching_files_is_an_input_error(tree, tmp_path):
    with pytest.raises(InputError, match=r"folder has no files matching '\*\.pdf'"):
        iter_documents([str(tree)], glob="*.pdf")
    empty = tmp_path / "empty"
    (empty / ".only-hidden").mkdir(parents=True)
    with pytest.raises(InputError, match="folder has no"):
        iter_documents([str(empty)])


def test_symlink_loop_in_folder_is_cut(tmp_path):
    root = tmp_path / "root"
    _write(root / "sub" / "a.txt", "a")
    os.symlink(root, root / "sub" / "loop")
    assert [d.id for d in _docs(str(root))] == ["sub/a.txt"]


def test_several_inputs_give_unique_stable_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write("d1/a.txt", "one")
    _write("d2/a.txt", "two")
    _jsonl("x.jsonl", [{"text": "r0"}, {"text": "r1", "id": 7}])
    _jsonl("y.jsonl", [{"text": "s0"}])
    docs = _docs("d1", "d2/", "x.jsonl", "y.jsonl")
    assert [d.id for d in docs] == ["d1/a.txt", "d2/a.txt", "x.jsonl:0", "x.jsonl:7", "y.jsonl:0"]
    # a single JSONL input keeps the plain record ids
    assert [d.id for d in _docs("x.jsonl")] == ["0", "7"]


def test_duplicate_ids_become_error_documents(tmp_path):
    path = _jsonl(
        tmp_path / "dups.jsonl",
        [{"id": "q1", "text": "a"}, {"id": "q1", "text": "b"}, {"id": 2, "text": "c"}, {"text": "d"}, {"id": "q1", "text": "e"}],
    )
    docs = _docs(path)
    assert [d.id for d in docs] == ["q1", "q1#2", "2", "3", "q1#3"]
    assert docs[1].text is None and docs[1].error == "duplicate id 'q1' (an earlier document has it)"
    assert docs[3].text == "d"  # row number 3 does not clash with anything
    # the same file given twice
    assert [d.error is None for d in _docs(path, path)][5:] == [False] * 5


# ---------------------------------------------------------------------------
# JSONL


def test_jsonl_records_ids_fields_and_per_line_errors(tmp_path):
    path = _jsonl(
        tmp_path / "qa.jsonl",
        [
            {"id": "c-1", "text": "The court held ...", "question": "What did the court hold?"},
            {"id": 42, "text": "Numeric id."},
            "",
            {"text": "No id, so the row number.", "question": None},
            "{not json",
            "[1, 2]",
            {"id": "c-5", "body": "wrong field"},
            {"id": "c-6", "text": None},
            {"id": "c-7", "text": 3.5},
            {"id": "c-8", "text": "   "},
            {"id": "c-9", "text": "Lone \ud800 surrogate"},
        ],
    )
    docs = _docs(path)
    ids = [d.id for d in docs]
    assert ids == ["c-1", "42", "2", "3", "4", "c-5", "c-6", "c-7", "c-8", "c-9"]
    assert docs[0] == Document("c-1", "The court held ...", None, {"question": "What did the court hold?"})
    assert docs[1].text == "Numeric id." and docs[1].fields == {}
    assert docs[2].text.startswith("No id") and docs[2].fields == {"question": None}
    errors = [d.error for d in docs[3:]]
    assert errors[0].startswith(f"{path}: line 5: invalid JSON (")
    assert errors[1] == f"{path}: line 6: expected a JSON object, got an array"
    assert errors[2] == f"{path}: line 7: no 'text' field (fields: id, body)"
    assert errors[3] == f"{path}: line 8: 'text' is null"
    assert errors[4] == f"{path}: line 9: 'text' is a number, not a string"
    assert errors[5] == f"{path}: line 10: empty document"
    assert errors[6].startswith(f"{path}: line 11: 'text' has an unpaired surrogate")
    assert all(d.text is None for d in docs[3:])
    assert all("\n" not in e for e in errors)
    # replace mode keeps the surrogate document with U+FFFD
    assert _docs(path, encoding_errors="replace")[-1].text == "Lone \ufffd surrogate"


def test_json_errors_and_counts_read_as_english(tmp_path):
    """json's own message may end in "at" (a raw tab in a string: "Invalid control character
    at"): the position follows it once, not "at at column 23"; a count of one is singular."""
    from lfcli.pipelines.wording import plural

    path = tmp_path / "tab.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": "a\tb"}\n', encoding="utf-8")
    assert _docs(path)[1].error == f"{path}: line 2: invalid JSON (Invalid control character at column 23)"
    assert [plural(1, "held-out article"), plural(2, "prediction id"), plural(12000, "document")] == [
        "1 held-out article", "2 prediction ids", "12,000 documents"]
    assert plural(1.0, "CPU") == "1 CPU" and plural(0.5, "GPU") == "0.5 GPUs" and plural(3, "query", "queries") == "3 queries"
    single = tmp_path / "one.jsonl"
    single.write_text('{"id": 1, "body": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"no 'text' field in its first 1 record \(fields: id, body\)"):
        _docs(single)


def test_jsonl_without_the_text_field_is_a_whole_input_error(tmp_path):
    """Like a Parquet file without the column: refused before any document, naming the
    fields seen; checked on the first JSONL_CHECK_LINES lines, so one good record there is
    enough and the rest become error rows."""
    path = _jsonl(tmp_path / "r.jsonl", [{"id": i, "body": "x", "title": "t"} for i in range(30)])
    with pytest.raises(InputError, match=r"r\.jsonl: no 'text' field in its first 20 records \(fields: id, body, title\); pass --text-column"):
        iter_documents([path])
    assert [d.text for d in _docs(path, text_column="body")][:2] == ["x", "x"]
    with pytest.raises(InputError, match=r"no 'doc_id' id field in its first 20 records"):
        iter_documents([path], text_column="body", id_column="doc_id")
    mixed = _jsonl(tmp_path / "m.jsonl", [{"body": "x"}] * 19 + [{"text": "late"}] + [{"body": "y"}])
    docs = _docs(mixed)
    assert [d.error is None for d in docs] == [False] * 19 + [True, False]
    prose = _write(tmp_path / "p.jsonl", "Not JSON at all.\nNeither is this.\n")
    with pytest.raises(InputError, match=r"p\.jsonl: not JSONL: no JSON object in its first 2 lines"):
        iter_documents([prose])
    # inside a folder the file is checked when reached
    folder = tmp_path / "f"
    _write(folder / "a.txt", "fine")
    _jsonl(folder / "b.jsonl", [{"body": "x"}])
    docs = iter_documents([str(folder)])
    assert next(docs).id == "a.txt"
    with pytest.raises(InputError, match="b.jsonl: no 'text' field"):
        next(docs)


def test_jsonl_custom_columns(tmp_path):
    path = _jsonl(
        tmp_path / "r.jsonl",
        [{"doc_id": "a", "body": "alpha", "q": "?"}, {"body": "beta"}],
    )
    docs = _docs(path, text_column="body", id_column="doc_id", fields=("q",))
    assert docs[0] == Document("a", "alpha", None, {"q": "?"})
    assert docs[1].id == "1" and docs[1].text is None
    assert docs[1].error == f"{path}: line 2: no 'doc_id' id field"


def test_jsonl_invalid_utf8_line_reports_file_byte_offset(tmp_path):
    first = b'{"text": "fine"}\n'
    path = _write(tmp_path / "b.jsonl", first + b'{"text": "caf\xe9"}\n{"text": "after"}\n')
    docs = _docs(path)
    assert docs[0].text == "fine"
    assert docs[1].error == f"{path}: line 2: invalid UTF-8 at byte offset {len(first) + 13} (byte 0xe9)"
    assert docs[2].text == "after"
    assert _docs(path, encoding_errors="replace")[1].text == "caf\ufffd"


def test_input_format_forces_jsonl(tmp_path):
    path = _jsonl(tmp_path / "records.txt", [{"text": "x"}])
    assert [d.text for d in _docs(path)] == ['{"text": "x"}\n']
    assert [d.text for d in _docs(path, input_format="jsonl")] == ["x"]


# ---------------------------------------------------------------------------
# stdin


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_stdin_is_one_document_with_id_dash(monkeypatch):
    """The id of stdin is "-", as given on the command line (the README says so)."""
    _stdin(monkeypatch, "A short story about a lighthouse keeper.\n".encode())
    assert _docs("-") == [Document("-", "A short story about a lighthouse keeper.\n")]
    # text that merely contains JSON lines stays one document
    _stdin(monkeypatch, b'Notes:\n{"text": "x"}\n')
    assert [d.id for d in _docs("-")] == ["-"]


def test_stdin_bad_utf8(monkeypatch):
    _stdin(monkeypatch, b"ok \xc3( bad")
    (doc,) = _docs("-")
    assert doc.error == f"<stdin>: invalid UTF-8 at byte offset 3 (byte 0xc3); {ENCODING_HINT}"


def test_stdin_jsonl_records(monkeypatch, tmp_path):
    _stdin(monkeypatch, b'{"id": "x", "text": "one"}\n{"text": "two", "question": "q"}\n')
    docs = _docs("-", input_format="jsonl")
    assert docs == [Document("x", "one"), Document("1", "two", None, {"question": "q"})]
    # with another input the stdin record ids are prefixed
    _stdin(monkeypatch, b'{"text": "one"}\n')
    other = _write(tmp_path / "a.jsonl", '{"text": "f"}\n')
    assert [d.id for d in _docs(other, "-", input_format="jsonl")] == [f"{other}:0", "-:0"]


def test_stdin_jsonl_is_detected_and_said(monkeypatch, capsys):
    """JSONL piped without --input-format jsonl: every line a JSON object -> records, with a
    note on stderr; --input-format text keeps the old one-document reading."""
    data = b'{"id": "x", "text": "one"}\n\n{"text": "two"}\n'
    _stdin(monkeypatch, data)
    assert _docs("-") == [Document("x", "one"), Document("1", "two")]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "standard input is JSONL" in err and "--input-format text" in err
    _stdin(monkeypatch, data)
    assert _docs("-", input_format="text") == [Document("-", data.decode())]
    assert capsys.readouterr().err == ""
    _stdin(monkeypatch, b'{"title": "a"}\n{"title": "b"}\n')
    with pytest.raises(InputError, match=r"<stdin>: no 'text' field in its first 2 records \(fields: title\)"):
        _docs("-")


# ---------------------------------------------------------------------------
# Parquet


def test_parquet_good_and_bad_rows(tmp_path):
    path = str(tmp_path / "cases.parquet")
    table = pa.table(
        {
            "id": ["p0", "p1", None, "p3", "p4"],
            "text": ["Opinion of the court.", None, "Row with a null id.", "", "Dissent."],
            "question": ["Who wrote it?", None, "q2", "q3", "q4"],
            "unused": [1, 2, 3, 4, 5],
        }
    )
    pq.write_table(table, path)
    docs = _docs(path)
    assert [d.id for d in docs] == ["p0", "p1", "2", "p3", "p4"]
    assert docs[0] == Document("p0", "Opinion of the court.", None, {"question": "Who wrote it?"})
    assert docs[1].error == f"{path}: row 1: 'text' is null"
    assert docs[2].text == "Row with a null id."
    assert docs[3].error == f"{path}: row 3: empty document"
    assert docs[4].text == "Dissent."


def test_parquet_binary_column_with_non_utf8_values(tmp_path):
    path = str(tmp_path / "bin.parquet")
    pq.write_table(pa.table({"text": pa.array([b"plain", b"bad \xff", None], type=pa.binary())}), path)
    docs = _docs(path)
    assert docs[0].text == "plain"
    assert docs[1].text is None and docs[1].error == f"{path}: row 1: 'text': invalid UTF-8 at byte offset 4 (byte 0xff)"
    assert docs[2].error == f"{path}: row 2: 'text' is null"
    assert _docs(path, encoding_errors="replace")[1].text == "bad \ufffd"


def test_parquet_large_string_and_dictionary_columns(tmp_path):
    path = str(tmp_path / "types.parquet")
    table = pa.table(
        {
            "text": pa.array(["a", "b"], type=pa.large_string()),
            "question": pa.array(["x", "x"]).dictionary_encode(),
        }
    )
    pq.write_table(table, path)
    assert [(d.text, d.fields) for d in _docs(path)] == [("a", {"question": "x"}), ("b", {"question": "x"})]


def test_parquet_missing_text_column_lists_columns(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"doc": ["x"], "label": [1]}), path)
    with pytest.raises(InputError) as info:
        iter_documents([path])
    assert str(info.value) == f"{path}: no column 'text' (columns: doc, label)"
    assert [d.text for d in _docs(path, text_column="doc")] == ["x"]
    with pytest.raises(InputError, match=r"no id column 'key' \(columns: doc, label\)"):
        iter_documents([path], text_column="doc", id_column="key")


def test_parquet_non_string_text_column(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"text": [1, 2]}), path)
    with pytest.raises(InputError) as info:
        iter_documents([path])
    assert str(info.value) == f"{path}: column 'text' has type int64, not string"


def test_corrupt_parquet_is_an_input_error(tmp_path):
    path = _write(tmp_path / "broken.parquet", b"PAR1 this is not really parquet PAR1")
    with pytest.raises(InputError) as info:
        iter_documents([path])
    assert str(info.value).startswith(f"{path}: not a readable Parquet file (")
    assert "\n" not in str(info.value)
    # the same inside a folder is raised when the file is reached
    good = _write(tmp_path / "a.txt", "first")
    it = iter_documents([str(tmp_path)])
    assert next(it).id == "a.txt"
    with pytest.raises(InputError, match="not a readable Parquet file"):
        next(it)
    assert good


def test_parquet_truncated_file_is_an_input_error(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"text": ["x" * 1000] * 100}), path, row_group_size=10)
    data = open(path, "rb").read()
    _write(path, data[: len(data) // 2])
    with pytest.raises(InputError, match="not a readable Parquet file"):
        iter_documents([path])


def test_parquet_is_streamed_batch_by_batch(tmp_path):
    """40 row groups of 5 rows x 100 kB: reading holds a batch, never the file."""
    path = str(tmp_path / "big.parquet")
    rows, size = 200, 100_000
    texts = [(f"doc {i} " + "lorem ipsum " * (size // 12))[:size] for i in range(rows)]
    table = pa.table({"id": [f"d{i}" for i in range(rows)], "text": texts, "blob": texts})
    pq.write_table(table, path, row_group_size=5, compression="none")
    del table, texts
    assert pq.ParquetFile(path).num_row_groups == 40
    total = rows * size * 2  # ~40 MB of string data in the file

    baseline = pa.total_allocated_bytes()
    peak = 0
    count = 0
    it = iter_documents([path])
    for doc in it:
        count += 1
        assert doc.id == f"d{count - 1}" and len(doc.text) == size
        peak = max(peak, pa.total_allocated_bytes() - baseline)
    assert count == rows
    # the extra "blob" column is never read, and only a few row groups are in memory at a time
    assert peak < total / 5, (peak, total)


def test_parquet_is_read_lazily_up_to_a_corrupt_row_group(tmp_path):
    """Documents before a damaged row group come out before the damage is hit."""
    path = str(tmp_path / "lazy.parquet")
    pq.write_table(pa.table({"text": [f"t{i}" for i in range(1000)]}), path, row_group_size=100)
    offset = pq.ParquetFile(path).metadata.row_group(9).column(0).data_page_offset
    data = bytearray(open(path, "rb").read())
    data[offset : offset + 16] = b"\xff" * 16  # garbage page header in the last row group
    _write(path, bytes(data))
    it = iter_documents([path])  # the footer is fine: no error yet
    seen = []
    with pytest.raises(InputError) as info:
        for doc in it:
            seen.append(doc.text)
    assert seen == [f"t{i}" for i in range(len(seen))]
    assert 800 <= len(seen) <= 900
    assert str(info.value).startswith(f"{path}: corrupt Parquet data near row {len(seen)} (")
    assert str(info.value).isprintable()


# ---------------------------------------------------------------------------
# compressed files


COMPRESSORS = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma"}


def _compress(ext: str, data: bytes) -> bytes:
    import importlib

    return importlib.import_module(COMPRESSORS[ext]).compress(data)


@pytest.mark.parametrize("ext", list(COMPRESSORS))
def test_compressed_text_and_jsonl_are_read_as_their_contents(tmp_path, ext):
    text = "It was a dark and stormy night.\nThe rain fell.\n"
    book = _write(tmp_path / f"book.txt{ext}", _compress(ext, text.encode()))
    records = "".join(json.dumps({"id": f"r{i}", "text": f"record {i}"}) + "\n" for i in range(3))
    rows = _write(tmp_path / f"rows.jsonl{ext}", _compress(ext, records.encode()))
    assert [(d.id, d.text, d.error) for d in _docs(book)] == [(book, text, None)]
    assert [(d.id, d.text) for d in _docs(rows)] == [("r0", "record 0"), ("r1", "record 1"), ("r2", "record 2")]


def test_compressed_files_inside_folders_and_by_glob(tmp_path):
    folder = tmp_path / "corpus"
    _write(folder / "a.txt.gz", _compress(".gz", b"first"))
    _write(folder / "b.txt.bz2", _compress(".bz2", b"second"))
    _write(folder / "c.txt", "third")
    assert [(d.id, d.text) for d in _docs(str(folder))] == [("a.txt.gz", "first"), ("b.txt.bz2", "second"), ("c.txt", "third")]
    assert [d.id for d in _docs(str(folder), glob="*.gz")] == ["a.txt.gz"]


@pytest.mark.parametrize("ext", list(COMPRESSORS))
def test_a_damaged_archive_is_its_own_error_row(tmp_path, ext):
    good = _write(tmp_path / "good.txt", "fine text")
    data = bytearray(_compress(ext, ("word " * 2000).encode()))
    broken = _write(tmp_path / f"broken.txt{ext}", bytes(data[: len(data) // 2]))  # cut off half way
    docs = _docs(broken, good)
    assert docs[0].text is None and f"damaged {ext} archive" in docs[0].error and "\n" not in docs[0].error
    assert (docs[1].text, docs[1].error) == ("fine text", None)


def test_a_jsonl_archive_damaged_part_way_keeps_the_records_before(tmp_path):
    import gzip

    records = "".join(json.dumps({"id": f"r{i}", "text": "x" * 200 + str(i)}) + "\n" for i in range(400))
    data = gzip.compress(records.encode())
    path = _write(tmp_path / "rows.jsonl.gz", data[: len(data) * 3 // 4])
    docs = _docs(path)
    assert docs[0].id == "r0" and docs[0].text.endswith("0")
    assert docs[-1].text is None and "damaged .gz archive" in docs[-1].error
    assert all(d.error is None for d in docs[:-1]) and len(docs) > 10
