"""Fine-tuning coreference (`lfcli finetune corefs`): data, windows with gold mentions, the
start-to-end loss, and evaluation on held-out documents.

Data: CoNLL-2012 files or folders (LitBank's `coref/conll`, OntoNotes; `ids` picks
documents, e.g. LitBank's `train.ids`), or JSONL/Parquet records with `text` and `clusters`:
lists of character spans, `{start, end}` objects (end exclusive) or `[start, end]` pairs,
exactly what `lfcli corefs` writes. Clusters of one mention are one-mention entities
(LitBank annotates them; a model trained on them reports them with `--singletons`).

Windows are made as `lfcli corefs` makes them (CorefTask.prepare): a document that fits the
model's positions (every LitBank document: at most 3,619 tokens with the MiniLM vocabulary)
is one window; a longer one becomes overlapping windows, each trained on the gold mentions
that lie wholly inside it.

Loss per window (after Kirstain, Ram & Levy 2021; see LongformerForCoreference for why f_m
and f_a are trained apart):
  mentions     binary cross-entropy of every candidate span's mention score f_m against "is
               a gold mention", summed and divided by the window's tokens: f_m becomes a
               calibrated "is a mention" logit, which picks the kept spans, and which decides
               at inference which of them are mentions (`mention_threshold`, 0 = p 0.5).
  antecedents  for each gold mention, the negative marginal log-likelihood of its gold
               antecedents among the earlier gold mentions and the dummy (the dummy is gold
               for the first mention of an entity, and for a one-mention entity), averaged
               over the window's gold mentions. The gold mentions are always kept (`keep`),
               so every gold link is seen from the first update. Linking is learnt among
               mentions only, as it is used: kept spans that are no mentions are filtered
               out by f_m before linking.
The loss unit is the window (the trainer averages over windows).

Validation: the held-out documents decoded exactly as `lfcli corefs --singletons` decodes
(task.CorefTask), scored with the CoNLL-2012 measures (eval.metrics_coref.coref_scores) with one-mention
entities (LitBank's convention: the score that picks the best model) and without.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from lfcli.models import LongformerConfig
from lfcli.models.config import COREF_SETTINGS
from lfcli.models.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS

from ...errors import InputError, UsageError
from ...eval.metrics import coref_scores, gap_decisions, gap_scores, read_gap
from ...infer.policies import check_policy
from ...infer.tasks import Item, batch_tensors, predict_rows
from ...infer.tokenize import token_span
from ...io.conll import read_conll, read_ids
from ...io.readers import Document, iter_documents
from ...train.setups import Setup, fingerprint_of, report_skipped, training_tokenizer
from ...wording import plural
from .document import chain_spans
from .task import CorefTask

# The head's settings for a new coreference model (config.extra["coref"]). ffnn_size 128
# keeps the adapter + head of the MiniLM base at 3.8 MB (LoRA rank 16: 0.66M parameters,
# the head 0.28M); 99.7% of LitBank's mentions are at most 30 sub-word tokens long.
COREF_DEFAULTS = {"ffnn_size": 128, **{key: COREF_SETTINGS[key] for key in ("max_span_width", "top_lambda", "mention_threshold")}}
CONLL_SUFFIXES = (".conll", "_conll")


@dataclass
class CorefDocument:
    id: str
    text: str
    clusters: list[list[tuple[int, int]]]  # character spans, end exclusive
    # Partially annotated (GAP): only the listed mentions' links are known; other spans of the
    # text may be mentions too, so no mention loss, and links among the listed ones only.
    partial: bool = False


@dataclass
class CorefExample:
    item: Item
    mentions: list[tuple[int, int, int]]  # (start, end inclusive, cluster) window positions
    partial: bool = False

    def __len__(self) -> int:
        return len(self.item)


# -- reading ---------------------------------------------------------------------------------------
def _is_conll(path: str) -> bool:
    return os.path.isdir(path) or path.lower().endswith(CONLL_SUFFIXES)


def read_coref_documents(inputs: list[str], ids=None) -> tuple[list[CorefDocument], list[str]]:
    """(documents, problems) from CoNLL-2012 files/folders and JSONL/Parquet records with
    text + clusters. `ids` (a file of ids, one a line, or an iterable) keeps only those
    documents (a CoNLL document also answers to its file's stem and its #begin name); an id
    that no input has is an error: a wrong split file must not train on nothing."""

    conll = [p for p in map(str, inputs) if _is_conll(p)]
    records = [p for p in map(str, inputs) if not _is_conll(p)]
    wanted = None if ids is None else set(read_ids(ids) if isinstance(ids, (str, os.PathLike)) else map(str, ids))
    docs: list[CorefDocument] = []
    problems: list[str] = []
    seen: set[str] = set()
    for d in read_conll(conll) if conll else []:
        names = {d.id, d.name, Path(d.path).stem}
        seen |= names
        if wanted is None or names & wanted:
            docs.append(CorefDocument(d.id, d.text, [list(c) for c in d.clusters]))
    for path in records:
        for doc in iter_documents([path], text_column="text", fields=("clusters",)):
            seen.add(doc.id)
            if wanted is not None and doc.id not in wanted:
                continue
            if doc.text is None:
                problems.append(f"{doc.id}: {doc.error}")
                continue
            clusters, problem = _clusters_of(doc)
            if problem:
                problems.append(f"{doc.id}: {problem}")
            else:
                docs.append(CorefDocument(doc.id, doc.text, clusters))
    missing = sorted((wanted or set()) - seen)
    if missing:
        raise InputError(f"{plural(len(missing), 'listed document id')} in no input: {', '.join(missing[:3])}")
    return docs, problems


def _clusters_of(doc: Document) -> tuple[list[list[tuple[int, int]]], str | None]:
    raw = doc.fields.get("clusters")
    if not isinstance(raw, list):
        return [], "no 'clusters' list (each cluster a list of {start, end} character spans)"
    clusters = []
    for cluster in raw:
        if not isinstance(cluster, list):
            return [], "a cluster is not a list of spans"
        spans = []
        for m in cluster:
            if isinstance(m, dict) and "start" in m and "end" in m:
                a, z = m["start"], m["end"]
            elif isinstance(m, (list, tuple)) and len(m) == 2:
                a, z = m
            else:
                return [], f"mention {m!r} is neither {{start, end}} nor [start, end]"
            if not (isinstance(a, int) and isinstance(z, int) and 0 <= a < z <= len(doc.text)):
                return [], f"mention span {a}..{z} is outside the text ({plural(len(doc.text), 'character')})"
            spans.append((a, z))
        if spans:
            clusters.append(spans)
    return clusters, None


def gap_documents(path: str) -> tuple[list[CorefDocument], list[str]]:
    """GAP rows (a TSV with A-coref / B-coref labels) as partially annotated documents:
    the pronoun, name A and name B are the mentions, the pronoun in the cluster of the name
    it refers to (if any), the two names apart (GAP's names are two different people). The
    antecedent loss then asks, among these three, for the pronoun's right antecedent (or
    the dummy): the signal GAP gives, and no more (other mentions in the text are unlabelled,
    hence no mention loss on these documents)."""

    docs, problems = [], []
    for ex in read_gap(path):
        if ex.a_coref is None or ex.b_coref is None:
            problems.append(f"{ex.id}: no A-coref / B-coref label")
            continue
        if ex.a_coref and ex.b_coref:
            problems.append(f"{ex.id}: both names labelled coreferent with the pronoun")
            continue
        a, b, pronoun = ex.a_span, ex.b_span, ex.pronoun_span
        if ex.a_coref:
            clusters = [[a, pronoun], [b]]
        elif ex.b_coref:
            clusters = [[b, pronoun], [a]]
        else:
            clusters = [[a], [b], [pronoun]]
        docs.append(CorefDocument(f"gap:{ex.id}", ex.text, [sorted(c) for c in clusters], partial=True))
    return docs, problems


def split_documents(docs: list[CorefDocument], fraction: float, seed: int) -> tuple[list, list]:
    """(train, validation): a seeded share of whole documents held out."""
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    n_val = max(1, round(len(docs) * fraction)) if len(docs) > 1 and fraction > 0 else 0
    held = set(order[:n_val])
    return [d for i, d in enumerate(docs) if i not in held], [d for i, d in enumerate(docs) if i in held]


# -- windows and their gold mentions ---------------------------------------------------------------
def window_examples(task: CorefTask, doc: CorefDocument, width: int) -> tuple[list[CorefExample], int]:
    """The document's windows, each with the gold mentions wholly inside it (window
    positions), and how many gold mentions no window can hold (wider than `width` tokens)."""
    prepared = task.prepare(0, Document(doc.id, doc.text))
    offsets = prepared.encoded.offsets
    mentions = []
    for c, cluster in enumerate(doc.clusters):
        for a, z in cluster:
            span = token_span(offsets, a, z)
            if span is not None:
                mentions.append((span[0], span[1], c))
    too_wide = sum(1 for s, e, _ in mentions if e - s >= width)
    out = []
    for item in prepared.items:
        s0, s1 = item.window.span
        shift = item.window.content_start - s0
        inside = sorted({(s + shift, e + shift, c) for s, e, c in mentions if s0 <= s and e < s1 and e - s < width})
        out.append(CorefExample(item, inside, partial=doc.partial))
    return out, too_wide


# -- the trainer task ------------------------------------------------------------------------------
@dataclass
class CorefTrainTask:
    """The coreference task for the trainer (see pipelines/train/loop.py)."""

    coref: CorefTask
    pad_id: int
    width: int
    validation: list[CorefDocument]
    mention_weight: float = 1.0
    examples: list[CorefExample] = field(default_factory=list)
    save_fn: object = None
    # A partially annotated (GAP) window counts as this share of a fully annotated one: a
    # LitBank document holds hundreds of links, a GAP row two.
    partial_weight: float = 0.2
    gap_validation: list = field(default_factory=list)  # GapExamples scored at each evaluation

    def build(self, docs: list[CorefDocument]) -> dict:
        counts = {"documents": 0, "windows": 0, "mentions": 0, "too_wide": 0, "skipped": 0}
        for doc in docs:
            try:
                examples, too_wide = window_examples(self.coref, doc, self.width)
            except InputError:
                counts["skipped"] += 1
                continue
            counts["documents"] += 1
            counts["windows"] += len(examples)
            counts["too_wide"] += too_wide
            counts["mentions"] += sum(len(c) for c in doc.clusters)
            self.examples += examples
        return counts

    def collate(self, examples: list[CorefExample], seeds: list[int]) -> dict:
        items = [e.item for e in examples]
        batch = batch_tensors(items, self.pad_id)
        n = batch["input_ids"].shape[1]
        batch.update(self.coref.mention_masks(items, n))
        # gold_cluster[b, i, w]: 1 + the cluster of the gold mention [i, i + w], 0 for none
        gold = torch.zeros((len(examples), n, self.width), dtype=torch.long)
        for b, e in enumerate(examples):
            for s, t, c in e.mentions:
                gold[b, s, t - s] = c + 1
        batch["gold_cluster"] = gold
        batch["partial"] = torch.tensor([e.partial for e in examples], dtype=torch.bool)
        batch["weight"] = torch.tensor([self.partial_weight if e.partial else 1.0 for e in examples])
        return batch

    def count(self, batch: dict) -> float:
        return float(batch["weight"].sum())

    def loss(self, model, batch: dict) -> torch.Tensor:
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "global_attention_mask", "token_type_ids",
                                        "mention_mask", "start_mask", "end_mask", "segment_ids")}
        n = batch["input_ids"].shape[1]
        gold = batch["gold_cluster"][:, :, : min(self.width, n)]
        out = model.score(**inputs, keep=gold > 0)
        return coref_loss(out, gold, batch["mention_mask"], self.mention_weight, batch["partial"], batch["weight"])

    def evaluate(self, model) -> dict:
        rows = predict_rows(model, self.coref, [Document(d.id, d.text) for d in self.validation], self.pad_id)
        pairs = [(d.clusters, chain_spans(row))
                 for d, row in zip(self.validation, rows)]
        metrics = score_clusters(pairs)
        if self.gap_validation:
            gap = gap_scores_of(model, self.coref, self.gap_validation, self.pad_id)
            metrics.update({"gap_f1": gap["overall"]["f1"], "gap_precision": gap["overall"]["precision"],
                            "gap_recall": gap["overall"]["recall"], "gap_f1_masculine": gap["masculine"]["f1"],
                            "gap_f1_feminine": gap["feminine"]["f1"]})
            # One criterion for both: the mean of LitBank's CoNLL F1 and GAP's F1.
            metrics["score"] = (metrics["conll_f1"] + metrics["gap_f1"]) / 2
        return metrics

    def save(self, model, folder: Path) -> None:
        self.save_fn(model, folder)
        drop_unused_lora(folder)


def coref_loss(out, gold: torch.Tensor, mention_mask: torch.Tensor, mention_weight: float = 1.0,
               partial: torch.Tensor | None = None, weight: torch.Tensor | None = None) -> torch.Tensor:
    """Summed over the batch's windows: the antecedent NLL averaged over the kept gold
    mentions + the mention BCE per token (see the module's docstring). `out` is
    LongformerForCoreference.score's result, `gold` (B, n, W) 1 + the cluster of each gold
    span (0 = none). `partial` (B,) bool: windows whose unlisted spans may be mentions too
    (GAP), which get no mention loss; `weight` (B,): each window's weight in the sum."""
    ms = out.mention_scores  # (B, n, W), -inf where no mention may be
    B, n, W = ms.shape
    gold = gold[:, :, :W]
    finite = torch.isfinite(ms)
    bce = F.binary_cross_entropy_with_logits(ms.masked_fill(~finite, 0.0), (gold > 0).float(), reduction="none")
    tokens = mention_mask.sum(dim=1).clamp(min=1).float()
    mention_loss = bce.masked_fill(~finite, 0.0).sum(dim=(1, 2)) / tokens

    flat = out.spans[..., 0] * W + (out.spans[..., 1] - out.spans[..., 0])  # (B, K) kept spans in ms
    cluster = gold.reshape(B, -1).gather(1, flat).masked_fill(~out.valid, 0)
    mention = cluster > 0  # f_a links mentions: rows and columns are the gold mentions
    pair = out.antecedent_scores.float().masked_fill(~mention[:, None, :], float("-inf"))  # (B, K, K)
    same = (cluster[:, :, None] == cluster[:, None, :]) & mention[:, :, None] & torch.isfinite(pair)
    scores = torch.cat([torch.zeros_like(pair[:, :, :1]), pair], dim=-1)  # column 0: the dummy
    gold_mask = torch.cat([~same.any(dim=-1, keepdim=True), same], dim=-1)
    nll = torch.logsumexp(scores, dim=-1) - torch.logsumexp(scores.masked_fill(~gold_mask, float("-inf")), dim=-1)
    rows = mention.float()
    antecedent_loss = (nll * rows).sum(dim=1) / rows.sum(dim=1).clamp(min=1)
    if partial is not None:
        mention_loss = mention_loss.masked_fill(partial.to(mention_loss.device), 0.0)
    loss = antecedent_loss + mention_weight * mention_loss
    return (loss * weight.to(loss.device)).sum() if weight is not None else loss.sum()


def score_clusters(pairs: list[tuple[list, list]]) -> dict:
    """CoNLL-2012 scores of (gold, predicted) clusterings, with and without one-mention
    entities; "score" = CoNLL F1 with them (LitBank's convention)."""
    with_s = coref_scores(pairs, singletons=True)
    without = coref_scores(pairs, singletons=False)
    return {
        "score": with_s["conll_f1"], "conll_f1": with_s["conll_f1"], "muc_f1": with_s["muc"]["f1"],
        "b_cubed_f1": with_s["b_cubed"]["f1"], "ceaf_e_f1": with_s["ceaf_e"]["f1"], "mention_f1": with_s["mentions"]["f1"],
        "conll_f1_no_singletons": without["conll_f1"], "documents": with_s["documents"],
    }


def drop_unused_lora(folder: Path) -> None:
    """Remove from an adapter folder the LoRA layers whose update is exactly zero: the
    global-attention projections, which coreference (no global tokens) never trains. Their
    lora_B stays at its zero initialisation, so the merged model is the same without them,
    and the file is ~0.9 MB smaller."""
    path = Path(folder) / ADAPTER_WEIGHTS
    if not path.is_file():
        return
    tensors = load_file(str(path))
    zero = {k[: -len(".lora_B.weight")] for k, v in tensors.items() if k.endswith(".lora_B.weight") and not v.any()}
    if not zero:
        return
    kept = {k: v for k, v in tensors.items() if not any(k in (f"{m}.lora_A.weight", f"{m}.lora_B.weight") for m in zero)}
    save_file(kept, str(path), metadata={"format": "pt"})
    config_path = Path(folder) / ADAPTER_CONFIG
    config = json.loads(config_path.read_text(encoding="utf-8"))
    adapted = [k[: -len(".lora_A.weight")] for k in kept if k.endswith(".lora_A.weight")]
    config["target_modules"] = [t for t in config["target_modules"] if any(m.endswith("." + t) for m in adapted)]
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


# -- evaluation helpers (shared with the evaluation script) ---------------------------------------
def gap_scores_of(model, coref: CorefTask, examples, pad_id: int) -> dict:
    """GAP scores of a model under training, decoded as `lfcli corefs` decodes."""
    rows = predict_rows(model, coref, [Document(ex.id, ex.text) for ex in examples], pad_id)
    return gap_scores_of_rows(examples, rows)


def gap_evaluate(pipeline, examples) -> dict:
    """GAP scores of a corefs Pipeline (one document per GAP row: its short passage)."""
    return gap_scores_of_rows(examples, pipeline.run([Document(ex.id, ex.text) for ex in examples]))


def gap_scores_of_rows(examples, rows) -> dict:
    """GAP's scorecard of `lfcli corefs` rows, one per GAP example, in the examples' order."""

    decisions = {ex.id: gap_decisions(ex, chain_spans(row))
                 for ex, row in zip(examples, rows)}
    return gap_scores(examples, decisions)


# -- the set-up finetune() calls -------------------------------------------------------------------
def setup_corefs(*, folder: Path, data: list[str], validation, validation_split: float, max_length, global_policy,
                 seed: int, say, ids=None, validation_ids=None, gap=None, gap_validation=None, ffnn_size=None,
                 gap_weight: float | None = None, **_):
    """corefs: whole documents up to the model's positions (one window for every LitBank
    document); validation = `validation` (filtered by `validation_ids`), else the documents
    of DATA listed in `validation_ids`, else a seeded `validation_split` of DATA. `gap`: GAP
    TSV files whose rows train the pronoun's antecedent too (partial annotation), each
    window's loss weighing `gap_weight` of a document's (default 0.2);
    `gap_validation`: a GAP TSV scored at each evaluation, the best model then chosen by the
    mean of CoNLL F1 and GAP F1."""
    if gap_weight is not None and not gap_weight > 0:  # before any data is read
        raise UsageError("--gap-weight must be positive")
    docs, problems = read_coref_documents(data, ids)
    report_skipped(problems, "training document", say)
    if validation:
        val, val_problems = read_coref_documents(validation, validation_ids)
        report_skipped(val_problems, "validation document", say)
        train_docs = docs
    elif validation_ids is not None:
        val, _ = read_coref_documents(data, validation_ids)
        held = {d.id for d in val}
        train_docs = [d for d in docs if d.id not in held]
    else:
        train_docs, val = split_documents(docs, validation_split, seed)
    if not train_docs:
        raise InputError("no usable coreference documents in the training data")
    if not val:
        raise InputError("no validation documents: give --validation, --validation-ids or a --validation-split > 0")
    base = LongformerConfig.from_json_file(folder / "config.json")
    tok, length = training_tokenizer(folder, max_length, base.max_tokens)
    coref_config = {**COREF_DEFAULTS, **(base.extra.get("coref") or {})}
    if ffnn_size:
        coref_config["ffnn_size"] = ffnn_size
    coref = CorefTask(tok, check_policy(global_policy or "none"), singletons=True)
    task = CorefTrainTask(coref, base.pad_token_id, int(coref_config["max_span_width"]), val)
    if gap_weight is not None:
        task.partial_weight = gap_weight
    counts = task.build(train_docs)
    say(f"{plural(counts['documents'], 'training document')} -> {plural(counts['windows'], 'window')} of up to "
        f"{length} tokens, {plural(counts['mentions'], 'gold mention')} ({counts['too_wide']} wider than {task.width} "
        f"tokens, not learnable); {plural(len(val), 'validation document')}")
    gap_docs = []
    for path in gap or []:
        more, gap_problems = gap_documents(str(path))
        report_skipped(gap_problems, "GAP row", say)
        gap_docs += more
    if gap_docs:
        gap_counts = task.build(gap_docs)
        say(f"{plural(gap_counts['documents'], 'GAP row')} train the pronoun's antecedent (partial annotation, "
            f"each window weighing {task.partial_weight} of a document)")
    if gap_validation:
        task.gap_validation = read_gap(str(gap_validation))
        say(f"{plural(len(task.gap_validation), 'GAP validation row')}: the best model has the best mean of "
            "CoNLL F1 and GAP F1")
    fingerprint = fingerprint_of([[d.id, len(d.text), sum(map(len, d.clusters))] for d in train_docs + gap_docs]
                                 + [coref_config, len(task.gap_validation), task.partial_weight])
    note = {"train_documents": counts["documents"], "validation_documents": len(val),
            "validation_ids": [d.id for d in val], "gap_training_rows": len(gap_docs),
            "gap_validation_rows": len(task.gap_validation)}
    return Setup(task, {"extra": {**base.extra, "coref": coref_config}}, length, fingerprint, note)
