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

Kernel family (all launched by `_forward` / `_backward`):
  _fwd_kernel          out and log-sum-exp, one program per query block
  _bwd_delta_kernel    rowsum(dO * O), the softmax backward's correction, one float per row
  _bwd_dq_kernel       dQ, one program per query block (band keys + global columns)
  _bwd_dkdv_kernel     dK, dV of band keys, one program per key block
  _bwd_columns_kernel  dK, dV of the global columns: every query reaches them, so each
                       program reduces one slice of the queries into a partial sum, and the
                       partial sums are added on the host (no atomics)

Importing this module imports triton; `attention.py` imports it lazily, so the CPU backends
never need triton. Set TRITON_INTERPRET=1 before this module is imported to run the kernels
on CPU tensors in Triton's interpreter (how the tests run them).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .chunked import global_columns

_LOG2E = tl.constexpr(1.4426950408889634)  # scores are kept in base-2 units: exp2 is one instruction


# ----------------------------------------------------------------------------------------------
# Planning on the host: which blocks each program visits, and with which block sizes.


def band_block_ranges(length: int, block: int, one_sided_window: int, other_length: int | None = None) -> torch.Tensor:
    """The band bounds: what each block of `block` positions must visit on the other side.

    Positions [0, length) are cut into blocks; block b starts at b * block. Position t's band
    is [t - w1, t + w1]. Returns a (num_blocks, 3) long tensor of (start, lo, hi): the other
    side's positions [lo, hi) are exactly those in the band of at least one position of the
    block, clipped to [0, other_length) (default: length). The band is symmetric, so the same
    function gives a query block's keys and a key block's queries.
    """
    other_length = length if other_length is None else other_length
    start = torch.arange(0, length, block, dtype=torch.long)
    last = (start + block).clamp(max=length) - 1  # the tail block may be short
    lo = (start - one_sided_window).clamp(min=0, max=other_length)
    hi = (last + one_sided_window + 1).clamp(max=other_length)
    return torch.stack([start, lo, torch.maximum(hi, lo)], dim=1)


class WorkEfficiency(NamedTuple):
    blocks: float  # key blocks holding at least one in-band key / key blocks visited
    scores: float  # score elements the band needs / score elements computed (whole tiles)


def work_efficiency(n: int, window: int, block_m: int, block_n: int, dilation: int = 1) -> WorkEfficiency:
    """How much of the forward pass's work is useful, for one head.

    window is the full attention window (transformers' convention, w1 = window // 2). Both
    figures are fractions, 1.0 meaning no wasted work: the band of a query block of block_m
    rows spans block_m + 2*w1 keys, visited in tiles of block_n, while each query needs only
    its own 2*w1 + 1, so scores -> (2*w1 + 1) / (block_m + 2*w1) for long sequences.
    """
    w1 = window // 2
    visited = useful = computed = needed = 0
    for residue in range(min(dilation, n)):
        length = -(-(n - residue) // dilation)
        for start, lo, hi in band_block_ranges(length, block_m, w1).tolist():
            rows_end = min(start + block_m, length)  # real query rows are [start, rows_end)
            for tile in range(lo, hi, block_n):
                tile_end = min(tile + block_n, hi)
                visited += 1
                useful += tile <= rows_end - 1 + w1 and tile_end - 1 >= start - w1
                computed += block_m * block_n
            for i in range(start, rows_end):
                needed += min(length, i + w1 + 1) - max(0, i - w1)
    return WorkEfficiency(useful / max(visited, 1), needed / max(computed, 1))


class KernelConfig(NamedTuple):
    block_m: int  # query rows per program (and per tile of the key-block programs)
    block_n: int  # key rows per tile (and per key-block program)
    num_warps: int
    num_stages: int


def kernel_config(head_dim: int) -> KernelConfig:
    """Block sizes per head dim, chosen for Ampere/Hopper (A100: 164 KB shared memory per SM,
    H100: 228 KB; 64K 32-bit registers per SM; not yet tuned on hardware).

    block_m = 64 everywhere: a query block's band covers block_m + 2*w1 keys of which each row
    needs 2*w1 + 1, so 64 rows keep >= 80% of the scores useful from window 256 up (128 rows
    would drop window 512 to 80% and window 256 to 67%; see `work_efficiency`).
    block_n = 64 up to head dim 64: 4 warps hold the 64 x 64 fp32 score tile and a 64 x 64
    accumulator in ~64 registers per thread, and 3 stages of K and V tiles (48 KB in fp16)
    hide the load latency. Head dim 128 halves block_n: the dK/dV program keeps two
    block_n x 128 fp32 accumulators, which at 64 rows would need ~128 registers per thread
    for the accumulators alone and spill.
    """
    if head_dim <= 64:
        return KernelConfig(block_m=64, block_n=64, num_warps=4, num_stages=3)
    return KernelConfig(block_m=64, block_n=32, num_warps=4, num_stages=2)


_BLOCK_G = 16  # global columns per tile: the smallest tile tl.dot takes; most inputs have 1-64


@functools.lru_cache(maxsize=64)
def _work_table(
    n_own: int, n_other: int, one_sided_window: int, dilations: tuple[int, ...], block: int, device: torch.device
) -> torch.Tensor:
    """The programs' work list: (H, P, 6) int32, row (h, p) = what program p of head h does.

    Columns: residue, dilation, own_len (positions in this residue's sub-sequence), start (of the
    program's block, a sub-sequence index), lo, hi (the other side's sub-sequence indices to
    visit, from `band_block_ranges`). Heads whose dilation needs fewer programs get all-zero
    rows, which own no positions and visit nothing.
    """
    per_dilation = {}
    for d in set(dilations):
        rows = []
        for residue in range(min(d, n_own)):
            own_len = -(-(n_own - residue) // d)
            other_len = -(-(n_other - residue) // d) if n_other > residue else 0
            ranges = band_block_ranges(own_len, block, one_sided_window, other_len)
            fixed = torch.tensor([residue, d, own_len]).expand(len(ranges), 3)
            rows.append(torch.cat([fixed, ranges], dim=1))
        per_dilation[d] = torch.cat(rows) if rows else torch.zeros(0, 6, dtype=torch.long)
    num_programs = max(1, max(len(rows) for rows in per_dilation.values()))
    table = torch.zeros(len(dilations), num_programs, 6, dtype=torch.int32)
    for h, d in enumerate(dilations):
        table[h, : len(per_dilation[d])] = per_dilation[d].to(torch.int32)
    return table.to(device)


# ----------------------------------------------------------------------------------------------
# Kernels. Query-side tensors (q, out, do, dq) share one (B, H, n_q, D) layout and key-side
# tensors (k, v, dk, dv) another, both with unit stride along D (the launcher makes them
# contiguous). Masks are int8 (B, n); the log-sum-exp and delta rows are float32 (B*H, n_q).


@triton.jit
def _work_item(Work, head, num_programs, program):
    row = Work + (head * num_programs + program) * 6
    return tl.load(row), tl.load(row + 1), tl.load(row + 2), tl.load(row + 3), tl.load(row + 4), tl.load(row + 5)


@triton.jit
def _keep(seed, row_offsets, pos_n, dropout_p):
    # One Philox draw per (batch*head, query position, key position): the backward kernels
    # regenerate the forward's dropout mask instead of storing it.
    return tl.rand(seed, row_offsets[:, None] + pos_n[None, :]) >= dropout_p


@triton.jit
def _softmax_tile(acc, m_i, l_i, q, k, v, ok, seed, row_offsets, pos_n, dropout_p,
                  DROPOUT: tl.constexpr, PRECISION: tl.constexpr):
    """One step of the online softmax over a (BLOCK_M, tile) score tile; ok masks the tile."""
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * _LOG2E
    s = tl.where(ok, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)  # rescales what was accumulated under the old running max
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)  # the normaliser counts every kept key, dropped or not
    if DROPOUT:
        p = tl.where(_keep(seed, row_offsets, pos_n, dropout_p), p / (1.0 - dropout_p), 0.0)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return acc, m_new, l_i


@triton.jit
def _grad_tile(q, k, v, do, lse, delta, ok, seed, row_offsets, pos_n, dropout_p,
               DROPOUT: tl.constexpr, PRECISION: tl.constexpr):
    """Probabilities (after dropout, for dV) and score gradients (for dQ, dK) of one tile."""
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * _LOG2E
    p = tl.where(ok, tl.exp2(s - lse[:, None]), 0.0)
    dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
    if DROPOUT:
        keep = _keep(seed, row_offsets, pos_n, dropout_p)
        p_out = tl.where(keep, p / (1.0 - dropout_p), 0.0)
        dp = tl.where(keep, dp / (1.0 - dropout_p), 0.0)
    else:
        p_out = p
    # softmax backward: ds = p * (dp - sum_j p_j dp_j), and that sum is rowsum(dO * O) = delta
    return p_out, p * (dp - delta[:, None])


@triton.jit
def _fwd_kernel(
    Q, K, V, Out, Lse, Work, QueryPad, KeyExcluded, ColIndex, ColValid,
    num_heads, n_q, n_k, n_cols, num_programs, one_sided_window, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
):
    bh = tl.program_id(1)
    b, h = bh // num_heads, bh % num_heads
    residue, dilation, own_len, start, lo, hi = _work_item(Work, h, num_programs, tl.program_id(0))
    q_base = b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh  # int64: B*H*n*D may pass 2^31
    k_base = b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    offs_d = tl.arange(0, BLOCK_D)
    d_in = offs_d < head_dim  # head dims that are not a power of two are padded to BLOCK_D

    t_m = start + tl.arange(0, BLOCK_M)  # sub-sequence indices of this block's queries
    m_in = t_m < own_len
    pos_m = residue + t_m * dilation
    row_ok = m_in & (tl.load(QueryPad + b * n_q + pos_m, mask=m_in, other=1) == 0)
    q_mask = m_in[:, None] & d_in[None, :]
    q_offsets = q_base + pos_m[:, None] * stride_qn + offs_d[None, :]
    q = tl.load(Q + q_offsets, mask=q_mask, other=0.0)
    row_offsets = (bh.to(tl.int64) * n_q + pos_m) * n_k

    # Running max starts finite, so a row that has seen no valid key yet keeps alpha = 1
    # instead of exp2(-inf - -inf) = NaN.
    m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)

    for k_start in range(lo, hi, BLOCK_N):  # only the key tiles the band reaches
        t_n = k_start + tl.arange(0, BLOCK_N)
        n_in = t_n < hi
        pos_n = residue + t_n * dilation
        excluded = tl.load(KeyExcluded + b * n_k + pos_n, mask=n_in, other=1)  # padding or global
        kv_mask = n_in[:, None] & d_in[None, :]
        k = tl.load(K + k_base + pos_n[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + k_base + pos_n[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        rel = t_m[:, None] - t_n[None, :]
        ok = (rel <= one_sided_window) & (rel >= -one_sided_window) & (excluded == 0)[None, :]
        acc, m_i, l_i = _softmax_tile(acc, m_i, l_i, q, k, v, ok, seed, row_offsets, pos_n, dropout_p,
                                      DROPOUT, PRECISION)

    for g_start in range(0, n_cols, BLOCK_G):  # global columns: every query sees them
        g = g_start + tl.arange(0, BLOCK_G)
        g_in = g < n_cols
        valid = tl.load(ColValid + b * n_cols + g, mask=g_in, other=0)  # samples differ in count
        pos_g = tl.load(ColIndex + b * n_cols + g, mask=g_in, other=0)
        kv_mask = g_in[:, None] & d_in[None, :]
        k = tl.load(K + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        ok = (valid != 0)[None, :] & m_in[:, None]
        acc, m_i, l_i = _softmax_tile(acc, m_i, l_i, q, k, v, ok, seed, row_offsets, pos_g, dropout_p,
                                      DROPOUT, PRECISION)

    l_safe = tl.where(l_i > 0.0, l_i, 1.0)
    out = tl.where(row_ok[:, None], acc / l_safe[:, None], 0.0)  # padded query rows are zero
    tl.store(Out + q_offsets, out.to(Out.dtype.element_ty), mask=q_mask)
    tl.store(Lse + bh * n_q + pos_m, tl.where(row_ok, m_i + tl.log2(l_safe), 0.0), mask=m_in)


@triton.jit
def _bwd_delta_kernel(Out, DO, Delta, num_rows, head_dim, stride_row, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    # Out and DO seen as (B*H*n_q, D) rows. Fused so that neither goes through float32 copies.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (rows < num_rows)[:, None] & (offs_d < head_dim)[None, :]
    offsets = rows.to(tl.int64)[:, None] * stride_row + offs_d[None, :]
    o = tl.load(Out + offsets, mask=mask, other=0.0).to(tl.float32)
    do = tl.load(DO + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(Delta + rows, tl.sum(o * do, 1), mask=rows < num_rows)


@triton.jit
def _bwd_dq_kernel(
    Q, K, V, DO, DQ, Lse, Delta, Work, QueryPad, KeyExcluded, ColIndex, ColValid,
    num_heads, n_q, n_k, n_cols, num_programs, one_sided_window, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
):
    # Same walk as _fwd_kernel; the probabilities come back from the saved log-sum-exp.
    bh = tl.program_id(1)
    b, h = bh // num_heads, bh % num_heads
    residue, dilation, own_len, start, lo, hi = _work_item(Work, h, num_programs, tl.program_id(0))
    q_base = b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    offs_d = tl.arange(0, BLOCK_D)
    d_in = offs_d < head_dim

    t_m = start + tl.arange(0, BLOCK_M)
    m_in = t_m < own_len
    pos_m = residue + t_m * dilation
    row_ok = m_in & (tl.load(QueryPad + b * n_q + pos_m, mask=m_in, other=1) == 0)
    q_mask = m_in[:, None] & d_in[None, :]
    q_offsets = q_base + pos_m[:, None] * stride_qn + offs_d[None, :]
    q = tl.load(Q + q_offsets, mask=q_mask, other=0.0)
    do = tl.load(DO + q_offsets, mask=q_mask, other=0.0)
    lse = tl.load(Lse + bh * n_q + pos_m, mask=m_in, other=0.0)
    delta = tl.load(Delta + bh * n_q + pos_m, mask=m_in, other=0.0)
    row_offsets = (bh.to(tl.int64) * n_q + pos_m) * n_k
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)

    for k_start in range(lo, hi, BLOCK_N):
        t_n = k_start + tl.arange(0, BLOCK_N)
        n_in = t_n < hi
        pos_n = residue + t_n * dilation
        excluded = tl.load(KeyExcluded + b * n_k + pos_n, mask=n_in, other=1)
        kv_mask = n_in[:, None] & d_in[None, :]
        k = tl.load(K + k_base + pos_n[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + k_base + pos_n[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        rel = t_m[:, None] - t_n[None, :]
        ok = (rel <= one_sided_window) & (rel >= -one_sided_window) & (excluded == 0)[None, :] & row_ok[:, None]
        _, ds = _grad_tile(q, k, v, do, lse, delta, ok, seed, row_offsets, pos_n, dropout_p, DROPOUT, PRECISION)
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)

    for g_start in range(0, n_cols, BLOCK_G):
        g = g_start + tl.arange(0, BLOCK_G)
        g_in = g < n_cols
        valid = tl.load(ColValid + b * n_cols + g, mask=g_in, other=0)
        pos_g = tl.load(ColIndex + b * n_cols + g, mask=g_in, other=0)
        kv_mask = g_in[:, None] & d_in[None, :]
        k = tl.load(K + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        ok = (valid != 0)[None, :] & row_ok[:, None]
        _, ds = _grad_tile(q, k, v, do, lse, delta, ok, seed, row_offsets, pos_g, dropout_p, DROPOUT, PRECISION)
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)

    tl.store(DQ + q_offsets, dq.to(DQ.dtype.element_ty), mask=q_mask)


@triton.jit
def _bwd_dkdv_kernel(
    Q, K, V, DO, DK, DV, Lse, Delta, Work, QueryPad, KeyExcluded,
    num_heads, n_q, n_k, num_programs, one_sided_window, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
):
    # A block of band keys against the query tiles whose band reaches it (the work table is
    # built over keys). Global keys are excluded here and get zero rows; _bwd_columns_kernel
    # supplies their gradients.
    bh = tl.program_id(1)
    b, h = bh // num_heads, bh % num_heads
    residue, dilation, own_len, start, lo, hi = _work_item(Work, h, num_programs, tl.program_id(0))
    q_base = b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    offs_d = tl.arange(0, BLOCK_D)
    d_in = offs_d < head_dim

    t_n = start + tl.arange(0, BLOCK_N)
    n_in = t_n < own_len
    pos_n = residue + t_n * dilation
    key_ok = n_in & (tl.load(KeyExcluded + b * n_k + pos_n, mask=n_in, other=1) == 0)
    kv_mask = n_in[:, None] & d_in[None, :]
    kv_offsets = k_base + pos_n[:, None] * stride_kn + offs_d[None, :]
    k = tl.load(K + kv_offsets, mask=kv_mask, other=0.0)
    v = tl.load(V + kv_offsets, mask=kv_mask, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)

    for q_start in range(lo, hi, BLOCK_M):
        t_m = q_start + tl.arange(0, BLOCK_M)
        m_in = t_m < hi
        pos_m = residue + t_m * dilation
        row_ok = m_in & (tl.load(QueryPad + b * n_q + pos_m, mask=m_in, other=1) == 0)
        q_mask = m_in[:, None] & d_in[None, :]
        q = tl.load(Q + q_base + pos_m[:, None] * stride_qn + offs_d[None, :], mask=q_mask, other=0.0)
        do = tl.load(DO + q_base + pos_m[:, None] * stride_qn + offs_d[None, :], mask=q_mask, other=0.0)
        lse = tl.load(Lse + bh * n_q + pos_m, mask=m_in, other=0.0)
        delta = tl.load(Delta + bh * n_q + pos_m, mask=m_in, other=0.0)
        rel = t_m[:, None] - t_n[None, :]
        ok = (rel <= one_sided_window) & (rel >= -one_sided_window) & row_ok[:, None] & key_ok[None, :]
        row_offsets = (bh.to(tl.int64) * n_q + pos_m) * n_k
        p, ds = _grad_tile(q, k, v, do, lse, delta, ok, seed, row_offsets, pos_n, dropout_p, DROPOUT, PRECISION)
        dv += tl.dot(tl.trans(p).to(do.dtype), do, input_precision=PRECISION)
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision=PRECISION)

    tl.store(DK + kv_offsets, dk.to(DK.dtype.element_ty), mask=kv_mask)
    tl.store(DV + kv_offsets, dv.to(DV.dtype.element_ty), mask=kv_mask)


@triton.jit
def _bwd_columns_kernel(
    Q, K, V, DO, Lse, Delta, QueryPad, ColIndex, ColValid, DKPartial, DVPartial,
    num_heads, n_q, n_k, n_cols, queries_per_split, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    BLOCK_M: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
):
    # Grid (column tiles, B*H, splits): split s reduces queries [s, s + 1) * queries_per_split
    # into its own slot of the float32 partial sums (splits, B*H, n_cols, D), which the
    # launcher adds up; splitting keeps the GPU busy when B*H*columns is small.
    bh = tl.program_id(1)
    b, h = bh // num_heads, bh % num_heads
    split = tl.program_id(2)
    q_base = b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    offs_d = tl.arange(0, BLOCK_D)
    d_in = offs_d < head_dim

    g = tl.program_id(0) * BLOCK_G + tl.arange(0, BLOCK_G)
    g_in = g < n_cols
    valid = tl.load(ColValid + b * n_cols + g, mask=g_in, other=0)
    pos_g = tl.load(ColIndex + b * n_cols + g, mask=g_in, other=0)
    kv_mask = g_in[:, None] & d_in[None, :]
    k = tl.load(K + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
    v = tl.load(V + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
    dk = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)

    first = split * queries_per_split
    for q_start in range(first, tl.minimum(first + queries_per_split, n_q), BLOCK_M):
        pos_m = q_start + tl.arange(0, BLOCK_M)  # plain positions: every residue sees the columns
        m_in = pos_m < n_q
        row_ok = m_in & (tl.load(QueryPad + b * n_q + pos_m, mask=m_in, other=1) == 0)
        q_mask = m_in[:, None] & d_in[None, :]
        q = tl.load(Q + q_base + pos_m[:, None] * stride_qn + offs_d[None, :], mask=q_mask, other=0.0)
        do = tl.load(DO + q_base + pos_m[:, None] * stride_qn + offs_d[None, :], mask=q_mask, other=0.0)
        lse = tl.load(Lse + bh * n_q + pos_m, mask=m_in, other=0.0)
        delta = tl.load(Delta + bh * n_q + pos_m, mask=m_in, other=0.0)
        ok = row_ok[:, None] & (valid != 0)[None, :]
        row_offsets = (bh.to(tl.int64) * n_q + pos_m) * n_k
        p, ds = _grad_tile(q, k, v, do, lse, delta, ok, seed, row_offsets, pos_g, dropout_p, DROPOUT, PRECISION)
        dv += tl.dot(tl.trans(p).to(do.dtype), do, input_precision=PRECISION)
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision=PRECISION)

    partial = ((split * tl.num_programs(1) + bh) * n_cols + g[:, None]) * head_dim + offs_d[None, :]
    tl.store(DKPartial + partial, dk, mask=kv_mask)
    tl.store(DVPartial + partial, dv, mask=kv_mask)


# ----------------------------------------------------------------------------------------------
# Launchers. `query_pad` marks query rows whose output is zero; `key_excluded` marks keys left
# out of the band (padding, and global keys, which come back as columns).


def _dot_precision(dtype: torch.dtype) -> str:
    # fp32 inputs follow PyTorch's own switch (TF32 off by default), so the kernels are as
    # exact as a plain fp32 matmul; half inputs ignore the flag.
    return "tf32" if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 else "ieee"


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


def _forward(q, k, v, query_pad, key_excluded, col_index, col_valid, w1, dilations, dropout_p, seed, cfg):
    """Launch _fwd_kernel. Returns out (B, H, n_q, D) and the base-2 log-sum-exp (B, H, n_q)."""
    _check_inputs(q, k, v, query_pad, key_excluded, col_index, col_valid, dilations)
    B, H, n_q, D = q.shape
    n_k, n_cols = k.shape[2], col_index.shape[1]
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    lse = torch.empty((B, H, n_q), dtype=torch.float32, device=q.device)
    work = _work_table(n_q, n_k, w1, dilations, cfg.block_m, q.device)
    grid = lambda META: (work.shape[1], B * H)  # noqa: E731
    _fwd_kernel[grid](
        q, k, v, out, lse, work, query_pad, key_excluded, col_index, col_valid,
        H, n_q, n_k, n_cols, work.shape[1], w1, D, seed, dropout_p,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_G=_BLOCK_G, BLOCK_D=max(16, triton.next_power_of_2(D)),
        DROPOUT=dropout_p > 0.0, PRECISION=_dot_precision(q.dtype),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return out, lse


def _backward(
    do, q, k, v, out, lse, query_pad, key_excluded, col_index, col_valid, w1, dilations, dropout_p, seed, cfg
):
    """Launch the backward kernels. Returns dq, dk, dv."""
    _check_inputs(q, k, v, query_pad, key_excluded, col_index, col_valid, dilations)
    B, H, n_q, D = q.shape
    n_k, n_cols = k.shape[2], col_index.shape[1]
    q, k, v, do, out = q.contiguous(), k.contiguous(), v.contiguous(), do.contiguous(), out.contiguous()
    assert do.shape == out.shape == q.shape and lse.shape == (B, H, n_q)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    block_d = max(16, triton.next_power_of_2(D))

    delta = torch.empty((B, H, n_q), dtype=torch.float32, device=q.device)
    grid_rows = lambda META: (triton.cdiv(B * H * n_q, META["BLOCK_M"]),)  # noqa: E731
    _bwd_delta_kernel[grid_rows](out, do, delta, B * H * n_q, D, D, BLOCK_M=cfg.block_m, BLOCK_D=block_d)
    common = dict(
        DROPOUT=dropout_p > 0.0, PRECISION=_dot_precision(q.dtype), num_warps=cfg.num_warps, num_stages=cfg.num_stages
    )
    strides = (q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2))

    work_q = _work_table(n_q, n_k, w1, dilations, cfg.block_m, q.device)
    grid_q = lambda META: (work_q.shape[1], B * H)  # noqa: E731
    _bwd_dq_kernel[grid_q](
        q, k, v, do, dq, lse, delta, work_q, query_pad, key_excluded, col_index, col_valid,
        H, n_q, n_k, n_cols, work_q.shape[1], w1, D, seed, dropout_p, *strides,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_G=_BLOCK_G, BLOCK_D=block_d, **common,
    )
    work_k = _work_table(n_k, n_q, w1, dilations, cfg.block_n, q.device)
    grid_k = lambda META: (work_k.shape[1], B * H)  # noqa: E731
    _bwd_dkdv_kernel[grid_k](
        q, k, v, do, dk, dv, lse, delta, work_k, query_pad, key_excluded,
        H, n_q, n_k, work_k.shape[1], w1, D, seed, dropout_p, *strides,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_D=block_d, **common,
    )
    if n_cols:
        # Aim for a few hundred programs; each split walks at least one query block.
        col_tiles = triton.cdiv(n_cols, _BLOCK_G)
        splits = max(1, min(triton.cdiv(n_q, cfg.block_m), triton.cdiv(256, B * H * col_tiles)))
        queries_per_split = triton.cdiv(triton.cdiv(n_q, splits), cfg.block_m) * cfg.block_m
        splits = triton.cdiv(n_q, queries_per_split)
        dk_part = torch.empty((splits, B * H, n_cols, D), dtype=torch.float32, device=q.device)
        dv_part = torch.empty_like(dk_part)
        grid_c = lambda META: (col_tiles, B * H, splits)  # noqa: E731
        _bwd_columns_kernel[grid_c](
            q, k, v, do, lse, delta, query_pad, col_index, col_valid, dk_part, dv_part,
            H, n_q, n_k, n_cols, queries_per_split, D, seed, dropout_p, *strides,
            BLOCK_M=cfg.block_m, BLOCK_G=_BLOCK_G, BLOCK_D=block_d, **common,
        )
        # The band pass left zero rows at the global keys' positions; add the columns' sums
        # there. Empty slots (valid = 0) hold exact zeros, so adding them anywhere is harmless.
        rows = ((torch.arange(B * H, device=q.device) * n_k).view(B, H, 1) + col_index.long()[:, None, :]).flatten()
        dk.view(-1, D).index_add_(0, rows, dk_part.sum(0).flatten(0, 1).to(dk.dtype))
        dv.view(-1, D).index_add_(0, rows, dv_part.sum(0).flatten(0, 1).to(dv.dtype))
    return dq, dk, dv


def _banded_masks(key_padding_mask: torch.Tensor, is_global: torch.Tensor):
    """query_pad, key_excluded, col_index, col_valid for banded attention."""
    is_global = is_global & ~key_padding_mask  # padding wins over global
    index, valid = global_columns(is_global)
    return (
        key_padding_mask.to(torch.int8).contiguous(),
        (key_padding_mask | is_global).to(torch.int8).contiguous(),
        index.to(torch.int32).contiguous(),
        valid.to(torch.int8).contiguous(),
    )


def _global_rows_masks(key_padding_mask: torch.Tensor, num_queries: int):
    """The same four for global rows: no query is padding, padding keys excluded, no columns."""
    B = key_padding_mask.shape[0]
    device = key_padding_mask.device
    return (
        torch.zeros((B, num_queries), dtype=torch.int8, device=device),
        key_padding_mask.to(torch.int8).contiguous(),
        torch.zeros((B, 0), dtype=torch.int32, device=device),
        torch.zeros((B, 0), dtype=torch.int8, device=device),
    )


# ----------------------------------------------------------------------------------------------
# Registered ops, so that torch.compile and export see one opaque call with a known output
# shape (register_fake) and a backward (register_autograd). `config` is a KernelConfig as a list.


@torch.library.custom_op("lfcli::triton_banded_attention", mutates_args=())
def _banded_op(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor, is_global: torch.Tensor,
    one_sided_window: int, dilation: list[int], dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    masks = _banded_masks(key_padding_mask, is_global)
    return _forward(q, k, v, *masks, one_sided_window, tuple(dilation), dropout_p, seed, KernelConfig(*config))


@_banded_op.register_fake
def _(q, k, v, key_padding_mask, is_global, one_sided_window, dilation, dropout_p, seed, config):
    return torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("lfcli::triton_banded_attention_backward", mutates_args=())
def _banded_backward_op(
    do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
    key_padding_mask: torch.Tensor, is_global: torch.Tensor,
    one_sided_window: int, dilation: list[int], dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    masks = _banded_masks(key_padding_mask, is_global)
    params = (one_sided_window, tuple(dilation), dropout_p, seed, KernelConfig(*config))
    return _backward(do, q, k, v, out, lse, *masks, *params)


@_banded_backward_op.register_fake
def _(do, q, k, v, out, lse, key_padding_mask, is_global, one_sided_window, dilation, dropout_p, seed, config):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _banded_setup_context(ctx, inputs, output):
    q, k, v, key_padding_mask, is_global, *params = inputs
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, out, lse, key_padding_mask, is_global)
    ctx.params = params


def _banded_grad(ctx, grad_out, _grad_lse):
    q, k, v, out, lse, key_padding_mask, is_global = ctx.saved_tensors
    dq, dk, dv = _banded_backward_op(grad_out, q, k, v, out, lse, key_padding_mask, is_global, *ctx.params)
    return dq, dk, dv, None, None, None, None, None, None, None


_banded_op.register_autograd(_banded_grad, setup_context=_banded_setup_context)


@torch.library.custom_op("lfcli::triton_global_rows", mutates_args=())
def _global_rows_op(
    q_global: torch.Tensor, k_global: torch.Tensor, v_global: torch.Tensor, key_padding_mask: torch.Tensor,
    dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    H, G, n = q_global.shape[1], q_global.shape[2], k_global.shape[2]
    masks = _global_rows_masks(key_padding_mask, G)
    # A window wider than both sequences makes every key in band: a dense masked pass.
    return _forward(q_global, k_global, v_global, *masks, max(G, n), (1,) * H, dropout_p, seed, KernelConfig(*config))


@_global_rows_op.register_fake
def _(q_global, k_global, v_global, key_padding_mask, dropout_p, seed, config):
    return torch.empty_like(q_global), q_global.new_empty(q_global.shape[:3], dtype=torch.float32)


@torch.library.custom_op("lfcli::triton_global_rows_backward", mutates_args=())
def _global_rows_backward_op(
    do: torch.Tensor, q_global: torch.Tensor, k_global: torch.Tensor, v_global: torch.Tensor, out: torch.Tensor,
    lse: torch.Tensor, key_padding_mask: torch.Tensor, dropout_p: float, seed: int, config: list[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    H, G, n = q_global.shape[1], q_global.shape[2], k_global.shape[2]
    masks = _global_rows_masks(key_padding_mask, G)
    params = (max(G, n), (1,) * H, dropout_p, seed, KernelConfig(*config))
    return _backward(do, q_global, k_global, v_global, out, lse, *masks, *params)


@_global_rows_backward_op.register_fake
def _(do, q_global, k_global, v_global, out, lse, key_padding_mask, dropout_p, seed, config):
    return torch.empty_like(q_global), torch.empty_like(k_global), torch.empty_like(v_global)


def _global_rows_setup_context(ctx, inputs, output):
    q_global, k_global, v_global, key_padding_mask, *params = inputs
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q_global, k_global, v_global, out, lse, key_padding_mask)
    ctx.params = params


def _global_rows_grad(ctx, grad_out, _grad_lse):
    q_global, k_global, v_global, out, lse, key_padding_mask = ctx.saved_tensors
    dq, dk, dv = _global_rows_backward_op(
        grad_out, q_global, k_global, v_global, out, lse, key_padding_mask, *ctx.params
    )
    return dq, dk, dv, None, None, None, None


_global_rows_op.register_autograd(_global_rows_grad, setup_context=_global_rows_setup_context)


# ----------------------------------------------------------------------------------------------
# Public entry points.


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
    config: KernelConfig | None = None,
) -> torch.Tensor:
    """Same contract as `reference_attention`: q, k, v (B, H, n, D), q scaled; masks (B, n)
    bool (True = padding / global); dilation (H,) ints. Returns (B, H, n, D), differentiable.
    config overrides the block sizes of `kernel_config` (the tests use small blocks)."""
    config = config or kernel_config(q.shape[-1])
    dilations = [int(d) for d in torch.as_tensor(dilation).flatten().tolist()]
    out, _ = _banded_op(
        q, k, v, key_padding_mask.bool(), is_global.bool(), int(one_sided_window), dilations,
        float(dropout_p), _dropout_seed(dropout_p), list(config),
    )
    return out


def triton_global_rows(
    q_global: torch.Tensor,
    k_global: torch.Tensor,
    v_global: torch.Tensor,
    key_padding_mask: torch.Tensor,
    dropout_p: float = 0.0,
    *,
    config: KernelConfig | None = None,
) -> torch.Tensor:
    """Same contract as `reference_global_rows`: global queries (B, H, G, D), scaled, attend to
    every non-padding key of k_global, v_global (B, H, n, D). Returns (B, H, G, D)."""
    G = q_global.shape[2]
    if G == 0:
        return q_global.clone()
    # Usually a handful of global queries: a 64-row block would be mostly empty rows.
    config = config or kernel_config(q_global.shape[-1])._replace(block_m=min(64, max(16, triton.next_power_of_2(G))))
    out, _ = _global_rows_op(
        q_global, k_global, v_global, key_padding_mask.bool(), float(dropout_p), _dropout_seed(dropout_p), list(config)
    )
    return out
