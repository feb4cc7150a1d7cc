"""Document readers: turn command-line inputs into a stream of :class:`Document`.

Input kinds (``input_format="auto"`` picks by extension, case-insensitive):

* a plain file (``.txt``, ``.md``, anything else): one document, the whole file
  decoded as UTF-8 (a leading BOM is dropped);
* ``.jsonl`` / ``.ndjson``: one document per non-blank line, a JSON object whose
  ``text_column`` field holds the text;
* ``.parquet`` / ``.pq``: one document per row, read one row group at a time
  with ``ParquetFile.iter_batches`` in small batches of only the needed columns,
  so a huge file is never loaded whole (memory ~ one row group of the text, id
  and field columns: the Arrow reader decodes a column chunk at once);
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
input none of whose first ``JSONL_CHECK_LINES`` non-blank lines is a JSON object, or
none of whose first records has the text field, or the requested id field, as
Parquet refuses a file without the column, naming the fields it saw).
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
import re
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from .document import Document
from ..errors import InputError, UsageError
from ..progress import note
from ..wording import json_error, plural

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

#: rows per Parquet read batch; long documents make rows big, so keep it small.
PARQUET_BATCH_ROWS = 64
#: non-blank lines of a JSONL input checked up front for the text (and id) field.
JSONL_CHECK_LINES = 20

_JSONL_EXTS = (".jsonl", ".ndjson")
_PARQUET_EXTS = (".parquet", ".pq")
_STDIN_ID = "-"
_STDIN_LABEL = "<stdin>"
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ReadOptions:
    """How iter_documents reads (its keyword options); the Ray engine reads Parquet with the same."""

    text_column: str
    id_column: str | None
    glob: str | None
    encoding_errors: str
    fields: tuple[str, ...]
    input_format: str

    @property
    def id_key(self) -> str:
        return self.id_column if self.id_column is not None else "id"


def detect_format(path: str, input_format: str = "auto") -> str:
    """The format ("text", "jsonl" or "parquet") a file is read with."""
    if input_format != "auto":
        return input_format
    lower = path.lower()
    if lower.endswith(_JSONL_EXTS):
        return "jsonl"
    if lower.endswith(_PARQUET_EXTS):
        return "parquet"
    return "text"


def iter_documents(
    inputs: Sequence[str] | str,
    *,
    text_column: str = "text",
    id_column: str | None = None,
    glob: str | None = None,
    encoding_errors: str = "strict",
    fields: Iterable[str] = ("question",),
    input_format: str = "auto",
) -> Iterator[Document]:
    """Stream the documents of ``inputs`` (files, folders, ``-``) in order.

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
    if isinstance(fields, str):
        fields = (fields,)
    opts = ReadOptions(
        text_column=text_column,
        id_column=id_column or None,
        glob=glob or None,
        encoding_errors=encoding_errors,
        fields=tuple(dict.fromkeys(fields)),
        input_format=input_format,
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
        return _parquet_documents(path, path, path if multi else None, opts, plan)
    if fmt == "jsonl":
        _check_jsonl_file(path, path, opts)
        return _jsonl_file_documents(path, path, path if multi else None, opts)
    from .semeval import is_articles_file, iter_articles

    if opts.input_format == "auto" and is_articles_file(path):  # SemEval-2019 hyperpartisan articles
        return iter_articles(path)
    return _text_file_documents(path, path, path, opts)


def _folder_documents(files: Iterator[tuple[str, str]], prefix: str | None, opts: ReadOptions) -> Iterator[Document]:
    for full, rel in files:
        file_id = f"{prefix}/{rel}" if prefix else rel
        fmt = detect_format(full, opts.input_format)
        if fmt == "parquet":
            plan = parquet_plan(full, full, opts)
            yield from _parquet_documents(full, full, file_id, opts, plan)
        elif fmt == "jsonl":
            _check_jsonl_file(full, full, opts)
            yield from _jsonl_file_documents(full, full, file_id, opts)
        else:
            yield from _text_file_documents(full, full, file_id, opts)


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


def _decode(data: bytes, label: str, errors: str, where: str = "") -> tuple[str | None, str | None]:
    """Decode UTF-8 ``data``; return ``(text, None)`` or ``(None, one-line error)``."""
    skip = 0
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
        skip = len(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        if errors == "replace":
            return data.decode("utf-8", "replace"), None
        bad = data[exc.start]
        return None, f"{label}: {where}invalid UTF-8 at byte offset {exc.start + skip} (byte 0x{bad:02x})"


def _is_blank(text: str) -> bool:
    return not text or text.isspace()


def _text_document(doc_id: str, data: bytes, label: str, opts: ReadOptions) -> Document:
    text, error = _decode(data, label, opts.encoding_errors)
    if error is None and _is_blank(text):
        error = f"{label}: empty document"
    if error is not None:
        return Document(id=doc_id, text=None, error=error)
    return Document(id=doc_id, text=text)


def _text_file_documents(path: str, label: str, doc_id: str, opts: ReadOptions) -> Iterator[Document]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"{label}: cannot read file ({exc.strerror or exc})") from None
    yield _text_document(doc_id, data, label, opts)


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
        head = _jsonl_head(lines)
        _check_jsonl_head(head, _STDIN_LABEL, opts)
        return _jsonl_documents(itertools.chain(head, lines), _STDIN_LABEL, prefix, opts)
    if binary is not None:
        data = binary.read()
    else:  # a text-only stream (already decoded)
        data = stream.read().encode("utf-8", "surrogateescape")
    if opts.input_format == "auto" and _is_jsonl(data):
        note("standard input is JSONL (every line a JSON object): one document per record; "
             "--input-format text reads it as one document")
        head = _jsonl_head(io.BytesIO(data))
        _check_jsonl_head(head, _STDIN_LABEL, opts)
        return _jsonl_documents(io.BytesIO(data), _STDIN_LABEL, prefix, opts)
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
# JSONL


def id_str(value) -> str:
    """A record's id as the text rows carry (the writers compare --resume ids the same way)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    return f"a {type(value).__name__}"


def _check_text(value, label: str, where: str, opts: ReadOptions) -> tuple[str | None, str | None]:
    """Validate a record's text value; return ``(text, None)`` or ``(None, error)``."""
    col = opts.text_column
    if value is None:
        return None, f"{label}: {where}'{col}' is null"
    if isinstance(value, (bytes, bytearray)):
        text, error = _decode(bytes(value), label, opts.encoding_errors, f"{where}'{col}': ")
        if error is not None:
            return None, error
        value = text
    if not isinstance(value, str):
        return None, f"{label}: {where}'{col}' is {_type_name(value)}, not a string"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate from a JSON \ud800 escape
        if opts.encoding_errors == "replace":
            value = _SURROGATE.sub("\ufffd", value)
        else:
            return None, f"{label}: {where}'{col}' has an unpaired surrogate at character {exc.start} (not valid Unicode)"
    if _is_blank(value):
        return None, f"{label}: {where}empty document"
    return value, None


def _jsonl_head(lines: Iterator[bytes]) -> list[bytes]:
    """The lines of `lines` up to its JSONL_CHECK_LINES-th non-blank one (consumed)."""
    head: list[bytes] = []
    filled = 0
    for raw in lines:
        head.append(raw)
        filled += bool(raw.strip())
        if filled == JSONL_CHECK_LINES:
            break
    return head


def _head_fields(lines: list[bytes]) -> tuple[int, dict[str, None]]:
    """(JSON objects among `lines`, their field names in order of appearance)."""
    fields: dict[str, None] = {}
    records = 0
    for raw in lines:
        try:
            record = json.loads(raw.decode("utf-8-sig", "replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            records += 1
            fields.update(dict.fromkeys(record))
    return records, fields


def _check_jsonl_head(head: list[bytes], label: str, opts: ReadOptions) -> None:
    """Refuse a JSONL input whose first lines hold no JSON object, or whose first records all
    lack the text field (or the requested id field): each row would be an error."""
    lines = [raw for raw in head if raw.strip()]
    if not lines:
        return
    records, fields = _head_fields(lines)
    if not records:
        raise InputError(f"{label}: not JSONL: no JSON object in its first {plural(len(lines), 'line')}")
    names = ", ".join(list(fields)[:20]) or "none"
    if opts.text_column not in fields:
        raise InputError(f"{label}: no '{opts.text_column}' field in its first {plural(records, 'record')} (fields: {names}); "
                         "pass --text-column")
    if opts.id_column is not None and opts.id_column not in fields:
        raise InputError(f"{label}: no '{opts.id_column}' id field in its first {plural(records, 'record')} (fields: {names})")


def _check_jsonl_file(path: str, label: str, opts: ReadOptions) -> None:
    try:
        with open(path, "rb") as fh:
            head = _jsonl_head(fh)
    except OSError as exc:
        raise InputError(f"{label}: cannot read file ({exc.strerror or exc})") from None
    _check_jsonl_head(head, label, opts)


def inputs_with_field(inputs: Sequence[str], name: str, *, glob: str | None = None, input_format: str = "auto") -> bool:
    """Whether any input may give documents the field `name` (e.g. qa's "question"): a JSONL
    file with it in one of its first JSONL_CHECK_LINES records, a Parquet file with the column,
    standard input read as records (not read here), also inside folders. Plain text cannot.
    Inputs that cannot be read count as yes: iter_documents reports them."""
    def file_has(path: str) -> bool:
        fmt = detect_format(path, input_format)
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                return name in pq.read_schema(path).names
            if fmt == "jsonl":
                with open(path, "rb") as fh:
                    return name in _head_fields([raw for raw in _jsonl_head(fh) if raw.strip()])[1]
        except (OSError, ValueError, ImportError):
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


def _jsonl_file_documents(path: str, label: str, prefix: str | None, opts: ReadOptions) -> Iterator[Document]:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"{label}: cannot read file ({exc.strerror or exc})") from None
    with fh:
        yield from _jsonl_documents(fh, label, prefix, opts)


def _jsonl_documents(lines: Iterable[bytes], label: str, prefix: str | None, opts: ReadOptions) -> Iterator[Document]:
    """One Document per non-blank line; ids are the id field or the record number."""

    def make_id(base: str) -> str:
        return f"{prefix}:{base}" if prefix is not None else base

    offset = 0
    row = 0
    id_key = opts.id_key
    for lineno, raw in enumerate(lines, start=1):
        start = offset
        offset += len(raw)
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8):]
            start += len(codecs.BOM_UTF8)
        if not raw.strip():
            continue
        number = row
        row += 1
        where = f"line {lineno}: "
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if opts.encoding_errors == "replace":
                line = raw.decode("utf-8", "replace")
            else:
                yield Document(
                    id=make_id(str(number)),
                    text=None,
                    error=f"{label}: {where}invalid UTF-8 at byte offset {start + exc.start} (byte 0x{raw[exc.start]:02x})",
                )
                continue
        try:
            record = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, or a number too large
            problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else str(exc)
            yield Document(id=make_id(str(number)), text=None, error=f"{label}: {where}invalid JSON ({problem})")
            continue
        except RecursionError:
            yield Document(id=make_id(str(number)), text=None, error=f"{label}: {where}invalid JSON (nested too deeply)")
            continue
        if not isinstance(record, dict):
            yield Document(
                id=make_id(str(number)),
                text=None,
                error=f"{label}: {where}expected a JSON object, got {_type_name(record)}",
            )
            continue
        extra = {name: record[name] for name in opts.fields if name in record}
        id_value = record.get(id_key)
        if id_value is None:
            if opts.id_column is not None:
                yield Document(
                    id=make_id(str(number)),
                    text=None,
                    error=f"{label}: {where}no '{id_key}' id field",
                    fields=extra,
                )
                continue
            base = str(number)
        else:
            base = id_str(id_value)
        doc_id = make_id(base)
        if opts.text_column not in record:
            names = ", ".join(list(record)[:20]) or "none"
            yield Document(
                id=doc_id,
                text=None,
                error=f"{label}: {where}no '{opts.text_column}' field (fields: {names})",
                fields=extra,
            )
            continue
        text, error = _check_text(record[opts.text_column], label, where, opts)
        yield Document(id=doc_id, text=text, error=error, fields=extra)


# ---------------------------------------------------------------------------
# Parquet


@dataclass(frozen=True)
class ParquetPlan:
    """What a Parquet file is read by, checked from its footer (parquet_plan)."""

    columns: tuple[str, ...]  # what iter_batches reads
    id_column: str | None
    field_columns: tuple[str, ...]


def _arrow():
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def _exc_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return "".join(c if c.isprintable() else "?" for c in text.splitlines()[0])


def _open_parquet(path: str, label: str):
    pa, pq = _arrow()
    try:
        return pq.ParquetFile(path, pre_buffer=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{label}: not a readable Parquet file ({_exc_line(exc)})") from None


def _text_type_ok(pa, typ) -> bool:
    t = pa.types
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    checks = [t.is_string, t.is_large_string, t.is_binary, t.is_large_binary, t.is_null]
    for name in ("is_string_view", "is_binary_view"):
        if hasattr(t, name):
            checks.append(getattr(t, name))
    return any(check(typ) for check in checks)


def parquet_plan(path: str, label: str, opts: ReadOptions) -> ParquetPlan:
    """Open the file's footer and check the columns (raises InputError)."""
    pa, _ = _arrow()
    pf = _open_parquet(path, label)
    try:
        try:
            schema = pf.schema_arrow
        except (pa.ArrowException, ValueError) as exc:
            raise InputError(f"{label}: unsupported Parquet schema ({_exc_line(exc)})") from None
        names = list(schema.names)
        listing = ", ".join(names) if names else "none"
        col = opts.text_column
        if col not in names:
            raise InputError(f"{label}: no column '{col}' (columns: {listing})")
        typ = schema.field(col).type
        if not _text_type_ok(pa, typ):
            raise InputError(f"{label}: column '{col}' has type {typ}, not string")
        if opts.id_column is not None:
            if opts.id_column not in names:
                raise InputError(f"{label}: no id column '{opts.id_column}' (columns: {listing})")
            id_col = opts.id_column
        else:
            id_col = "id" if "id" in names and "id" != col else None
        field_cols = tuple(name for name in opts.fields if name in names)
        columns = tuple(dict.fromkeys([col, *([id_col] if id_col else []), *field_cols]))
        return ParquetPlan(columns=columns, id_column=id_col, field_columns=field_cols)
    finally:
        pf.close()


def _parquet_documents(
    path: str, label: str, prefix: str | None, opts: ReadOptions, plan: ParquetPlan
) -> Iterator[Document]:
    pa, _ = _arrow()
    pf = _open_parquet(path, label)
    try:
        row = 0
        for group in range(pf.num_row_groups):
            # One row group at a time (pre-buffering off): ParquetFile.iter_batches over the
            # whole file would pre-buffer every row group's column chunks up front.
            batches = pf.iter_batches(
                batch_size=PARQUET_BATCH_ROWS, row_groups=[group], columns=list(plan.columns), use_threads=False
            )
            while True:
                try:
                    batch = next(batches, None)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise InputError(f"{label}: corrupt Parquet data near row {row} ({_exc_line(exc)})") from None
                if batch is None:
                    break
                texts = batch.column(opts.text_column).to_pylist()
                ids = batch.column(plan.id_column).to_pylist() if plan.id_column else None
                extras = {name: batch.column(name).to_pylist() for name in plan.field_columns}
                del batch
                for i, value in enumerate(texts):
                    yield parquet_row_document(
                        value, ids[i] if ids is not None else None, row + i, label, prefix, opts,
                        {name: values[i] for name, values in extras.items()},
                    )
                row += len(texts)
    finally:
        pf.close()


def parquet_row_document(
    value, id_value, number: int, label: str, prefix: str | None, opts: ReadOptions, fields: dict
) -> Document:
    """Row `number` of a Parquet file as a Document: the id (the id column's value, else the
    row number, after `prefix:`) and the checked text or a one-line error. The Ray engine
    (ray_engine.py) makes its documents with this too, so both engines give the same rows."""
    doc_id = str(number) if id_value is None else id_str(id_value)
    doc_id = f"{prefix}:{doc_id}" if prefix is not None else doc_id
    where = f"row {number}: "
    if id_value is None and opts.id_column is not None:
        text, error = None, f"{label}: {where}id column '{opts.id_column}' is null"
    else:
        text, error = _check_text(value, label, where, opts)
    return Document(id=doc_id, text=text, error=error, fields=fields)
