"""Result writers: JSONL to stdout, or a ``.jsonl`` / ``.json`` / ``.parquet`` file.

``open_writer(path, ...)`` returns a :class:`ResultWriter` (a context manager)
whose ``write(row)`` appends one result row (a dict) in the order given. The
format follows the extension of ``path``; ``None`` or ``"-"`` means JSONL on
stdout, one object per line, flushed per row.

Crash safety and ``--resume``
-----------------------------
Every format is designed so that a run killed at any instant (SIGKILL, power
cut aside) leaves state from which ``resume=True`` produces a readable output
holding every id exactly once. The invariant: there is always exactly one
*authoritative* record of the finished rows, and rows only become visible
there in whole units.

* ``OUT.jsonl``: rows are appended to ``OUT.jsonl`` itself, one line each,
  flushed per row. Only a line ending in ``\\n`` counts; on resume a torn last
  line (the row being written when the process died) is truncated away, the
  ids of the complete lines become ``done_ids``, and new rows are appended.
* ``OUT.json``: rows go to the sidecar ``OUT.json.parts.jsonl`` exactly as for
  JSONL. ``close()`` writes the array to ``OUT.json.tmp`` and renames it over
  ``OUT.json`` (atomic), then deletes the sidecar. Resuming a finished
  ``OUT.json`` first copies its rows to a new sidecar (written to a temp name,
  then renamed).
* ``OUT.parquet``: rows are buffered and written every ``rows_per_group`` rows
  (or, at the next row, once ``flush_seconds`` (5 s) have passed since the last flush,
  so a killed job keeps all but its last few seconds; or on ``flush()``) as a complete
  Parquet file ``OUT.parquet.parts/part-NNNNNN.parquet`` (written as ``.tmp``,
  fsynced, renamed). ``close()`` merges the parts, in order, into
  ``OUT.parquet.tmp``, renames it to ``OUT.parquet``, then renames the parts
  folder away and deletes it. Resuming a finished ``OUT.parquet`` first moves it
  (hard link, or copy) into a fresh parts folder built under a temp name and
  renamed into place.

Whenever the sidecar (``.parts.jsonl`` / ``.parts/``) exists it is the
authoritative record and holds a superset of any ``OUT`` file next to it; the
leftovers of an interrupted step (``*.tmp`` files, ``.adopt-*`` / ``.done-*``
folders) are never read and are removed on the next open. A run that stops on
an exception inside ``with open_writer(...)`` writes its buffered rows and
leaves the sidecar for ``--resume`` instead of finalizing. Files are created on
the first row (or on ``close()``), so a run that fails before writing anything
(e.g. on a bad input path) leaves nothing that would block the next run.

Existing output (``OUT`` or its sidecar) is refused with a
:class:`~lfcli.pipelines.errors.UsageError` unless ``force`` (start over) or
``resume`` (continue) is given.

The job that made an output (``job=``, see :mod:`~lfcli.pipelines.io.jobs`) is recorded
with it: in the key-value metadata of every Parquet part's schema and of the finished
file, and for JSONL and JSON in ``OUT.lfcli-job.json``, written when the output is
opened. ``resume`` compares it with the job given and refuses another job (or an
output without a record) before it reads or changes anything.

Parquet schema: pass the task's explicit ``pyarrow`` schema (nested lists,
structs, maps, fixed-size lists are fine). Every field is made nullable and a
nullable string ``error`` column is added if missing, so error rows (id +
error only) fit. Keys that are not in the schema raise ``ValueError``. With
``schema=None`` each part's schema is inferred from its rows and the parts are
unified (null columns take the type seen later) when merging.
"""

from __future__ import annotations

import glob as _glob
import json
import math
import os
import shutil
import sys
import time
from typing import Any, Iterator

from ..errors import InputError, UsageError
from .jobs import JOB_KEY, SIDECAR_SUFFIX, check_same_job, read_sidecar
from .readers import id_str

__all__ = [
    "ResultWriter",
    "open_writer",
    "output_format",
    "sidecar_path",
    "ROWS_PER_GROUP",
    "FLUSH_SECONDS",
]

ROWS_PER_GROUP = 256
FLUSH_SECONDS = 5.0

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def output_format(path: str | None) -> str:
    """``"stdout"``, ``"jsonl"``, ``"json"`` or ``"parquet"`` for an output path (UsageError if unknown)."""
    if path is None or path == "-":
        return "stdout"
    lower = path.lower()
    for ext, fmt in _EXTENSIONS.items():
        if lower.endswith(ext):
            return fmt
    ext = os.path.splitext(path)[1]
    what = f"extension '{ext}'" if ext else "no extension"
    raise UsageError(f"{path}: unknown output format ({what}); use .jsonl, .json or .parquet")


def sidecar_path(path: str) -> str | None:
    """Where the in-progress state of output ``path`` lives (None for plain JSONL)."""
    fmt = output_format(path)
    if fmt == "json":
        return path + ".parts.jsonl"
    if fmt == "parquet":
        return path + ".parts"
    return None


# ---------------------------------------------------------------------------
# JSON encoding


def _json_default(obj: Any) -> Any:
    tolist = getattr(obj, "tolist", None)  # numpy arrays/scalars, torch tensors
    if callable(tolist):
        return tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", "replace")
    isoformat = getattr(obj, "isoformat", None)  # datetime, date
    if callable(isoformat):
        return isoformat()
    raise TypeError(f"cannot write a {type(obj).__name__} value as JSON")


def _finite(obj: Any) -> Any:
    """Replace NaN/inf floats with None (JSON has no such numbers)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return _finite(tolist())
    return obj


def _dumps(row: dict) -> str:
    try:
        return json.dumps(row, ensure_ascii=False, default=_json_default, allow_nan=False)
    except ValueError:  # NaN or infinity somewhere
        return json.dumps(_finite(row), ensure_ascii=False, default=_json_default, allow_nan=False)


def _encode_line(row: dict) -> bytes:
    # backslashreplace turns a lone surrogate into the JSON escape "\udXXX": still valid JSON.
    return (_dumps(row) + "\n").encode("utf-8", "backslashreplace")


# ---------------------------------------------------------------------------
# filesystem helpers


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    """Remove a file or a folder; folders are renamed away first so removal is atomic."""
    if os.path.isdir(path) and not os.path.islink(path):
        trash = f"{path}.done-{os.getpid()}-{time.monotonic_ns()}"
        os.replace(path, trash)
        shutil.rmtree(trash, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def _remove_leftovers(path: str) -> None:
    """Delete half-written temporaries of earlier runs (never authoritative)."""
    base = _glob.escape(path)
    for pattern in (base + ".tmp", base + ".parts.jsonl.tmp", base + ".parts.adopt-*", base + ".parts.done-*"):
        for leftover in _glob.glob(pattern):
            if os.path.isdir(leftover) and not os.path.islink(leftover):
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                try:
                    os.remove(leftover)
                except OSError:
                    pass


def _row_id(row: dict, id_field: str) -> str | None:
    value = row.get(id_field)
    return None if value is None else id_str(value)


# ---------------------------------------------------------------------------
# writers


class ResultWriter:
    """Base class: a context manager taking result rows in order.

    ``done_ids`` holds the ids already in the output (from a resumed run) and
    grows with every row written.
    """

    format: str = ""

    def __init__(self, path: str | None, id_field: str = "id") -> None:
        self.path = path
        self.id_field = id_field
        self.done_ids: set[str] = set()
        self.rows_written = 0
        self.closed = False

    def write(self, row: dict) -> None:
        if self.closed:
            raise ValueError("write to a closed result writer")
        if not isinstance(row, dict):
            raise TypeError(f"a result row must be a dict, not {type(row).__name__}")
        self._write(row)
        self.rows_written += 1
        row_id = _row_id(row, self.id_field)
        if row_id is not None:
            self.done_ids.add(row_id)

    def set_schema(self, schema) -> None:
        """Give the output schema once it is known (before the first row). Lets a caller
        check the output path before the expensive part of a job (loading a model)."""

    def flush(self) -> None:
        """Make the rows written so far durable (resumable)."""

    def close(self) -> None:
        """Finish the output (valid, complete file); idempotent."""
        if not self.closed:
            self.closed = True
            self._close()

    def abort(self) -> None:
        """Stop without finalizing: keep what was written for a later ``resume``."""
        if not self.closed:
            self.closed = True
            self._abort()

    def _write(self, row: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _close(self) -> None:
        pass

    def _abort(self) -> None:
        self._close()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            try:
                self.abort()
            except Exception:  # the original exception matters more
                pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path or '<stdout>'} rows={self.rows_written}>"


class _StdoutWriter(ResultWriter):
    format = "stdout"

    def _write(self, row: dict) -> None:
        data = _encode_line(row)
        out = sys.stdout
        binary = getattr(out, "buffer", None)
        if binary is not None:
            out.flush()  # keep order with anything written through the text layer
            binary.write(data)
            binary.flush()
        else:
            out.write(data.decode("utf-8"))
            out.flush()

    def flush(self) -> None:
        sys.stdout.flush()

    def _close(self) -> None:
        sys.stdout.flush()


def _scan_jsonl(path: str, id_field: str) -> set[str]:
    """Drop a torn last line of ``path`` (no final newline) and return the ids of its rows."""
    ids: set[str] = set()
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        keep = 0
        pos = size
        while pos > 0:  # find the end of the last complete line
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            chunk = fh.read(step)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                keep = pos + idx + 1
                break
        if keep < size:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
        fh.seek(0)
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                raise InputError(
                    f"{path}: line {lineno} is not valid JSON, cannot resume (fix the file or pass --force)"
                ) from None
            if isinstance(obj, dict) and obj.get(id_field) is not None:
                ids.add(id_str(obj[id_field]))
    return ids


class _JsonlFileWriter(ResultWriter):
    format = "jsonl"

    def __init__(self, path: str, *, resume: bool, id_field: str) -> None:
        super().__init__(path, id_field)
        if resume and os.path.exists(path):
            self.done_ids = _scan_jsonl(path, id_field)
        self._fh = None  # opened on the first row: a run that fails first leaves nothing behind

    def _open(self):
        if self._fh is None:
            try:
                self._fh = open(self.path, "ab")
            except OSError as exc:
                raise InputError(f"{self.path}: cannot write ({exc.strerror or exc})") from None
        return self._fh

    def _write(self, row: dict) -> None:
        fh = self._open()
        fh.write(_encode_line(row))
        fh.flush()

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def _close(self) -> None:
        self._open()  # an empty output is still an output
        self._abort()

    def _abort(self) -> None:
        if self._fh is not None:
            try:
                self.flush()
            finally:
                self._fh.close()


class _NotOurLayout(Exception):
    """A JSON array file not laid out one element per line (as ``close()`` writes it)."""


def _json_array_rows(path: str) -> Iterator[bytes]:
    """The elements of a JSON array file written by this module, one JSON line each (streamed)."""
    with open(path, "rb") as fh:
        first = fh.readline().strip()
        if first == b"[]":
            if fh.read().strip():
                raise _NotOurLayout
            return
        if first != b"[":
            raise _NotOurLayout
        for raw in fh:
            line = raw.strip()
            if line == b"]":
                if fh.read().strip():
                    raise _NotOurLayout
                return
            if line.endswith(b","):
                line = line[:-1]
            try:
                json.loads(line)
            except ValueError:
                raise _NotOurLayout from None
            yield line
        raise _NotOurLayout  # no closing bracket


def _json_array_to_jsonl(path: str, target: str) -> None:
    """Write the rows of JSON array ``path`` as JSONL to ``target`` (via a temp file)."""
    tmp = target + ".tmp"
    with open(tmp, "wb") as out:
        try:
            for line in _json_array_rows(path):
                out.write(line + b"\n")
        except _NotOurLayout:  # not written by us: load it whole
            out.seek(0)
            out.truncate()
            try:
                with open(path, "rb") as fh:
                    data = json.load(fh)
            except ValueError:
                raise InputError(f"{path}: not valid JSON, cannot resume (pass --force to start over)") from None
            if not isinstance(data, list):
                raise InputError(f"{path}: not a JSON array, cannot resume (pass --force to start over)")
            for row in data:
                out.write(_encode_line(row))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)
    _fsync_dir(os.path.dirname(target))


class _JsonArrayWriter(ResultWriter):
    format = "json"

    def __init__(self, path: str, *, resume: bool, id_field: str) -> None:
        super().__init__(path, id_field)
        self.sidecar = path + ".parts.jsonl"
        if resume and not os.path.exists(self.sidecar) and os.path.exists(path):
            _json_array_to_jsonl(path, self.sidecar)
        self._rows = _JsonlFileWriter(self.sidecar, resume=resume, id_field=id_field)
        self.done_ids = self._rows.done_ids

    def _write(self, row: dict) -> None:
        self._rows._write(row)

    def flush(self) -> None:
        self._rows.flush()

    def _abort(self) -> None:
        self._rows.abort()

    def _close(self) -> None:
        self._rows.close()
        tmp = self.path + ".tmp"
        with open(self.sidecar, "rb") as src, open(tmp, "wb") as out:
            out.write(b"[")
            first = True
            for raw in src:
                line = raw.rstrip(b"\r\n")
                if not line.strip():
                    continue
                out.write(b"\n" if first else b",\n")
                out.write(line)
                first = False
            out.write(b"]\n" if first else b"\n]\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(os.path.dirname(self.path))
        os.remove(self.sidecar)


# ---------------------------------------------------------------------------
# Parquet


def _pa():
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def normalize_schema(schema, pa):
    """All fields nullable, plus a nullable string ``error`` column when missing."""
    fields = [f.with_nullable(True) for f in schema]
    if "error" not in schema.names:
        fields.append(pa.field("error", pa.string()))
    return pa.schema(fields, metadata=schema.metadata)


def _conform(table, target, pa):
    """Reorder/cast ``table``'s columns to ``target``; missing columns become nulls."""
    if table.schema.equals(target, check_metadata=False):
        return table.replace_schema_metadata(target.metadata)
    columns = []
    for f in target:
        if f.name in table.column_names:
            col = table.column(f.name)
            columns.append(col if col.type.equals(f.type) else col.cast(f.type))
        else:
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, f.type)], type=f.type))
    return pa.Table.from_arrays(columns, schema=target)


class _ParquetWriter(ResultWriter):
    format = "parquet"

    def __init__(
        self,
        path: str,
        *,
        schema,
        resume: bool,
        id_field: str,
        rows_per_group: int,
        flush_seconds: float | None,
        job: dict | None = None,
    ) -> None:
        super().__init__(path, id_field)
        pa, _ = _pa()
        self._job_metadata = {JOB_KEY.encode(): json.dumps(job).encode()} if job is not None else {}
        self.parts_dir = path + ".parts"
        self.rows_per_group = max(1, int(rows_per_group))
        self.flush_seconds = flush_seconds
        self.set_schema(schema)
        self._buffer: list[dict] = []
        self._next_part = 0
        self._last_flush = time.monotonic()
        if os.path.isdir(self.parts_dir):
            for stale in _glob.glob(os.path.join(_glob.escape(self.parts_dir), "*.tmp")):
                os.remove(stale)
        if resume:
            if not os.path.isdir(self.parts_dir) and os.path.exists(path):
                self._adopt_finished(path)
            if os.path.isdir(self.parts_dir):
                self._scan_parts()

    # -- resume ------------------------------------------------------------

    def _parts(self) -> list[tuple[int, str]]:
        found = []
        if os.path.isdir(self.parts_dir):
            for name in os.listdir(self.parts_dir):
                if name.startswith("part-") and name.endswith(".parquet"):
                    try:
                        number = int(name[len("part-"):-len(".parquet")])
                    except ValueError:
                        continue
                    found.append((number, os.path.join(self.parts_dir, name)))
        return sorted(found)

    def _adopt_finished(self, path: str) -> None:
        """Turn a finished OUT.parquet into part 0 of a new parts folder (atomically)."""
        pa, pq = _pa()
        try:
            pq.ParquetFile(path).close()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable Parquet file, cannot resume ({exc}); pass --force to start over")
        staging = f"{self.parts_dir}.adopt-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        os.mkdir(staging)
        target = os.path.join(staging, "part-000000.parquet")
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
            with open(target, "rb+") as fh:
                os.fsync(fh.fileno())
        _fsync_dir(staging)
        os.replace(staging, self.parts_dir)
        _fsync_dir(os.path.dirname(self.parts_dir))

    def set_schema(self, schema) -> None:
        pa, _ = _pa()
        self.schema = self._tagged(normalize_schema(schema, pa)) if schema is not None else None
        self._names = set(self.schema.names) if self.schema is not None else None

    def _tagged(self, schema):
        """`schema` with the job record in its metadata (every part and the finished file carry it)."""
        return schema.with_metadata({**(schema.metadata or {}), **self._job_metadata}) if self._job_metadata else schema

    def _scan_parts(self) -> None:
        pa, pq = _pa()
        for number, part in self._parts():
            self._next_part = max(self._next_part, number + 1)
            try:
                pf = pq.ParquetFile(part)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise InputError(f"{part}: not a readable Parquet file, cannot resume ({exc})") from None
            with pf:
                if self.id_field not in pf.schema_arrow.names:
                    continue
                for batch in pf.iter_batches(columns=[self.id_field], batch_size=65536):
                    for value in batch.column(0).to_pylist():
                        if value is not None:
                            self.done_ids.add(id_str(value))

    # -- writing -------------------------------------------------------------

    def _write(self, row: dict) -> None:
        if self._names is not None:
            unknown = [key for key in row if key not in self._names]
            if unknown:
                raise ValueError(
                    f"row {row.get(self.id_field)!r}: field(s) {', '.join(map(repr, unknown))} "
                    f"not in the output schema ({', '.join(self.schema.names)})"
                )
        self._buffer.append(row)
        if len(self._buffer) >= self.rows_per_group or (
            self.flush_seconds is not None and time.monotonic() - self._last_flush >= self.flush_seconds
        ):
            self.flush()

    def _to_table(self, rows: list[dict]):
        pa, _ = _pa()
        try:
            if self.schema is not None:
                return pa.Table.from_pylist(rows, schema=self.schema)
            table = pa.Table.from_pylist(rows)
            if "error" not in table.column_names:
                table = table.append_column(pa.field("error", pa.string()), pa.nulls(table.num_rows, pa.string()))
            return table.replace_schema_metadata(self._tagged(table.schema).metadata)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            for row in rows:  # name the offending row
                try:
                    pa.Table.from_pylist([row], schema=self.schema)
                except (pa.ArrowException, TypeError, ValueError) as row_exc:
                    raise ValueError(
                        f"row {row.get(self.id_field)!r} does not fit the output schema: {row_exc}"
                    ) from exc
            raise ValueError(f"rows do not fit one Parquet schema: {exc}") from exc

    def flush(self) -> None:
        """Write the buffered rows as one complete part file."""
        if not self._buffer:
            return
        _, pq = _pa()
        table = self._to_table(self._buffer)
        os.makedirs(self.parts_dir, exist_ok=True)
        final = os.path.join(self.parts_dir, f"part-{self._next_part:06d}.parquet")
        tmp = final + ".tmp"
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        _fsync_dir(self.parts_dir)
        self._next_part += 1
        self._buffer = []
        self._last_flush = time.monotonic()

    def _abort(self) -> None:
        self.flush()

    def _target_schema(self, parts: list[str]):
        pa, pq = _pa()
        if self.schema is not None:
            return self.schema
        schemas = [pq.read_schema(part) for part in parts]
        if not schemas:
            return self._tagged(pa.schema([pa.field(self.id_field, pa.string()), pa.field("error", pa.string())]))
        try:
            unified = pa.unify_schemas(schemas, promote_options="permissive")
        except TypeError:  # older pyarrow without promote_options
            unified = pa.unify_schemas(schemas)
        return self._tagged(pa.schema([f.with_nullable(True) for f in unified]))

    def _close(self) -> None:
        pa, pq = _pa()
        self.flush()
        parts = [p for _, p in self._parts()]
        target = self._target_schema(parts)
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as fh:
            writer = pq.ParquetWriter(fh, target)
            pending: list = []
            pending_rows = 0
            for part in parts:
                with pq.ParquetFile(part) as pf:
                    for group in range(pf.num_row_groups):
                        table = _conform(pf.read_row_group(group), target, pa)
                        pending.append(table)
                        pending_rows += table.num_rows
                        while pending_rows >= self.rows_per_group:
                            merged = pa.concat_tables(pending)
                            writer.write_table(merged.slice(0, self.rows_per_group))
                            rest = merged.slice(self.rows_per_group)
                            pending = [rest] if rest.num_rows else []
                            pending_rows = rest.num_rows
            if pending_rows:
                writer.write_table(pa.concat_tables(pending))
            writer.close()
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(os.path.dirname(self.path))
        if os.path.isdir(self.parts_dir):
            _remove(self.parts_dir)


# ---------------------------------------------------------------------------


def open_writer(
    path: str | None,
    *,
    schema=None,
    resume: bool = False,
    force: bool = False,
    id_field: str = "id",
    rows_per_group: int = ROWS_PER_GROUP,
    flush_seconds: float | None = FLUSH_SECONDS,
    job: dict | None = None,
) -> ResultWriter:
    """Open the result writer for ``path`` (``None``/``"-"``: JSONL on stdout).

    ``resume=True`` continues an existing (finished or interrupted) output and
    reports its ids in ``writer.done_ids``; ``force=True`` deletes it and starts
    over; with neither, existing output is a :class:`UsageError`. ``schema`` (a
    ``pyarrow.Schema``) is used for Parquet output only. ``job`` (a job record,
    pipelines/io/jobs.py) is recorded with the output, and with ``resume`` an existing
    output must have been written by the same job (UsageError otherwise).
    """
    fmt = output_format(path)
    if resume and force:
        raise UsageError("--force and --resume cannot be used together")
    if fmt == "stdout":
        if resume:
            raise UsageError("--resume needs an output file (-o FILE)")
        return _StdoutWriter(None, id_field)
    assert path is not None
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        raise InputError(f"output folder {folder} does not exist")
    if os.path.isdir(path):
        raise InputError(f"{path} is a folder, not an output file")
    if not os.access(folder or ".", os.W_OK | os.X_OK):
        raise InputError(f"output folder {folder or '.'} is not writable")
    sidecar = sidecar_path(path)
    if not (resume or force):
        if os.path.lexists(path):
            raise UsageError(f"{path} exists; pass --force to overwrite or --resume to continue")
        if sidecar is not None and os.path.lexists(sidecar):
            raise UsageError(
                f"{path} has an unfinished run ({sidecar}); pass --resume to continue or --force to start over"
            )
    if resume and job is not None:
        found, recorded = _recorded_job(path, fmt)
        if found:  # before anything of the output is read or changed
            check_same_job(path, recorded, job)
    if force:
        if sidecar is not None and os.path.lexists(sidecar):
            _remove(sidecar)
        if os.path.lexists(path):
            os.remove(path)
    if sidecar is not None:
        _remove_leftovers(path)
    if fmt in ("jsonl", "json") and job is not None:
        _write_job_sidecar(path, job)
    if fmt == "jsonl":
        return _JsonlFileWriter(path, resume=resume, id_field=id_field)
    if fmt == "json":
        return _JsonArrayWriter(path, resume=resume, id_field=id_field)
    return _ParquetWriter(
        path,
        schema=schema,
        resume=resume,
        id_field=id_field,
        rows_per_group=rows_per_group,
        flush_seconds=flush_seconds,
        job=job,
    )


def _recorded_job(path: str, fmt: str) -> tuple[bool, dict | None]:
    """(whether output `path` has rows to resume, the record of the job that wrote them)."""
    if fmt != "parquet":
        found = os.path.exists(path) or (fmt == "json" and os.path.exists(sidecar_path(path)))
        return found, read_sidecar(path) if found else None
    pa, pq = _pa()
    parts = sorted(_glob.glob(os.path.join(_glob.escape(path + ".parts"), "part-*.parquet")))
    source = parts[0] if parts else path if os.path.exists(path) else None
    if source is None:
        return False, None
    try:
        metadata = pq.read_schema(source).metadata or {}
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{source}: not a readable Parquet file, cannot resume ({exc}); pass --force to start over") from None
    raw = metadata.get(JOB_KEY.encode())
    return True, json.loads(raw) if raw else None


def _write_job_sidecar(path: str, job: dict) -> None:
    """OUT.lfcli-job.json: the job record of a JSONL / JSON output, written whole (temp + rename)."""
    target = path + SIDECAR_SUFFIX
    tmp = target + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(job, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
