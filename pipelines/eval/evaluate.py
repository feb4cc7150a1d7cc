"""`lfcli evaluate TASK PRED GOLD`: read lfcli's predictions and a gold file, and score them.

PRED is lfcli's own output (``.jsonl``, ``.json`` array or ``.parquet``): rows with ``id`` and,
for good rows, ``label`` (classify), ``answer`` (qa) or ``clusters`` (corefs: lists of
``{start, end, text}`` character spans); rows with a non-null ``error`` are failed documents.

GOLD, by task:

* classify: ``.jsonl``/``.json``/``.parquet`` records with ``id`` and ``label``, or a folder with
  one subfolder per label, whose files have the ids lfcli's folder reader gives them (the path
  relative to the folder: ``law/case1.txt``); hidden files and files at the top level skipped.
* qa: SQuAD JSON (``{"data": [{"paragraphs": [{"qas": [...]}]}]}``; ids are the ``qas`` ids),
  or records with ``id`` and ``answers``: a list of ``{text, answer_start}``, a list of
  strings, or ``{"text": [...], ...}`` (the Hugging Face layout).
* corefs: a CoNLL-2012 file or folder (:mod:`lfcli.pipelines.io.conll`), records with ``id`` and
  ``clusters`` in PRED's format, or a GAP ``.tsv`` (scored with GAP's own measure).

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

from . import metrics
from ..errors import InputError, UsageError
from ..infer.tasks import LABELLED_TASKS
from ..wording import json_error, plural

__all__ = ["evaluate", "read_predictions", "read_gold", "Gold"]

_JSONL_EXTS = (".jsonl", ".ndjson")
_PARQUET_EXTS = (".parquet", ".pq")
_FIELD = {"classify": "label", "qa": "answer", "corefs": "clusters"}
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


def _records(path: str) -> Iterator[tuple[str, Any]]:
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
    import pyarrow as pa
    import pyarrow.parquet as pq

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
    field = _FIELD[task]
    rows: dict[str, dict] = {}
    for where, record in _records(path):
        row_id = _id_of(record, where)
        if row_id in rows:
            raise InputError(f"{where}: id {row_id!r} appears twice in the predictions")
        if task == "corefs" and isinstance(record.get("chains"), list):  # lfcli's rows: chains of {name, mentions}
            record["clusters"] = [chain.get("mentions") if isinstance(chain, dict) else chain for chain in record["chains"]]
        if record.get("error") is None and field not in record:
            raise InputError(f"{where}: no '{field}' field (is this lfcli {task} output?)")
        rows[row_id] = record
    return rows


# ---------------------------------------------------------------------------
# gold


def read_gold(task: str, path: str) -> Gold:
    """The gold data of ``task`` at ``path`` (see the module docstring for the formats)."""
    if task not in LABELLED_TASKS:
        raise UsageError(f"task must be one of {', '.join(LABELLED_TASKS)}, not {task!r}")
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or folder")
    lower = _ext(path)
    if task == "classify":
        if os.path.isdir(path):
            return _label_folder(path)
        return Gold("records", _keyed(path, _label_value), {})
    if task == "qa":
        if lower.endswith(".json") and not os.path.isdir(path) and _is_squad(path):
            return _squad(path)
        return Gold("records", _keyed(path, _answers_value), {})
    # corefs
    if os.path.isdir(path) or lower.endswith((".conll", "_conll")):
        from ..io.conll import read_conll

        docs = read_conll(path)
        return Gold("conll", {d.id: d.clusters for d in docs}, {d.id: d.text for d in docs}, docs)
    if lower.endswith(".tsv"):
        examples = metrics.read_gap(path)
        items: dict[str, Any] = {}
        for ex in examples:
            if ex.id in items:
                raise InputError(f"{path}: GAP id {ex.id!r} appears twice")
            if ex.a_coref is None or ex.b_coref is None:
                raise InputError(f"{path}: GAP example {ex.id!r} has no A-coref/B-coref label")
            items[ex.id] = ex
        return Gold("gap", items, {ex.id: ex.text for ex in examples})
    return Gold("records", _keyed(path, _clusters_value), {})


def _keyed(path: str, value_of) -> dict[str, Any]:
    items: dict[str, Any] = {}
    for where, record in _records(path):
        item_id = _id_of(record, where)
        if item_id in items:
            raise InputError(f"{where}: id {item_id!r} appears twice in the gold data")
        items[item_id] = value_of(record, where)
    if not items:
        raise InputError(f"{path}: no gold rows")
    return items


def _label_value(record: dict, where: str) -> str:
    label = record.get("label")
    if label is None:
        raise InputError(f"{where}: no 'label'")
    return label if isinstance(label, str) else json.dumps(label)


def _answer_texts(answers: Any, where: str) -> list[str]:
    if isinstance(answers, dict) and "text" in answers:  # {"text": [...], "answer_start": [...]}
        answers = answers["text"]
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list):
        raise InputError(f"{where}: 'answers' must be a list of {{text, answer_start}} or of strings")
    texts = []
    for answer in answers:
        if isinstance(answer, dict) and isinstance(answer.get("text"), str):
            texts.append(answer["text"])
        elif isinstance(answer, str):
            texts.append(answer)
        else:
            raise InputError(f"{where}: an answer must be a string or have a string 'text'")
    if not texts:
        raise InputError(f"{where}: no gold answers (SQuAD v1.1 scoring needs at least one)")
    return texts


def _answers_value(record: dict, where: str) -> list[str]:
    if "answers" not in record:
        raise InputError(f"{where}: no 'answers'")
    return _answer_texts(record["answers"], where)


def _span(mention: Any, where: str) -> tuple[int, int]:
    try:
        if isinstance(mention, dict):
            start, end = mention["start"], mention["end"]
        else:
            start, end = mention[0], mention[1]
        if isinstance(start, bool) or isinstance(end, bool):
            raise TypeError
        start, end = int(start), int(end)
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"{where}: a mention must be {{start, end, text}} or [start, end], got {mention!r:.60}") from None
    if end <= start or start < 0:
        raise InputError(f"{where}: mention span [{start}, {end}) is empty or negative")
    return start, end


def _clusters_value(record: dict, where: str) -> list[list[tuple[int, int]]]:
    clusters = record.get("clusters")
    if not isinstance(clusters, list) or not all(isinstance(c, list) for c in clusters):
        raise InputError(f"{where}: 'clusters' must be a list of clusters (lists of mentions)")
    return [[_span(m, where) for m in cluster] for cluster in clusters]


def _is_squad(path: str) -> bool:
    # SQuAD files are objects with "data"; a JSON array is a list of records
    try:
        with open(path, encoding="utf-8-sig") as fh:
            head = fh.read(4096).lstrip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
    return head.startswith("{")


def _squad(path: str) -> Gold:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({json_error(exc, 'line')})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(f"{path}: not a SQuAD file (no 'data' list)")
    items: dict[str, Any] = {}
    try:
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    qid = str(qa["id"])
                    where = f"{path}: question {qid}"
                    if qid in items:
                        raise InputError(f"{where}: the id appears twice")
                    items[qid] = _answer_texts(qa.get("answers", []), where)
    except (KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a SQuAD file (missing {exc})") from None
    if not items:
        raise InputError(f"{path}: no questions")
    return Gold("squad", items, {})


def _label_folder(root: str) -> Gold:
    items: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = os.path.relpath(folder, root)
        if rel == ".":
            continue  # files at the top have no label folder
        parts = rel.replace(os.sep, "/").split("/")
        for name in sorted(names):
            if not name.startswith("."):
                items["/".join(parts + [name])] = parts[0]
    if not items:
        raise InputError(f"{root}: no files in label subfolders (expected {root}/LABEL/FILE)")
    return Gold("folder", dict(sorted(items.items())), {})


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
        from ..io.conll import select_documents

        return [d.id for d in select_documents(gold.documents, ids)]
    from ..io.conll import read_ids

    wanted = read_ids(ids) if isinstance(ids, (str, os.PathLike)) else [str(x) for x in ids]
    unknown = [x for x in dict.fromkeys(wanted) if x not in gold.items]
    if unknown:
        raise InputError(f"{plural(len(unknown), 'listed id')} not in the gold data: {_listing(unknown)}")
    keep = set(wanted)
    return [g for g in gold.items if g in keep]


# ---------------------------------------------------------------------------
# evaluate


def evaluate(task: str, pred_path: str, gold_path: str, *, singletons: bool = True, ids=None) -> dict:
    """Score lfcli's ``task`` output at ``pred_path`` against ``gold_path``; a JSON-serialisable
    dict (see the module docstring). ``singletons`` picks the headline coreference numbers
    (``conll_f1``); both variants are always reported. ``ids``: restrict to these gold ids (a
    file, one per line, or an iterable)."""
    if task not in LABELLED_TASKS:
        raise UsageError(f"task must be one of {', '.join(LABELLED_TASKS)}, not {task!r}")
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
        return None if g in bad else preds[matched[g]][_FIELD[task]]

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
    if task == "classify":
        predicted = []
        for g in selected:
            label = prediction(g)
            predicted.append(None if label is None else (label if isinstance(label, str) else json.dumps(label)))
        out.update(metrics.classification_scores([gold.items[g] for g in selected], predicted))
    elif task == "qa":
        pairs = []
        for g in selected:
            answer = prediction(g)
            pairs.append((answer if isinstance(answer, str) or answer is None else str(answer), gold.items[g]))
        scores = metrics.squad_scores(pairs)
        out.update(exact_match=scores["exact_match"], f1=scores["f1"])
    elif gold.format == "gap":
        decisions, mismatches = {}, 0
        for g in selected:
            raw = prediction(g)
            if raw is not None:  # a failed or missing row has no decisions: false negatives
                decisions[g] = metrics.gap_decisions(gold.items[g], _pred_clusters(raw, matched[g], pred_path))
                mismatches += _text_mismatches(raw, gold.texts.get(g))
        out["gap"] = metrics.gap_scores([gold.items[g] for g in selected], decisions)
        out["span_text_mismatches"] = mismatches
    else:
        documents, mismatches = [], 0
        for g in selected:
            raw = prediction(g)
            response = [] if raw is None else _pred_clusters(raw, matched[g], pred_path)
            if raw is not None:
                mismatches += _text_mismatches(raw, gold.texts.get(g))
            documents.append((gold.items[g], response))
        with_s = metrics.coref_scores(documents, singletons=True)
        without_s = metrics.coref_scores(documents, singletons=False)
        for block in (with_s, without_s):
            block.pop("documents")
        out.update(
            singletons=singletons,
            conll_f1=(with_s if singletons else without_s)["conll_f1"],
            with_singletons=with_s,
            without_singletons=without_s,
            span_text_mismatches=mismatches,
        )
    return out


def _pred_clusters(clusters: Any, pred_id: str, path: str) -> list[list[tuple[int, int]]]:
    return _clusters_value({"clusters": clusters}, f"{path}: id {pred_id!r}")


def _text_mismatches(clusters: list, text: str | None) -> int:
    """Predicted spans whose ``text`` differs from the gold document's text at their offsets: a
    sign that the predictions were made on another version of the document, so that offsets do
    not line up (0 when the gold format has no texts)."""
    if text is None:
        return 0
    count = 0
    for cluster in clusters:
        for mention in cluster:
            if isinstance(mention, dict) and isinstance(mention.get("text"), str):
                if text[int(mention["start"]):int(mention["end"])] != mention["text"]:
                    count += 1
    return count
