"""Fused CPU ops outside attention, each with its plain twin (tests/test_backends.py).

`linear(x, weight, bias)` = x @ weight.T + bias. On the CPU, in fp32 inference, from
`ONEDNN_LINEAR_ROWS` rows up, oneDNN's inner product adds the bias inside the matmul; addmm
(what F.linear runs) first copies the bias into every row of the output and then accumulates
the matmul onto it, a whole extra pass over the (rows x out) result.

`linear_gelu(x, weight, bias)` = gelu(x @ weight.T + bias): in fp32 inference oneDNN's matmul
with the bias inside, then the exact GELU in place on the result; in bf16 (CPUs with native
bf16) one oneDNN op with the bias and GELU as post-ops. Elsewhere (training, CUDA, other
dtypes) both are the plain composition, which autograd differentiates as usual.

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

# Rows (all leading dimensions flattened) from which `linear` takes oneDNN's inner product.
# Measured in fp32, 2 threads, 2-core AMD EPYC (AVX2), round-robin medians against F.linear:
# 16,384 x 384 -> 384 (the q/k/v projections of four 4,096-token windows) 0.85-0.88x the
# time, 4,096 x 768 -> 768 0.94x; but 1,024 rows 1.02-1.07x and 300 rows 1.15x, where the
# output is small enough that addmm's bias copy stays in cache.
ONEDNN_LINEAR_ROWS = 4096


def _inference_on_cpu(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """No gradient wanted, on the CPU, and not under autocast (whose dtype rules these raw
    oneDNN calls would bypass: training's evaluation passes run under bf16 autocast)."""
    return (
        x.device.type == "cpu"
        and not torch.is_autocast_enabled("cpu")
        and not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad))
    )


def _onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """oneDNN's inner product, the bias added inside the matmul (no post-op)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    onednn = (
        _ONEDNN
        and x.dtype == weight.dtype == torch.float32
        and x.numel() >= ONEDNN_LINEAR_ROWS * x.shape[-1]
        and _inference_on_cpu(x, weight)
    )
    return _onednn_linear(x, weight, bias) if onednn else F.linear(x, weight, bias)


def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    if _ONEDNN and x.dtype == weight.dtype == torch.float32 and _inference_on_cpu(x, weight):
        # oneDNN's GELU post-op runs slower than the matmul's own output pass plus torch's
        # vectorised GELU over the (cache-resident) result: at 1,024 rows x 384 -> 1,536 the
        # fused op took 1.2x the time of this pair (768 -> 3,072: 1.2x too; fp32, 2-core AMD
        # EPYC, AVX2, round-robin medians).
        return torch.ops.aten.gelu_(_onednn_linear(x, weight, bias))
    if _ONEDNN and x.dtype == torch.bfloat16 and _ONEDNN_BF16 and _inference_on_cpu(x, weight):
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
