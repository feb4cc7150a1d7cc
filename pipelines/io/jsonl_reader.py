"""JSONL input: one document per non-blank line, a JSON object whose ``text_column`` field
holds the text; its id is the ``id_column`` field (default ``"id"`` when present) as a string,
else its 0-based record number (blank lines do not count), after ``prefix:`` when given.

A line that is not a JSON object, or lacks the text field, comes back as an error document.
A whole input none of whose first ``JSONL_CHECK_LINES`` non-blank lines is a JSON object, or
none of whose first records has the text field (or the requested id field), is refused
with an :class:`~lfcli.pipelines.errors.InputError` naming the fields it saw, as Parquet
refuses a file without the column. Those first lines are read twice (checked, then read
again); after them one line is held at a time."""

from __future__ import annotations

import codecs
import json
from typing import Iterable, Iterator

from .compressed import DAMAGED, compression, damage, open_input
from .document import Document
from .inputs import ReadOptions, check_text, id_str, type_name
from ..errors import InputError
from ..wording import json_error, plural

#: non-blank lines of a JSONL input checked up front for the text (and id) field.
JSONL_CHECK_LINES = 20


def jsonl_head(lines: Iterator[bytes]) -> list[bytes]:
    """The lines of `lines` up to its JSONL_CHECK_LINES-th non-blank one (consumed)."""
    head: list[bytes] = []
    filled = 0
    for raw in lines:
        head.append(raw)
        filled += bool(raw.strip())
        if filled == JSONL_CHECK_LINES:
            break
    return head


def head_fields(lines: list[bytes]) -> tuple[int, dict[str, None]]:
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


def check_jsonl_head(head: list[bytes], label: str, opts: ReadOptions) -> None:
    """Refuse a JSONL input whose first lines hold no JSON object, or whose first records all
    lack the text field (or the requested id field): each row would be an error."""
    lines = [raw for raw in head if raw.strip()]
    if not lines:
        return
    records, fields = head_fields(lines)
    if not records:
        raise InputError(f"{label}: not JSONL: no JSON object in its first {plural(len(lines), 'line')}")
    names = ", ".join(list(fields)[:20]) or "none"
    if opts.text_column not in fields:
        raise InputError(f"{label}: no '{opts.text_column}' field in its first {plural(records, 'record')} (fields: {names}); "
                         "pass --text-column")
    if opts.id_column is not None and opts.id_column not in fields:
        raise InputError(f"{label}: no '{opts.id_column}' id field in its first {plural(records, 'record')} (fields: {names})")


def check_jsonl_file(path: str, label: str, opts: ReadOptions) -> None:
    """Check the file's first records (a compressed file's, decompressed: a damaged archive is
    left to `jsonl_file_documents`, which gives it its error row)."""
    try:
        with open_input(path) as fh:
            head = jsonl_head(fh)
    except DAMAGED as exc:
        if compression(path):
            return
        raise InputError(f"{label}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
    check_jsonl_head(head, label, opts)


def jsonl_file_documents(path: str, label: str, prefix: str | None, opts: ReadOptions) -> Iterator[Document]:
    """The file's records; a compressed file damaged part-way gives the records before the
    damage, then one error row (id: the file's prefix, or its label)."""
    try:
        fh = open_input(path)
    except OSError as exc:
        raise InputError(f"{label}: cannot read file ({exc.strerror or exc})") from None
    with fh:
        try:
            yield from jsonl_documents(fh, label, prefix, opts)
        except DAMAGED as exc:
            if not compression(path):
                raise
            yield Document(id=prefix or label, text=None, error=damage(label, path, exc))


def jsonl_documents(lines: Iterable[bytes], label: str, prefix: str | None, opts: ReadOptions) -> Iterator[Document]:
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
                error=f"{label}: {where}expected a JSON object, got {type_name(record)}",
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
        text, error = check_text(record[opts.text_column], label, where, opts)
        yield Document(id=doc_id, text=text, error=error, fields=extra)
