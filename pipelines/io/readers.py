"""Document readers: turn command-line inputs into a stream of :class:`Document`.

Input kinds (``input_format="auto"`` picks by extension, case-insensitive):

* a plain file (``.txt``, ``.md``, anything else): one document, the whole file
  decoded as UTF-8 (a leading BOM is dropped);
* ``.pdf`` (or any file that starts as a PDF does): one document, its pages' text in page
  order, with where each page starts (pdf_reader.py);
* ``.jsonl`` / ``.ndjson``: one document per non-blank line, a JSON object whose
  ``text_column`` field holds the text (jsonl_reader.py);
* ``.parquet`` / ``.pq``: one document per row, streamed a small batch of only the
  needed columns at a time, so a huge file is never loaded whole (parquet_reader.py);
* a folder: walked recursively in sorted (code point) order per directory,
  hidden files and folders (names starting with ``.``) skipped, symlinked
  folders followed once (loops are cut); ``glob`` filters the files: a pattern
  without ``/`` is matched against the file name (``"*.txt"``), a pattern with
  ``/`` against the path relative to the folder (``"cases/*.md"``; a leading
  ``**/`` also matches at the top level). ``.jsonl``/``.parquet`` files inside
  the folder are streamed as records;
* ``-``: standard input, read when :func:`iter_documents` is called: one
  document, or JSONL records with ``input_format="jsonl"``, or when every
  non-blank line is a JSON object (``"auto"`` says so on stderr; ``"text"``
  keeps it one document).

``input_format`` other than ``"auto"`` (``"text"``, ``"jsonl"``, ``"parquet"``)
forces that format for every file and for stdin.

Ids:

* a file found in a folder: its path relative to the folder (posix separators);
* a file given directly: the path as given; stdin: ``"-"``, as given;
* a record: the value of ``id_column`` (default: the ``"id"`` field/column when
  present) as a string, else its 0-based row number (blank JSONL lines do not
  count); a record whose explicitly requested ``id_column`` is missing or null
  is an error document. Records from a file inside a folder, or from any file when several
  inputs are given, are prefixed with the file's id: ``"part1.jsonl:17"`` (stdin: ``"-:17"``).
  With several inputs, a folder's files are prefixed by the folder as given
  (``"docs/a.txt"``) so ids of different inputs cannot clash.

Ids are unique: a document whose id was already produced (a duplicated id
value, a file given twice, ...) comes back as an error document with id
``"<id>#2"`` (``#3``, ...), so one id always means one output row. (This keeps
the set of ids seen so far in memory: a few dozen bytes per document.)

Documents come out in input order, deterministically.

Errors: a problem with one document never raises; the :class:`Document` comes
back with ``text=None`` and a one-line ``error`` (invalid UTF-8 with file and
byte offset, empty or whitespace-only text, a JSONL line that is not a JSON
object or lacks the text field, a null or non-string value). Problems with a
whole input raise :class:`~lfcli.pipelines.errors.InputError` (missing or
unreadable path, a folder without matching files, an unreadable/corrupt Parquet
file, a missing or non-string text column, a missing requested id column; a JSONL
input whose first ``JSONL_CHECK_LINES`` non-blank lines hold no JSON object, or no
record with the text field or the requested id field: see jsonl_reader.py).
Directly given inputs are checked when :func:`iter_documents` is called, before
the first document is produced; files found inside folders when reached.

Nothing is read ahead but the first lines of a JSONL file (checked, then read
again) and standard input: the iterator holds one file (or one small Parquet
batch, or one JSONL line) at a time.
"""

from __future__ import annotations

import codecs
import fnmatch
import io
import itertools
import json
import os
import sys
from typing import Callable, Iterable, Iterator, Sequence

import pyarrow.parquet as pq

from ..errors import InputError, UsageError
from ..job_defaults import JOB
from ..progress import note
from .compressed import DAMAGED, compression, damage, inner_name, open_input
from .document import Document
from .inputs import ReadOptions, check_encoding, decode_text, is_blank
from .jsonl_reader import (
    JSONL_CHECK_LINES,
    check_jsonl_file,
    check_jsonl_head,
    head_fields,
    jsonl_documents,
    jsonl_file_documents,
    jsonl_head,
)
from .parquet_reader import PARQUET_BATCH_ROWS, parquet_documents, parquet_plan
from .pdf_reader import PDF_EXTS, is_pdf, pdf_document
from .semeval import is_articles_file, iter_articles

__all__ = [
    "Document",
    "iter_documents",
    "inputs_with_field",
    "detect_format",
    "INPUT_FORMATS",
    "ENCODING_ERRORS",
    "PARQUET_BATCH_ROWS",
    "JSONL_CHECK_LINES",
]

INPUT_FORMATS = ("auto", "text", "jsonl", "parquet")
ENCODING_ERRORS = ("strict", "replace")

_JSONL_EXTS = (".jsonl", ".ndjson")
_PARQUET_EXTS = (".parquet", ".pq")
_STDIN_ID = "-"
_STDIN_LABEL = "<stdin>"


def detect_format(path: str, input_format: str = "auto") -> str:
    """The format ("text", "jsonl", "parquet" or "pdf") a file is read with."""
    if input_format != "auto":
        return input_format
    lower = inner_name(path).lower()
    if lower.endswith(_JSONL_EXTS):
        return "jsonl"
    if lower.endswith(_PARQUET_EXTS):
        return "parquet"
    if lower.endswith(PDF_EXTS):
        return "pdf"
    return "text"


def iter_documents(
    inputs: Sequence[str] | str,
    *,
    text_column: str = JOB.text_column,
    id_column: str | None = None,
    glob: str | None = None,
    encoding_errors: str = "strict",
    fields: Iterable[str] = (),
    input_format: str = "auto",
    empty_ok: bool = False,
    encoding: str = "utf-8",
) -> Iterator[Document]:
    """Stream the documents of ``inputs`` (files, folders, ``-``) in order. `empty_ok`: an
    empty or blank document is read as one (else it is an error row).

    Directly given inputs are validated now (an :class:`InputError` is raised
    before anything is read); the documents are then produced lazily.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    paths = [os.fspath(p) for p in inputs]
    if not paths:
        raise UsageError("no inputs given")
    if encoding_errors not in ENCODING_ERRORS:
        raise UsageError(f"encoding errors must be one of {', '.join(ENCODING_ERRORS)}, not {encoding_errors!r}")
    if input_format not in INPUT_FORMATS:
        raise UsageError(f"input format must be one of {', '.join(INPUT_FORMATS)}, not {input_format!r}")
    if not text_column:
        raise UsageError("the text column name is empty")
    check_encoding(encoding)
    if isinstance(fields, str):
        fields = (fields,)
    opts = ReadOptions(
        text_column=text_column,
        id_column=id_column or None,
        glob=glob or None,
        encoding_errors=encoding_errors,
        fields=tuple(dict.fromkeys(fields)),
        input_format=input_format,
        empty_ok=empty_ok,
        encoding=encoding,
    )
    multi = len(paths) > 1
    sources = [_prepare(path, opts, multi) for path in paths]
    return _unique_ids(itertools.chain.from_iterable(sources))


def _unique_ids(docs: Iterator[Document]) -> Iterator[Document]:
    """Make every id unique: a repeated id becomes an error document with id ``"<id>#2"`` (``#3``, ...)."""
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            original = doc.id
            k = 2
            while f"{original}#{k}" in seen:
                k += 1
            doc = Document(
                id=f"{original}#{k}",
                text=None,
                error=f"duplicate id {original!r} (an earlier document has it)",
                fields=doc.fields,
            )
        seen.add(doc.id)
        yield doc


# ---------------------------------------------------------------------------
# per input


def _prepare(path: str, opts: ReadOptions, multi: bool) -> Iterator[Document]:
    """Validate one command-line input and return the (lazy) iterator of its documents."""
    if path == "-":
        return _stdin_documents(opts, multi)
    if not os.path.exists(path):
        if os.path.islink(path):
            raise InputError(f"{path}: broken symbolic link")
        raise InputError(f"{path}: no such file or folder")
    if os.path.isdir(path):
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError(f"{path}: folder is not readable (permission denied)")
        files = walk_folder(path, opts.glob)
        first = next(files, None)
        if first is None:
            what = f"no files matching {opts.glob!r}" if opts.glob else "no (non-hidden) files"
            raise InputError(f"{path}: folder has {what}")
        prefix = (path.rstrip("/" + os.sep) or path) if multi else None
        return _folder_documents(itertools.chain([first], files), prefix, opts)
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: file is not readable (permission denied)")
    fmt = detect_format(path, opts.input_format)
    if fmt == "parquet":
        plan = parquet_plan(path, path, opts)  # checks the schema now
        return parquet_documents(path, path, path if multi else None, opts, plan)
    if fmt == "jsonl":
        check_jsonl_file(path, path, opts)
        return jsonl_file_documents(path, path, path if multi else None, opts)

    if opts.input_format == "auto" and is_articles_file(path):  # SemEval-2019 hyperpartisan articles
        return iter_articles(path)
    return _text_file_documents(path, path, path, opts, pdf=fmt == "pdf")


def _folder_documents(files: Iterator[tuple[str, str]], prefix: str | None, opts: ReadOptions) -> Iterator[Document]:
    for full, rel in files:
        file_id = f"{prefix}/{rel}" if prefix else rel
        fmt = detect_format(full, opts.input_format)
        if fmt == "parquet":
            plan = parquet_plan(full, full, opts)
            yield from parquet_documents(full, full, file_id, opts, plan)
        elif fmt == "jsonl":
            check_jsonl_file(full, full, opts)
            yield from jsonl_file_documents(full, full, file_id, opts)
        else:
            yield from _text_file_documents(full, full, file_id, opts, pdf=fmt == "pdf")


def walk_folder(root: str, pattern: str | None) -> Iterator[tuple[str, str]]:
    """Yield ``(full_path, relative_posix_path)`` of the files under ``root``, sorted, hidden skipped."""
    match = _glob_matcher(pattern)
    seen: set[tuple[int, int]] = set()

    def visit(folder: str, rel_parts: tuple[str, ...]) -> Iterator[tuple[str, str]]:
        try:
            st = os.stat(folder)
        except OSError as exc:
            raise InputError(f"{folder}: cannot read folder ({exc.strerror or exc})") from None
        key = (st.st_dev, st.st_ino)
        if key in seen:  # a symlink loop or a folder linked twice
            return
        seen.add(key)
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise InputError(f"{folder}: cannot list folder ({exc.strerror or exc})") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            parts = rel_parts + (entry.name,)
            try:
                is_dir = entry.is_dir()
                is_file = not is_dir and entry.is_file()
            except OSError:
                continue
            if is_dir:
                yield from visit(entry.path, parts)
            elif is_file:
                rel = "/".join(parts)
                if match(rel, entry.name):
                    yield entry.path, rel

    return visit(root, ())


def _glob_matcher(pattern: str | None) -> Callable[[str, str], bool]:
    if not pattern:
        return lambda rel, name: True
    pattern = pattern.replace(os.sep, "/")
    if "/" not in pattern:
        return lambda rel, name: fnmatch.fnmatchcase(name, pattern)
    pattern = pattern.lstrip("/")
    if pattern.startswith("**/"):
        tail = pattern[3:]
        return lambda rel, name: fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, tail)
    return lambda rel, name: fnmatch.fnmatchcase(rel, pattern)


# ---------------------------------------------------------------------------
# plain text


def _text_document(doc_id: str, data: bytes, label: str, opts: ReadOptions, pdf: bool = False) -> Document:
    """A file's document: its text decoded, or a PDF's pages' text (`pdf`, or a file of any name
    that is a PDF by its first bytes, unless --input-format text)."""
    if pdf or (opts.input_format == "auto" and is_pdf(data)):
        doc = pdf_document(doc_id, data, label)
        if doc.error is None and is_blank(doc.text) and not opts.empty_ok:
            return Document(id=doc_id, text=None, error=f"{label}: empty document")
        return doc
    text, error = decode_text(data, label, opts.encoding_errors, opts.encoding)
    if error is None and is_blank(text) and not opts.empty_ok:
        error = f"{label}: empty document"
    if error is not None:
        return Document(id=doc_id, text=None, error=error)
    return Document(id=doc_id, text=text)


def _text_file_documents(path: str, label: str, doc_id: str, opts: ReadOptions, pdf: bool = False) -> Iterator[Document]:
    try:
        fh = open_input(path)
    except OSError as exc:
        raise InputError(f"{label}: cannot read file ({exc.strerror or exc})") from None
    try:
        with fh:
            data = fh.read()
    except DAMAGED as exc:
        if not compression(path):
            raise InputError(f"{label}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
        yield Document(id=doc_id, text=None, error=damage(label, path, exc))
        return
    yield _text_document(doc_id, data, label, opts, pdf)


# ---------------------------------------------------------------------------
# stdin


def _stdin_documents(opts: ReadOptions, multi: bool) -> Iterator[Document]:
    stream = sys.stdin
    if stream is None:
        raise InputError("standard input is not available")
    if opts.input_format == "parquet":
        raise InputError("Parquet cannot be read from standard input; pass the file path instead")
    binary = getattr(stream, "buffer", None)
    prefix = _STDIN_ID if multi else None
    if opts.input_format == "jsonl":
        lines = binary if binary is not None else (line.encode("utf-8", "surrogateescape") for line in stream)
        lines = iter(lines)
        head = jsonl_head(lines)
        check_jsonl_head(head, _STDIN_LABEL, opts)
        return jsonl_documents(itertools.chain(head, lines), _STDIN_LABEL, prefix, opts)
    if binary is not None:
        data = binary.read()
    else:  # a text-only stream (already decoded)
        data = stream.read().encode("utf-8", "surrogateescape")
    if opts.input_format == "auto" and _is_jsonl(data):
        note("standard input is JSONL (every line a JSON object): one document per record; "
             "--input-format text reads it as one document")
        head = jsonl_head(io.BytesIO(data))
        check_jsonl_head(head, _STDIN_LABEL, opts)
        return jsonl_documents(io.BytesIO(data), _STDIN_LABEL, prefix, opts)
    return iter([_text_document(_STDIN_ID, data, _STDIN_LABEL, opts)])


def _is_jsonl(data: bytes) -> bool:
    """True when every non-blank line of `data` is a JSON object (and there is one)."""
    found = False
    for raw in io.BytesIO(data):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith((b"{", codecs.BOM_UTF8 + b"{")):  # prose fails here, unparsed
            return False
        try:
            record = json.loads(line.decode("utf-8-sig"))
        except (ValueError, RecursionError):  # bad JSON or bad UTF-8
            return False
        if not isinstance(record, dict):
            return False
        found = True
    return found


# ---------------------------------------------------------------------------
# which inputs carry a field


def inputs_with_field(inputs: Sequence[str], name: str, *, glob: str | None = None, input_format: str = "auto") -> bool:
    """Whether any input may give documents the field `name` (e.g. qa's "question"): a JSONL
    file with it in one of its first JSONL_CHECK_LINES records, a Parquet file with the column,
    standard input read as records (not read here), also inside folders. Plain text cannot.
    Inputs that cannot be read count as yes: iter_documents reports them."""
    def file_has(path: str) -> bool:
        fmt = detect_format(path, input_format)
        try:
            if fmt == "parquet":
                return name in pq.read_schema(path).names
            if fmt == "jsonl":
                with open_input(path) as fh:
                    return name in head_fields([raw for raw in jsonl_head(fh) if raw.strip()])[1]
        except (*DAMAGED, ImportError):
            return True
        return False

    for path in inputs:
        if path == "-":
            if input_format != "text":
                return True
        elif os.path.isdir(path):
            if any(file_has(full) for full, _ in walk_folder(path, glob)):
                return True
        elif not os.path.isfile(path) or file_has(path):
            return True
    return False
