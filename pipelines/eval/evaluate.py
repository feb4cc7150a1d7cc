"""`lfcli evaluate TASK PRED GOLD`: read lfcli's predictions and a gold file, and score them.

PRED is lfcli's own output (``.jsonl``, ``.json`` array or ``.parquet``): rows with ``id`` and,
for good rows, the field the task's Evaluation names (``label``, ``answer``, ``clusters`` read
from corefs' chains); rows with a non-null ``error`` are failed documents.

GOLD: each task's home reads its own (``pipelines/tasks/<task>/evaluation.py``, named in its
``registry.Evaluation``): classify a labelled ``.jsonl``/``.parquet`` or a folder of label
subfolders, qa SQuAD JSON or records with ``answers``, corefs CoNLL-2012, records with
``clusters`` or a GAP ``.tsv``. This module holds what every task shares:

Matching ids. A prediction's id matches the gold id it equals; failing that, the gold id it
ends with after a ``/`` (PRED made from several inputs prefixes the folder: ``docs/law/a.txt``),
or its file name without extension (``brat/105_persuasion.txt`` -> ``105_persuasion``, the
CoNLL id). Policy:

* a prediction whose id matches no gold id is an error (exit 1): it usually means the wrong
  gold file, and silently dropping it would inflate the scores;
* two predictions matching one gold id are an error;
* a gold id without a prediction row counts as wrong (no label, no answer, no clusters) and is
  reported in ``missing``; a prediction row with an ``error`` counts as wrong the same way and
  is reported in ``errors``;
* ``ids`` (a file, one id per line, or an iterable) restricts the evaluation to those gold
  documents; predictions for other documents are skipped and counted in ``ignored``. A listed
  id that is not in gold is an error.

The result is one JSON-serialisable dict: ``task``, ``gold_format``, ``n`` (gold items
scored), ``missing``, ``errors``, ``ignored``, ``missing_ids`` (the first few), then the task's
scores (:mod:`lfcli.pipelines.eval.metrics`; classification in [0, 1], the others x100 as their
reference scorers print them).
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .. import registry
from ..errors import InputError
from ..io.conll import read_ids, select_documents
from ..wording import json_error, plural

__all__ = ["evaluate", "read_predictions", "read_gold", "Gold", "keyed", "records", "read_json"]

_PARQUET_EXTS = (".parquet", ".pq")
_SHOW = 5  # ids quoted in messages and in missing_ids


@dataclass
class Gold:
    """Gold data of one task: ``items`` maps id -> the gold value (label, answer list, clusters
    or a GAP example), in file order; ``texts`` the document texts when the format has them."""

    format: str
    items: dict[str, Any]
    texts: dict[str, str]
    documents: list | None = None  # the ConllDocuments of CoNLL gold (for the ids filter)


# ---------------------------------------------------------------------------
# records: JSONL, JSON arrays, Parquet


def _ext(path: str) -> str:
    return path.lower()


def records(path: str) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` for each record of a JSONL, JSON array or Parquet file."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or folder")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a folder, expected a .jsonl, .json or .parquet file")
    lower = _ext(path)
    if lower.endswith(_PARQUET_EXTS):
        yield from _parquet_records(path)
        return
    try:
        with open(path, encoding="utf-8-sig") as fh:
            if lower.endswith(".json"):
                try:
                    data = json.load(fh)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}: not valid JSON ({json_error(exc, 'line')})") from None
                if not isinstance(data, list):
                    raise InputError(f"{path}: expected a JSON array of rows")
                for i, record in enumerate(data):
                    yield f"{path}: row {i}", record
                return
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{line_no}: not valid JSON ({json_error(exc)})") from None
                yield f"{path}:{line_no}", record
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None


def _parquet_records(path: str) -> Iterator[tuple[str, Any]]:
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: not a readable Parquet file ({message})") from None
    for i, record in enumerate(table.to_pylist()):
        yield f"{path}: row {i}", record


def _id_of(record: Any, where: str) -> str:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
    value = record.get("id")
    if value is None:
        raise InputError(f"{where}: no 'id'")
    return value if isinstance(value, str) else json.dumps(value)


def read_predictions(path: str, task: str) -> dict[str, dict]:
    """lfcli's output rows by id. Raises :class:`InputError` for unreadable rows, a good row
    without the task's field, or a repeated id."""
    evaluation = registry.get(task, "evaluate").evaluation
    field = evaluation.field
    rows: dict[str, dict] = {}
    for where, record in records(path):
        row_id = _id_of(record, where)
        if row_id in rows:
            raise InputError(f"{where}: id {row_id!r} appears twice in the predictions")
        record = evaluation.from_row(record)
        if record.get("error") is None and field not in record:
            raise InputError(f"{where}: no '{field}' field (is this lfcli {task} output?)")
        rows[row_id] = record
    return rows


# ---------------------------------------------------------------------------
# gold


def read_gold(task: str, path: str) -> Gold:
    """The gold data of ``task`` at ``path`` (see the module docstring and the task's home for
    the formats)."""
    evaluation = registry.get(task, "evaluate").evaluation
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or folder")
    return evaluation.read_gold(path)


def keyed(path: str, value_of) -> dict[str, Any]:
    items: dict[str, Any] = {}
    for where, record in records(path):
        item_id = _id_of(record, where)
        if item_id in items:
            raise InputError(f"{where}: id {item_id!r} appears twice in the gold data")
        items[item_id] = value_of(record, where)
    if not items:
        raise InputError(f"{path}: no gold rows")
    return items


# ---------------------------------------------------------------------------
# matching


def _listing(ids: list[str]) -> str:
    return ", ".join(repr(x) for x in ids[:3]) + (", ..." if len(ids) > 3 else "")


def _match(pred_ids: Iterable[str], gold_ids: Iterable[str]) -> dict[str, str]:
    """gold id -> prediction id (see the module docstring for the rules)."""
    gold = set(gold_ids)
    matched: dict[str, str] = {}
    unknown: list[str] = []
    for pid in pred_ids:
        target = None
        if pid in gold:
            target = pid
        else:
            parts = pid.split("/")
            for k in range(1, len(parts)):  # docs/law/a.txt -> law/a.txt -> a.txt
                if "/".join(parts[k:]) in gold:
                    target = "/".join(parts[k:])
                    break
            if target is None:
                stem = posixpath.splitext(parts[-1])[0]
                if stem in gold:
                    target = stem
        if target is None:
            unknown.append(pid)
            continue
        if target in matched:
            raise InputError(f"predictions {matched[target]!r} and {pid!r} both match gold id {target!r}")
        matched[target] = pid
    if unknown:
        raise InputError(
            f"{plural(len(unknown), 'prediction id')} not in the gold data ({_listing(unknown)}); "
            "is GOLD the file the predictions were made for?"
        )
    return matched


def _select(gold: Gold, ids) -> list[str]:
    """The gold ids to score: all, or those listed in ``ids``."""
    if ids is None:
        return list(gold.items)
    if gold.documents is not None:  # CoNLL: ids may also be file stems or #begin names
        return [d.id for d in select_documents(gold.documents, ids)]
    wanted = read_ids(ids) if isinstance(ids, (str, os.PathLike)) else [str(x) for x in ids]
    unknown = [x for x in dict.fromkeys(wanted) if x not in gold.items]
    if unknown:
        raise InputError(f"{plural(len(unknown), 'listed id')} not in the gold data: {_listing(unknown)}")
    keep = set(wanted)
    return [g for g in gold.items if g in keep]


# ---------------------------------------------------------------------------
# evaluate


def evaluate(task: str, pred_path: str, gold_path: str, *, ids=None, **options) -> dict:
    """Score lfcli's ``task`` output at ``pred_path`` against ``gold_path``; a JSON-serialisable
    dict (see the module docstring). ``ids``: restrict to these gold ids (a file, one per line,
    or an iterable). ``options``: the task's own (its home's evaluation options, e.g. corefs'
    ``singletons``)."""
    evaluation = registry.get(task, "evaluate").evaluation
    for path in (pred_path, gold_path):
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder")
    gold = read_gold(task, gold_path)
    preds = read_predictions(pred_path, task)
    matched = _match(preds, gold.items)
    selected = _select(gold, ids)
    chosen = set(selected)
    ignored = sum(1 for g in matched if g not in chosen)
    missing = [g for g in selected if g not in matched]
    errors = [g for g in selected if g in matched and preds[matched[g]].get("error") is not None]
    bad = set(missing) | set(errors)

    def prediction(g: str):
        return None if g in bad else preds[matched[g]][evaluation.field]

    out: dict[str, Any] = {
        "task": task,
        "predictions": os.fspath(pred_path),
        "gold": os.fspath(gold_path),
        "gold_format": gold.format,
        "n": len(selected),
        "missing": len(missing),
        "errors": len(errors),
        "ignored": ignored,
        "missing_ids": missing[:_SHOW],
    }
    if not selected:
        raise InputError(f"{gold_path}: nothing to evaluate (no gold items selected)")
    out.update(evaluation.score(gold, selected, prediction, where=lambda g: f"{pred_path}: id {matched[g]!r}",
                                **options))
    return out


def read_json(path: str) -> Any:
    """A whole JSON file (InputError, one line, when it is unreadable or not JSON)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({json_error(exc, 'line')})") from None
