"""classify's inference: a label per document. Rows: id, label, score, scores.

Two ways to a label: a trained sequence-classification head (ClassifyTask: the windows' class
probabilities averaged, each weighted by the tokens it owns), or zero-shot with --labels
(ZeroShotClassifyTask: the document's embedding against each label's, no head needed).
"""

from __future__ import annotations

import itertools

import pyarrow as pa
import torch

from ...errors import InputError
from ...infer.tasks import Prepared, Task
from ...io.readers import Document, iter_documents
from ...progress import note
from ..embed.task import EmbedTask, pooling_options
from . import LABEL_PRIOR_CHARS, LABEL_PRIOR_DOCS, ZERO_SHOT_TEMPERATURE
from .priors import automatic_priors, leave_own_out_priors, shares


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

    prior (priors.py): each label's mean cosine with the documents that go to other labels.
    `label_prior` "auto": measured on the first input documents (`begin`: embedded once, their
    vectors kept for their rows) and applied only when a label takes more than twice its share
    of them; a list of texts: the same, on those texts (a Ray worker's part of a job: the job's
    first texts, classify.for_workers); "none": zeros; a file or folder: measured on its
    documents, always applied."""

    name = "classify"

    def __init__(self, tokenizer, policy, labels: list[tuple[str, str]], temperature: float,
                 label_prior: str | None = "auto", **kw):
        super().__init__(tokenizer, policy, **kw)
        self.labels = [name for name, _ in labels]
        self.label_texts = [f"{name}: {desc}" if desc else name for name, desc in labels]
        self.temperature = temperature
        self.label_prior = "auto" if label_prior is None else label_prior
        self.measured = self.label_prior == "none"  # whether the priors are known
        self.known: dict[tuple[str, str], torch.Tensor] = {}  # (id, text) -> vector, from `begin`

    def setup(self, model, run_batch):
        super().setup(model, run_batch)
        docs = [Document(id=f"label:{i}", text=t) for i, t in enumerate(self.label_texts)]
        vecs = [self.pool(run_batch(i, d)) for i, d in enumerate(docs)]
        self.label_matrix = torch.nn.functional.normalize(torch.stack(vecs), dim=-1)
        self.prior = torch.zeros(len(self.labels))
        if isinstance(self.label_prior, list):
            first = [Document(str(i), t) for i, t in enumerate(self.label_prior)]
            self.automatic([vec for _, vec in self.vectors(first, run_batch)])
            self.measured = True
        elif self.label_prior not in ("auto", "none"):
            docs = reference_documents(self.label_prior)
            vecs = [vec for _, vec in self.vectors(docs, run_batch)]
            self.prior = leave_own_out_priors(self.cosines(vecs)).float()
            self.say_priors(f"label priors from {len(docs)} document{'s' * (len(docs) != 1)} of {self.label_prior}")
            self.measured = True

    def begin(self, documents, run_batch):
        """With "auto", the first LABEL_PRIOR_DOCS documents (at most LABEL_PRIOR_CHARS
        characters) are embedded, their labels' priors measured, and their vectors kept for
        their rows; the documents come back unchanged, in order. Once a job: a second run of the
        same pipeline keeps the first one's priors."""
        if self.measured:
            return documents
        self.measured = True
        documents = iter(documents)
        head, chars = [], 0
        for doc in documents:
            head.append(doc)
            chars += len(doc.text or "")
            if len(head) == LABEL_PRIOR_DOCS or chars >= LABEL_PRIOR_CHARS:
                break
        measured = self.vectors(head, run_batch)
        self.known = {(doc.id, doc.text): vec for doc, vec in measured}
        self.automatic([vec for _, vec in measured])
        return itertools.chain(head, documents)

    def vectors(self, docs: list[Document], run_batch) -> list[tuple[Document, torch.Tensor]]:
        """(document, pooled vector) of each readable, non-empty document of `docs` that runs,
        in order, their windows batched together."""
        readable = [d for d in docs if d.error is None and d.text and d.text.strip()]
        return [(doc, self.pool(results)) for doc, results in zip(readable, run_batch.many(readable))
                if results is not None]

    def automatic(self, vecs: list[torch.Tensor]) -> None:
        """The priors of "auto" from the first documents' vectors (priors.automatic_priors)."""
        if not vecs:
            return
        cos = self.cosines(vecs)
        prior, biased = automatic_priors(cos)
        self.prior = prior.float()
        if biased is not None:
            share = float(shares(cos.argmax(-1), len(self.labels))[biased])
            self.say_priors(f"label priors (auto): {self.labels[biased]!r} took {100 * share:.0f}% of "
                            f"{len(vecs)} documents without them (--label-prior none to keep it)")

    def cosines(self, vecs: list[torch.Tensor]) -> torch.Tensor:
        """(documents, labels) cosines of pooled document vectors, in float64."""
        docs = torch.nn.functional.normalize(torch.stack(vecs).double(), dim=-1)
        return docs @ self.label_matrix.double().T

    def say_priors(self, what: str) -> None:
        note(f"{what}: " + ", ".join(f"{name} {float(p):.3f}" for name, p in zip(self.labels, self.prior)))

    def prepare(self, doc_index, doc):
        vec = self.known.pop((doc.id, doc.text), None) if self.known else None
        if vec is None:
            return super().prepare(doc_index, doc)
        return Prepared(self.tok.encode(doc.text), [], {"vector": vec})  # embedded by `begin`: no windows

    def finish(self, doc, prepared, results):
        vec = prepared.extra["vector"] if "vector" in prepared.extra else self.pool(results)
        vec = torch.nn.functional.normalize(vec, dim=0)
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
    return ZeroShotClassifyTask(tokenizer, policy, options["labels"], temperature, options.get("label_prior", "auto"),
                                **pooling_options(config, {}))
