"""--engine ray's inputs: the Parquet files of a dataset (files, folders, globs) and their row
groups, the units a Ray job reads, resumes and counts; and the read task that turns a row
group into documents with the local reader's own function (parquet_row_document), so ids
and per-row errors are the local engine's."""

from __future__ import annotations

import glob as _glob
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError, UsageError
from ..io.inputs import ReadOptions
from ..io.parquet_reader import parquet_plan, parquet_row_document
from ..io.readers import ENCODING_ERRORS, detect_format, walk_folder
from ..job_defaults import JOB
from ..progress import note
from ..wording import plural

#: rows per block out of the read task (small blocks keep the object store light).
READ_BATCH_ROWS = 1024


GLOB_CHARS = set("*?[")


DOC_COLUMNS = ("id", "text", "error")  # then the task's document fields (qa: question), as strings


def doc_columns(opts: ReadOptions) -> tuple[str, ...]:
    """The columns of the read task's tables: id, text, error and the task's document fields."""
    return DOC_COLUMNS + opts.fields


@dataclass
class ParquetInput:
    path: str
    label: str  # as messages name it (the path as found)
    prefix: str | None  # of the ids, as the local engine makes them
    columns: tuple[str, ...]
    id_column: str | None
    fields: tuple[str, ...]  # the task's document fields this file has columns for
    group_rows: list[int] = field(default_factory=list)
    group_bytes: list[int] = field(default_factory=list)

    def first_row(self, group: int) -> int:
        return sum(self.group_rows[:group])


def reader_options(read: dict, fields: tuple[str, ...] = ()) -> ReadOptions:
    """The local reader's options for `read` (the job's), keeping the task's document `fields`."""
    if read.get("encoding_errors", "strict") not in ENCODING_ERRORS:
        raise UsageError(f"--encoding-errors must be one of {', '.join(ENCODING_ERRORS)}")
    if read.get("input_format", "auto") not in ("auto", "parquet"):
        raise UsageError("--engine ray reads Parquet: --input-format must be auto or parquet")
    return ReadOptions(text_column=read.get("text_column", JOB.text_column), id_column=read.get("id_column") or None,
                    glob=read.get("glob") or None, encoding_errors=read.get("encoding_errors", "strict"),
                    fields=tuple(fields), input_format="auto")


def expand_globs(inputs: list[str]) -> list[str]:
    """The inputs with quoted globs expanded as a shell would (the local engine gets them expanded)."""
    paths = []
    for path in inputs:
        if path == "-":
            raise UsageError("--engine ray reads Parquet files, not standard input")
        if GLOB_CHARS & set(path) and not os.path.exists(path):
            found = sorted(_glob.glob(path, recursive=True))
            if not found:
                raise InputError(f"{path}: no files match")
            paths += found
        else:
            paths.append(path)
    return paths


def list_inputs(inputs: list[str], opts: ReadOptions) -> list[ParquetInput]:
    """Every Parquet file of the inputs, checked as the local reader checks them (InputError)."""
    paths = expand_globs(list(inputs))
    multi = len(paths) > 1
    found: list[tuple[str, str | None]] = []  # (path, id prefix)
    for path in paths:
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder")
        if os.path.isdir(path):
            files = [(full, rel) for full, rel in walk_folder(path, opts.glob)]
            parquet = [(full, rel) for full, rel in files if detect_format(full) == "parquet"]
            if not parquet:
                raise InputError(f"{path}: folder has no Parquet files" + (f" matching {opts.glob!r}" if opts.glob else ""))
            if len(parquet) < len(files):
                note(f"{path}: skipped {plural(len(files) - len(parquet), 'file')} not in Parquet (--engine ray reads Parquet)")
            base = path.rstrip("/" + os.sep) or path
            found += [(full, f"{base}/{rel}" if multi else rel) for full, rel in parquet]
        elif detect_format(path) != "parquet":
            raise UsageError(f"{path}: --engine ray reads Parquet (.parquet, .pq); use the local engine for other inputs")
        else:
            found.append((path, path if multi else None))
    return [describe(path, prefix, opts) for path, prefix in found]


def describe(path: str, prefix: str | None, opts: ReadOptions) -> ParquetInput:
    plan = parquet_plan(path, path, opts)  # the local reader's checks: columns and types
    meta = pq.ParquetFile(path).metadata
    text_index = meta.schema.to_arrow_schema().get_field_index(opts.text_column)
    info = ParquetInput(path=path, label=path, prefix=prefix, columns=plan.columns, id_column=plan.id_column,
                        fields=tuple(f for f in opts.fields if f in plan.field_columns))
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        info.group_rows.append(rg.num_rows)
        # the leaf chunk of the text column (flat string columns have one)
        info.group_bytes.append(rg.column(min(text_index, rg.num_columns - 1)).total_uncompressed_size)
    return info


def unit_key(info: ParquetInput, group: int) -> str:
    return f"{os.path.abspath(info.path)}#{group}"


def remaining_units(files: list[ParquetInput], done: set[str]) -> list[tuple[int, int]]:
    """The (file index, row group) pairs with rows that the manifest does not list, in order."""
    return [(f, g) for f, info in enumerate(files) for g, rows in enumerate(info.group_rows)
            if rows and unit_key(info, g) not in done]


def take_group(files: list[ParquetInput], units: list[tuple[int, int]], size: float) -> list[tuple[int, int]]:
    """The first units of `units` holding `size` bytes of text (at least one unit); removed from it."""
    total, n = 0, 0
    while n < len(units) and (n == 0 or total < size):
        f, g = units[n]
        total += files[f].group_bytes[g]
        n += 1
    group = units[:n]
    del units[:n]
    return group


def read_row_groups(batch, files: list[ParquetInput], opts: ReadOptions) -> Iterator[Any]:
    """Ray read task: the documents of each (file, row group) of `batch` as small Arrow tables
    (id, text, error and the task's document fields), made by the local reader's
    parquet_row_document."""
    schema = pa.schema([(name, pa.string()) for name in doc_columns(opts)])
    for f, g in zip(batch.column("file").to_pylist(), batch.column("row_group").to_pylist()):
        info = files[f]
        number = info.first_row(g)
        with pq.ParquetFile(info.path, pre_buffer=False) as pf:
            for part in pf.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=[g], columns=list(info.columns),
                                        use_threads=False):
                texts = part.column(opts.text_column).to_pylist()
                ids = part.column(info.id_column).to_pylist() if info.id_column else [None] * len(texts)
                values = {name: part.column(name).to_pylist() for name in info.fields}
                docs = [parquet_row_document(texts[i], ids[i], number + i, info.label, info.prefix, opts,
                                             {name: column[i] for name, column in values.items()})
                        for i in range(len(texts))]
                number += len(texts)
                # a field that is not a string is not there, as the tasks read them (qa's question)
                yield pa.table({
                    "id": [d.id for d in docs], "text": [d.text for d in docs], "error": [d.error for d in docs],
                    **{name: [v if isinstance(v, str) else None for v in values.get(name, [None] * len(texts))]
                       for name in opts.fields},
                }, schema=schema)


def first_texts(files: list[ParquetInput], opts: ReadOptions, n: int, chars: int) -> list[str]:
    """The texts of the job's first n documents, in order (at most until `chars` characters are
    reached, as a local job's Task.begin reads them; "" for a row that has none), read by the
    same reader as the actors' (read_row_groups)."""
    texts: list[str] = []
    total = 0
    for f, info in enumerate(files):
        for g in range(len(info.group_rows)):
            for table in read_row_groups(pa.table({"file": [f], "row_group": [g]}), files, opts):
                for text in table.column("text").to_pylist():
                    texts.append(text or "")
                    total += len(text or "")
                    if len(texts) == n or total >= chars:
                        return texts
    return texts
