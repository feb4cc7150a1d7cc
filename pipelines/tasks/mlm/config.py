"""`pretrain-continue`'s settings: PretrainConfig, one field per option of the command.

Its own module, free of torch, because the CLI reads the defaults from here when it draws
`lfcli pretrain-continue --help`. pretrain.py turns it into the trainer's TrainConfig.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import UsageError


@dataclass
class PretrainConfig:
    """Continued masked-LM pretraining as Beltagy et al. (2020, section 5) ran it, scaled to a CPU."""

    max_length: int | None = None  # tokens per sequence; None: the model's positions (the paper: 4,096)
    batch_size: int = 1  # sequences per micro-batch and process: long sequences, one at a time
    grad_accum: int = 8  # micro-batches per update and process: updates of 8 sequences
    lr: float = 3e-5  # the paper's peak learning rate
    warmup_steps: int | None = None  # None: 6% of max_steps, at most the paper's 500
    max_steps: int = 1000  # updates in all (the paper ran 65k)
    weight_decay: float = 0.01  # AdamW's, as in RoBERTa
    max_grad_norm: float | None = 1.0  # gradient clipping; 0 or None: none
    mask_prob: float = 0.15  # BERT's share of targets
    save_every: int | None = 200  # updates between evaluations and resume states; 0 or None: at the end only
    eval_fraction: float = 0.05  # share of documents held out for the MLM loss and bits per token
    max_eval_sequences: int | None = 256  # held-out sequences scored at most (CPU time)
    seed: int = 0  # the held-out split, a new head, the data order, the masks, dropout
    gradient_checkpointing: bool = False  # less memory for ~30% more time, the same numbers
    freeze_embeddings: bool = False  # only the layers learn: a --delta fine-tune over the result needs no tables
    autocast: str = "auto"  # bf16 on CUDA and on CPUs with native bf16, else fp32

    def check(self) -> None:
        """The MLM's own settings (the trainer checks the loop's: lr, steps, warm-up, batches)."""
        if not 0 < self.mask_prob < 1:
            raise UsageError("--mask-prob must be between 0 and 1")
        if not 0 <= self.eval_fraction < 1:
            raise UsageError("--eval-fraction must be in [0, 1)")
        if self.max_eval_sequences is not None and self.max_eval_sequences < 1:
            raise UsageError("--max-eval-sequences must be at least 1")
        if self.max_length is not None and self.max_length < 8:
            raise UsageError("--max-length must be at least 8 tokens")
