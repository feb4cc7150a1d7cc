"""Classification scores (accuracy, macro-F1, per-class scores, confusion matrix), and the F1
and ratio every scorer of lfcli's uses. Definitions: metrics.py."""

from __future__ import annotations

from typing import Sequence


def f1_of(precision: float, recall: float) -> float:
    """The harmonic mean of precision and recall; 0 when both are 0."""
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def ratio(num: float, den: float) -> float:
    """num / den, 0 for an empty denominator."""
    return num / den if den else 0.0



def classification_scores(gold: Sequence[str], predicted: Sequence[str | None]) -> dict:
    """Accuracy, macro-F1, per-class scores and the confusion matrix of ``predicted`` vs ``gold``.

    ``predicted[i]`` may be ``None`` (no prediction: a failed or missing row): it counts as
    wrong, as a miss for its gold class, and in ``unpredicted`` (per gold label) instead of in
    the confusion matrix. Returns ``{"n", "accuracy", "macro_f1", "labels", "per_class":
    {label: {"precision", "recall", "f1", "support"}}, "confusion_matrix", "unpredicted"}``.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    labels = sorted(set(gold) | {p for p in predicted if p is not None})
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    unpredicted = [0] * len(labels)
    for g, p in zip(gold, predicted):
        if p is None:
            unpredicted[index[g]] += 1
        else:
            matrix[index[g]][index[p]] += 1
    per_class = {}
    for i, label in enumerate(labels):
        tp = matrix[i][i]
        support = sum(matrix[i]) + unpredicted[i]
        predicted_as = sum(row[i] for row in matrix)
        precision, recall = ratio(tp, predicted_as), ratio(tp, support)
        per_class[label] = {"precision": precision, "recall": recall, "f1": f1_of(precision, recall), "support": support}
    n = len(gold)
    correct = sum(matrix[i][i] for i in range(len(labels)))
    return {
        "n": n,
        "accuracy": ratio(correct, n),
        "macro_f1": ratio(sum(c["f1"] for c in per_class.values()), len(labels)),
        "labels": labels,
        "per_class": per_class,
        "confusion_matrix": matrix,
        "unpredicted": unpredicted,
    }
