"""The tasks: how a document becomes model windows, and how window outputs become a row.

Every task follows the same three steps, driven by pipelines/infer/runner.py:
  prepare(doc)            -> the document's windows (model inputs) and what finish() needs
  forward(model, batch)   -> one small CPU result per window (never the hidden states of a
                             whole batch kept around: memory stays bounded)
  finish(doc, results)    -> the output row

Long documents are never truncated: they are cut into overlapping windows (see
tokenize.plan_windows) and the window results are combined:
  embed     mean pooling counts each token once, in the window where it sits furthest from
            an edge (tokenize.owned_ranges); cls pooling averages the windows' first-token
            vectors weighted by how many tokens each window owns.
  classify  class probabilities averaged over windows, weighted the same way.
  qa        every window proposes spans; the best-scoring spans over all windows win.
  corefs    see coref_task.py: window chains become document entities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .policies import global_positions
from ..io.readers import Document
from .answers import (DEFAULT_TEMPERATURE, QA_ANSWER_POOL, QA_CANDIDATES, QACandidates, asks_for_heading, best_spans,
                      distinct_answers, qa_temperature, span_rules)
from .tokenize import DocumentTokenizer, Encoded, Window, owned_ranges, plan_windows

# The tasks by name, in the order messages list them: what `lfcli TASK` (a Pipeline) runs, and
# those with gold labels, which `lfcli finetune` trains and `lfcli evaluate` scores.
TASKS = ("classify", "qa", "embed", "corefs")
LABELLED_TASKS = tuple(task for task in TASKS if task != "embed")
# Tasks for which an empty document is a document (corefs: no chains), not an error row.
EMPTY_OK_TASKS = ("corefs",)
# embed: windows at least this long (in content tokens) do not overlap (EmbedTask.overlap).
NO_OVERLAP_FROM = 2048


@dataclass
class Item:
    """One window of one document, ready for the model."""

    doc: int  # index of the document in the current chunk
    window: Window
    global_positions: list[int]
    owned: tuple[int, int]  # content tokens [lo, hi) this window speaks for
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.window.input_ids)


@dataclass
class Prepared:
    encoded: Encoded
    items: list[Item]
    extra: dict = field(default_factory=dict)


def _windows(
    tok: DocumentTokenizer, doc_index: int, text: str, policy: str, overlap, question: list[int] | None = None
) -> Prepared:
    """The document's windows; `overlap(size)`: the tokens two neighbours share."""
    encoded = tok.encode(text)
    if not encoded.ids:
        raise InputError("the document has no tokens")
    size = tok.content_budget(len(question) if question else 0)
    spans = plan_windows(len(encoded.ids), size, overlap(size))
    items = []
    for span, owned in zip(spans, owned_ranges(spans)):
        window = tok.window(encoded.ids, span, question)
        items.append(Item(doc_index, window, global_positions(policy, window, text, encoded.offsets), owned))
    return Prepared(encoded, items)


def _owned_positions(item: Item) -> tuple[int, int]:
    """Positions in the window of the content tokens the window owns."""
    s = item.window.span[0]
    return item.window.content_start + item.owned[0] - s, item.window.content_start + item.owned[1] - s


class Task:
    name = ""
    overlap_fraction = 0.25

    def overlap(self, size: int) -> int:
        """How many tokens two neighbouring windows of `size` content tokens share."""
        return int(size * self.overlap_fraction)

    def __init__(self, tokenizer: DocumentTokenizer, policy: str, **options: Any):
        self.tok = tokenizer
        self.policy = policy
        self.options = options

    def setup(self, model, run_batch) -> None:
        """Called once with the loaded model (e.g. to embed zero-shot labels)."""

    def prepare(self, doc_index: int, doc: Document) -> Prepared:
        return _windows(self.tok, doc_index, doc.text, self.policy, self.overlap)

    def model_inputs(self, items: list[Item]) -> dict:
        return {}

    def forward(self, model, batch: dict, items: list[Item]) -> list[Any]:
        raise NotImplementedError

    def finish(self, doc: Document, prepared: Prepared, results: list[Any]) -> dict:
        raise NotImplementedError

    def schema(self):
        raise NotImplementedError

    @staticmethod
    def error_row(doc: Document, message: str) -> dict:
        return {"id": doc.id, "error": message}


class EmbedTask(Task):
    """Document vectors. Rows: id, embedding, n_tokens."""

    name = "embed"

    def overlap(self, size: int) -> int:
        """Long windows side by side, without overlap: a quarter's overlap encoded a third more
        tokens than the document holds, for vectors that move by nothing a user can see when
        the windows are long (4,096 tokens: cosine 0.9998-1.0 against overlapping windows on
        the first 200,000 characters of six novels; 2,048: 0.9996). Short windows keep theirs
        (512 tokens without overlap: 0.993-0.995, too far)."""
        return 0 if size >= NO_OVERLAP_FROM else super().overlap(size)

    def __init__(self, tokenizer, policy, pooling: str = "mean", normalize: bool = True):
        super().__init__(tokenizer, policy)
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be mean or cls, got {pooling!r}")
        self.pooling, self.normalize = pooling, normalize

    def setup(self, model, run_batch):
        self.dim = model.config.hidden_size

    def forward(self, model, batch, items):
        import torch

        hidden = model(**batch).float()  # (B, n, hidden)
        out = []
        for b, item in enumerate(items):
            n = len(item)
            lo, hi = _owned_positions(item)
            # The window's special tokens and the content tokens it owns (a single window owns
            # every token, which is exactly sentence-transformers' mean pooling).
            keep = torch.zeros(n, dtype=torch.bool)
            keep[lo:hi] = True
            keep[: item.window.content_start] = True
            keep[item.window.content_start + item.window.span[1] - item.window.span[0]: n] = True
            vectors = hidden[b, :n][keep]
            # clone: a view of the first token would keep the whole batch's hidden states alive
            # until the document's last window ran (a 5 MB text held 1.8 GB of them)
            out.append((vectors.sum(0), int(keep.sum()), hidden[b, 0].clone(), item.owned[1] - item.owned[0]))
        return out

    def pool(self, results) -> "list[float]":
        import torch

        if self.pooling == "mean":
            vec = sum(r[0] for r in results) / sum(r[1] for r in results)
        else:
            total = sum(r[3] for r in results) or 1
            vec = sum(r[2] * (r[3] / total) for r in results)
        if self.normalize:
            vec = torch.nn.functional.normalize(vec, dim=0)
        return vec

    def finish(self, doc, prepared, results):
        vec = self.pool(results)
        return {"id": doc.id, "embedding": vec.tolist(), "n_tokens": len(prepared.encoded.ids)}

    def schema(self):
        import pyarrow as pa

        return pa.schema([("id", pa.string()), ("embedding", pa.list_(pa.float32(), self.dim)), ("n_tokens", pa.int64()), ("error", pa.string())])


def _classify_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("label", pa.string()),
            ("score", pa.float64()),
            ("scores", pa.map_(pa.string(), pa.float64())),
            ("error", pa.string()),
        ]
    )


def _label_row(doc: Document, labels: list[str], probs) -> dict:
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
        return _label_row(doc, self.labels, probs)

    def schema(self):
        return _classify_schema()


class ZeroShotClassifyTask(EmbedTask):
    """Labels without a trained head: cosine between the document's embedding and each
    label's embedding ("label: description" when a description is given), softmax with
    temperature T: p = softmax(cos / T). T = 0.05 by default, the contrastive-training
    temperature of sentence-embedding models, which spreads their narrow cosine range."""

    name = "classify"

    def __init__(self, tokenizer, policy, labels: list[tuple[str, str]], temperature: float = 0.05, **kw):
        super().__init__(tokenizer, policy, **kw)
        self.labels = [name for name, _ in labels]
        self.label_texts = [f"{name}: {desc}" if desc else name for name, desc in labels]
        self.temperature = temperature

    def setup(self, model, run_batch):
        import torch

        super().setup(model, run_batch)
        docs = [Document(id=f"label:{i}", text=t) for i, t in enumerate(self.label_texts)]
        vecs = [self.pool(run_batch(i, d)) for i, d in enumerate(docs)]
        self.label_matrix = torch.nn.functional.normalize(torch.stack(vecs), dim=-1)

    def finish(self, doc, prepared, results):
        import torch

        vec = torch.nn.functional.normalize(self.pool(results), dim=0)
        probs = torch.softmax(self.label_matrix @ vec / self.temperature, dim=0)
        return _label_row(doc, self.labels, probs)

    def schema(self):
        return _classify_schema()


def batch_tensors(items: list[Item], pad_id: int, device=None) -> dict:
    """Right-padded model inputs for a list of windows: input_ids, attention_mask,
    global_attention_mask, token_type_ids (long tensors, on `device`)."""
    import torch

    n = max(len(it) for it in items)
    ids = torch.full((len(items), n), pad_id, dtype=torch.long)
    types = torch.zeros((len(items), n), dtype=torch.long)
    mask = torch.zeros((len(items), n), dtype=torch.long)
    glob = torch.zeros((len(items), n), dtype=torch.long)
    for b, it in enumerate(items):
        m = len(it)
        ids[b, :m] = torch.tensor(it.window.input_ids)
        types[b, :m] = torch.tensor(it.window.token_type_ids)
        mask[b, :m] = 1
        glob[b, it.global_positions] = 1
    out = {"input_ids": ids, "attention_mask": mask, "global_attention_mask": glob, "token_type_ids": types}
    return {k: v.to(device) for k, v in out.items()} if device is not None else out


MODEL_INPUTS = ("input_ids", "attention_mask", "global_attention_mask", "token_type_ids")


def model_inputs(batch: dict) -> dict:
    """The model's inputs out of a training batch that also carries targets."""
    return {k: batch[k] for k in MODEL_INPUTS}


def predict_rows(model, task: "Task", docs: list[Document], pad_id: int, max_tokens: int = 16384, max_batch: int = 32) -> list[dict]:
    """Run an in-memory model over documents with a task (prepare, forward, finish), windows
    batched longest first under a token budget: what `lfcli TASK` does, for evaluating a
    model during training. Rows in the documents' order."""
    device = next(model.parameters()).device
    prepared = [task.prepare(k, d) for k, d in enumerate(docs)]
    items = sorted(((k, j, it) for k, p in enumerate(prepared) for j, it in enumerate(p.items)), key=lambda x: -len(x[2]))
    results: dict[tuple[int, int], Any] = {}
    start = 0
    while start < len(items):
        chunk = items[start: start + max(1, min(max_batch, max_tokens // len(items[start][2])))]
        start += len(chunk)
        windows = [it for _, _, it in chunk]
        for (k, j, _), out in zip(chunk, task.forward(model, batch_tensors(windows, pad_id, device), windows)):
            results[(k, j)] = out
    return [task.finish(d, p, [results[(k, j)] for j in range(len(p.items))]) for k, (d, p) in enumerate(zip(docs, prepared))]


class QATask(Task):
    """Extractive answers. Rows: id, question, answer, start, end, score (character offsets
    into the document, end exclusive), and `answers` (the top-k) when top_k > 1.

    Each window proposes spans by their margin over its no-answer score (`best_spans`), so
    windows of a long document compete on one scale; answers start and end on words, keep
    quotes and brackets balanced and are never in a heading unless the question asks for one
    (`span_rules`). `score` is the model's calibrated probability that the answer is right
    (see QACandidates and the notes above it); the answers are distinct, best score first
    (`distinct_answers`)."""

    name = "qa"

    def __init__(self, tokenizer, policy, question: str | None = None, top_k: int = 1, max_answer_tokens: int = 30,
                 temperature: float = DEFAULT_TEMPERATURE):
        super().__init__(tokenizer, policy)
        self.question, self.top_k, self.max_answer_tokens = question, top_k, max_answer_tokens
        self.temperature = temperature

    def setup(self, model, run_batch):
        self.temperature = qa_temperature(model.config)

    def prepare(self, doc_index, doc):
        question = self.question or doc.fields.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InputError("no question: pass --question or give each record a 'question' field")
        q_ids = self.tok.encode(question).ids
        limit = self.tok.max_length // 2
        if len(q_ids) > limit:
            raise InputError(f"the question has {len(q_ids)} tokens; at most {limit} fit with the document")
        prepared = _windows(self.tok, doc_index, doc.text, self.policy, self.overlap, q_ids)
        prepared.extra["question"] = question
        prepared.extra["text"] = doc.text
        rules = span_rules(doc.text, prepared.encoded.offsets, headings=asks_for_heading(question))
        for item in prepared.items:
            item.extra["span_rules"] = rules.window(*item.window.span)
        return prepared

    def forward(self, model, batch, items):
        start_logits, end_logits = model(**batch)
        start_logits, end_logits = start_logits.float().cpu(), end_logits.float().cpu()
        out = []
        for b, item in enumerate(items):
            c0 = item.window.content_start
            s0, s1 = item.window.span
            null = float(start_logits[b, 0]) + float(end_logits[b, 0])
            spans = best_spans(start_logits[b, c0: c0 + s1 - s0], end_logits[b, c0: c0 + s1 - s0], null,
                               self.max_answer_tokens, QA_ANSWER_POOL, item.extra.get("span_rules"))
            out.append([(margin, s0 + i, s0 + j) for margin, i, j in spans])
        return out

    @staticmethod
    def candidates(results) -> QACandidates:
        """The softmax's candidates: each window's QA_CANDIDATES best spans."""
        best: dict[tuple[int, int], float] = {}
        for window in results:
            for margin, ts, te in window[:QA_CANDIDATES]:
                if margin > best.get((ts, te), -math.inf):
                    best[(ts, te)] = margin
        spans = sorted(best, key=lambda s: -best[s])
        return QACandidates(spans, [best[s] for s in spans], len(results))

    def scored(self, prepared, results) -> list[tuple[tuple[int, int, float], float]]:
        """The top_k distinct answers ((first token, last token, margin), score), best score
        first, among the spans all windows propose (`distinct_answers`)."""
        offsets, text = prepared.encoded.offsets, prepared.extra["text"]
        spans = [(ts, te, margin) for window in results for margin, ts, te in window]
        return distinct_answers(spans, self.candidates(results), self.temperature,
                                lambda s: text[offsets[s[0]][0]:offsets[s[1]][1]], self.top_k)

    def ranked(self, prepared, results) -> list[tuple[int, int, float]]:
        """The top_k distinct answers (first token, last token, margin), best score first."""
        return [span for span, _ in self.scored(prepared, results)]

    def answers(self, doc, prepared, results) -> list[dict]:
        """The top_k distinct answers, best score first, each with its score."""
        offsets = prepared.encoded.offsets
        return [{"answer": doc.text[offsets[ts][0]:offsets[te][1]], "start": offsets[ts][0], "end": offsets[te][1],
                 "score": score} for (ts, te, _), score in self.scored(prepared, results)]

    def finish(self, doc, prepared, results):
        answers = self.answers(doc, prepared, results)
        row = {"id": doc.id, "question": prepared.extra["question"], **answers[0]}
        if self.top_k > 1:
            row["answers"] = answers
        return row

    def schema(self):
        import pyarrow as pa

        fields = [
            ("id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
            ("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64()),
        ]
        if self.top_k > 1:
            fields.append(("answers", pa.list_(pa.struct(fields[2:]))))
        return pa.schema([*fields, ("error", pa.string())])
