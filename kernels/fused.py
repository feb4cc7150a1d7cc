"""Fused CPU ops outside attention, each with its plain twin (tests/test_backends.py).

`linear_gelu(x, weight, bias)` = gelu(x @ weight.T + bias). On the CPU, in inference, oneDNN
runs the bias and the exact GELU as post-ops of the matmul, so the (n x intermediate) result
is written once instead of three times (bias copy, matmul, GELU): about 20% of the FFN's
first projection at base size. Elsewhere (training, CUDA, other activations) it is the plain
composition, which autograd differentiates as usual.
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
