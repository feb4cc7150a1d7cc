"""Continued masked-LM pretraining of a Longformer on long documents (the paper's recipe).

`pretrain_continue(corpus, model, output, ...)` takes a checkpoint (typically a short model
just converted to a long one, e.g. the bundled `minilm-l6-long`) and trains it further with
masked language modelling on long sequences, as Beltagy et al. (2020, section 5) did to let
the copied position embeddings and the windowed attention adapt. What it does, in order:

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
    target and never attended to).
  * The corpus is held in memory as int32 token ids (4 bytes a token) once tokenised.
Held-out split
  * A document goes to the evaluation set when a stable hash (sha256) of its id, read as a
    number in [0, 1), is below `eval_fraction`. When that picks nothing (a corpus of a few
    documents), the split falls back to hashing (document id, piece number), so a few pieces
    of each document are held out instead. At most `max_eval_sequences` held-out sequences
    are used (those with the smallest hashes). Training never sees a held-out sequence.
  * The held-out masks come from a fixed seed per sequence, so the loss "before" and
    "after" are measured on exactly the same masked tokens. Reported: mean MLM loss per
    masked token (nats) and bits per token = loss / ln 2.
Masking
  * `mask_prob` (15%) of the non-special tokens are chosen as targets; of those 80% become
    the mask token, 10% a random ordinary token, 10% stay as they are. Special tokens
    ([CLS], [SEP], [PAD], [UNK], [MASK] / <s>, </s>, <pad>, ...) and padding are never chosen
    and never drawn as random replacements. The mask id is read from the tokenizer.
  * The mask of the k-th sequence drawn by training comes from its own generator seeded by
    (seed, k): independent of batch size, world size and interruptions.
Model
  * The MLM head is loaded from the checkpoint when it has one; otherwise the encoder is
    loaded with `LongformerModel.from_pretrained`, copied into a fresh `LongformerForMaskedLM`
    whose head is initialised as transformers does (normal(0.02), LayerNorm 1/0, bias 0) and
    whose decoder is tied to the word embeddings. No global attention during MLM: the global
    projections are unused, so they are frozen, and every saved model gets them as copies of
    the trained local projections (the paper's recipe).
  * The loss is computed on the masked positions only (the vocabulary projection of the
    other positions is never materialised).
Optimisation
  * AdamW (betas 0.9/0.98, eps 1e-6 as RoBERTa; no weight decay on biases and LayerNorm),
    linear warm-up over `warmup_steps` then power-3 polynomial decay to 0 at `max_steps`
    (`lr_factor`), gradient clipping at `max_grad_norm`, gradient accumulation over
    `grad_accum` micro-batches of `batch_size` sequences. The loss of an update is the mean
    over every masked token of the update (all micro-batches, all processes).
  * Training draws sequences from a stream: a seeded permutation of the training sequences
    per epoch, one epoch after the other. Micro-step m of process r takes stream items
    [m*W*B + r*B, m*W*B + (r+1)*B) (W processes, B = batch_size): processes share the data.
  * bf16 autocast on CUDA only; fp32 on CPU. `gradient_checkpointing` recomputes each layer
    in the backward pass (less memory, ~30% more time).
Checkpoints and resume
  * Every `save_every` updates: OUTPUT/checkpoint-STEP/ with config.json, model.safetensors
    (transformers layout, LongformerForMaskedLM), the tokenizer files and trainer_state.pt
    (optimizer state, step, data position, RNG states of torch and python for every
    process, the run's data fingerprint and the "before" evaluation). Written to a
    temporary folder and renamed, so a killed run never leaves half a checkpoint.
  * At the end the final model goes to OUTPUT/ itself (plus pretrain_summary.json).
  * `resume=True` continues from the newest complete checkpoint with the same data order and
    RNG state: an interrupted-and-resumed run ends with the same weights as an uninterrupted
    one. Resuming with different data-shaping options (seed, lengths, batch, processes,
    corpus) is refused.
Several processes
  * Launched by torchrun (WORLD_SIZE > 1), the same call initialises torch.distributed
    (gloo on CPU, nccl on CUDA), wraps the model in DistributedDataParallel and shares the
    stream as above; evaluation is split across processes and summed. Only rank 0 writes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence as Seq

import torch
from torch import nn

from lfcli.models.convert import TOKENIZER_FILES  # the files a checkpoint folder carries along

from .errors import InputError, UsageError

__all__ = [
    "pretrain_continue",
    "lr_factor",
    "mask_tokens",
    "MaskVocab",
    "build_sequences",
    "split_heldout",
    "STATE_FILE",
    "SUMMARY_FILE",
]

LN2 = math.log(2.0)
STATE_FILE = "trainer_state.pt"
SUMMARY_FILE = "pretrain_summary.json"
STATE_VERSION = 1
MIN_TAIL = 16  # a document's last piece is dropped when shorter (unless it is the whole document)
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")
# What a final model folder holds (removed by force=True before a new run; nothing else is).
OUTPUT_FILES = ("config.json", "model.safetensors", SUMMARY_FILE, *TOKENIZER_FILES)
GLOBAL_FROM_LOCAL = (("query", "query_global"), ("key", "key_global"), ("value", "value_global"))


# -- the learning-rate schedule -----------------------------------------------------------
def lr_factor(step: int, warmup_steps: int, max_steps: int, power: float = 3.0) -> float:
    """Multiplier of the peak learning rate for the update taken after `step` updates.

    Linear warm-up: (step + 1) / warmup_steps for step < warmup_steps, reaching 1 at the
    last warm-up update. Then polynomial decay of the given power (3 in the paper):
    (1 - (step - warmup_steps) / (max_steps - warmup_steps)) ** power, which is 1 right
    after warm-up and 0 at step = max_steps (when training is over). No update gets a zero
    learning rate. Clipped to 0 beyond max_steps.
    """
    if step < 0:
        raise ValueError("step must be >= 0")
    if max_steps <= warmup_steps:
        raise ValueError("max_steps must be larger than warmup_steps")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step >= max_steps:
        return 0.0
    remaining = 1.0 - (step - warmup_steps) / (max_steps - warmup_steps)
    return remaining**power


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


def unit_hash(*parts: object) -> float:
    """A stable number in [0, 1) from `parts` (sha256; the same in every process and run)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def mix_seed(*parts: object) -> int:
    """A 63-bit seed from `parts`, stable across processes."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


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
class MLMLoss(nn.Module):
    """Encoder + head -> (sum of the cross-entropy over the targets, number of targets).
    The vocabulary projection runs on the target positions only. Wrapped by DDP as a whole."""

    def __init__(self, mlm):
        super().__init__()
        self.mlm = mlm

    def forward(self, input_ids, attention_mask, labels):
        hidden = self.mlm.longformer(input_ids, attention_mask)
        targets = labels != -100
        logits = self.mlm.lm_head(hidden[targets])
        loss = nn.functional.cross_entropy(logits.float(), labels[targets], reduction="sum")
        return loss, targets.sum()


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


@torch.no_grad()
def copy_local_to_global(mlm) -> None:
    """query/key/value -> query_global/key_global/value_global in every layer."""
    for layer in mlm.longformer.encoder.layer:
        attn = layer.attention.self
        for local, glob in GLOBAL_FROM_LOCAL:
            getattr(attn, glob).weight.copy_(getattr(attn, local).weight)
            getattr(attn, glob).bias.copy_(getattr(attn, local).bias)


def freeze_global_projections(mlm) -> None:
    for layer in mlm.longformer.encoder.layer:
        for _, glob in GLOBAL_FROM_LOCAL:
            getattr(layer.attention.self, glob).requires_grad_(False)


def make_optimizer(mlm, lr: float, weight_decay: float) -> torch.optim.AdamW:
    decay, no_decay = [], []
    for _, p in mlm.named_parameters():  # the tied embedding appears once
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), eps=1e-6)


# -- processes ----------------------------------------------------------------------------
class Dist:
    """The process group (or its absence): rank, world size, and the few collectives used."""

    def __init__(self, device: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
        self.owned = False
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise UsageError(f"device {device!r}: CUDA is not available here")
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise UsageError(f"device {device!r} is not a device torch knows") from None
        if self.world > 1 and dev.type == "cuda":
            dev = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(dev)
        self.device = dev
        if self.world > 1:
            import torch.distributed as dist

            if not dist.is_initialized():
                dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
                self.owned = True
            self.rank, self.world = dist.get_rank(), dist.get_world_size()

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: Seq[float]) -> list[float]:
        t = torch.tensor(list(values), dtype=torch.float64)
        if self.world > 1:
            import torch.distributed as dist

            t = t.to(self.device)
            dist.all_reduce(t)
        return t.cpu().tolist()

    def gather(self, obj) -> list:
        if self.world == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        if self.owned:
            import torch.distributed as dist

            dist.destroy_process_group()


def rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


# -- batches ------------------------------------------------------------------------------
def collate(pieces: list[Piece], seeds: list[int], vocab: MaskVocab, mask_prob: float, pad_id: int):
    """Masked, right-padded micro-batch: (input_ids, attention_mask, labels), all long."""
    n = max(p.ids.numel() for p in pieces)
    ids = torch.full((len(pieces), n), pad_id, dtype=torch.long)
    attn = torch.zeros((len(pieces), n), dtype=torch.long)
    labels = torch.full((len(pieces), n), -100, dtype=torch.long)
    for b, (piece, seed) in enumerate(zip(pieces, seeds)):
        m = piece.ids.numel()
        gen = torch.Generator().manual_seed(seed)
        ids[b, :m], labels[b, :m] = mask_tokens(piece.ids, vocab, gen, mask_prob)
        attn[b, :m] = 1
    return ids, attn, labels


class Stream:
    """Training sequence k of the run: epoch k // n, position k % n of that epoch's seeded
    permutation of the n training sequences."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed = n, seed
        self._epoch, self._perm = -1, None

    def __getitem__(self, k: int) -> int:
        epoch, i = divmod(k, self.n)
        if epoch != self._epoch:
            gen = torch.Generator().manual_seed(mix_seed(self.seed, "epoch", epoch))
            self._epoch, self._perm = epoch, torch.randperm(self.n, generator=gen).tolist()
        return self._perm[i]


@torch.no_grad()
def evaluate(mlm, pieces: list[Piece], vocab: MaskVocab, seed: int, batch_size: int, mask_prob: float,
             pad_id: int, dist: Dist, autocast) -> dict | None:
    """Held-out MLM loss (nats per target) and bits per token with fixed masks; each process
    takes every W-th sequence and the sums are combined."""
    if not pieces:
        return None
    was_training = mlm.training
    mlm.eval()
    loss_fn = MLMLoss(mlm)
    total, count = 0.0, 0.0
    mine = list(range(dist.rank, len(pieces), dist.world))
    for start in range(0, len(mine), batch_size):
        idx = mine[start:start + batch_size]
        ids, attn, labels = collate(
            [pieces[i] for i in idx], [mix_seed(seed, "eval", i) for i in idx], vocab, mask_prob, pad_id
        )
        with autocast():
            loss, n = loss_fn(ids.to(dist.device), attn.to(dist.device), labels.to(dist.device))
        total += float(loss)
        count += float(n)
    total, count = dist.sum([total, count])
    mlm.train(was_training)
    if count == 0:
        return None
    loss = total / count
    return {"loss": loss, "bpt": loss / LN2, "targets": int(count), "sequences": len(pieces)}


# -- files --------------------------------------------------------------------------------
def find_checkpoints(output: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints in `output`, oldest first."""
    found = []
    if output.is_dir():
        for child in output.iterdir():
            m = CHECKPOINT_RE.match(child.name)
            if m and (child / STATE_FILE).is_file() and (child / "model.safetensors").is_file():
                found.append((int(m.group(1)), child))
    return sorted(found)


def copy_tokenizer_files(source: Path, target: Path) -> None:
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)


def write_model(mlm, source: Path, folder: Path, note: dict) -> None:
    """save_pretrained + tokenizer files into `folder`, global projections = local ones."""
    copy_local_to_global(mlm)
    block = dict(mlm.config.extra.get("lfcli") or {})
    for stale in ("bundled", "build"):  # they describe the cached bundled build, not this model
        block.pop(stale, None)
    block["continued_pretraining"] = note
    mlm.config.extra["lfcli"] = block
    mlm.save_pretrained(folder)
    copy_tokenizer_files(source, folder)


def _replace_dir(tmp: Path, final: Path) -> None:
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def _check_output(output: Path, model_folder: Path, resume: bool, force: bool) -> None:
    if resume and force:
        raise UsageError("resume and force contradict each other; pick one")
    if output.exists() and not output.is_dir():
        raise UsageError(f"{output}: exists and is not a folder; the output of pretrain-continue is a folder")
    try:
        same = output.exists() and output.resolve() == model_folder.resolve()
    except OSError:
        same = False
    if same:
        raise UsageError(f"{output}: is the model folder itself; write the trained model to another folder")
    if output.is_dir() and any(output.iterdir()) and not (resume or force):
        raise UsageError(f"{output}: exists and is not empty; pass --resume to continue the run there or --force to start over")


def _finished_summary(output: Path, max_steps: int) -> dict | None:
    """The summary of a completed run in `output` that reached max_steps, else None."""
    try:
        summary = json.loads((output / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(summary, dict) and isinstance(summary.get("steps"), int) and summary["steps"] >= max_steps:
        return summary
    return None


def _clear_output(output: Path) -> None:
    """force=True: remove what an earlier run wrote there (checkpoints and final files) only."""
    if not output.is_dir():
        return
    for child in output.iterdir():
        if child.is_dir() and (CHECKPOINT_RE.match(child.name) or child.name.startswith(".tmp-")):
            shutil.rmtree(child, ignore_errors=True)
        elif child.is_file() and child.name in OUTPUT_FILES:
            child.unlink()


# -- rich progress (a terminal only) ----------------------------------------------------------
@contextmanager
def _progress_bar(enabled: bool, max_steps: int, log: Callable[[dict], None] | None):
    """Wrap `log` with a rich progress bar on stderr when enabled and stderr is a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield log
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(file=sys.stderr)
    bar = Progress(
        TextColumn("pretrain"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn(), console=console,
    )
    with bar:
        task = bar.add_task("pretrain", total=max_steps, info="")

        def draw(record: dict) -> None:
            if record["event"] == "step":
                bar.update(task, completed=record["step"], info=(
                    f"loss {record['loss']:.3f}  lr {record['lr']:.2e}  {record['tokens_per_s']:,.0f} tokens/s"
                ))
            elif record["event"] == "message" and log is None:
                console.print(f"lfcli: {record['message']}", highlight=False)
            elif record["event"] == "eval" and log is None:
                console.print(
                    f"lfcli: held-out MLM loss {record['when']}: {record['loss']:.4f} "
                    f"({record['bpt']:.4f} bits/token)", highlight=False,
                )
            elif record["event"] == "checkpoint" and log is None:
                console.print(f"lfcli: checkpoint {record['path']}", highlight=False)
            if log is not None:
                log(record)

        yield draw


# -- the job ------------------------------------------------------------------------------
def pretrain_continue(
    corpus: Seq[str] | str,
    model: str,
    output: str,
    *,
    max_length: int | None = None,
    batch_size: int = 1,
    grad_accum: int = 8,
    lr: float = 3e-5,
    warmup_steps: int = 500,
    max_steps: int = 1000,
    weight_decay: float = 0.01,
    max_grad_norm: float | None = 1.0,
    mask_prob: float = 0.15,
    save_every: int | None = 200,
    keep_checkpoints: int | None = None,
    eval_fraction: float = 0.05,
    max_eval_sequences: int | None = 256,
    seed: int = 0,
    gradient_checkpointing: bool = False,
    device: str = "cpu",
    attention_backend: str | None = None,
    resume: bool = False,
    force: bool = False,
    text_column: str = "text",
    id_column: str | None = None,
    glob: str | None = None,
    encoding_errors: str = "strict",
    progress: bool = False,
    log: Callable[[dict], None] | None = None,
) -> dict:
    """Continue masked-LM pretraining of `model` on the documents of `corpus`; write the
    checkpoints and the final model to the folder `output`. See the module docstring.

    `log(record)` (rank 0 only) receives dicts: {"event": "message", "message"},
    {"event": "eval", "when": "before"|"after", "loss", "bpt", "targets", "sequences"},
    {"event": "step", "step", "max_steps", "loss", "lr", "tokens", "tokens_per_s", "elapsed"},
    {"event": "checkpoint", "step", "path"}. `progress=True` draws a rich bar on stderr when
    it is a terminal. Returns the run's summary (also written to OUTPUT/pretrain_summary.json).
    """
    # ---- options (checked before anything is read or written) ----
    if batch_size < 1 or grad_accum < 1:
        raise UsageError("--batch-size and --grad-accum must be at least 1")
    if max_steps < 1:
        raise UsageError("--max-steps must be at least 1")
    if warmup_steps < 0 or warmup_steps >= max_steps:
        raise UsageError(f"--warmup-steps ({warmup_steps}) must be >= 0 and smaller than --max-steps ({max_steps})")
    if not lr > 0:
        raise UsageError("--lr must be positive")
    if weight_decay < 0:
        raise UsageError("--weight-decay must be >= 0")
    if not 0 < mask_prob < 1:
        raise UsageError("--mask-prob must be between 0 and 1")
    if not 0 <= eval_fraction < 1:
        raise UsageError("--eval-fraction must be in [0, 1)")
    if save_every is not None and save_every < 0:
        raise UsageError("--save-every must be >= 0 (0: only the final model)")
    if keep_checkpoints is not None and keep_checkpoints < 1:
        raise UsageError("--keep-checkpoints must be at least 1")
    if max_eval_sequences is not None and max_eval_sequences < 1:
        raise UsageError("--max-eval-sequences must be at least 1")
    if max_length is not None and max_length < 8:
        raise UsageError("--max-length must be at least 8 tokens")

    from lfcli.kernels import resolve_backend
    from lfcli.models.bundled import resolve_model

    from .readers import iter_documents
    from .tokenize import DocumentTokenizer

    folder = resolve_model(model)
    out = Path(output)
    _check_output(out, folder, resume, force)
    dist = Dist(device)
    try:
        with _progress_bar(progress and dist.main, max_steps, log) as sink:
            def emit(record: dict) -> None:
                if dist.main and sink is not None:
                    sink(record)

            def say(message: str) -> None:
                emit({"event": "message", "message": message})

            return _run(
                corpus=corpus, folder=folder, model_name=str(model), out=out, dist=dist, emit=emit, say=say,
                max_length=max_length, batch_size=batch_size, grad_accum=grad_accum, lr=lr,
                warmup_steps=warmup_steps, max_steps=max_steps, weight_decay=weight_decay,
                max_grad_norm=max_grad_norm, mask_prob=mask_prob, save_every=save_every or 0,
                keep_checkpoints=keep_checkpoints, eval_fraction=eval_fraction,
                max_eval_sequences=max_eval_sequences, seed=seed,
                gradient_checkpointing=gradient_checkpointing, attention_backend=attention_backend,
                resume=resume, force=force, read=dict(text_column=text_column, id_column=id_column, glob=glob, encoding_errors=encoding_errors),
                iter_documents=iter_documents, DocumentTokenizer=DocumentTokenizer, resolve_backend=resolve_backend,
            )
    finally:
        dist.close()


def _run(*, corpus, folder: Path, model_name: str, out: Path, dist: Dist, emit, say, max_length, batch_size,
         grad_accum, lr, warmup_steps, max_steps, weight_decay, max_grad_norm, mask_prob, save_every,
         keep_checkpoints, eval_fraction, max_eval_sequences, seed, gradient_checkpointing, attention_backend,
         resume, force, read, iter_documents, DocumentTokenizer, resolve_backend) -> dict:
    from lfcli.models import LongformerConfig

    started = time.perf_counter()
    config = LongformerConfig.from_json_file(folder / "config.json")
    limit = config.max_tokens
    seq_len = min(max_length or limit, limit)
    resolve_backend(attention_backend, config.attention_backend, dist.device)  # refuse a bad backend now

    # ---- data ----
    tok = DocumentTokenizer.from_folder(folder, seq_len)
    template = tok.single
    vocab = MaskVocab.from_tokenizer(
        tok.tokenizer, config.vocab_size, extra_special=[*template.prefix, *template.suffix, config.pad_token_id]
    )
    skipped_shown = [0]

    def on_skip(doc_id: str, why: str) -> None:
        skipped_shown[0] += 1
        if skipped_shown[0] <= 5:
            say(f"skipped {doc_id}: {why}")

    documents = iter_documents(list(corpus) if not isinstance(corpus, str) else [corpus], **read)
    pieces, counts = build_sequences(documents, tok.tokenizer, template.prefix, template.suffix, seq_len, on_skip)
    if not pieces:
        raise InputError(
            f"no usable text in the corpus ({counts['skipped']} documents skipped as empty or unreadable)"
            if counts["skipped"] else "the corpus has no documents"
        )
    too_big = max(int(p.ids.max()) for p in pieces)
    if too_big >= config.vocab_size:
        raise InputError(f"{folder}: the tokenizer produces id {too_big}, outside the model's vocabulary ({config.vocab_size})")
    train, heldout, split_how = split_heldout(pieces, eval_fraction, max_eval_sequences)
    say(
        f"{counts['documents']} documents, {counts['tokens']:,} tokens -> {len(train)} training and "
        f"{len(heldout)} held-out sequences of up to {seq_len} tokens"
        + (f" (held out by {split_how})" if heldout else "")
        + (f"; {counts['skipped']} documents skipped" if counts["skipped"] else "")
    )
    fingerprint = {
        "seed": seed, "sequence_length": seq_len, "batch_size": batch_size, "grad_accum": grad_accum,
        "world_size": dist.world, "mask_prob": mask_prob, "eval_fraction": eval_fraction,
        "corpus": hashlib.sha256(
            "\n".join(f"{p.doc}\x1f{p.part}\x1f{p.ids.numel()}" for p in pieces).encode("utf-8")
        ).hexdigest()[:16],
    }

    # ---- where to start ----
    state = None
    if resume:
        done = _finished_summary(out, max_steps)
        if done is not None:
            say(f"{out}: this run is already complete ({done['steps']} steps); nothing to do")
            return done
    checkpoints = find_checkpoints(out) if resume else []
    if checkpoints:
        start_ckpt = checkpoints[-1][1]
        state = torch.load(start_ckpt / STATE_FILE, map_location="cpu", weights_only=True)
        if state.get("version") != STATE_VERSION:
            raise InputError(f"{start_ckpt / STATE_FILE}: written by another version of lfcli; cannot resume from it")
        differ = [k for k, v in fingerprint.items() if state["fingerprint"].get(k) != v]
        if differ:
            raise UsageError(
                f"{start_ckpt}: the run there used other settings ({', '.join(differ)}); "
                "resume with the same corpus and options, or use --force to start over"
            )
    elif resume:
        say(f"{out}: no checkpoint to resume from; starting at step 0")
    if force and dist.main:
        _clear_output(out)
    dist.barrier()  # every process has checked the output before rank 0 writes anything

    # ---- model ----
    from lfcli.models import LongformerForMaskedLM

    if state is not None:
        mlm, head = LongformerForMaskedLM.from_pretrained(start_ckpt), state["head"]
        say(f"resuming from {start_ckpt} (step {state['step']})")
    else:
        mlm, head = load_mlm_model(folder, seed, say)
    mlm.attention_backend = attention_backend
    mlm.to(dist.device)
    freeze_global_projections(mlm)
    mlm.set_gradient_checkpointing(gradient_checkpointing)
    loss_module = MLMLoss(mlm)
    if dist.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        ids = [dist.device.index] if dist.device.type == "cuda" else None
        wrapped = DistributedDataParallel(loss_module, device_ids=ids)
    else:
        wrapped = loss_module
    optimizer = make_optimizer(mlm, lr, weight_decay)
    params = [p for group in optimizer.param_groups for p in group["params"]]

    def autocast():
        if dist.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    pad_id = config.pad_token_id
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        step, cursor, tokens_done = state["step"], state["cursor"], state["tokens"]
        eval_before, elapsed_before = state["eval_before"], state["elapsed"]
        set_rng_state(state["rng"][dist.rank], dist.device)
    else:
        step, cursor, tokens_done, elapsed_before = 0, 0, 0, 0.0
        eval_before = evaluate(mlm, heldout, vocab, seed, batch_size, mask_prob, pad_id, dist, autocast)
        random.seed(mix_seed(seed, "python", dist.rank))
        torch.manual_seed(mix_seed(seed, "dropout", dist.rank))
    if eval_before is not None:
        emit({"event": "eval", "when": "before", **eval_before})
    if state is None or step == 0:
        say(f"training {max_steps} steps of {grad_accum} x {batch_size} x {dist.world} sequences, peak lr {lr:g}")
    written: list[str] = [str(p) for _, p in find_checkpoints(out)] if state is not None else []

    def note(at_step: int, tokens: int) -> dict:
        return {"base_model": model_name, "steps": at_step, "tokens": tokens, "sequence_length": seq_len, "mask_prob": mask_prob}

    def save_checkpoint(at_step: int) -> None:
        rngs = dist.gather(rng_state(dist.device))
        if dist.main:
            final = out / f"checkpoint-{at_step}"
            tmp = out / f".tmp-checkpoint-{at_step}"
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            write_model(mlm, folder, tmp, note(at_step, tokens_done))
            torch.save({
                "version": STATE_VERSION, "step": at_step, "cursor": cursor, "tokens": tokens_done,
                "optimizer": optimizer.state_dict(), "rng": rngs, "fingerprint": fingerprint, "head": head,
                "eval_before": eval_before, "elapsed": elapsed_before + (time.perf_counter() - started),
                "max_steps": max_steps, "lr": lr, "warmup_steps": warmup_steps,
            }, tmp / STATE_FILE)
            _replace_dir(tmp, final)
            written.append(str(final))
            emit({"event": "checkpoint", "step": at_step, "path": str(final)})
            if keep_checkpoints:
                for _, old in find_checkpoints(out)[:-keep_checkpoints]:
                    shutil.rmtree(old, ignore_errors=True)
                    if str(old) in written:
                        written.remove(str(old))
        dist.barrier()

    # ---- training ----
    stream = Stream(len(train), seed)
    mlm.train()
    train_time, session_tokens = 0.0, 0
    per_micro = dist.world * batch_size
    last_loss = float("nan")
    while step < max_steps:
        t0 = time.perf_counter()
        micro = []
        for a in range(grad_accum):
            ks = [cursor + a * per_micro + dist.rank * batch_size + j for j in range(batch_size)]
            micro.append(collate(
                [train[stream[k]] for k in ks], [mix_seed(seed, "train", k) for k in ks], vocab, mask_prob, pad_id
            ))
        cursor += grad_accum * per_micro
        local_targets = sum(int((labels != -100).sum()) for _, _, labels in micro)
        (global_targets,) = dist.sum([local_targets])
        scale = dist.world / max(global_targets, 1.0)  # DDP averages over processes
        loss_sum, step_tokens = 0.0, 0
        for i, (ids, attn, labels) in enumerate(micro):
            sync = i == len(micro) - 1 or dist.world == 1
            with (nullcontext() if sync else wrapped.no_sync()):
                with autocast():
                    loss, _ = wrapped(ids.to(dist.device), attn.to(dist.device), labels.to(dist.device))
                (loss * scale).backward()
            loss_sum += float(loss.detach())
            step_tokens += int(attn.sum())
        if max_grad_norm:
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        current_lr = lr * lr_factor(step, warmup_steps, max_steps)
        for group in optimizer.param_groups:
            group["lr"] = current_lr
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        loss_total, tokens_total = dist.sum([loss_sum, step_tokens])
        tokens_done += int(tokens_total)
        session_tokens += int(tokens_total)
        dt = time.perf_counter() - t0
        train_time += dt
        last_loss = loss_total / max(global_targets, 1.0)
        emit({
            "event": "step", "step": step, "max_steps": max_steps, "loss": last_loss, "lr": current_lr,
            "tokens": tokens_done, "tokens_per_s": tokens_total / max(dt, 1e-9),
            "elapsed": elapsed_before + time.perf_counter() - started,
        })
        if save_every and step % save_every == 0:
            save_checkpoint(step)

    # ---- the end ----
    eval_after = evaluate(mlm, heldout, vocab, seed, batch_size, mask_prob, pad_id, dist, autocast)
    if eval_after is not None:
        emit({"event": "eval", "when": "after", **eval_after})
    summary = {
        "output": str(out),
        "base_model": model_name,
        "head": head,
        "steps": step,
        "max_steps": max_steps,
        "tokens": tokens_done,
        "sequence_length": seq_len,
        "train_sequences": len(train),
        "eval_sequences": len(heldout),
        "eval_split": split_how,
        "eval_targets": (eval_after or eval_before or {}).get("targets", 0),
        "eval_loss_before": eval_before["loss"] if eval_before else None,
        "eval_bpt_before": eval_before["bpt"] if eval_before else None,
        "eval_loss_after": eval_after["loss"] if eval_after else None,
        "eval_bpt_after": eval_after["bpt"] if eval_after else None,
        "last_train_loss": last_loss,
        "tokens_per_s": session_tokens / train_time if train_time else None,
        "world_size": dist.world,
        "resumed_from_step": state["step"] if state is not None else None,
        "elapsed_s": elapsed_before + time.perf_counter() - started,
        "checkpoints": written,
    }
    if dist.main:
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / ".tmp-final"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        write_model(mlm, folder, tmp, note(step, tokens_done))
        (tmp / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        for child in tmp.iterdir():
            os.replace(child, out / child.name)
        tmp.rmdir()
    dist.barrier()
    say(
        f"done: {step} steps, {tokens_done:,} tokens"
        + (f"; held-out loss {eval_before['loss']:.4f} -> {eval_after['loss']:.4f}" if eval_before and eval_after else "")
        + f"; model in {out}"
    )
    return summary
