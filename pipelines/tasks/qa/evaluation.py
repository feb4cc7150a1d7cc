"""`lfcli evaluate qa PRED GOLD`: gold answers and SQuAD v1.1 scores.

GOLD: SQuAD JSON (``{"data": [{"paragraphs": [{"qas": [...]}]}]}``; ids are the ``qas`` ids), or
records with ``id`` and ``answers``: a list of ``{text, answer_start}``, a list of strings, or
``{"text": [...], ...}`` (the Hugging Face layout). Scores: exact match and F1, x100.
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import InputError
from ...eval.evaluate import Gold, keyed, read_json
from ...eval.metrics import squad_scores


def read_gold(path: str) -> Gold:
    if path.lower().endswith(".json") and not os.path.isdir(path) and _is_squad(path):
        return _squad(path)
    return Gold("records", keyed(path, _answers_value), {})


def score(gold: Gold, selected: list[str], prediction, where=None) -> dict:
    pairs = []
    for g in selected:
        answer = prediction(g)
        pairs.append((answer if isinstance(answer, str) or answer is None else str(answer), gold.items[g]))
    scores = squad_scores(pairs)
    return {"exact_match": scores["exact_match"], "f1": scores["f1"]}


def fill_table(table, result: dict) -> None:
    """`lfcli evaluate`'s table on stderr (a rich Table)."""
    table.add_column("measure")
    table.add_column("score", justify="right")
    table.add_row("exact match", f"{result['exact_match']:.2f}")
    table.add_row("F1", f"{result['f1']:.2f}")


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


def _is_squad(path: str) -> bool:
    # SQuAD files are objects with "data"; a JSON array is a list of records
    try:
        with open(path, encoding="utf-8-sig") as fh:
            head = fh.read(4096).lstrip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
    return head.startswith("{")


def _squad(path: str) -> Gold:
    data = read_json(path)
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

