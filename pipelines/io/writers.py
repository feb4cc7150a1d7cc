"""Result writers: JSONL to stdout, or a ``.jsonl`` / ``.json`` / ``.parquet`` / ``.html`` file.

``open_writer(path, ...)`` returns a :class:`ResultWriter` (a context manager)
whose ``write(row)`` appends one result row (a dict) in the order given. The
format follows the extension of ``path``; ``None`` or ``"-"`` means JSONL on
stdout, one object per line, flushed per row. This module holds the stdout, JSONL
and JSON writers and open_writer; the Parquet writer is in parquet_writer.py, the
ResultWriter base class and the file helpers they share in outputs.py.

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
  (or after ``flush_seconds``, 5 s) as complete Parquet files in the sidecar folder
  ``OUT.parquet.parts/``; ``close()`` merges them into ``OUT.parquet`` (via
  ``OUT.parquet.tmp``), then removes the folder. Resuming a finished ``OUT.parquet``
  first moves it into a fresh parts folder. The details are in parquet_writer.py.
* ``OUT.html``: a page to read (pipelines/view draws it; this layer is below the views, so
  the caller hands ``open_writer`` the drawing as ``page=``, a function of the rows). Rows
  go to ``OUT.html.parts.jsonl`` as for JSON; ``close()`` draws the page, adds the rows as
  a JSON block (page_rows.py), writes ``OUT.html.tmp``, renames it over ``OUT.html`` and
  deletes the sidecar. Resuming a finished page first copies that block to a new sidecar.

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
opened (HTML too). ``resume`` compares it with the job given and refuses another job (or an
output without a record) before it reads or changes anything.

Parquet schema: the task's explicit ``pyarrow`` schema, every field made nullable and a
nullable string ``error`` column added; or, with ``schema=None``, inferred from the rows
(see parquet_writer.py).
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Callable, Iterator

from ..errors import InputError, UsageError
from .jobs import SIDECAR_SUFFIX, check_same_job, read_sidecar
from .outputs import ResultWriter, row_key, fsync_dir, remove, remove_leftovers
from .page_rows import rows_to_jsonl, with_rows
from .parquet_writer import ParquetResultWriter, recorded_parquet_job

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
    ".html": "html",
}


def output_format(path: str | None) -> str:
    """``"stdout"``, ``"jsonl"``, ``"json"``, ``"parquet"`` or ``"html"`` for an output path (UsageError if unknown)."""
    if path is None or path == "-":
        return "stdout"
    lower = path.lower()
    for ext, fmt in _EXTENSIONS.items():
        if lower.endswith(ext):
            return fmt
    ext = os.path.splitext(path)[1]
    what = f"extension '{ext}'" if ext else "no extension"
    raise UsageError(f"{path}: unknown output format ({what}); use .jsonl, .json, .parquet or .html")


def sidecar_path(path: str) -> str | None:
    """Where the in-progress state of output ``path`` lives (None for plain JSONL)."""
    fmt = output_format(path)
    if fmt in ("json", "html"):
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


def finite(obj: Any) -> Any:
    """`obj` with NaN and infinite floats as None (JSON has no such numbers), arrays as lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return finite(tolist())
    return obj


def _dumps(row: dict) -> str:
    try:
        return json.dumps(row, ensure_ascii=False, default=_json_default, allow_nan=False)
    except ValueError:  # NaN or infinity somewhere
        return json.dumps(finite(row), ensure_ascii=False, default=_json_default, allow_nan=False)


def _encode_line(row: dict) -> bytes:
    # backslashreplace turns a lone surrogate into the JSON escape "\udXXX": still valid JSON.
    return (_dumps(row) + "\n").encode("utf-8", "backslashreplace")


# ---------------------------------------------------------------------------
# writers


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


def _scan_jsonl(path: str, id_field: str | tuple[str, ...]) -> set[str]:
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
            key = row_key(obj, id_field) if isinstance(obj, dict) else None
            if key is not None:
                ids.add(key)
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
    fsync_dir(os.path.dirname(target))


class _JsonArrayWriter(ResultWriter):
    format = "json"

    def __init__(self, path: str, *, resume: bool, id_field: str) -> None:
        super().__init__(path, id_field)
        self.sidecar = path + ".parts.jsonl"
        if resume and not os.path.exists(self.sidecar) and os.path.exists(path):
            self._adopt(path, self.sidecar)
        self._rows = _JsonlFileWriter(self.sidecar, resume=resume, id_field=id_field)
        self.done_ids = self._rows.done_ids

    @staticmethod
    def _adopt(path: str, sidecar: str) -> None:
        """Resuming a finished output: its rows become the sidecar."""
        _json_array_to_jsonl(path, sidecar)

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
        fsync_dir(os.path.dirname(self.path))
        os.remove(self.sidecar)


class _HtmlPageWriter(_JsonArrayWriter):
    """OUT.html: the rows kept as for JSON, drawn into a page by ``page`` on close."""

    format = "html"

    def __init__(self, path: str, *, resume: bool, id_field: str, page: Callable[[list[dict]], str]) -> None:
        self.page = page
        super().__init__(path, resume=resume, id_field=id_field)

    @staticmethod
    def _adopt(path: str, sidecar: str) -> None:
        rows_to_jsonl(path, sidecar)

    def _close(self) -> None:
        self._rows.close()
        with open(self.sidecar, "rb") as src:
            lines = [raw.rstrip(b"\r\n") for raw in src if raw.strip()]
        page = with_rows(self.page([json.loads(line) for line in lines]), lines)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8", errors="replace") as out:
            out.write(page)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        fsync_dir(os.path.dirname(self.path))
        os.remove(self.sidecar)


# ---------------------------------------------------------------------------
# the entry point


def open_writer(
    path: str | None,
    *,
    schema=None,
    resume: bool = False,
    force: bool = False,
    id_field: str | tuple[str, ...] = "id",
    rows_per_group: int = ROWS_PER_GROUP,
    flush_seconds: float | None = FLUSH_SECONDS,
    job: dict | None = None,
    page: Callable[[list[dict]], str] | None = None,
) -> ResultWriter:
    """Open the result writer for ``path`` (``None``/``"-"``: JSONL on stdout).

    ``resume=True`` continues an existing (finished or interrupted) output and
    reports its ids in ``writer.done_ids``; ``force=True`` deletes it and starts
    over; with neither, existing output is a :class:`UsageError`. ``schema`` (a
    ``pyarrow.Schema``) is used for Parquet output only. ``job`` (a job record,
    pipelines/io/jobs.py) is recorded with the output, and with ``resume`` an existing
    output must have been written by the same job (UsageError otherwise). ``page`` draws
    an ``.html`` output from its rows (a list of dicts) when the writer closes.
    """
    fmt = output_format(path)
    if fmt == "html" and page is None:
        raise UsageError(f"{path}: an .html output is a page drawn by lfcli classify, qa or corefs; "
                         "use .jsonl, .json or .parquet here")
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
            remove(sidecar)
        if os.path.lexists(path):
            os.remove(path)
    if sidecar is not None:
        remove_leftovers(path)
    if fmt in ("jsonl", "json", "html") and job is not None:
        _write_job_sidecar(path, job)
    if fmt == "jsonl":
        return _JsonlFileWriter(path, resume=resume, id_field=id_field)
    if fmt == "json":
        return _JsonArrayWriter(path, resume=resume, id_field=id_field)
    if fmt == "html":
        return _HtmlPageWriter(path, resume=resume, id_field=id_field, page=page)
    return ParquetResultWriter(
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
    if fmt == "parquet":
        return recorded_parquet_job(path)
    found = os.path.exists(path) or (fmt in ("json", "html") and os.path.exists(sidecar_path(path)))
    return found, read_sidecar(path) if found else None


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

