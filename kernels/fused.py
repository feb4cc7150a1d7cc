"""Fused CPU ops outside attention, each with its plain twin (tests/test_backends.py).

`linear_gelu(x, weight, bias)` = gelu(x @ weight.T + bias). On the CPU, in inference, oneDNN
runs the bias and the exact GELU as post-ops of the matmul, so the (n x intermediate) result
is written once instead of three times (bias copy, matmul, GELU): about 20% of the FFN's
first projection at base size. Elsewhere (training, CUDA, other activations) it is the plain
composition, which autograd differentiates as usual.

`dropout(x, p, training)` = F.dropout with its mask drawn by torch.rand (faster on the CPU
than F.dropout's Bernoulli sampler); `Dropout` is the module the model file uses.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _onednn_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


_ONEDNN = _onednn_available()
# oneDNN has no bf16 inner product below AVX-512 (AVX2-only CPUs, or ONEDNN_MAX_CPU_ISA=AVX2):
# there `--dtype bfloat16` takes the plain composition, which PyTorch emulates.
_ONEDNN_BF16 = _ONEDNN and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    fused = (
        _ONEDNN
        and x.device.type == "cpu"
        and (x.dtype == torch.float32 or (x.dtype == torch.bfloat16 and _ONEDNN_BF16))
        and not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad))
    )
    if fused:
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu", [], "none")
    return F.gelu(F.linear(x, weight, bias))


class _Dropout(torch.autograd.Function):
    """x * mask, mask = (U >= p) / (1 - p) with U uniform in [0, 1): one mask tensor, drawn
    with torch.rand and kept in x's dtype for the backward (grad * mask)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float) -> torch.Tensor:
        mask = (torch.rand(x.shape, device=x.device) >= p).to(x.dtype).mul_(1.0 / (1.0 - p))
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (mask,) = ctx.saved_tensors
        return grad * mask, None


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout, as F.dropout. On the CPU in training it draws its mask with
    torch.rand, which is 3x faster there than the Bernoulli sampler behind F.dropout
    (4096 x 384 elements: 3.6 vs 11 ms; with the backward 7 vs 11 ms in fp32, 9 vs 14 in
    bf16, 2 threads, AMD EPYC). Same distribution, another random stream; seeded like
    every torch draw, so a resumed run draws the same masks."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training)
    return _Dropout.apply(x, p)


class Dropout(torch.nn.Dropout):
    """nn.Dropout (same name in a model's repr, no parameters) through `dropout`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)
