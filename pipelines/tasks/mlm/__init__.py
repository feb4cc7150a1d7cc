"""mlm: continued masked-LM pretraining on long documents (Beltagy et al. 2020, section 5),
`lfcli pretrain-continue`. Its home: config.py (PretrainConfig, the run's settings and their
defaults), masking.py (the corpus into masked sequences, the model with its MLM head),
pretrain.py (the run, on the one training loop); this module's SPEC is what the registry holds,
the command's own options among it.
"""

from __future__ import annotations

from typing import Optional

from ...registry import Option, TaskSpec, lazy, shared
from .config import PretrainConfig

_D = PretrainConfig()  # the defaults, each stated once there

# One option per PretrainConfig field (the CLI passes them to the run by these names).
PRETRAIN_OPTIONS = (
    shared("max_length"),
    Option("batch_size", ("--batch-size", "-b"), int, _D.batch_size, "Sequences per step and process."),
    Option("grad_accum", ("--grad-accum",), int, _D.grad_accum, "Steps of gradient accumulation per update."),
    Option("lr", ("--lr",), float, _D.lr, "Peak learning rate (the paper: 3e-5)."),
    Option("warmup_steps", ("--warmup-steps",), Optional[int], _D.warmup_steps,
           "Linear warm-up updates, then power-3 polynomial decay (default: 6% of --max-steps, at most 500)."),
    shared("max_steps", _D.max_steps),
    Option("weight_decay", ("--weight-decay",), float, _D.weight_decay, "AdamW's weight decay."),
    Option("mask_prob", ("--mask-prob",), float, _D.mask_prob, "Share of tokens masked (80% [MASK], 10% random, 10% kept)."),
    Option("max_grad_norm", ("--max-grad-norm",), float, _D.max_grad_norm, "Gradient clipping (0 turns it off)."),
    Option("save_every", ("--save-every",), int, _D.save_every, "Score the held-out set, keep the best model and "
           "rewrite the resume state every N updates (0: at the end only)."),
    Option("max_eval_sequences", ("--max-eval-sequences",), int, _D.max_eval_sequences,
           "Cap on held-out sequences (CPU time)."),
    Option("eval_fraction", ("--eval-fraction",), float, _D.eval_fraction,
           "Share of documents held out for MLM loss / bits per token."),
    shared("seed", _D.seed),
    Option("gradient_checkpointing", ("--gradient-checkpointing",), bool, _D.gradient_checkpointing,
           "Recompute activations in the backward pass to save memory."),
    Option("freeze_embeddings", ("--freeze-embeddings",), bool, _D.freeze_embeddings,
           "Keep the base's embedding tables (and the output layer tied to them) as they are: the layers learn, "
           "and a fine-tune over the result stored with --delta needs no embedding table."),
)

SPEC = TaskSpec(
    name="mlm",
    summary="Continue masked-LM pretraining on long documents (the paper's recipe); works under torchrun.",
    architecture="LongformerForMaskedLM",
    pretrain=lazy(__name__ + ".pretrain", "pretrain_continue"),
    pretrain_options=PRETRAIN_OPTIONS,
)
