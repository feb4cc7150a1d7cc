"""The Parquet result writer (``OUT.parquet``, opened by writers.open_writer) and its schema.

Crash safety: rows are buffered and written every ``rows_per_group`` rows (or, at the
next row, once ``flush_seconds`` (5 s) have passed since the last flush, so a killed job
keeps all but its last few seconds; or on ``flush()``) as a complete Parquet file
``OUT.parquet.parts/part-NNNNNN.parquet`` (written as ``.tmp``, fsynced, renamed).
``close()`` merges the parts, in order, into ``OUT.parquet.tmp``, renames it to
``OUT.parquet``, then renames the parts folder away and deletes it. Resuming a finished
``OUT.parquet`` first moves it (hard link, or copy) into a fresh parts folder built under
a temp name and renamed into place. While the parts folder exists it is the authoritative
record (writers.py tells the whole scheme).

The job that made the output is recorded in the key-value metadata of every part's schema
and of the finished file (recorded_parquet_job reads it back for ``--resume``).

Schema: pass the task's explicit ``pyarrow`` schema (nested lists, structs, maps,
fixed-size lists are fine). Every field is made nullable and a nullable string ``error``
column is added if missing (normalize_schema), so error rows (id + error only) fit. Keys
that are not in the schema raise ``ValueError``. With ``schema=None`` each part's schema is
inferred from its rows and the parts are unified (null columns take the type seen later)
when merging.
"""

from __future__ import annotations

import glob as _glob
import json
import os
import shutil
import time

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from .jobs import JOB_KEY
from .outputs import ResultWriter, row_key, fsync_dir, remove


def _pa():
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


class ParquetResultWriter(ResultWriter):
    """OUT.parquet: rows in part files under OUT.parquet.parts/, merged on close()."""

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
        fsync_dir(staging)
        os.replace(staging, self.parts_dir)
        fsync_dir(os.path.dirname(self.parts_dir))

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
                fields = (self.id_field,) if isinstance(self.id_field, str) else self.id_field
                if fields[0] not in pf.schema_arrow.names:
                    continue
                present = [f for f in fields if f in pf.schema_arrow.names]
                for batch in pf.iter_batches(columns=present, batch_size=65536):
                    for row in batch.to_pylist():
                        key = row_key(row, fields)
                        if key is not None:
                            self.done_ids.add(key)

    # -- writing -------------------------------------------------------------

    def _write(self, row: dict) -> None:
        if self._names is not None:
            unknown = [key for key in row if key not in self._names]
            if unknown:
                raise ValueError(
                    f"row {row_key(row, self.id_field)!r}: field(s) {', '.join(map(repr, unknown))} "
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
                        f"row {row_key(row, self.id_field)!r} does not fit the output schema: {row_exc}"
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
        fsync_dir(self.parts_dir)
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
            return self._tagged(pa.schema([pa.field(self.id_field if isinstance(self.id_field, str) else self.id_field[0], pa.string()), pa.field("error", pa.string())]))
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
        fsync_dir(os.path.dirname(self.path))
        if os.path.isdir(self.parts_dir):
            remove(self.parts_dir)


def recorded_parquet_job(path: str) -> tuple[bool, dict | None]:
    """(whether Parquet output `path` has rows to resume, the record of the job that wrote
    them: from its first part, or from the finished file)."""
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
