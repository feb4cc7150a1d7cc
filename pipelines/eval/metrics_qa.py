"""SQuAD v1.1 scores: exact match and token F1, the best over a question's gold answers,
averaged over questions (the official ``evaluate-v1.1.py``). Definitions: metrics.py."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable, Sequence

from .metrics_classify import ratio

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces (the
    scores compare answers with it, and lfcli qa's top-k list keeps one answer per text)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _token_f1(prediction: str, truth: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(truth).split()
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:  # v1.1: also when both are empty (v2.0 would give 1 there)
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match(prediction: str | None, gold_answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0."""
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(truth) for truth in gold_answers))


def squad_f1(prediction: str | None, gold_answers: Sequence[str]) -> float:
    """Best token-overlap F1 (in [0, 1]) of the prediction against any gold answer."""
    if prediction is None:
        return 0.0
    return max((_token_f1(prediction, truth) for truth in gold_answers), default=0.0)


def squad_scores(pairs: Iterable[tuple[str | None, Sequence[str]]]) -> dict:
    """``{"exact_match", "f1", "n"}`` (x100) over ``(prediction or None, gold answers)`` pairs."""
    n = em = f1 = 0.0
    for prediction, gold_answers in pairs:
        n += 1
        em += squad_exact_match(prediction, gold_answers)
        f1 += squad_f1(prediction, gold_answers)
    return {"exact_match": 100.0 * ratio(em, n), "f1": 100.0 * ratio(f1, n), "n": int(n)}
