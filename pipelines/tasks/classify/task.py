"""classify's inference: a label per document. Rows: id, label, score, scores.

Two ways to a label: a trained sequence-classification head (ClassifyTask: the windows' class
probabilities averaged, each weighted by the tokens it owns), or zero-shot with --labels
(ZeroShotClassifyTask: the document's embedding against each label's, no head needed).
"""

from __future__ import annotations

import pyarrow as pa
import torch

from ...infer.tasks import Task
from ...io.readers import Document
from ..embed.task import EmbedTask, pooling_options
from . import ZERO_SHOT_TEMPERATURE


def classify_schema() -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("label", pa.string()),
            ("score", pa.float64()),
            ("scores", pa.map_(pa.string(), pa.float64())),
            ("error", pa.string()),
        ]
    )


def label_row(doc: Document, labels: list[str], probs) -> dict:
    best = int(probs.argmax())
    return {
        "id": doc.id,
        "label": labels[best],
        "score": float(probs[best]),
        "scores": {label: float(p) for label, p in zip(labels, probs)},
    }


class ClassifyTask(Task):
    """Supervised labels from a sequence-classification head. Rows: id, label, score, scores."""

    name = "classify"

    def setup(self, model, run_batch):
        cfg = model.config
        self.labels = [cfg.id2label[i] for i in sorted(cfg.id2label)] if cfg.id2label else [
            f"LABEL_{i}" for i in range(cfg.num_labels)
        ]

    def forward(self, model, batch, items):
        probs = model(**batch).float().softmax(-1)
        return [(probs[b], item.owned[1] - item.owned[0]) for b, item in enumerate(items)]

    def finish(self, doc, prepared, results):
        total = sum(w for _, w in results) or 1
        probs = sum(p * (w / total) for p, w in results)
        return label_row(doc, self.labels, probs)

    def schema(self):
        return classify_schema()


class ZeroShotClassifyTask(EmbedTask):
    """Labels without a trained head: cosine between the document's embedding and each
    label's embedding ("label: description" when a description is given), softmax with
    temperature T: p = softmax(cos / T). T = 0.05 by default, the contrastive-training
    temperature of sentence-embedding models, which spreads their narrow cosine range."""

    name = "classify"

    def __init__(self, tokenizer, policy, labels: list[tuple[str, str]], temperature: float, **kw):
        super().__init__(tokenizer, policy, **kw)
        self.labels = [name for name, _ in labels]
        self.label_texts = [f"{name}: {desc}" if desc else name for name, desc in labels]
        self.temperature = temperature

    def setup(self, model, run_batch):
        super().setup(model, run_batch)
        docs = [Document(id=f"label:{i}", text=t) for i, t in enumerate(self.label_texts)]
        vecs = [self.pool(run_batch(i, d)) for i, d in enumerate(docs)]
        self.label_matrix = torch.nn.functional.normalize(torch.stack(vecs), dim=-1)

    def finish(self, doc, prepared, results):
        vec = torch.nn.functional.normalize(self.pool(results), dim=0)
        probs = torch.softmax(self.label_matrix @ vec / self.temperature, dim=0)
        return label_row(doc, self.labels, probs)

    def schema(self):
        return classify_schema()



def runner(tokenizer, policy, config, options: dict) -> Task:
    """A trained head's ClassifyTask, or zero-shot with `labels`."""
    if options.get("labels") is None:
        return ClassifyTask(tokenizer, policy)
    temperature = options.get("temperature", ZERO_SHOT_TEMPERATURE)
    return ZeroShotClassifyTask(tokenizer, policy, options["labels"], temperature, **pooling_options(config, {}))
