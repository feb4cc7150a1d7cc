"""embed's inference: a vector per document. Rows: id, embedding, n_tokens.

Long documents: mean pooling counts each token once, in the window where it sits furthest
from an edge (the window that owns it); cls pooling averages the windows' first-token vectors
weighted by how many tokens each window owns. Windows of NO_OVERLAP_FROM tokens or more sit
side by side (EmbedTask.overlap).
"""

from __future__ import annotations

import pyarrow as pa
import torch

from ...infer.tasks import Task, owned_positions

# Windows at least this long (in content tokens) do not overlap (EmbedTask.overlap).
NO_OVERLAP_FROM = 2048


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
        self.pooling, self.normalize = pooling, normalize

    def setup(self, model, run_batch):
        self.dim = model.config.hidden_size

    def forward(self, model, batch, items):
        hidden = model(**batch).float()  # (B, n, hidden)
        # Which positions each window's mean counts: its special tokens and the content tokens
        # it owns (a single window owns every token, which is exactly sentence-transformers'
        # mean pooling). Built on the host and applied to the whole batch in one product, so a
        # GPU is never asked a window at a time.
        keep = torch.zeros(hidden.shape[:2], dtype=torch.float32)
        for b, item in enumerate(items):
            lo, hi = owned_positions(item)
            keep[b, lo:hi] = 1.0
            keep[b, : item.window.content_start] = 1.0
            keep[b, item.window.content_start + item.window.span[1] - item.window.span[0]: len(item)] = 1.0
        sums = torch.bmm(keep.to(hidden.device, non_blocking=True)[:, None, :], hidden)[:, 0]  # (B, hidden)
        counts = keep.sum(1).to(torch.long).tolist()
        # clone: a view of the first token would keep the whole batch's hidden states alive
        # until the document's last window ran (a 5 MB text held 1.8 GB of them)
        first = hidden[:, 0].clone()
        return [(sums[b], counts[b], first[b], item.owned[1] - item.owned[0]) for b, item in enumerate(items)]

    def pool(self, results) -> torch.Tensor:
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
        return pa.schema([("id", pa.string()), ("embedding", pa.list_(pa.float32(), self.dim)), ("n_tokens", pa.int64()), ("error", pa.string())])


def pooling_options(config, options: dict) -> dict:
    """--pooling and --normalize, else the model's own (config.json's lfcli block), else mean
    pooling of L2-normalised vectors."""
    meta = config.extra.get("lfcli", {})
    pooling, normalize = options.get("pooling"), options.get("normalize")
    return {"pooling": pooling or meta.get("pooling", "mean"),
            "normalize": meta.get("normalize", True) if normalize is None else normalize}


def runner(tokenizer, policy, config, options: dict) -> EmbedTask:
    return EmbedTask(tokenizer, policy, **pooling_options(config, options))
