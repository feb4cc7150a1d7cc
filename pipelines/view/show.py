"""From an output to its page: which task wrote the rows (`task_of`), the rows of a JSONL,
JSON or Parquet output with the record of its job (`read_output`), their documents' texts
(`document_texts`), and the page itself (`render`), drawn by the task's view.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from .. import registry
from ..errors import InputError, UsageError
from ..io.jobs import READ_OPTIONS, read_sidecar
from ..io.parquet_writer import recorded_parquet_job
from ..io.readers import iter_documents
from ..wording import plural


def task_of(rows: Iterable[dict], record: dict | None = None) -> str:
    """The task that wrote `rows`: the job record's command when there is one, else the
    fields of the first row that is not an error row (each task's `row_fields`). UsageError
    for a task without a page and for rows no view knows."""
    task = (record or {}).get("command")
    if task is None:
        shapes = [(field, name) for name in registry.tasks() for field in registry.get(name).row_fields]
        for row in rows:
            if not row.get("error"):
                task = next((t for field, t in shapes if row.get(field) is not None or field in row), None)
                if task is None:
                    raise UsageError(f"rows with fields {', '.join(map(str, row))} are not from "
                                     f"{registry.listing(registry.tasks('page')).replace(' and ', ' or ')}: "
                                     "no page shows them")
                break
        else:  # only error rows (or none): any view lists them
            task = registry.tasks("page")[0]
    return page_task(task)


def page_task(task: str) -> str:
    """`task` when it has a page, else a UsageError saying why not."""
    pages = f"pages show {registry.listing(registry.tasks('page'))}"
    if task in registry.tasks() and registry.get(task).no_page:
        raise UsageError(f"{registry.get(task).no_page}: there is no page for them ({pages})")
    if task not in registry.tasks("page"):
        raise UsageError(f"no page for `lfcli {task}` output ({pages})")
    return task


def _tidy(row: dict) -> dict:
    """A Parquet row as the JSON writers give it: no null columns, scores a dict."""
    row = {k: v for k, v in row.items() if v is not None}
    if isinstance(row.get("scores"), list):
        row["scores"] = dict(row["scores"])
    return row


def _jsonl_rows(path: str) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise InputError(f"{path}: line {lineno} is not valid JSON") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}: line {lineno} is not a JSON object")
            rows.append(row)
    return rows


def _json_rows(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            data = json.load(fh)
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"{path}: not a JSON array of rows (objects)")
    return data


def _parquet_rows(path: str) -> tuple[list[dict], dict | None]:
    try:
        rows = [_tidy(r) for r in pq.read_table(path).to_pylist()]
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    return rows, None if os.path.isdir(path) else recorded_parquet_job(path)[1]


def read_output(path: str) -> tuple[list[dict], dict | None]:
    """The rows of an lfcli output (.jsonl/.ndjson, .json, .parquet/.pq, or a folder of
    Parquet files as `--engine ray` writes) and the record of the job that wrote it (None
    when it has none)."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or folder")
    lower = path.lower()
    if os.path.isdir(path) or lower.endswith((".parquet", ".pq")):
        return _parquet_rows(path)
    if lower.endswith((".jsonl", ".ndjson")):
        return _jsonl_rows(path), read_sidecar(path)
    if lower.endswith(".json"):
        return _json_rows(path), read_sidecar(path)
    raise UsageError(f"{path}: not an lfcli output (.jsonl, .json or .parquet)")


def job_folder(record: dict | None) -> str:
    """The folder the job ran in (its inputs and ids are relative to it); this one for a
    record that does not say (older outputs)."""
    folder = (record or {}).get("folder")
    return folder if isinstance(folder, str) and os.path.isdir(folder) else os.getcwd()


def recorded_inputs(record: dict | None) -> tuple[list[str], dict] | None:
    """The inputs the job read (resolved against the folder it ran in, so from any folder) and
    how it read them (iter_documents' options), when its record names inputs that are all
    still there; else None."""
    given = (record or {}).get("inputs") or []
    inputs = [os.path.join(job_folder(record), p) for p in given]
    if not inputs or "-" in given or any(not os.path.exists(p) for p in inputs):
        return None
    options = record.get("options") or {}
    read = {key: options[flag] for key, flag in READ_OPTIONS.items() if options.get(flag) is not None}
    return inputs, read


def document_texts(inputs: list[str], ids: Iterable[str], *, base: str | None = None, empty_ok: bool = True,
                   **read) -> dict[str, str | None]:
    """id -> text of the documents of `inputs` (read as the task commands read them) whose id
    is among `ids`; an unreadable document maps to None. A file's id is its path as the job
    was given it, so a document also matches a row when both name the same file: the row's id
    resolved against `base` (the job's folder), the document's against this one
    (`--text books/dorian.txt` for a job given `../books/dorian.txt`)."""
    wanted = set(ids)
    by_path = {os.path.realpath(os.path.join(base or os.getcwd(), i)): i for i in wanted}
    texts: dict[str, str | None] = {}
    for doc in iter_documents(inputs, empty_ok=empty_ok, **read):
        key = doc.id if doc.id in wanted else by_path.get(os.path.realpath(doc.id))
        if key is not None and key not in texts:
            texts[key] = doc.text
            if len(texts) == len(wanted):
                break
    return texts


def render(task: str, rows: list[dict], texts: dict[str, str | None], *, title: str | None = None,
           record: dict | None = None) -> str:
    """The page of `task`'s `rows` over their documents' `texts` (id -> text; a missing id
    is shown with a note)."""
    page_task(task)
    errors = sum(1 for r in rows if r.get("error"))
    found = sum(1 for r in rows if not r.get("error") and texts.get(str(r.get("id"))) is not None)
    parts = [plural(len(rows), "row"), plural(errors, "error row") if errors else "", f"texts of {plural(found, 'document')}"]
    model = (record or {}).get("model")
    subtitle = " · ".join(p for p in [f"lfcli {task}", f"model {model}" if model else "", *parts] if p)
    footer = (record or {}).get("written_by") or "lfcli"
    return registry.get(task).page(rows, texts, title=title or f"lfcli {task}", subtitle=subtitle, footer=f"Made by {footer}.")


def write_page(path: str, page: str) -> None:
    """Write `page` to `path` whole (a temp file renamed over it)."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8", errors="replace") as fh:
            fh.write(page)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror or exc})") from None


def show_rows(rows: list[dict], texts: Any = None, task: str | None = None) -> str:
    """The Python API's page: `rows` of classify, qa or corefs over `texts` (a dict id ->
    text, or the documents' texts in the rows' order)."""
    if texts is None:
        texts = {}
    elif not isinstance(texts, dict):
        texts = {str(r.get("id")): t for r, t in zip(rows, texts)}
    return render(task or task_of(rows), rows, {str(k): v for k, v in texts.items()})
