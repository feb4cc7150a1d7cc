"""The chunked band for training: one autograd function with its own blocked backward.

Its twin is autograd through `chunked._banded` (`LFCLI_BAND_GRAD=autograd`), which joins the
global columns to every block's key span and lets autograd differentiate the fused kernel, the
concatenation and the strided span views. That is correct but slow on the CPU: the gradient
of a span view (`unfold_backward`) is a scatter into a zeroed copy of K per block run, and the
joined columns copy every span. At n=4096 on the bundled model's shape it took 1.5 s of a
2.7 s bf16 training step (profile: `benchmarks/train_profile.py`).

Here, as in flash attention, the forward saves the output and the log-sum-exp of each row,
and the backward recomputes the scores block by block:

* forward: per run of blocks, PyTorch's fused CPU kernel on the band alone (the spans stay
  views), returning its log-sum-exp; the global columns are then merged in by log-sum-exp
  (one softmax over [columns | band], `blocks.merge_columns`, as inference merges them), and the
  row's total log-sum-exp is kept.
* backward: per run, the fused kernel's backward with the *total* output and log-sum-exp.
  For the joint softmax P over [columns | band], dS = P * (dP - rowsum(dO * O)) with O the
  total output, so the band part of the gradient is exactly what the kernel computes from the
  total O and LSE. Each block's dK, dV span is added back onto the rows it covers (the spans
  overlap: a key sits in (c + 2*w1) / c of them). The columns' own part, G columns against
  every row, is a few small einsums.

The band runs in float32 whatever the input dtype: on the CPU the fused kernel is as fast in
fp32 as in bf16 forward, and its bf16 backward is 1.6x slower than its fp32 one (measured at
n=4096, 12 heads of 32, window 512: 190 vs 117 ms a layer, AMD EPYC with AVX512-BF16). The
gradients are returned in the inputs' dtype. Attention-probability dropout is not supported
here (the trainer sets it to 0); with dropout the twin runs.
"""

from __future__ import annotations

import os

import torch

from .blocks import BlockPlan, flash_with_lse, merge_columns
from .position_bias import bias_between

_flash_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
# The backward takes the blocks of a run a few at a time, so that the fused kernel's gradient
# spans (zero-filled by the kernel) stay small enough for the allocator to reuse: whole runs
# (57 MB at n=4096) were fresh pages every call. 1M elements measured fastest of 0.25M-100M
# (one layer's band, fwd + bwd, n=4096: 160 vs 190 ms for whole runs).
BACKWARD_SPAN_ELEMENTS = 1 << 20
ENV_VAR = "LFCLI_BAND_GRAD"  # "autograd" selects the twin (benchmarks and tests compare the two)


def fused_backward_applies(q: torch.Tensor, dropout_p: float) -> bool:
    """Training on the CPU without attention dropout, unless the twin is asked for."""
    return q.device.type == "cpu" and dropout_p == 0.0 and os.environ.get(ENV_VAR, "fused") != "autograd"


def band_attention_grad(q, k, v, w1: int, band_excluded, k_cols, v_cols, cols_valid, rel_bias=None,
                        cols_pos=None) -> torch.Tensor:
    """Same arguments and result as `chunked._banded` without dropout; differentiable in q, k,
    v, k_cols, v_cols and rel_bias (a relative position bias (H, 2R+1); cols_pos (B, G) the
    columns' positions)."""
    if rel_bias is None:
        rel_bias = q.new_empty((q.shape[2], 0))  # autograd.Function inputs are tensors
        cols_pos = torch.zeros_like(cols_valid, dtype=torch.long)
    return _BandAttention.apply(q, k, v, k_cols, v_cols, rel_bias, w1, band_excluded, cols_valid, cols_pos)


class _BandAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, k_cols, v_cols, rel_bias, w1, band_excluded, cols_valid, cols_pos):
        dtype = q.dtype
        with torch.autocast(q.device.type, enabled=False):
            q32, k32, v32, kc32, vc32, rb32 = (x.float() for x in (q, k, v, k_cols, v_cols, rel_bias))
            bias = rb32 if rb32.numel() else None
            plan = BlockPlan(q.shape[1], w1, band_excluded, torch.float32, bias)
            out, lse = _forward(plan, q32, k32, v32)
            if k_cols.shape[1]:
                out, lse = _merge_columns(out, lse, q32, kc32, vc32, cols_valid, _cols_bias(bias, cols_pos, q.shape[1]))
        ctx.save_for_backward(q32, k32, v32, kc32, vc32, rb32, out, lse, band_excluded, cols_valid, cols_pos)
        ctx.w1, ctx.dtypes = w1, (q.dtype, k.dtype, v.dtype, k_cols.dtype, v_cols.dtype, rel_bias.dtype)
        return out.to(dtype)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, k_cols, v_cols, rel_bias, out, lse, band_excluded, cols_valid, cols_pos = ctx.saved_tensors
        with torch.autocast(q.device.type, enabled=False):
            grad_out = grad_out.float()
            bias = rel_bias if rel_bias.numel() else None
            plan = BlockPlan(q.shape[1], ctx.w1, band_excluded, torch.float32, bias)
            dq, dk, dv = _backward(plan, grad_out, q, k, v, out, lse)
            d_bias = None
            if bias is not None and ctx.needs_input_grad[5]:
                d_bias = _band_bias_backward(plan, grad_out, q, k, v, out, lse, bias)
            dk_cols = dv_cols = None
            if k_cols.shape[1]:
                cols_bias = _cols_bias(bias, cols_pos, q.shape[1])
                dk_cols, dv_cols, ds = _columns_backward(grad_out, q, k_cols, v_cols, cols_valid, out, lse, dq, cols_bias)
                if d_bias is not None:  # each row's score on each column: the offset column - row
                    rows = torch.arange(q.shape[1], device=q.device)
                    _add_by_offset(d_bias, ds.permute(2, 0, 1, 3), cols_pos[:, None, :] - rows[None, :, None])
        grads = (dq, dk, dv, dk_cols, dv_cols, d_bias)
        grads = tuple(None if g is None else g.to(t) for g, t in zip(grads, ctx.dtypes))
        return (*grads, None, None, None, None)


def _cols_bias(rel_bias, cols_pos, L: int):
    """(B, L, H, G) fp32 bias of every row on the global columns, or None without a bias."""
    if rel_bias is None:
        return None
    rows = torch.arange(L, device=cols_pos.device)
    return bias_between(rel_bias, rows, cols_pos).permute(1, 2, 0, 3).float()


def _add_by_offset(d_bias: torch.Tensor, ds: torch.Tensor, offsets: torch.Tensor) -> None:
    """d_bias (H, 2R+1) += the score gradients ds (H, *offsets.shape), each onto the entry of
    its (clamped) key-minus-query offset: the backward of `position_bias.bias_at`."""
    R = (d_bias.shape[1] - 1) // 2
    index = (offsets.clamp(-R, R) + R).expand(ds.shape[1:]).reshape(-1)
    d_bias.index_add_(1, index, ds.reshape(ds.shape[0], -1))


def _band_bias_backward(plan: BlockPlan, grad_out, q, k, v, out, lse, rel_bias):
    """The band's share of d(rel_bias): every block's score gradient dS = P * (dP - rowsum(dO * O)),
    recomputed from the total LSE as the fused backward does inside, summed over the blocks
    (they share one tile of offsets) and then onto the tile's offsets. Only when the bias
    table is trained (a LoRA fine-tune freezes it)."""
    B, L, H, D = q.shape
    tile = q.new_zeros((H, plan.c, plan.span))
    delta = (grad_out * out).sum(-1)  # (B, L, H)
    for b in range(B):
        for b0, b1, is_dirty in plan.runs(b):
            scores = plan.query_blocks(q[b], b0, b1) @ plan.key_spans(k[b], b0, b1).transpose(-1, -2)
            lse_blocks = plan.query_blocks(lse[b, :, :, None], b0, b1)  # (nb, H, c, 1)
            p = torch.exp(scores + plan.bias(b, b0, b1, is_dirty) - lse_blocks)
            dp = plan.query_blocks(grad_out[b], b0, b1) @ plan.key_spans(v[b], b0, b1).transpose(-1, -2)
            tile += (p * (dp - plan.query_blocks(delta[b, :, :, None], b0, b1))).sum(0)
    d_bias = torch.zeros_like(rel_bias)
    _add_by_offset(d_bias, tile, plan.offsets)
    return d_bias


def _forward(plan: BlockPlan, q, k, v):
    """The band alone: output (B, L, H, D) and log-sum-exp (B, L, H), fp32."""
    B, L, H, D = q.shape
    out, lse = q.new_empty((B, L, H, D)), q.new_empty((B, L, H))
    for b in range(B):
        for b0, b1, is_dirty in plan.runs(b):
            r0, r1 = plan.rows(b0, b1)
            o, l = flash_with_lse(plan.query_blocks(q[b], b0, b1), plan.key_spans(k[b], b0, b1),
                                  plan.key_spans(v[b], b0, b1), plan.bias(b, b0, b1, is_dirty))
            out[b, r0:r1] = o.transpose(1, 2).reshape(-1, H, D)[: r1 - r0]
            lse[b, r0:r1] = l.transpose(1, 2).reshape(-1, H)[: r1 - r0]
    return out, lse


def _column_scores(q, k_cols, cols_valid, cols_bias=None):
    """(B, L, H, G) scores of every row against the global columns (with their relative
    position bias, if any), invalid slots masked."""
    scores = torch.einsum("blhd,bghd->blhg", q, k_cols)
    if cols_bias is not None:
        scores = scores + cols_bias
    return scores.masked_fill(~cols_valid[:, None, None, :], torch.finfo(scores.dtype).min)


def _merge_columns(o_band, lse_band, q, k_cols, v_cols, cols_valid, cols_bias=None):
    """One softmax over [columns | band] from the band's (output, LSE) and the columns':
    the band keeps sigmoid(lse_band - lse_cols) of the mass. Returns the total output and LSE."""
    out, lse_cols = merge_columns(o_band, lse_band, _column_scores(q, k_cols, cols_valid, cols_bias), v_cols)
    return out, torch.logaddexp(lse_band, lse_cols)


def _backward(plan: BlockPlan, grad_out, q, k, v, out, lse):
    """The band's dq, dk, dv (fp32, (B, L, H, D)) from the total output and LSE."""
    B, L, H, D = q.shape
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    step = max(1, BACKWARD_SPAN_ELEMENTS // (H * plan.span * D))
    for b in range(B):
        for b0, b1, is_dirty in plan.pieces(b, step):
            r0, r1 = plan.rows(b0, b1)
            lse_blocks = plan.query_blocks(lse[b, :, :, None], b0, b1)[..., 0]  # (nb, H, c)
            gq, gk, gv = _flash_backward(
                plan.query_blocks(grad_out[b], b0, b1), plan.query_blocks(q[b], b0, b1),
                plan.key_spans(k[b], b0, b1), plan.key_spans(v[b], b0, b1),
                plan.query_blocks(out[b], b0, b1), lse_blocks, 0.0, False,
                attn_mask=plan.bias(b, b0, b1, is_dirty), scale=1.0)
            dq[b, r0:r1] = gq.transpose(1, 2).reshape(-1, H, D)[: r1 - r0]
            _add_spans(plan, dk[b], gk, b0, b1)
            _add_spans(plan, dv[b], gv, b0, b1)
    return dq, dk, dv


def _add_spans(plan: BlockPlan, grad: torch.Tensor, spans: torch.Tensor, b0: int, b1: int) -> None:
    """Add the gradient of blocks [b0, b1)'s key spans (nb, H, span, D) onto the rows of
    `grad` (L, H, D) they cover: the inverse of `BlockPlan.key_spans`."""
    c, span, nb = plan.c, plan.span, b1 - b0
    k0, k1 = plan.key_rows(b0, b1)
    spans = spans.transpose(1, 2)  # (nb, span, H, D)
    buffer = grad.new_zeros((k1 - k0, *grad.shape[1:]))  # the run's key rows, padding included
    if span % c == 0:  # the span is span/c whole blocks of rows: block i's j-th lands on row block i + j
        tiles = buffer.view(nb + span // c - 1, c, *grad.shape[1:])
        for j in range(span // c):
            tiles[j : j + nb] += spans[:, j * c : (j + 1) * c]
    else:
        for i in range(nb):
            buffer[i * c : i * c + span] += spans[i]
    lo, hi = max(0, k0), min(plan.L, k1)
    grad[lo:hi] += buffer[lo - k0 : hi - k0]


def _columns_backward(grad_out, q, k_cols, v_cols, cols_valid, out, lse, dq, cols_bias=None):
    """The global columns' share: their probabilities P = exp(s - lse) from the total LSE,
    dS = P * (dO . v_col - rowsum(dO * O)); adds dS @ k_cols to dq, returns dk_cols, dv_cols
    and dS (B, L, H, G), the score gradient a relative position bias gets."""
    p = torch.exp(_column_scores(q, k_cols, cols_valid, cols_bias) - lse[..., None])
    p = p * cols_valid[:, None, None, :]
    delta = (grad_out * out).sum(-1, keepdim=True)  # (B, L, H, 1)
    ds = p * (torch.einsum("blhd,bghd->blhg", grad_out, v_cols) - delta)
    dq += torch.einsum("blhg,bghd->blhd", ds, k_cols)
    return torch.einsum("blhg,blhd->bghd", ds, q), torch.einsum("blhg,blhd->bghd", p, grad_out), ds
