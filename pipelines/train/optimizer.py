"""AdamW over the trainable parameters and its learning-rate schedule: linear warm-up, then
polynomial decay to 0 at the last update (power 1: linear, the fine-tuning default; power 3:
the Longformer paper's pretraining). The loop (loop.py) sets each update's rate itself."""

from __future__ import annotations

import torch


def lr_factor(step: int, warmup_steps: int, max_steps: int, power: float = 3.0) -> float:
    """Multiplier of the peak learning rate for the update taken after `step` updates.

    Linear warm-up: (step + 1) / warmup_steps for step < warmup_steps, reaching 1 at the
    last warm-up update. Then polynomial decay of the given power:
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


def make_optimizer(model: torch.nn.Module, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """AdamW over the trainable parameters; no weight decay on biases and LayerNorm."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():  # a tied parameter appears once
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # PyTorch's fused AdamW: one kernel over each parameter instead of a dozen elementwise ops
    # (half the update's time on the CPU, measured); it needs every parameter on one device type.
    devices = {p.device.type for p in decay + no_decay}
    fused = len(devices) == 1 and devices <= {"cpu", "cuda"}
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=fused)
