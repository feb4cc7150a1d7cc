"""What is particular to masked-LM training: BERT's 80/10/10 masking, the model with its
MLM head, and the task the shared trainer runs (pipelines/train/loop.py's TrainTask): masked
batches, the cross-entropy over the targets, the held-out loss and bits per token.
pretrain.py drives a run with them.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch

from lfcli.models import LongformerForMaskedLM, LongformerModel, MissingHead, apply_fast_paths
from lfcli.models.checkpoint import GLOBAL_PROJECTIONS, copy_tokenizer_files, global_from_local

from ...errors import InputError
from ...train.batches import mix_seed
from ...train.distributed import Dist

LN2 = math.log(2.0)


# -- masking ------------------------------------------------------------------------------
@dataclass
class Piece:
    """One training/eval sequence: the special-token-wrapped ids of a document's piece."""

    doc: str
    part: int
    ids: torch.Tensor  # int32, with the template's special tokens

    def __len__(self) -> int:  # the trainer counts tokens with len()
        return self.ids.numel()


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


# -- the model ----------------------------------------------------------------------------
def load_mlm_model(folder: Path, seed: int, log: Callable[[str], None]):
    """(LongformerForMaskedLM, "checkpoint" | "new"): the checkpoint's head, or a new one
    tied to the word embeddings on top of the checkpoint's encoder."""
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
    apply_fast_paths(mlm)  # as from_pretrained does: the speed tricks of models/fast_paths.py
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
