"""The one entry point for Longformer's banded attention with global tokens, and its backends.

Backends (all with the same contract, see `banded_attention`):
  reference  dense masked attention, O(n^2): the obviously-correct twin, for tests
  chunked    blocks of queries against their key span, fused SDPA per block: CPU default
  triton     fused Triton kernels: the CUDA default (also runs under TRITON_INTERPRET=1)
  auto       triton for CUDA tensors when it imports, chunked otherwise

Which one runs: an explicit choice (the CLI's --attention-backend, or `backend=` here) wins,
then the environment variable LFCLI_ATTENTION_BACKEND, then the model config's
`attention_backend`, then auto. An explicit choice is obeyed or refused, never replaced.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

import torch

from .chunked import chunked_attention
from .reference import reference_attention

BACKENDS = ("auto", "chunked", "reference", "triton")
ENV_VAR = "LFCLI_ATTENTION_BACKEND"

_notified_fallback = False


class BackendUnavailable(RuntimeError):
    """An explicitly requested backend cannot run here."""


def triton_status() -> str | None:
    """None when the triton backend can run in this process, else the reason it cannot."""
    try:
        from . import triton_banded  # noqa: F401  (imports triton)
    except ImportError as exc:  # triton missing, or the kernels not importable
        return f"triton is not importable ({exc})"
    return None


def resolve_backend(explicit: str | None = None, configured: str | None = None, device=None) -> str:
    """Name of the backend that will run, following the precedence in the module docstring."""
    choice = explicit or os.environ.get(ENV_VAR) or configured or "auto"
    if choice not in BACKENDS:
        raise ValueError(f"unknown attention backend {choice!r}; choose one of {', '.join(BACKENDS)}")
    device = torch.device(device) if device is not None else torch.device("cpu")
    if choice == "auto":
        if device.type == "cuda":
            reason = triton_status()
            if reason is None:
                return "triton"
            global _notified_fallback
            if not _notified_fallback:
                print(f"lfcli: using the chunked attention backend on CUDA: {reason}", file=sys.stderr)
                _notified_fallback = True
        return "chunked"
    if choice == "triton":
        reason = triton_status()
        if reason is not None:
            raise BackendUnavailable(f"attention backend 'triton' was requested but {reason}")
        if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            raise BackendUnavailable(
                "attention backend 'triton' needs CUDA tensors, or TRITON_INTERPRET=1 to run the "
                "kernels in Triton's interpreter on the CPU"
            )
    return choice


def dilation_per_head(dilation: int | Sequence[int] | torch.Tensor, num_heads: int) -> torch.Tensor:
    """An int or one value per head -> (H,) long tensor on the CPU."""
    d = torch.as_tensor(dilation, dtype=torch.long).flatten()
    if d.numel() == 1:
        d = d.expand(num_heads)
    if d.numel() != num_heads or bool((d < 1).any()):
        raise ValueError(f"dilation must be a positive int or {num_heads} positive ints, got {dilation!r}")
    return d.contiguous()


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attention_window: int,
    key_padding_mask: torch.Tensor | None = None,
    is_global: torch.Tensor | None = None,
    dilation: int | Sequence[int] | torch.Tensor = 1,
    dropout_p: float = 0.0,
    backend: str | None = None,
    rel_bias: torch.Tensor | None = None,
    columns: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Longformer's windowed attention for every query, global columns included.

    q, k, v: (B, H, n, D), projected with the *local* weights; q already scaled by 1/sqrt(D).
    attention_window: the full window (transformers' convention), even; each query sees
        w1 = attention_window // 2 keys on each side (times the head's dilation).
    key_padding_mask: (B, n) bool, True where the token is padding.
    is_global: (B, n) bool, True for global tokens (ignored where padding).
    dilation: an int, or one int per head.
    rel_bias: None, or (H, 2R+1): a relative position bias by key-minus-query offset added to
        every score, band and global keys alike (kernels/position_bias.py); dilation 1 only.
    columns: None, or the forward's (global_index, global_valid) = chunked.global_columns(
        is_global & ~key_padding_mask), which the model plans once for all its layers: the
        backends then do not count the globals again (on CUDA, reading that count back would
        make every layer wait for the GPU). The reference ignores it.
    Returns (B, H, n, D): query i attends to the non-padding, non-global keys of its band and
    to every non-padding global key, in one float32 softmax; padded query rows are zero.
    The rows of global queries are computed too; the model overwrites them with global rows.
    """
    B, H, n, _ = q.shape
    if attention_window <= 0 or attention_window % 2:
        raise ValueError(f"attention_window must be a positive even number, got {attention_window}")
    if key_padding_mask is None:
        key_padding_mask = torch.zeros(B, n, dtype=torch.bool, device=q.device)
    if is_global is None:
        is_global = torch.zeros(B, n, dtype=torch.bool, device=q.device)
    d = dilation_per_head(dilation, H)
    if rel_bias is not None and bool((d != 1).any()):
        # A dilated head's band skips offsets: its bias would need the bucket of d * offset.
        raise ValueError("a relative position bias runs with dilation 1 only")
    name = resolve_backend(backend, device=q.device)
    args = (q, k, v, attention_window // 2, key_padding_mask.bool(), is_global.bool(), d, dropout_p)
    if name == "reference":
        return reference_attention(*args, rel_bias=rel_bias)
    if name == "triton":
        from .triton_banded import triton_attention  # optional: imports triton

        return triton_attention(*args, rel_bias=rel_bias, columns=columns)
    return chunked_attention(*args, rel_bias=rel_bias, columns=columns)
