"""classify's inference: a label per document. Rows: id, label, score, scores.

Two ways to a label: a trained sequence-classification head (ClassifyTask: the windows' class
probabilities averaged, each weighted by the tokens it owns), or zero-shot with --labels
(ZeroShotClassifyTask: the document's embedding against each label's, no head needed).
"""

from __future__ import annotations

import pyarrow as pa
import torch

from ...errors import InputError
from ...infer.tasks import Task
from ...io.readers import Document, iter_documents
from ...progress import note
from ..embed.task import EmbedTask, pooling_options
from . import LABEL_PRIOR_DOCS, ZERO_SHOT_TEMPERATURE


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
    temperature T: p = softmax((cos - prior) / T). T = 0.05 by default, the contrastive-training
    temperature of sentence-embedding models, which spreads their narrow cosine range.

    prior: 0, or with `label_prior` (a file or folder of reference documents, usually the
    inputs themselves) each label's mean cosine with those documents (at most
    LABEL_PRIOR_DOCS, the first), embedded once at start: a label that sits near every
    document of the kind stops winning them all (see classify/__init__.py)."""

    name = "classify"

    def __init__(self, tokenizer, policy, labels: list[tuple[str, str]], temperature: float,
                 label_prior: str | None = None, **kw):
        super().__init__(tokenizer, policy, **kw)
        self.labels = [name for name, _ in labels]
        self.label_texts = [f"{name}: {desc}" if desc else name for name, desc in labels]
        self.temperature = temperature
        self.label_prior = label_prior

    def setup(self, model, run_batch):
        super().setup(model, run_batch)
        docs = [Document(id=f"label:{i}", text=t) for i, t in enumerate(self.label_texts)]
        vecs = [self.pool(run_batch(i, d)) for i, d in enumerate(docs)]
        self.label_matrix = torch.nn.functional.normalize(torch.stack(vecs), dim=-1)
        self.prior = torch.zeros(len(self.labels))
        if self.label_prior is not None:
            self.prior = self.label_priors(reference_documents(self.label_prior), run_batch)

    def label_priors(self, docs: list[Document], run_batch) -> torch.Tensor:
        """Each label's mean cosine with the documents `docs`."""
        prior = torch.stack([self.label_matrix @ torch.nn.functional.normalize(self.pool(run_batch(i, d)), dim=0)
                             for i, d in enumerate(docs)]).mean(0)
        note(f"label priors from {len(docs)} document{'s' * (len(docs) != 1)} of {self.label_prior}: "
             + ", ".join(f"{name} {float(p):.3f}" for name, p in zip(self.labels, prior)))
        return prior

    def finish(self, doc, prepared, results):
        vec = torch.nn.functional.normalize(self.pool(results), dim=0)
        probs = torch.softmax((self.label_matrix @ vec - self.prior) / self.temperature, dim=0)
        return label_row(doc, self.labels, probs)

    def schema(self):
        return classify_schema()


def reference_documents(path: str, limit: int = LABEL_PRIOR_DOCS) -> list[Document]:
    """The first `limit` readable, non-empty documents of `path` (a file or folder; JSONL and
    Parquet read from their 'text' field), for the label priors."""
    docs = []
    try:
        for doc in iter_documents(str(path)):
            if doc.error is None and doc.text and doc.text.strip():
                docs.append(doc)
                if len(docs) == limit:
                    break
    except InputError as exc:
        raise InputError(f"--label-prior: {exc}") from None
    if not docs:
        raise InputError(f"--label-prior {path}: no documents to measure the labels' priors on")
    return docs


def runner(tokenizer, policy, config, options: dict) -> Task:
    """A trained head's ClassifyTask, or zero-shot with `labels`."""
    if options.get("labels") is None:
        return ClassifyTask(tokenizer, policy)
    temperature = options.get("temperature", ZERO_SHOT_TEMPERATURE)
    return ZeroShotClassifyTask(tokenizer, policy, options["labels"], temperature, options.get("label_prior"),
                                **pooling_options(config, {}))
