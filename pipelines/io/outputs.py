"""What every result writer shares (writers.py, parquet_writer.py): the ResultWriter base
class (a context manager taking result rows in order, with the ids already written in
``done_ids``) and the helpers that keep an output durable and atomic: fsync_dir, remove
(a folder renamed away first), remove_leftovers (the half-written temporaries of an
interrupted run, never authoritative)."""

from __future__ import annotations

import glob as _glob
import os
import shutil
import time

from .inputs import id_str


# ---------------------------------------------------------------------------
# filesystem helpers


def fsync_dir(folder: str) -> None:
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


def remove(path: str) -> None:
    """Remove a file or a folder; folders are renamed away first so removal is atomic."""
    if os.path.isdir(path) and not os.path.islink(path):
        trash = f"{path}.done-{os.getpid()}-{time.monotonic_ns()}"
        os.replace(path, trash)
        shutil.rmtree(trash, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def remove_leftovers(path: str) -> None:
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


# ---------------------------------------------------------------------------
# the base class


# A row's key when it takes several fields (qa's many questions of one document: id and
# question_id): the fields' texts joined by this character, which no id holds.
KEY_SEPARATOR = "\x1f"


def row_key(row: dict, id_field: str | tuple[str, ...]) -> str | None:
    """The key --resume knows a row by: its `id_field`, or the fields of a tuple joined by
    KEY_SEPARATOR; None when the (first) field is missing."""
    fields = (id_field,) if isinstance(id_field, str) else id_field
    values = [row.get(f) for f in fields]
    if values[0] is None:
        return None
    return KEY_SEPARATOR.join("" if v is None else id_str(v) for v in values)


class ResultWriter:
    """Base class: a context manager taking result rows in order.

    ``done_ids`` holds the ids already in the output (from a resumed run) and
    grows with every row written.
    """

    format: str = ""

    def __init__(self, path: str | None, id_field: str | tuple[str, ...] = "id") -> None:
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
        row_id = row_key(row, self.id_field)
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

