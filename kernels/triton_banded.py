"""Triton kernels for Longformer's banded attention with global columns, forward and backward.

The fused twin of `reference.reference_attention` (same arguments, same result) and of
`reference.reference_global_rows`. Flash-attention style: the (queries x keys) score tile lives
in registers, the softmax is computed online in float32, and only the output and one
log-sum-exp per query row go to memory; the backward pass recomputes the scores from it.

How the band becomes blocks:
* Dilation d splits a head's sequence into d interleaved sub-sequences (positions with the same
  residue mod d). Inside one sub-sequence the dilated band is a plain band of w1 keys on each
  side, so the kernels read position `residue + t * d` for sub-sequence index t: strided
  loads, no copy of q, k or v.
* A program owns a block of sub-sequence indices and loops over exactly the other side's
  positions its band reaches (`band_block_ranges`, computed on the host into a small work
  table), never over the whole sequence. Tiles on the band's edges are masked element-wise.
* Global keys are removed from the band and joined to every query's softmax as extra columns,
  gathered by index, so each key is counted once, as the reference does.
* Global rows (`triton_global_rows`) are the same kernels with a window wider than the
  sequence and no columns: a dense masked flash pass.
* A relative position bias (`rel_bias`, kernels/position_bias.py; dilation 1 only) is added
  to every score inside the same tile helpers, read from one (H, 2R+1) vector by the clamped
  key-minus-query offset. Its gradient is the sum of the score gradients per offset, which
  bwd_dq_kernel accumulates with atomics (it is the one pass that meets every score once).
  Without a bias the kernels compile with HAS_BIAS off: the same code as before it existed.

Three files: kernels/triton_plan.py plans each program's work on the host,
kernels/triton_kernels.py holds the kernels, this file launches them and registers them as
torch ops. Kernel family (all launched by `_forward` / `_backward`):
  fwd_kernel           out and log-sum-exp, one program per query block
  bwd_delta_kernel     rowsum(dO * O), the softmax backward's correction, one float per row
  bwd_dq_kernel        dQ (and d(rel_bias)), one program per query block (band keys + global columns)
  bwd_dkdv_kernel      dK, dV of band keys, one program per key block
  bwd_columns_kernel   dK, dV of the global columns: every query reaches them, so each
                        program reduces one slice of the queries into a partial sum, and the
                        partial sums are added on the host (no atomics)

Importing this module imports triton; `attention.py` imports it lazily, so the CPU backends
never need triton. Set TRITON_INTERPRET=1 before this module is imported to run the kernels
on CPU tensors in Triton's interpreter (how the tests run them).
"""

from __future__ import annotations

import os

import torch
import triton

from .blocks import LastBuilt
from .chunked import global_columns
from .position_bias import reach
from .triton_kernels import bwd_columns_kernel, bwd_delta_kernel, bwd_dkdv_kernel, bwd_dq_kernel, fwd_kernel
from .triton_plan import BLOCK_G_TILE, KernelConfig, WorkEfficiency, band_block_ranges, kernel_config, work_efficiency, work_table
from .triton_tune import tuned_config

__all__ = ["KernelConfig", "WorkEfficiency", "band_block_ranges", "kernel_config", "triton_attention",
           "triton_global_rows", "work_efficiency"]


# ----------------------------------------------------------------------------------------------
# Launchers. `query_pad` marks query rows whose output is zero; `key_excluded` marks keys left
# out of the band (padding, and global keys, which come back as columns).


FP32_PRECISION_ENV = "LFCLI_TRITON_FP32"  # ieee: fp32 products on the CUDA cores, the slow exact twin


def _dot_precision(dtype: torch.dtype) -> str:
    """How tl.dot multiplies fp32 inputs (half inputs ignore it). TF32 (10 bits of mantissa)
    only where the user allows it, by PyTorch's own switch (off by default). Otherwise
    "tf32x3": each product split into a TF32 high part and a low part, three tensor-core
    products summed, which keeps fp32's accuracy (about 1e-6 relative) at several times the
    rate of "ieee", fp32 on the CUDA cores, the rate that left lfcli's fp32 encoder at 0.43x
    transformers' on an H200 (2026-11-26). LFCLI_TRITON_FP32=ieee brings the exact one back."""
    if dtype != torch.float32:
        return "ieee"
    if torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return "ieee" if os.environ.get(FP32_PRECISION_ENV) == "ieee" else "tf32x3"


def _check_inputs(q, k, v, query_pad, key_excluded, col_index, col_valid, dilations):
    shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
    assert q.dim() == k.dim() == 4, shapes
    B, H, n_q, D = q.shape
    n_k = k.shape[2]
    assert k.shape == v.shape == (B, H, n_k, D), shapes
    assert q.dtype == k.dtype == v.dtype and q.dtype in (torch.float16, torch.bfloat16, torch.float32), q.dtype
    assert q.device == k.device == v.device
    assert 1 <= D <= 256, f"head dim {D} is not supported (1..256)"
    assert query_pad.shape == (B, n_q) and key_excluded.shape == (B, n_k)
    assert col_index.shape == col_valid.shape and col_index.shape[0] == B
    assert len(dilations) == H and min(dilations) >= 1, dilations


def _bias_args(rel_bias, query_positions, q, dilations):
    """The kernels' keyword arguments for the relative position bias. Without one HAS_BIAS is
    off and the None pointers are never read. query_positions (B, n_q) says where each query
    sits; None for banded attention, where query i sits at i (one arange, batch stride 0)."""
    if rel_bias is None:
        return dict(RelBias=None, QueryPos=None, reach=0, stride_pos_b=0, HAS_BIAS=False)
    H, n_q = q.shape[1], q.shape[2]
    # A dilated band skips offsets, so the kernels' offset (key minus query) would be wrong.
    assert all(d == 1 for d in dilations), f"a relative position bias needs dilation 1, got {dilations}"
    assert rel_bias.dim() == 2 and rel_bias.shape[0] == H and rel_bias.shape[1] >= 3 and rel_bias.shape[1] % 2, (
        f"rel_bias must be (H={H}, 2R+1) with R >= 1, got {tuple(rel_bias.shape)}"
    )
    if query_positions is None:  # banded: query i sits at i, in every sample
        query_positions = torch.arange(n_q, dtype=torch.int32, device=q.device).expand(q.shape[0], n_q)
    else:
        assert query_positions.shape == (q.shape[0], n_q), tuple(query_positions.shape)
        query_positions = query_positions.to(torch.int32).contiguous()
    return dict(
        RelBias=rel_bias.float().contiguous(), QueryPos=query_positions, reach=reach(rel_bias),
        stride_pos_b=query_positions.stride(0), HAS_BIAS=True,
    )


def _forward(
    q, k, v, query_pad, key_excluded, col_index, col_valid, w1, dilations, dropout_p, seed, cfg,
    rel_bias=None, query_positions=None,
):
    """Launch fwd_kernel. Returns out (B, H, n_q, D) and the base-2 log-sum-exp (B, H, n_q)."""
    _check_inputs(q, k, v, query_pad, key_excluded, col_index, col_valid, dilations)
    B, H, n_q, D = q.shape
    n_k, n_cols = k.shape[2], col_index.shape[1]
    bias = _bias_args(rel_bias, query_positions, q, dilations)
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    lse = torch.empty((B, H, n_q), dtype=torch.float32, device=q.device)
    work = work_table(n_q, n_k, w1, dilations, cfg.block_m, q.device)
    grid = lambda META: (work.shape[1], B * H)  # noqa: E731
    fwd_kernel[grid](
        q, k, v, out, lse, work, query_pad, key_excluded, col_index, col_valid,
        H, n_q, n_k, n_cols, work.shape[1], w1, D, seed, dropout_p,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2), **bias,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_G=BLOCK_G_TILE, BLOCK_D=max(16, triton.next_power_of_2(D)),
        DROPOUT=dropout_p > 0.0, PRECISION=_dot_precision(q.dtype),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return out, lse


def _backward(
    do, q, k, v, out, lse, query_pad, key_excluded, col_index, col_valid, w1, dilations, dropout_p, seed, cfg,
    rel_bias=None, query_positions=None,
):
    """Launch the backward kernels. Returns dq, dk, dv and d(rel_bias) (None without a bias)."""
    _check_inputs(q, k, v, query_pad, key_excluded, col_index, col_valid, dilations)
    B, H, n_q, D = q.shape
    n_k, n_cols = k.shape[2], col_index.shape[1]
    bias = _bias_args(rel_bias, query_positions, q, dilations)
    q, k, v, do, out = q.contiguous(), k.contiguous(), v.contiguous(), do.contiguous(), out.contiguous()
    assert do.shape == out.shape == q.shape and lse.shape == (B, H, n_q)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    # float32 whatever rel_bias's dtype: it sums B * n * window score gradients by atomics.
    d_rel_bias = None if rel_bias is None else torch.zeros(rel_bias.shape, dtype=torch.float32, device=q.device)
    block_d = max(16, triton.next_power_of_2(D))

    delta = torch.empty((B, H, n_q), dtype=torch.float32, device=q.device)
    grid_rows = lambda META: (triton.cdiv(B * H * n_q, META["BLOCK_M"]),)  # noqa: E731
    bwd_delta_kernel[grid_rows](out, do, delta, B * H * n_q, D, D, BLOCK_M=cfg.block_m, BLOCK_D=block_d)
    common = dict(
        DROPOUT=dropout_p > 0.0, PRECISION=_dot_precision(q.dtype), num_warps=cfg.num_warps, num_stages=cfg.num_stages
    )
    strides = (q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2))

    work_q = work_table(n_q, n_k, w1, dilations, cfg.block_m, q.device)
    grid_q = lambda META: (work_q.shape[1], B * H)  # noqa: E731
    bwd_dq_kernel[grid_q](
        q, k, v, do, dq, lse, delta, work_q, query_pad, key_excluded, col_index, col_valid,
        H, n_q, n_k, n_cols, work_q.shape[1], w1, D, seed, dropout_p, *strides, DRelBias=d_rel_bias, **bias,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_G=BLOCK_G_TILE, BLOCK_D=block_d, **common,
    )
    work_k = work_table(n_k, n_q, w1, dilations, cfg.block_n, q.device)
    grid_k = lambda META: (work_k.shape[1], B * H)  # noqa: E731
    bwd_dkdv_kernel[grid_k](
        q, k, v, do, dk, dv, lse, delta, work_k, query_pad, key_excluded,
        H, n_q, n_k, work_k.shape[1], w1, D, seed, dropout_p, *strides, **bias,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_D=block_d, **common,
    )
    if n_cols:
        # Aim for a few hundred programs; each split walks at least one query block.
        col_tiles = triton.cdiv(n_cols, BLOCK_G_TILE)
        splits = max(1, min(triton.cdiv(n_q, cfg.block_m), triton.cdiv(256, B * H * col_tiles)))
        queries_per_split = triton.cdiv(triton.cdiv(n_q, splits), cfg.block_m) * cfg.block_m
        splits = triton.cdiv(n_q, queries_per_split)
        dk_part = torch.empty((splits, B * H, n_cols, D), dtype=torch.float32, device=q.device)
        dv_part = torch.empty_like(dk_part)
        grid_c = lambda META: (col_tiles, B * H, splits)  # noqa: E731
        bwd_columns_kernel[grid_c](
            q, k, v, do, lse, delta, query_pad, col_index, col_valid, dk_part, dv_part,
            H, n_q, n_k, n_cols, queries_per_split, D, seed, dropout_p, *strides, **bias,
            BLOCK_M=cfg.block_m, BLOCK_G=BLOCK_G_TILE, BLOCK_D=block_d, **common,
        )
        # The band pass left zero rows at the global keys' positions; add the columns' sums
        # there. Empty slots (valid = 0) hold exact zeros, so adding them anywhere is harmless.
        rows = ((torch.arange(B * H, device=q.device) * n_k).view(B, H, 1) + col_index.long()[:, None, :]).flatten()
        dk.view(-1, D).index_add_(0, rows, dk_part.sum(0).flatten(0, 1).to(dk.dtype))
        dv.view(-1, D).index_add_(0, rows, dv_part.sum(0).flatten(0, 1).to(dv.dtype))
    return dq, dk, dv, None if rel_bias is None else d_rel_bias.to(rel_bias.dtype)


_BAND_MASKS = LastBuilt()
_ROW_MASKS = LastBuilt()


def _banded_masks(key_padding_mask: torch.Tensor, is_global: torch.Tensor, columns=None):
    """query_pad, key_excluded, col_index, col_valid for banded attention, built once a forward:
    every layer passes the same mask tensors (LastBuilt), so from the second layer on this is a
    lookup, not four small kernels. columns: the forward's (index, valid) of the global keys;
    without them they are counted here, which on CUDA reads a number back from the GPU."""

    def build():
        glob = is_global & ~key_padding_mask  # padding wins over global
        index, valid = global_columns(glob) if columns is None else columns
        return (
            key_padding_mask.to(torch.int8).contiguous(),
            (key_padding_mask | glob).to(torch.int8).contiguous(),
            index.to(torch.int32).contiguous(),
            valid.to(torch.int8).contiguous(),
        )

    inputs = (key_padding_mask, is_global) + (() if columns is None else tuple(columns))
    return _BAND_MASKS.get(inputs, (), build)


def _global_rows_masks(key_padding_mask: torch.Tensor, num_queries: int):
    """The same four for global rows: no query is padding, padding keys excluded, no columns.
    Built once a forward too."""

    def build():
        B = key_padding_mask.shape[0]
        device = key_padding_mask.device
        return (
            torch.zeros((B, num_queries), dtype=torch.int8, device=device),
            key_padding_mask.to(torch.int8).contiguous(),
            torch.zeros((B, 0), dtype=torch.int32, device=device),
            torch.zeros((B, 0), dtype=torch.int8, device=device),
        )

    return _ROW_MASKS.get((key_padding_mask,), (num_queries,), build)


# ----------------------------------------------------------------------------------------------
# Registered ops, so that torch.compile and export see one opaque call with a known output
# shape (register_fake) and a backward (register_autograd). `config` is a KernelConfig as a list.
# rel_bias is None or (H, 2R+1); the backward ops return its gradient as a fourth tensor, which
# is empty without a bias (a custom op cannot return None).


def _bias_grad_like(rel_bias: torch.Tensor | None, q: torch.Tensor) -> torch.Tensor:
    """The backward ops' fourth output as a fake: d(rel_bias), or an empty tensor."""
    return q.new_empty(0) if rel_bias is None else torch.empty_like(rel_bias)


# The banded ops take the four masks of `_banded_masks` (int8 / int32), built before the call
# once a forward, so that no layer recounts the global keys.


def _banded_body(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, query_pad: torch.Tensor, key_excluded: torch.Tensor,
    col_index: torch.Tensor, col_valid: torch.Tensor, rel_bias: torch.Tensor | None, one_sided_window: int,
    dilation: list[int], dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    masks = (query_pad, key_excluded, col_index, col_valid)
    params = (one_sided_window, tuple(dilation), dropout_p, seed, KernelConfig(*config))
    return _forward(q, k, v, *masks, *params, rel_bias)


_banded_op = torch.library.custom_op("lfcli::triton_banded_attention", _banded_body, mutates_args=())


@_banded_op.register_fake
def _(q, k, v, query_pad, key_excluded, col_index, col_valid, rel_bias, one_sided_window, dilation, dropout_p, seed,
      config):
    return torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("lfcli::triton_banded_attention_backward", mutates_args=())
def _banded_backward_op(
    do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
    query_pad: torch.Tensor, key_excluded: torch.Tensor, col_index: torch.Tensor, col_valid: torch.Tensor,
    rel_bias: torch.Tensor | None, one_sided_window: int, dilation: list[int], dropout_p: float, seed: int,
    config: list[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    masks = (query_pad, key_excluded, col_index, col_valid)
    params = (one_sided_window, tuple(dilation), dropout_p, seed, KernelConfig(*config))
    dq, dk, dv, d_rel_bias = _backward(do, q, k, v, out, lse, *masks, *params, rel_bias)
    return dq, dk, dv, q.new_empty(0) if d_rel_bias is None else d_rel_bias


@_banded_backward_op.register_fake
def _(do, q, k, v, out, lse, query_pad, key_excluded, col_index, col_valid, rel_bias, one_sided_window, dilation,
      dropout_p, seed, config):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), _bias_grad_like(rel_bias, q)


def _banded_setup_context(ctx, inputs, output):
    q, k, v, query_pad, key_excluded, col_index, col_valid, rel_bias, *params = inputs
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, out, lse, query_pad, key_excluded, col_index, col_valid, rel_bias)
    ctx.params = params


def _banded_grad(ctx, grad_out, _grad_lse):
    q, k, v, out, lse, query_pad, key_excluded, col_index, col_valid, rel_bias = ctx.saved_tensors
    dq, dk, dv, d_rel_bias = _banded_backward_op(
        grad_out, q, k, v, out, lse, query_pad, key_excluded, col_index, col_valid, rel_bias, *ctx.params
    )
    d_rel_bias = None if rel_bias is None else d_rel_bias
    return dq, dk, dv, None, None, None, None, d_rel_bias, None, None, None, None, None


_banded_op.register_autograd(_banded_grad, setup_context=_banded_setup_context)


def _global_rows_params(q_global, k_global, key_padding_mask, dropout_p, seed, config):
    """The banded kernels' masks and parameters for global rows: a window wider than both
    sequences puts every key in band, and no key is a column, so the pass is dense and masked."""
    H, G, n = q_global.shape[1], q_global.shape[2], k_global.shape[2]
    masks = _global_rows_masks(key_padding_mask, G)
    return (*masks, max(G, n), (1,) * H, dropout_p, seed, KernelConfig(*config))


def _global_rows_body(
    q_global: torch.Tensor, k_global: torch.Tensor, v_global: torch.Tensor, key_padding_mask: torch.Tensor,
    rel_bias: torch.Tensor | None, positions: torch.Tensor | None, dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    params = _global_rows_params(q_global, k_global, key_padding_mask, dropout_p, seed, config)
    return _forward(q_global, k_global, v_global, *params, rel_bias, positions)


_global_rows_op = torch.library.custom_op("lfcli::triton_global_rows", _global_rows_body, mutates_args=())


@_global_rows_op.register_fake
def _(q_global, k_global, v_global, key_padding_mask, rel_bias, positions, dropout_p, seed, config):
    return torch.empty_like(q_global), q_global.new_empty(q_global.shape[:3], dtype=torch.float32)


@torch.library.custom_op("lfcli::triton_global_rows_backward", mutates_args=())
def _global_rows_backward_op(
    do: torch.Tensor, q_global: torch.Tensor, k_global: torch.Tensor, v_global: torch.Tensor, out: torch.Tensor,
    lse: torch.Tensor, key_padding_mask: torch.Tensor, rel_bias: torch.Tensor | None, positions: torch.Tensor | None,
    dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    params = _global_rows_params(q_global, k_global, key_padding_mask, dropout_p, seed, config)
    dq, dk, dv, d_rel_bias = _backward(do, q_global, k_global, v_global, out, lse, *params, rel_bias, positions)
    return dq, dk, dv, q_global.new_empty(0) if d_rel_bias is None else d_rel_bias


@_global_rows_backward_op.register_fake
def _(do, q_global, k_global, v_global, out, lse, key_padding_mask, rel_bias, positions, dropout_p, seed, config):
    grads = torch.empty_like(q_global), torch.empty_like(k_global), torch.empty_like(v_global)
    return *grads, _bias_grad_like(rel_bias, q_global)


def _global_rows_setup_context(ctx, inputs, output):
    q_global, k_global, v_global, key_padding_mask, rel_bias, positions, *params = inputs
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q_global, k_global, v_global, out, lse, key_padding_mask, rel_bias, positions)
    ctx.params = params


def _global_rows_grad(ctx, grad_out, _grad_lse):
    q_global, k_global, v_global, out, lse, key_padding_mask, rel_bias, positions = ctx.saved_tensors
    dq, dk, dv, d_rel_bias = _global_rows_backward_op(
        grad_out, q_global, k_global, v_global, out, lse, key_padding_mask, rel_bias, positions, *ctx.params
    )
    d_rel_bias = None if rel_bias is None else d_rel_bias
    return dq, dk, dv, None, d_rel_bias, None, None, None, None


_global_rows_op.register_autograd(_global_rows_grad, setup_context=_global_rows_setup_context)


# ----------------------------------------------------------------------------------------------
# Public entry points.


def _through_op(*tensors: torch.Tensor | None) -> bool:
    """Whether a call goes through the registered op: where autograd or torch.compile must see
    it. An inference call outside a compiler runs the op's body directly, the same function:
    the op's dispatch imports torch._dynamo on its first call (3.6 s of a process start on an
    H200 host, 2026-11-28, out of a 10.5 s start) and adds host time to every layer."""
    if torch.compiler.is_compiling():
        return True
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _dropout_seed(dropout_p: float) -> int:
    # Drawn from torch's default generator, so torch.manual_seed makes a run repeatable.
    return int(torch.randint(2**62, (1,)).item()) if dropout_p > 0.0 else 0


def triton_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    one_sided_window: int,
    key_padding_mask: torch.Tensor,
    is_global: torch.Tensor,
    dilation: torch.Tensor,
    dropout_p: float = 0.0,
    *,
    rel_bias: torch.Tensor | None = None,
    config: KernelConfig | None = None,
    columns: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Same contract as `reference_attention`: q, k, v (B, H, n, D), q scaled; masks (B, n)
    bool (True = padding / global); dilation (H,) ints; rel_bias None or (H, 2R+1), the score
    bias by key-minus-query offset (dilation 1 only); columns, optional: the forward's
    (global_index, global_valid) (see attention.banded_attention). Returns (B, H, n, D),
    differentiable in q, k, v and rel_bias. config overrides the block sizes (the tests use
    small blocks); otherwise inference on a GPU takes the tuned ones (kernels/triton_tune.py)
    and training `kernel_config`'s."""
    dilations = [int(d) for d in torch.as_tensor(dilation).flatten().tolist()]
    masks = _banded_masks(key_padding_mask.bool(), is_global.bool(), columns)
    seed = _dropout_seed(dropout_p)
    params = (int(one_sided_window), dilations, float(dropout_p), seed)
    banded = _banded_op if _through_op(q, k, v, rel_bias) else _banded_body
    if config is None:
        config = tuned_config(
            q, rel_bias, dilations, lambda cfg: banded(q, k, v, *masks, rel_bias, *params, list(cfg)),
            int(one_sided_window),
        )
    out, _ = banded(q, k, v, *masks, rel_bias, *params, list(config))
    return out


def triton_global_rows(
    q_global: torch.Tensor,
    k_global: torch.Tensor,
    v_global: torch.Tensor,
    key_padding_mask: torch.Tensor,
    dropout_p: float = 0.0,
    *,
    rel_bias: torch.Tensor | None = None,
    positions: torch.Tensor | None = None,
    config: KernelConfig | None = None,
) -> torch.Tensor:
    """Same contract as `reference_global_rows`: global queries (B, H, G, D), scaled, attend to
    every non-padding key of k_global, v_global (B, H, n, D); with rel_bias (H, 2R+1), positions
    (B, G) are the global queries' positions, and key j gets the bias of j - position.
    Returns (B, H, G, D), differentiable in q_global, k_global, v_global and rel_bias."""
    if rel_bias is not None and positions is None:
        raise ValueError("a relative position bias needs the global queries' positions")
    G = q_global.shape[2]
    if G == 0:
        return q_global.clone()
    # Usually a handful of global queries: a 64-row block would be mostly empty rows.
    config = config or kernel_config(q_global.shape[-1])._replace(block_m=min(64, max(16, triton.next_power_of_2(G))))
    rows = _global_rows_op if _through_op(q_global, k_global, v_global, rel_bias) else _global_rows_body
    out, _ = rows(
        q_global, k_global, v_global, key_padding_mask.bool(), rel_bias, positions,
        float(dropout_p), _dropout_seed(dropout_p), list(config),
    )
    return out
