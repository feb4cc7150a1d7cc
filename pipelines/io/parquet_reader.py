"""Parquet input: one document per row, read one row group at a time with
``ParquetFile.iter_batches`` in small batches (PARQUET_BATCH_ROWS) of only the needed
columns, so a huge file is never loaded whole (memory ~ one row group of the text, id and
field columns: the Arrow reader decodes a column chunk at once).

parquet_plan checks a file from its footer (a readable file, a text column of strings or bytes,
the requested id column) and says which columns to read (ParquetPlan); parquet_row_document
makes one row's Document. The Ray engine (infer/ray_engine.py) uses both, so its ids and
per-row errors are the local reader's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from .document import Document
from .inputs import ReadOptions, check_text, id_str

#: rows per Parquet read batch; long documents make rows big, so keep it small.
PARQUET_BATCH_ROWS = 64


@dataclass(frozen=True)
class ParquetPlan:
    """What a Parquet file is read by, checked from its footer (parquet_plan)."""

    columns: tuple[str, ...]  # what iter_batches reads
    id_column: str | None
    field_columns: tuple[str, ...]


def _arrow():
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


def parquet_documents(
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
        text, error = check_text(value, label, where, opts)
    return Document(id=doc_id, text=text, error=error, fields=fields)

