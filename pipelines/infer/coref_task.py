"""The coreference task: windows of a document, each decoded into chains (coref_decode.py),
then joined into the document's entities."""

from __future__ import annotations

from ..io.readers import Document
from .coref_decode import decode_clusters, words_of
from .tasks import Item, Task
from .tokenize import paragraph_ids


class CorefTask(Task):
    """Coreference chains. Rows: id, clusters: a list of clusters, each a list of
    {start, end, text} character spans (end exclusive) of the document's text, mentions and
    clusters in text order. `singletons`: also report one-mention entities (spans the model
    scores as mentions, linked to nothing), as LitBank annotates them.

    A document that fits the model's positions is one window; a longer one is cut into
    windows overlapping by a quarter, each decoded on its own (`decode_clusters`), and
    clusters of different windows merge where they share a mention (`finish`)."""

    name = "corefs"

    def __init__(self, tokenizer, policy, singletons: bool = False):
        super().__init__(tokenizer, policy)
        self.singletons = singletons

    def prepare(self, doc_index, doc):
        prepared = super().prepare(doc_index, doc)
        starts, ends, pronouns = words_of(self.tok.tokenizer, doc.text, len(prepared.encoded.ids))
        paragraphs = paragraph_ids(doc.text, prepared.encoded.offsets)
        for item in prepared.items:
            s0, s1 = item.window.span
            item.extra["word_starts"], item.extra["word_ends"] = starts[s0:s1], ends[s0:s1]
            item.extra["paragraphs"] = paragraphs[s0:s1]
            item.extra["pronouns"] = {(s, e): k for (s, e), k in pronouns.items() if s0 <= s and e < s1}
        return prepared

    def mention_masks(self, items: list[Item], n: int) -> dict:
        """mention_mask, start_mask, end_mask (B, n) bool and segment_ids (B, n) for a batch
        of windows: a mention lies within the window's content tokens, starts / ends on word
        boundaries, and does not cross a paragraph break (its start and end tokens share a
        segment id)."""
        import torch

        masks = {k: torch.zeros((len(items), n), dtype=torch.bool) for k in ("mention_mask", "start_mask", "end_mask")}
        masks["segment_ids"] = torch.zeros((len(items), n), dtype=torch.long)
        for b, item in enumerate(items):
            c0 = item.window.content_start
            c1 = c0 + item.window.span[1] - item.window.span[0]
            masks["mention_mask"][b, c0:c1] = True
            if "word_starts" in item.extra:
                masks["start_mask"][b, c0:c1] = torch.tensor(item.extra["word_starts"], dtype=torch.bool)
                masks["end_mask"][b, c0:c1] = torch.tensor(item.extra["word_ends"], dtype=torch.bool)
            else:
                masks["start_mask"][b, c0:c1] = masks["end_mask"][b, c0:c1] = True
            if "paragraphs" in item.extra:
                masks["segment_ids"][b, c0:c1] = torch.tensor(item.extra["paragraphs"], dtype=torch.long)
        return masks

    def forward(self, model, batch, items):
        device = batch["input_ids"].device
        masks = {k: v.to(device) for k, v in self.mention_masks(items, batch["input_ids"].shape[1]).items()}
        spans, valid, pair, mention_scores = model(**batch, **masks)
        spans, valid, pair, mention_scores = spans.cpu(), valid.cpu(), pair.float().cpu(), mention_scores.float().cpu()
        thresholds = getattr(model, "mention_threshold", 0.0), getattr(model, "link_threshold", 0.0)
        agreement = getattr(model, "pronoun_agreement", True)
        out = []
        for b, item in enumerate(items):
            shift = item.window.span[0] - item.window.content_start  # window position -> document token
            pronouns = item.extra.get("pronouns", {})
            kinds = [pronouns.get((s + shift, e + shift)) for s, e in spans[b].tolist()] if agreement else None
            clusters = decode_clusters(spans[b], valid[b], pair[b], mention_scores[b], *thresholds, kinds=kinds)
            out.append([[(s + shift, e + shift) for s, e in c] for c in clusters])
        return out

    def finish(self, doc, prepared, results):
        # Union-find over mentions: clusters from different windows that share a mention merge.
        parent: dict[tuple[int, int], tuple[int, int]] = {}

        def find(m):
            while parent.setdefault(m, m) != m:
                parent[m] = parent[parent[m]]
                m = parent[m]
            return m

        for window_clusters in results:
            for cluster in window_clusters:
                find(cluster[0])
                for m in cluster[1:]:
                    parent[find(m)] = find(cluster[0])
        groups: dict[tuple[int, int], set] = {}
        for m in list(parent):
            groups.setdefault(find(m), set()).add(m)
        offsets = prepared.encoded.offsets
        clusters = []
        for members in groups.values():
            spans = sorted({(offsets[s][0], offsets[e][1]) for s, e in members})
            if len(spans) < 2 and not self.singletons:
                continue
            clusters.append([{"start": a, "end": z, "text": doc.text[a:z]} for a, z in spans])
        clusters.sort(key=lambda c: (c[0]["start"], c[0]["end"]))
        return {"id": doc.id, "clusters": clusters}

    def schema(self):
        import pyarrow as pa

        mention = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])
        return pa.schema([("id", pa.string()), ("clusters", pa.list_(pa.list_(mention))), ("error", pa.string())])
