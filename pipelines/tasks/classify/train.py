"""Fine-tuning document classification: labelled documents, windows, loss, validation.

Data: JSONL or Parquet records (`--text-column`, `--label-column`), a folder with one
subfolder per label (every file below `label/` is a document of that label), or a
SemEval-2019 hyperpartisan articles XML file (its ground-truth file beside it gives the
labels). A record without text or label is reported and skipped.

Documents are windowed exactly as `lfcli classify` windows them (ClassifyTask.prepare, the
`cls` global policy by default); every window is a training example with its document's
label (`first_window_only` keeps the first window alone). Windows of up to the model's
positions: attention is linear in length, so a whole 3,000-token article costs what six
512-token windows cost, and it is read in one pass as at inference.

Loss: cross-entropy per window, weighted per class by n / (k * n_class) with
`class_weights="auto"` (so a minority class counts as much as the majority in the loss),
averaged over windows. Validation combines a document's windows as `lfcli classify` does
and reports accuracy and macro-F1; the best macro-F1 is kept (accuracy rewards predicting
the majority class on unbalanced data).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lfcli.models import LongformerConfig

from ...errors import InputError, UsageError
from ...eval.metrics import classification_scores
from ...infer.policies import check_policy
from ...infer.tasks import Item, batch_tensors, model_inputs, predict_rows
from ...io.readers import Document, iter_documents
from ...job_defaults import JOB
from ...io.semeval import find_ground_truth, is_articles_file, iter_articles, read_ground_truth
from ...train.setups import Setup, fingerprint_of, report_skipped, training_tokenizer
from ...wording import plural
from .task import ClassifyTask


@dataclass
class LabelledDocument:
    id: str
    text: str
    label: str


@dataclass
class ClassifyExample:
    item: Item
    label: int

    def __len__(self) -> int:
        return len(self.item)


def read_labelled(inputs: list[str], text_column: str = JOB.text_column, label_column: str = "label",
                  id_column: str | None = None) -> tuple[list[LabelledDocument], list[str]]:
    """(documents, problems) from every input; see the module docstring for the formats."""

    docs, problems = [], []
    for path in inputs:
        p = Path(path)
        if is_articles_file(p):
            truth = find_ground_truth(p)
            if truth is None:
                raise InputError(f"{p}: no ground-truth XML beside it (expected {p.name.replace('articles', 'ground-truth', 1)})")
            labels = read_ground_truth(truth)
            for doc in iter_articles(p):
                _add(docs, problems, doc, labels.get(doc.id))
        elif p.is_dir() and not _has_records(p):
            subfolders = sorted(c for c in p.iterdir() if c.is_dir() and not c.name.startswith("."))
            if not subfolders:
                raise InputError(f"{p}: a folder of training data needs one subfolder per label")
            for sub in subfolders:
                for doc in iter_documents([str(sub)]):
                    _add(docs, problems, Document(f"{sub.name}/{doc.id}", doc.text, doc.error), sub.name)
        else:
            for doc in iter_documents([path], text_column=text_column, id_column=id_column, fields=(label_column,)):
                value = doc.fields.get(label_column)
                _add(docs, problems, doc, None if value is None else str(value), label_column)
    return docs, problems


def _has_records(folder: Path) -> bool:
    return any(name.endswith((".jsonl", ".parquet")) for _, _, names in os.walk(folder) for name in names)


def _add(docs, problems, doc: Document, label: str | None, column: str = "label") -> None:
    if doc.text is None:
        problems.append(f"{doc.id}: {doc.error}")
    elif label is None or label == "":
        problems.append(f"{doc.id}: no {column!r}")
    else:
        docs.append(LabelledDocument(doc.id, doc.text, label))


def stratified_split(docs: list[LabelledDocument], fraction: float, seed: int) -> tuple[list, list]:
    """(train, validation): `fraction` of each label's documents held out, seeded."""
    rng = random.Random(seed)
    by_label: dict[str, list[LabelledDocument]] = {}
    for d in docs:
        by_label.setdefault(d.label, []).append(d)
    held = set()
    for label in sorted(by_label):
        group = sorted(by_label[label], key=lambda d: d.id)
        rng.shuffle(group)
        held |= {d.id for d in group[: round(len(group) * fraction)]}
    return [d for d in docs if d.id not in held], [d for d in docs if d.id in held]


@dataclass
class ClassifyTrainTask:
    """The classification task for the trainer (see pipelines/train/loop.py)."""

    task: ClassifyTask
    labels: list[str]
    pad_id: int
    validation: list[LabelledDocument]
    class_weights: torch.Tensor | None = None
    examples: list[ClassifyExample] = field(default_factory=list)
    save_fn: object = None

    def build(self, docs: list[LabelledDocument], first_window_only: bool) -> dict:
        index = {label: i for i, label in enumerate(self.labels)}
        skipped = 0
        for d in docs:
            try:
                items = self.task.prepare(0, Document(d.id, d.text)).items
            except InputError:
                skipped += 1
                continue
            for item in items[:1] if first_window_only else items:
                self.examples.append(ClassifyExample(item, index[d.label]))
        return {"documents": len(docs) - skipped, "windows": len(self.examples), "skipped": skipped}

    def collate(self, examples: list[ClassifyExample], seeds: list[int]) -> dict:
        batch = batch_tensors([e.item for e in examples], self.pad_id)
        batch["labels"] = torch.tensor([e.label for e in examples])
        return batch

    def count(self, batch: dict) -> float:
        return float(batch["labels"].numel())

    def loss(self, model, batch: dict) -> torch.Tensor:
        logits = model(**model_inputs(batch)).float()
        weight = self.class_weights.to(logits.device) if self.class_weights is not None else None
        # Summed per window (the class weight scales each window's term); the trainer divides
        # by the update's window count.
        return torch.nn.functional.cross_entropy(logits, batch["labels"], weight=weight, reduction="sum")

    def evaluate(self, model) -> dict:

        predicted = predict_labels(model, self.task, self.validation, self.pad_id)
        scores = classification_scores([d.label for d in self.validation], [predicted[d.id] for d in self.validation])
        return {"score": scores["macro_f1"], "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"],
                "documents": len(self.validation)}

    def save(self, model, folder: Path) -> None:
        self.save_fn(model, folder)


def predict_labels(model, task: ClassifyTask, docs: list[LabelledDocument], pad_id: int) -> dict[str, str]:
    """Document id -> predicted label, windows combined as `lfcli classify` combines them."""
    rows = predict_rows(model, task, [Document(d.id, d.text) for d in docs], pad_id)
    return {row["id"]: row["label"] for row in rows}


def auto_class_weights(docs: list[LabelledDocument], labels: list[str]) -> torch.Tensor:
    """n / (k * n_class) per label (sklearn's 'balanced')."""
    counts = [sum(d.label == label for d in docs) for label in labels]
    return torch.tensor([len(docs) / (len(labels) * max(c, 1)) for c in counts], dtype=torch.float32)


def check_labels(train: list[LabelledDocument], validation: list[LabelledDocument]) -> list[str]:
    labels = sorted({d.label for d in train})
    if len(labels) < 2:
        raise InputError(f"training needs at least two labels; the data has {labels or 'none'}")
    unknown = sorted({d.label for d in validation} - set(labels))
    if unknown:
        raise UsageError(f"validation labels never seen in training: {', '.join(unknown[:5])}")
    return labels


def setup_classify(*, folder: Path, data: list[str], validation, validation_split: float, max_length, global_policy,
                   seed: int, say, text_column: str = JOB.text_column, label_column: str = "label", id_column: str | None = None,
                   class_weights: str = "auto", first_window_only: bool = False, **_) -> Setup:
    """classify: windows of up to the model's positions, validation stratified by label."""
    if class_weights not in ("auto", "none"):
        raise UsageError(f"--class-weights {class_weights!r}: choose auto or none")
    docs, problems = read_labelled(data, text_column, label_column, id_column)
    report_skipped(problems, "training document", say)
    if validation:
        val, val_problems = read_labelled(validation, text_column, label_column, id_column)
        report_skipped(val_problems, "validation document", say)
        train_docs = docs
    else:
        train_docs, val = stratified_split(docs, validation_split, seed)
    labels = check_labels(train_docs, val)
    if not val:
        raise UsageError("no validation documents: give --validation FILE or a --validation-split above 0")
    tok, length = training_tokenizer(folder, max_length, 1 << 30)
    task = ClassifyTask(tok, check_policy(global_policy or "cls"))
    task.labels = labels
    pad = LongformerConfig.from_json_file(folder / "config.json").pad_token_id
    weights = auto_class_weights(train_docs, labels) if class_weights == "auto" else None
    trainer_task = ClassifyTrainTask(task, labels, pad, val, class_weights=weights)
    counts = trainer_task.build(train_docs, first_window_only)
    per_label = {label: sum(d.label == label for d in train_docs) for label in labels}
    say(f"{plural(counts['documents'], 'training document')} {per_label} -> {plural(counts['windows'], 'window')} "
        f"of up to {length} tokens; {plural(len(val), 'validation document')}")
    fingerprint = fingerprint_of([[d.id, d.label, len(d.text)] for d in train_docs] + [class_weights, first_window_only])
    note = {"labels": labels, "train_documents": counts["documents"], "validation_documents": len(val)}
    return Setup(trainer_task, {"id2label": dict(enumerate(labels))}, length, fingerprint, note)

