"""`lfcli evaluate classify PRED GOLD`: gold labels and their scores.

GOLD: ``.jsonl``/``.json``/``.parquet`` records with ``id`` and ``label``, or a folder with one
subfolder per label, whose files have the ids lfcli's folder reader gives them (the path
relative to the folder: ``law/case1.txt``); hidden files and files at the top level skipped.
Scores: accuracy, macro F1 and per-class precision, recall and F1, in [0, 1].
"""

from __future__ import annotations

import json
import os

from ...errors import InputError
from ...eval.evaluate import Gold, keyed
from ...eval.metrics import classification_scores


def read_gold(path: str) -> Gold:
    if os.path.isdir(path):
        return _label_folder(path)
    return Gold("records", keyed(path, _label_value), {})


def score(gold: Gold, selected: list[str], prediction, where=None) -> dict:
    predicted = []
    for g in selected:
        label = prediction(g)
        predicted.append(None if label is None else (label if isinstance(label, str) else json.dumps(label)))
    return classification_scores([gold.items[g] for g in selected], predicted)


def fill_table(table, result: dict) -> None:
    """`lfcli evaluate`'s table on stderr (a rich Table)."""
    table.add_column("label")
    for name in ("precision", "recall", "F1", "support"):
        table.add_column(name, justify="right")
    for label, s in result["per_class"].items():
        table.add_row(label, f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}", str(s["support"]))
    table.add_section()
    table.add_row("accuracy", "", "", f"{result['accuracy']:.3f}", str(result["n"]))
    table.add_row("macro F1", "", "", f"{result['macro_f1']:.3f}", str(result["n"]))


def _label_value(record: dict, where: str) -> str:
    label = record.get("label")
    if label is None:
        raise InputError(f"{where}: no 'label'")
    return label if isinstance(label, str) else json.dumps(label)


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

