"""Continued masked-LM pretraining of a Longformer on long documents (the paper's recipe).

`pretrain_continue(corpus, model, output, ...)` takes a checkpoint (typically a short model
just converted to a long one, e.g. the bundled `minilm-l6-long`) and trains it further with
masked language modelling on long sequences, as Beltagy et al. (2020, section 5) did to let
the copied position embeddings and the windowed attention adapt. The training loop is the
one every task shares (pipelines/train/loop.py: AdamW, warm-up and decay, accumulation, bf16
autocast, clipping, evaluation, best-model keeping, bitwise resume, DDP, metrics.jsonl);
this module is only what is specific to MLM:

Data
  * Documents come from `readers.iter_documents` (files, folders, JSONL, Parquet); documents
    that cannot be read or are empty are skipped (and reported), the rest are tokenised once
    with the checkpoint's tokenizer.json, without special tokens.
  * Sequences: each document is SPLIT into consecutive, non-overlapping pieces of
    L - (special tokens) tokens, L = the model's positions or `max_length`; each piece is
    wrapped in the tokenizer's own single-sequence template ([CLS] x [SEP] / <s> x </s>).
    Documents are not packed together: a sequence never crosses a document boundary, so the
    held-out split below is clean and the model sees real long-range context only. A tail
    piece shorter than MIN_TAIL tokens is dropped unless it is the whole document. Short
    pieces are padded to the longest sequence of their micro-batch (padding is never a
    target and never attended to). The corpus is held in memory as int32 token ids.
Held-out split
  * A document goes to the evaluation set when a stable hash (sha256) of its id, read as a
    number in [0, 1), is below `eval_fraction`. When that picks nothing (a corpus of a few
    documents), the split falls back to hashing (document id, piece number), so a few pieces
    of each document are held out instead. At most `max_eval_sequences` held-out sequences
    are used (those with the smallest hashes). Training never sees a held-out sequence.
  * Held-out masks come from a fixed seed per sequence, so every evaluation (before
    training, every `save_every` updates, at the end) scores exactly the same masked
    tokens: mean MLM loss per masked token (nats) and bits per token = loss / ln 2. The
    model with the lowest held-out loss is the one kept in OUTPUT/.
Masking
  * `mask_prob` (15%) of the non-special tokens are chosen as targets; of those 80% become
    the mask token, 10% a random ordinary token, 10% stay as they are. Special tokens
    ([CLS], [SEP], [PAD], [UNK], [MASK] / <s>, </s>, <pad>, ...) and padding are never chosen
    and never drawn as random replacements. The mask id is read from the tokenizer.
  * Each training sequence's mask comes from its own generator, seeded by the trainer from
    (seed, update, sequence): independent of batch size, world size and interruptions.
Model
  * The MLM head is loaded from the checkpoint when it has one; otherwise the encoder is
    loaded with `LongformerModel.from_pretrained`, copied into a fresh `LongformerForMaskedLM`
    whose head is initialised as transformers does (normal(0.02), LayerNorm 1/0, bias 0) and
    whose decoder is tied to the word embeddings. No global attention during MLM: the global
    projections are unused, so they are frozen, and every saved model gets them as copies of
    the trained local projections (the paper's recipe).
  * The loss is the sum of the cross-entropies over the masked positions only (the
    vocabulary projection of the other positions is never materialised); the trainer
    divides by the update's masked tokens (all micro-batches, all processes).
Optimisation (trainer settings)
  * AdamW with RoBERTa's betas 0.9/0.98 and eps 1e-6, linear warm-up over `warmup_steps`
    (default: 6% of `max_steps`, at most 500), then power-3 polynomial decay to 0 at `max_steps` (`lr_factor`), clipping at
    `max_grad_norm`, `grad_accum` micro-batches of `batch_size` sequences per process and
    update, no early stopping. bf16 autocast on CUDA and on CPUs with native bf16
    (`autocast="auto"`), fp32 elsewhere or with `autocast="none"`.
  * `gradient_checkpointing` recomputes each layer in the backward pass (less memory, ~30%
    more time, the same numbers).
Output folder (the trainer's layout, as `lfcli finetune` writes it)
  * OUTPUT/ holds the best model so far (config.json, model.safetensors in transformers'
    layout as LongformerForMaskedLM, the tokenizer files), metrics.jsonl (every update and
    evaluation), curve.png (drawn from it after each evaluation, with matplotlib) and, at the
    end, training_summary.json.
  * OUTPUT/train_state/ is the resume state, rewritten every `save_every` updates (0: at the
    end only): trainable weights, optimizer, data position, every process's RNG states and
    the run's data fingerprint. `resume=True` continues from it: an interrupted-and-resumed
    run ends with the same weights as an uninterrupted one. Resuming with other
    data-shaping options (seed, lengths, batch, processes, corpus, steps) is refused.
Several processes
  * Launched by torchrun (WORLD_SIZE > 1), the same call initialises torch.distributed
    (gloo on CPU, nccl on CUDA); the trainer wraps the model in DistributedDataParallel and
    deals each update's micro-batches out; evaluation is split across processes and summed.
    Only rank 0 writes.
"""

from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence as Seq

import torch

from lfcli.models.checkpoint import GLOBAL_PROJECTIONS, TOKENIZER_FILES, copy_tokenizer_files, global_from_local

from ..errors import InputError, UsageError
from ..progress import record_line
from .batches import mix_seed, unit_hash
from .checkpoint import STATE_DIR
from .distributed import Dist
from .loop import TrainConfig, TrainingRun, train
from ..wording import plural

__all__ = ["pretrain_continue", "mask_tokens", "MaskVocab", "build_sequences", "split_heldout", "MLMTask"]

LN2 = math.log(2.0)
#: Default warm-up: the share of the updates that fine-tuning warms up over (6%), at most the
#: paper's 500 updates (of 65k): a fixed 500 refused any run of 500 updates or fewer.
WARMUP_SHARE = TrainConfig.warmup
MAX_DEFAULT_WARMUP = 500
MIN_TAIL = 16  # a document's last piece is dropped when shorter (unless it is the whole document)
# What a run writes to OUTPUT (removed by force=True before a new run; nothing else is).
OUTPUT_FILES = ("config.json", "model.safetensors", *TOKENIZER_FILES)  # what --force removes, with the trainer's files


# -- masking ------------------------------------------------------------------------------
@dataclass(frozen=True)
class MaskVocab:
    """What masking needs from the tokenizer."""

    mask_id: int
    special_ids: torch.Tensor  # never chosen as targets, never drawn as replacements
    random_ids: torch.Tensor  # the ordinary tokens random replacements are drawn from

    @classmethod
    def from_tokenizer(cls, tokenizer, vocab_size: int, extra_special: Iterable[int] = ()) -> "MaskVocab":
        """Special tokens = the tokenizer's added special tokens (+ `extra_special`, e.g. the
        template's and the pad id); the mask token is [MASK] or <mask> (or the one special
        token whose name contains "mask")."""
        specials = {i for i, tok in tokenizer.get_added_tokens_decoder().items() if tok.special}
        specials |= {int(i) for i in extra_special if i is not None}
        mask_id = None
        for name in ("[MASK]", "<mask>"):
            mask_id = tokenizer.token_to_id(name)
            if mask_id is not None:
                break
        if mask_id is None:
            named = [i for i, t in tokenizer.get_added_tokens_decoder().items() if "mask" in t.content.lower()]
            if len(named) == 1:
                mask_id = named[0]
        if mask_id is None:
            raise InputError("the tokenizer has no mask token ([MASK] or <mask>); masked-LM training needs one")
        if mask_id >= vocab_size:
            raise InputError(f"the tokenizer's mask token id {mask_id} is outside the model's vocabulary ({vocab_size})")
        specials.add(mask_id)
        n = min(tokenizer.get_vocab_size(with_added_tokens=True), vocab_size)
        ordinary = torch.tensor([i for i in range(n) if i not in specials], dtype=torch.long)
        if ordinary.numel() == 0:
            raise InputError("the tokenizer has no ordinary tokens")
        return cls(mask_id, torch.tensor(sorted(specials), dtype=torch.long), ordinary)


def mask_tokens(
    input_ids: torch.Tensor, vocab: MaskVocab, generator: torch.Generator, mask_prob: float = 0.15
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: (inputs, labels), labels -100 where there is no target.

    Of the non-special tokens, each is a target with probability `mask_prob`; a target is
    replaced by the mask token (80%), by a random ordinary token (10%) or kept (10%). The
    same number of random draws is made whatever the outcome, so a generator seeded the same
    way gives the same masks.
    """
    ids = input_ids.long()
    special = torch.isin(ids, vocab.special_ids)
    chosen = (torch.rand(ids.shape, generator=generator) < mask_prob) & ~special
    how = torch.rand(ids.shape, generator=generator)
    replacement = vocab.random_ids[torch.randint(len(vocab.random_ids), ids.shape, generator=generator)]
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    out = torch.where(chosen & (how < 0.8), torch.full_like(ids, vocab.mask_id), ids)
    out = torch.where(chosen & (how >= 0.8) & (how < 0.9), replacement, out)
    return out, labels


# -- sequences and the held-out split -------------------------------------------------------
@dataclass
class Piece:
    """One training/eval sequence: the special-token-wrapped ids of a document's piece."""

    doc: str
    part: int
    ids: torch.Tensor  # int32, with the template's special tokens

    def __len__(self) -> int:  # the trainer counts tokens with len()
        return self.ids.numel()


def build_sequences(
    documents: Iterable, tokenizer, prefix: Seq[int], suffix: Seq[int], seq_len: int,
    on_skip: Callable[[str, str], None] | None = None, batch_docs: int = 16,
) -> tuple[list[Piece], dict]:
    """Tokenise documents and split each into pieces of at most `seq_len` tokens including
    the special tokens of the template (see the module docstring). Returns the pieces in
    corpus order and counts (documents, skipped, tokens)."""
    budget = seq_len - len(prefix) - len(suffix)
    if budget < 1:
        raise UsageError(f"a sequence length of {seq_len} leaves no room for document tokens")
    pieces: list[Piece] = []
    stats = {"documents": 0, "skipped": 0, "tokens": 0}
    pre = torch.tensor(list(prefix), dtype=torch.int32)
    post = torch.tensor(list(suffix), dtype=torch.int32)

    def flush(batch):
        encodings = tokenizer.encode_batch([d.text for d in batch], add_special_tokens=False)
        for doc, enc in zip(batch, encodings):
            ids = torch.tensor(enc.ids, dtype=torch.int32)
            if ids.numel() == 0:
                stats["skipped"] += 1
                if on_skip:
                    on_skip(doc.id, "no tokens")
                continue
            stats["documents"] += 1
            stats["tokens"] += int(ids.numel())
            for part, start in enumerate(range(0, ids.numel(), budget)):
                body = ids[start:start + budget]
                if part > 0 and body.numel() < MIN_TAIL:
                    continue
                pieces.append(Piece(doc.id, part, torch.cat([pre, body, post])))

    batch = []
    for doc in documents:
        if doc.text is None:
            stats["skipped"] += 1
            if on_skip:
                on_skip(doc.id, doc.error or "unreadable")
            continue
        batch.append(doc)
        if len(batch) == batch_docs:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    return pieces, stats


def split_heldout(
    pieces: list[Piece], fraction: float, max_eval: int | None = None
) -> tuple[list[Piece], list[Piece], str]:
    """(train, held-out, how): by document-id hash, else by (id, piece) hash; see the module
    docstring. Never holds out every sequence; both lists keep corpus order."""
    if fraction <= 0 or len(pieces) < 2:
        return list(pieces), [], "none"
    keys = [unit_hash("doc", p.doc) for p in pieces]
    how = "documents"
    held = [k < fraction for k in keys]
    if not any(held) or all(held):
        keys = [unit_hash("piece", p.doc, p.part) for p in pieces]
        how = "pieces"
        held = [k < fraction for k in keys]
        if not any(held):  # a tiny corpus: hold out the one piece with the smallest hash
            held[min(range(len(pieces)), key=keys.__getitem__)] = True
        if all(held):
            return list(pieces), [], "none"
    train = [p for p, h in zip(pieces, held) if not h]
    heldout = [i for i, h in enumerate(held) if h]
    if max_eval is not None and len(heldout) > max_eval:
        heldout = sorted(sorted(heldout, key=keys.__getitem__)[:max_eval])
    return train, [pieces[i] for i in heldout], how


# -- the model ----------------------------------------------------------------------------
def load_mlm_model(folder: Path, seed: int, log: Callable[[str], None]):
    """(LongformerForMaskedLM, "checkpoint" | "new"): the checkpoint's head, or a new one
    tied to the word embeddings on top of the checkpoint's encoder."""
    from lfcli.models import LongformerForMaskedLM, LongformerModel, MissingHead

    try:
        return LongformerForMaskedLM.from_pretrained(folder), "checkpoint"
    except MissingHead:
        pass
    encoder = LongformerModel.from_pretrained(folder)
    torch.manual_seed(seed)
    mlm = LongformerForMaskedLM(encoder.config)  # random init everywhere, head included
    state = {k: v for k, v in encoder.state_dict().items() if not k.startswith("pooler.")}
    mlm.longformer.load_state_dict(state, strict=True)
    mlm.tie_weights()
    log(f"{folder}: no masked-LM head in the checkpoint; a new one tied to the word embeddings is trained")
    return mlm, "new"


def copy_local_to_global(mlm) -> None:
    """query/key/value -> query_global/key_global/value_global in every layer."""
    mlm.load_state_dict(global_from_local(mlm.state_dict(), only_missing=False), strict=False)


def freeze_global_projections(mlm) -> None:
    for layer in mlm.longformer.encoder.layer:
        for glob in GLOBAL_PROJECTIONS.values():
            getattr(layer.attention.self, glob).requires_grad_(False)


def write_model(mlm, source: Path, folder: Path, note: dict) -> None:
    """save_pretrained + tokenizer files into `folder`, global projections = local ones."""
    copy_local_to_global(mlm)  # the frozen copies play no part in MLM, so training is unaffected
    block = dict(mlm.config.extra.get("lfcli") or {})
    for stale in ("bundled", "build"):  # they describe the cached bundled build, not this model
        block.pop(stale, None)
    block["continued_pretraining"] = note
    mlm.config.extra["lfcli"] = block
    mlm.save_pretrained(folder)
    copy_tokenizer_files(source, folder)


# -- the task the trainer runs ----------------------------------------------------------------
@dataclass
class MLMTask:
    """Masked-LM for the trainer (see `TrainTask` in pipelines/train/loop.py): batches of masked
    pieces, the summed cross-entropy over the targets, the held-out loss as the score."""

    examples: list[Piece]  # the training sequences
    heldout: list[Piece]
    vocab: MaskVocab
    mask_prob: float
    pad_id: int
    seed: int
    batch_size: int  # held-out sequences per forward pass
    dist: Dist
    source: Path  # the starting checkpoint: its tokenizer files go with every saved model
    note: dict  # written into the saved config, under lfcli.continued_pretraining

    def collate(self, pieces: list[Piece], seeds: list[int]) -> dict:
        """Masked, right-padded micro-batch: input_ids, attention_mask, labels (long)."""
        n = max(p.ids.numel() for p in pieces)
        ids = torch.full((len(pieces), n), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(pieces), n), dtype=torch.long)
        labels = torch.full((len(pieces), n), -100, dtype=torch.long)
        for b, (piece, seed) in enumerate(zip(pieces, seeds)):
            m = piece.ids.numel()
            ids[b, :m], labels[b, :m] = mask_tokens(piece.ids, self.vocab, torch.Generator().manual_seed(seed), self.mask_prob)
            attn[b, :m] = 1
        return {"input_ids": ids, "attention_mask": attn, "labels": labels}

    def count(self, batch: dict) -> float:
        return float((batch["labels"] != -100).sum())

    def loss(self, model, batch: dict) -> torch.Tensor:
        hidden = model.longformer(batch["input_ids"], batch["attention_mask"])
        targets = batch["labels"] != -100
        logits = model.lm_head(hidden[targets])
        return torch.nn.functional.cross_entropy(logits.float(), batch["labels"][targets], reduction="sum")

    def evaluate(self, model) -> dict:
        """Held-out loss (nats per target) and bits per token with fixed masks; each process
        takes every W-th sequence and the sums are combined. No held-out data: score None."""
        total, count = 0.0, 0.0
        mine = list(range(self.dist.rank, len(self.heldout), self.dist.world))
        for start in range(0, len(mine), self.batch_size):
            idx = mine[start:start + self.batch_size]
            batch = self.collate([self.heldout[i] for i in idx], [mix_seed(self.seed, "eval", i) for i in idx])
            batch = {k: v.to(self.dist.device) for k, v in batch.items()}
            total += float(self.loss(model, batch))
            count += self.count(batch)
        total, count = self.dist.sum([total, count])
        if count == 0:
            return {"score": None}
        loss = total / count
        return {"score": -loss, "loss": loss, "bpt": loss / LN2, "targets": int(count), "sequences": len(self.heldout)}

    def save(self, model, folder: Path) -> None:
        write_model(model, self.source, folder, self.note)


# -- the output folder ------------------------------------------------------------------------
def _echo(record: dict) -> None:
    """Messages and evaluations on stderr, above the trainer's bar, when the caller gives no
    `log` (the CLI on a terminal)."""
    if record["event"] in ("message", "eval"):
        print(record_line(record, mlm=True), file=sys.stderr)


# -- the job ------------------------------------------------------------------------------
def read_corpus(corpus, read: dict, folder: Path, config, seq_len: int, say) -> tuple:
    """(the masking vocabulary, the corpus's sequences of at most seq_len tokens, counts),
    each skipped document said (the first five); no usable text is an InputError."""
    from ..infer.tokenize import DocumentTokenizer
    from ..io.readers import iter_documents

    tok = DocumentTokenizer.from_folder(folder, seq_len)
    template = tok.single
    vocab = MaskVocab.from_tokenizer(tok.tokenizer, config.vocab_size,
                                     extra_special=[*template.prefix, *template.suffix, config.pad_token_id])
    skipped = [0]

    def on_skip(doc_id: str, why: str) -> None:
        skipped[0] += 1
        if skipped[0] <= 5:
            say(f"skipped {doc_id}: {why}")

    documents = iter_documents([corpus] if isinstance(corpus, str) else list(corpus), **read)
    pieces, counts = build_sequences(documents, tok.tokenizer, template.prefix, template.suffix, seq_len, on_skip)
    if not pieces:
        raise InputError(
            f"no usable text in the corpus ({plural(counts['skipped'], 'document')} skipped as empty or unreadable)"
            if counts["skipped"] else "the corpus has no documents"
        )
    too_big = max(int(p.ids.max()) for p in pieces)
    if too_big >= config.vocab_size:
        raise InputError(f"{folder}: the tokenizer produces id {too_big}, outside the model's vocabulary ({config.vocab_size})")
    return vocab, pieces, counts


def pretrain_config(*, lr: float, max_steps: int, warmup_steps: int | None, batch_size: int, grad_accum: int,
                    weight_decay: float, max_grad_norm: float | None, save_every: int | None, seed: int,
                    autocast: str) -> TrainConfig:
    """The loop's settings for the paper's recipe: power-3 decay after a warm-up of 6% of the
    updates (at most 500), AdamW betas (0.9, 0.98) and eps 1e-6, fixed batches, an evaluation
    and a resume state every `save_every` updates (0 or None: at the end only), checked."""
    if save_every is not None and save_every < 0:
        raise UsageError("--save-every must be >= 0 (0: at the end only)")
    save_every = save_every or max_steps
    if warmup_steps is None:
        warmup_steps = min(MAX_DEFAULT_WARMUP, int(WARMUP_SHARE * max_steps))
    config = TrainConfig(
        lr=lr, max_steps=max_steps, warmup_steps=warmup_steps, decay_power=3.0, batch_size=batch_size,
        grad_accum=grad_accum, weight_decay=weight_decay, betas=(0.9, 0.98), eps=1e-6, max_grad_norm=max_grad_norm,
        eval_every=save_every, eval_before=True, patience=None, save_every=save_every, seed=seed, autocast=autocast,
        log_every=1,
    )
    config.check()
    return config


def pretrain_continue(
    corpus: Seq[str] | str,
    model: str,
    output: str,
    *,
    max_length: int | None = None,
    batch_size: int = 1,
    grad_accum: int = 8,
    lr: float = 3e-5,
    warmup_steps: int | None = None,
    max_steps: int = 1000,
    weight_decay: float = 0.01,
    max_grad_norm: float | None = 1.0,
    mask_prob: float = 0.15,
    save_every: int | None = 200,
    eval_fraction: float = 0.05,
    max_eval_sequences: int | None = 256,
    seed: int = 0,
    gradient_checkpointing: bool = False,
    freeze_embeddings: bool = False,
    device: str = "cpu",
    attention_backend: str | None = None,
    autocast: str = "auto",
    resume: bool = False,
    force: bool = False,
    text_column: str = "text",
    id_column: str | None = None,
    glob: str | None = None,
    encoding_errors: str = "strict",
    progress: bool = False,
    log: Callable[[dict], None] | None = None,
) -> dict:
    """Continue masked-LM pretraining of `model` on the documents of `corpus`; the best model
    and the resume state go to the folder `output`. See the module docstring.

    `save_every` updates between evaluations and resume states (0 or None: at the end
    only); a run keeps one resume state and its best model. `freeze_embeddings`: the base's
    embedding tables (and so the output layer tied to the word embeddings) stay as they are,
    and only the layers and the head's transform learn: a fine-tune over the result stored as
    fp16 deltas from the base then needs no embedding table.

    `log(record)` (rank 0 only) receives the trainer's records (see metrics.jsonl), with
    evaluations named: {"event": "message", "message"}, {"event": "eval", "when": "before" |
    "at update N" | "after", "step", "loss", "bpt", "targets", "sequences", "best"},
    {"event": "step", "step", "max_steps", "loss", "lr", "tokens_per_s", "eta_s"},
    {"event": "checkpoint", "step", "path"}. `progress=True` draws the trainer's bar on
    stderr when it is a terminal. Returns the run's summary: the trainer's, plus the MLM
    figures; "eval_loss_after" is the held-out loss of the model kept in OUTPUT/.
    """
    config = pretrain_config(lr=lr, max_steps=max_steps, warmup_steps=warmup_steps, batch_size=batch_size,
                             grad_accum=grad_accum, weight_decay=weight_decay, max_grad_norm=max_grad_norm,
                             save_every=save_every, seed=seed, autocast=autocast)
    save_every = config.save_every
    # Every option before anything is read or written.
    if not 0 < mask_prob < 1:
        raise UsageError("--mask-prob must be between 0 and 1")
    if not 0 <= eval_fraction < 1:
        raise UsageError("--eval-fraction must be in [0, 1)")
    if max_eval_sequences is not None and max_eval_sequences < 1:
        raise UsageError("--max-eval-sequences must be at least 1")
    if max_length is not None and max_length < 8:
        raise UsageError("--max-length must be at least 8 tokens")

    from lfcli.models import LongformerConfig, resolve_backend
    from lfcli.models.bundled import resolve_model

    folder = resolve_model(model)
    out = Path(output)
    sink = log or (_echo if progress and sys.stderr.isatty() else None)
    run = TrainingRun("pretrain-continue", out, folder, device=device, resume=resume, force=force, files=OUTPUT_FILES,
                      sink=sink)
    dist, say = run.dist, run.say

    def relay(record: dict) -> None:  # the trainer's records, evaluations named for MLM
        if record["event"] == "eval":
            if record.get("loss") is None:  # no held-out sequences
                return
            step = record["step"]
            record = {**record, "when": "before" if step == 0 else "after" if step == max_steps else f"at update {step}"}
        elif record["event"] == "checkpoint":
            record = {**record, "path": str(out / STATE_DIR)}
        if sink is not None:
            sink(record)

    with run:
        config_file = LongformerConfig.from_json_file(folder / "config.json")
        seq_len = min(max_length or config_file.max_tokens, config_file.max_tokens)
        resolve_backend(attention_backend, config_file.attention_backend, dist.device)  # refuse a bad backend now

        read = dict(text_column=text_column, id_column=id_column, glob=glob, encoding_errors=encoding_errors)
        vocab, pieces, counts = read_corpus(corpus, read, folder, config_file, seq_len, say)
        train_pieces, heldout, split_how = split_heldout(pieces, eval_fraction, max_eval_sequences)
        say(
            f"{plural(counts['documents'], 'document')}, {plural(counts['tokens'], 'token')} -> "
            f"{plural(len(train_pieces), 'training sequence')} and {plural(len(heldout), 'held-out sequence')} "
            f"of up to {seq_len} tokens"
            + (f" (held out by {split_how})" if heldout else "")
            + (f"; {plural(counts['skipped'], 'document')} skipped" if counts["skipped"] else "")
        )
        fingerprint = {  # the trainer adds seed, world size, steps and the number of sequences
            "sequence_length": seq_len, "batch_size": batch_size, "grad_accum": grad_accum, "mask_prob": mask_prob,
            "eval_fraction": eval_fraction, **({"freeze_embeddings": True} if freeze_embeddings else {}),
            "corpus": hashlib.sha256(
                "\n".join(f"{p.doc}\x1f{p.part}\x1f{p.ids.numel()}" for p in pieces).encode("utf-8")
            ).hexdigest()[:16],
        }
        if resume and not (out / STATE_DIR).is_dir():
            say(f"{out}: no resume state there; starting at update 0")
        run.clear()

        # ---- model and task ----
        mlm, head = load_mlm_model(folder, seed, say)
        mlm.attention_backend = attention_backend
        freeze_global_projections(mlm)
        if freeze_embeddings:
            mlm.longformer.embeddings.requires_grad_(False)
        mlm.set_gradient_checkpointing(gradient_checkpointing)
        note = {"base_model": str(model), "sequence_length": seq_len, "mask_prob": mask_prob, "lr": lr,
                "max_steps": max_steps, **({"freeze_embeddings": True} if freeze_embeddings else {})}
        task = MLMTask(train_pieces, heldout, vocab, mask_prob, config_file.pad_token_id, seed, batch_size, dist,
                       folder, note)
        say(f"training {plural(max_steps, 'update')} of {grad_accum} x {batch_size} x {dist.world} sequences, "
            f"peak lr {lr:g}")
        summary = train(mlm, task, out, config, dist=dist, resume=resume, fingerprint=fingerprint, log=relay,
                        progress=progress)

    result = mlm_summary(summary, out, model, head, seq_len, run.dist.world, len(train_pieces), len(heldout), split_how)
    say(
        f"done: {plural(result['steps'], 'update')}, {plural(result['tokens'], 'token')}"
        + (f"; held-out loss {result['eval_loss_before']:.4f} -> {result['eval_loss_after']:.4f} "
           f"(update {result['best_step']})" if result["eval_loss_before"] is not None
           and result["eval_loss_after"] is not None else "")
        + f"; model in {out}"
    )
    return result


def mlm_summary(summary: dict, out: Path, model: str, head: str, seq_len: int, world: int, n_train: int, n_heldout: int,
                split_how: str) -> dict:
    """The loop's summary with the MLM figures: the held-out loss and bits per token before
    training and of the model kept in OUTPUT/."""
    scored = [e for e in summary["evals"] if e.get("loss") is not None]
    before = next((e for e in scored if e["step"] == 0), None)
    kept = next((e for e in reversed(scored) if e["best"]), None)
    return {
        "output": str(out), "base_model": str(model), "head": head, "steps": summary["updates"],
        "sequence_length": seq_len, "world_size": world, "train_sequences": n_train,
        "eval_sequences": n_heldout, "eval_split": split_how, "eval_targets": before["targets"] if before else 0,
        "eval_loss_before": before["loss"] if before else None, "eval_bpt_before": before["bpt"] if before else None,
        "eval_loss_after": kept["loss"] if kept else None, "eval_bpt_after": kept["bpt"] if kept else None,
        **summary,
    }
