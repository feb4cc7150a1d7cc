"""What every task shares: a document's windows, the Task protocol the runner drives, and the
batch tensors. Each task's own code lives in its home, lfcli.pipelines.tasks.<name>.

Every task follows the same three steps, driven by pipelines/infer/runner.py:
  prepare(doc)            -> the document's windows (model inputs) and what finish() needs
  forward(model, batch)   -> one small CPU result per window (never the hidden states of a
                             whole batch kept around: memory stays bounded)
  finish(doc, results)    -> the output row

Long documents are never truncated: they are cut into overlapping windows (see
tokenize.plan_windows); each token is owned by the window where it sits furthest from an edge
(tokenize.owned_ranges), and the task combines the window results into the document's row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import torch

from ..errors import InputError
from ..io.readers import Document
from .policies import global_positions
from .tokenize import DocumentTokenizer, Encoded, Window, owned_ranges, plan_windows


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


def document_windows(
    tok: DocumentTokenizer, doc_index: int, text: str, policy: str, overlap, question: list[int] | None = None,
    encoded: Encoded | None = None, choose=None,
) -> Prepared:
    """The document's windows; `overlap(size)`: the tokens two neighbours share. `encoded`:
    the text's tokens when the caller has them already; `choose(encoded, spans, size)`: the
    content spans to read out of the whole plan's `spans` (a task that reads only some, e.g.
    qa's retrieval; the windows must lie in text order), else every one."""
    encoded = tok.encode(text) if encoded is None else encoded
    if not encoded.ids:
        raise InputError("the document has no tokens")
    size = tok.content_budget(len(question) if question else 0)
    spans = plan_windows(len(encoded.ids), size, overlap(size))
    chosen = spans if choose is None else choose(encoded, spans, size)
    owned = owned_ranges(chosen)
    if chosen is not spans:  # windows apart from each other own only their own tokens
        owned = [(max(lo, s), min(hi, e)) for (lo, hi), (s, e) in zip(owned, chosen)]
    items = []
    for span, own in zip(chosen, owned):
        window = tok.window(encoded.ids, span, question)
        items.append(Item(doc_index, window, global_positions(policy, window, text, encoded.offsets), own))
    return Prepared(encoded, items)


def owned_positions(item: Item) -> tuple[int, int]:
    """Positions in the window of the content tokens the window owns."""
    s = item.window.span[0]
    return item.window.content_start + item.owned[0] - s, item.window.content_start + item.owned[1] - s


class Task:
    name = ""
    overlap_fraction = 0.25
    row_unit = "doc"  # what a row is, for progress lines (qa with several questions: "question")

    def overlap(self, size: int) -> int:
        """How many tokens two neighbouring windows of `size` content tokens share."""
        return int(size * self.overlap_fraction)

    def __init__(self, tokenizer: DocumentTokenizer, policy: str, **options: Any):
        self.tok = tokenizer
        self.policy = policy
        self.options = options

    def setup(self, model, run_batch) -> None:
        """Called once with the loaded model (e.g. to embed zero-shot labels). run_batch(i, doc):
        one document's window results; run_batch.many(docs): several documents' (runner.ModelCalls)."""

    def begin(self, documents: Iterable[Document], run_batch) -> Iterable[Document]:
        """Called as a job starts, before any row: the documents, in the same order (a task may
        read some ahead, e.g. zero-shot classify's label priors)."""
        return documents

    def prepare(self, doc_index: int, doc: Document) -> Prepared:
        return document_windows(self.tok, doc_index, doc.text, self.policy, self.overlap)

    def forward(self, model, batch: dict, items: list[Item]) -> list[Any]:
        raise NotImplementedError

    def finish(self, doc: Document, prepared: Prepared, results: list[Any]) -> dict:
        raise NotImplementedError

    def schema(self):
        raise NotImplementedError

    def key(self, doc: Document) -> str:
        """What --resume knows the document's row by (the writer's key of that row)."""
        return doc.id

    def error_row(self, doc: Document, message: str) -> dict:
        return {"id": doc.id, "error": message}


def batch_tensors(items: list[Item], pad_id: int, device=None, pin: bool = False) -> dict:
    """Right-padded model inputs for a list of windows: input_ids, attention_mask,
    global_attention_mask, token_type_ids (long tensors, on `device`).

    pin (for a GPU): the tensors are made in pinned host memory and copied without blocking,
    and global_attention_mask stays on the host: the model counts the global columns there
    (a shape) and copies it itself, so the forward never waits for the GPU."""
    n = max(len(it) for it in items)
    ids = torch.full((len(items), n), pad_id, dtype=torch.long)
    types = torch.zeros((len(items), n), dtype=torch.long)
    mask = torch.zeros((len(items), n), dtype=torch.long)
    glob = torch.zeros((len(items), n), dtype=torch.long)
    for b, it in enumerate(items):
        m = len(it)  # never 0: a window holds at least its special tokens
        ids[b, :m] = torch.frombuffer(it.window.input_ids, dtype=torch.int32)  # int32 arrays (tokenize.Window)
        types[b, :m] = torch.frombuffer(it.window.token_type_ids, dtype=torch.int32)
        mask[b, :m] = 1
        glob[b, it.global_positions] = 1
    out = {"input_ids": ids, "attention_mask": mask, "global_attention_mask": glob, "token_type_ids": types}
    if device is None:
        return out
    if pin:
        out = {k: v.pin_memory() for k, v in out.items()}
        return {k: v if k == "global_attention_mask" else v.to(device, non_blocking=True) for k, v in out.items()}
    return {k: v.to(device) for k, v in out.items()}


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


