"""The Triton kernels of the banded attention, forward and backward (the family is listed in
kernels/triton_banded.py, which plans their work with kernels/triton_plan.py and launches them).

Query-side tensors (q, out, do, dq) share one (B, H, n_q, D) layout and key-side tensors
(k, v, dk, dv) another, both with unit stride along D (the launcher makes them contiguous).
Masks are int8 (B, n); the log-sum-exp and delta rows are float32 (B*H, n_q).

The relative position bias (kernels/position_bias.py) is a constexpr switch, HAS_BIAS: off, the
kernels compile without it and its arguments (RelBias, DRelBias, QueryPos: then None) are never
read. On, RelBias is float32 (H, 2R+1), reach is R and QueryPos holds each query's position
(int32, batch stride stride_pos_b): the key's position minus it picks the entry of the score.
"""

import triton
import triton.language as tl

_LOG2E = tl.constexpr(1.4426950408889634)  # scores are kept in base-2 units: exp2 is one instruction


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
def _query_positions(QueryPos, stride_pos_b, b, pos_m, m_in, HAS_BIAS: tl.constexpr):
    """Where a block's queries sit in the sequence, for the bias. In the banded kernels that is
    pos_m itself (QueryPos is then an arange shared by the batch); the global queries of
    `triton_global_rows` are rows 0..G-1 of their own tensor and need their real positions."""
    q_pos = pos_m
    if HAS_BIAS:
        q_pos = tl.load(QueryPos + b * stride_pos_b + pos_m, mask=m_in, other=0)
    return q_pos


@triton.jit
def _bias_entry(q_pos, k_pos, reach):
    # rel_bias's column for each (query, key): the key-minus-query offset clamped to [-R, R],
    # shifted to 0..2R (as position_bias.bias_at). Always in range, so loads need no mask.
    return tl.minimum(tl.maximum(k_pos[None, :] - q_pos[:, None], -reach), reach) + reach


@triton.jit
def _bias_tile(RelBias, h, reach, q_pos, k_pos, HAS_BIAS: tl.constexpr):
    """The bias of a (queries, keys) tile, in the scores' natural units; 0.0 (unused) without one."""
    bias = 0.0
    if HAS_BIAS:
        bias = tl.load(RelBias + h * (2 * reach + 1) + _bias_entry(q_pos, k_pos, reach))
    return bias


@triton.jit
def _add_bias_grad(DRelBias, h, reach, q_pos, k_pos, ds, ok):
    """Adds a tile's score gradients into d(rel_bias)[h]: each (query, key) adds its dS to the
    entry its offset reads. Every offset at or beyond +-R reads one of the two end entries, so
    those are summed over the tile first (one atomic each rather than one per score)."""
    offset = k_pos[None, :] - q_pos[:, None]
    row = DRelBias + h * (2 * reach + 1)
    inside = ok & (offset > -reach) & (offset < reach)
    tl.atomic_add(row + offset + reach, ds, mask=inside, sem="relaxed")  # order does not matter
    tl.atomic_add(row, tl.sum(tl.where(ok & (offset <= -reach), ds, 0.0)), sem="relaxed")
    tl.atomic_add(row + 2 * reach, tl.sum(tl.where(ok & (offset >= reach), ds, 0.0)), sem="relaxed")


@triton.jit
def _scores(q, k, bias, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr):
    """A tile's scores in base-2 units: q.k, plus the bias (natural units, like the product)."""
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION)
    if HAS_BIAS:
        s += bias
    return s * _LOG2E


@triton.jit
def _softmax_tile(acc, m_i, l_i, q, k, v, ok, bias, seed, row_offsets, pos_n, dropout_p,
                  DROPOUT: tl.constexpr, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr):
    """One step of the online softmax over a (BLOCK_M, tile) score tile; ok masks the tile,
    bias is `_bias_tile`'s."""
    s = tl.where(ok, _scores(q, k, bias, PRECISION, HAS_BIAS), float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)  # rescales what was accumulated under the old running max
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)  # the normaliser counts every kept key, dropped or not
    if DROPOUT:
        p = tl.where(_keep(seed, row_offsets, pos_n, dropout_p), p / (1.0 - dropout_p), 0.0)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return acc, m_new, l_i


@triton.jit
def _grad_tile(q, k, v, do, lse, delta, ok, bias, seed, row_offsets, pos_n, dropout_p,
               DROPOUT: tl.constexpr, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr):
    """Probabilities (after dropout, for dV) and score gradients (for dQ, dK, and the bias) of
    one tile."""
    p = tl.where(ok, tl.exp2(_scores(q, k, bias, PRECISION, HAS_BIAS) - lse[:, None]), 0.0)
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
def fwd_kernel(
    Q, K, V, Out, Lse, Work, QueryPad, KeyExcluded, ColIndex, ColValid,
    num_heads, n_q, n_k, n_cols, num_programs, one_sided_window, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    RelBias, QueryPos, reach, stride_pos_b,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr,
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
    q_pos = _query_positions(QueryPos, stride_pos_b, b, pos_m, m_in, HAS_BIAS)

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
        bias = _bias_tile(RelBias, h, reach, q_pos, pos_n, HAS_BIAS)
        acc, m_i, l_i = _softmax_tile(acc, m_i, l_i, q, k, v, ok, bias, seed, row_offsets, pos_n, dropout_p,
                                      DROPOUT, PRECISION, HAS_BIAS)

    for g_start in range(0, n_cols, BLOCK_G):  # global columns: every query sees them
        g = g_start + tl.arange(0, BLOCK_G)
        g_in = g < n_cols
        valid = tl.load(ColValid + b * n_cols + g, mask=g_in, other=0)  # samples differ in count
        pos_g = tl.load(ColIndex + b * n_cols + g, mask=g_in, other=0)
        kv_mask = g_in[:, None] & d_in[None, :]
        k = tl.load(K + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        ok = (valid != 0)[None, :] & m_in[:, None]
        bias = _bias_tile(RelBias, h, reach, q_pos, pos_g, HAS_BIAS)  # a global key's true distance
        acc, m_i, l_i = _softmax_tile(acc, m_i, l_i, q, k, v, ok, bias, seed, row_offsets, pos_g, dropout_p,
                                      DROPOUT, PRECISION, HAS_BIAS)

    l_safe = tl.where(l_i > 0.0, l_i, 1.0)
    out = tl.where(row_ok[:, None], acc / l_safe[:, None], 0.0)  # padded query rows are zero
    tl.store(Out + q_offsets, out.to(Out.dtype.element_ty), mask=q_mask)
    tl.store(Lse + bh * n_q + pos_m, tl.where(row_ok, m_i + tl.log2(l_safe), 0.0), mask=m_in)


@triton.jit
def bwd_delta_kernel(Out, DO, Delta, num_rows, head_dim, stride_row, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    # Out and DO seen as (B*H*n_q, D) rows. Fused so that neither goes through float32 copies.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (rows < num_rows)[:, None] & (offs_d < head_dim)[None, :]
    offsets = rows.to(tl.int64)[:, None] * stride_row + offs_d[None, :]
    o = tl.load(Out + offsets, mask=mask, other=0.0).to(tl.float32)
    do = tl.load(DO + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(Delta + rows, tl.sum(o * do, 1), mask=rows < num_rows)


@triton.jit
def bwd_dq_kernel(
    Q, K, V, DO, DQ, Lse, Delta, Work, QueryPad, KeyExcluded, ColIndex, ColValid,
    num_heads, n_q, n_k, n_cols, num_programs, one_sided_window, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    RelBias, DRelBias, QueryPos, reach, stride_pos_b,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr,
):
    # Same walk as fwd_kernel; the probabilities come back from the saved log-sum-exp. It also
    # accumulates d(rel_bias) (float32 DRelBias, zeroed by the launcher): this is the one pass
    # that meets every (query, key) score exactly once, band and columns.
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
    q_pos = _query_positions(QueryPos, stride_pos_b, b, pos_m, m_in, HAS_BIAS)
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
        bias = _bias_tile(RelBias, h, reach, q_pos, pos_n, HAS_BIAS)
        _, ds = _grad_tile(q, k, v, do, lse, delta, ok, bias, seed, row_offsets, pos_n, dropout_p,
                           DROPOUT, PRECISION, HAS_BIAS)
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
        if HAS_BIAS:
            _add_bias_grad(DRelBias, h, reach, q_pos, pos_n, ds, ok)

    for g_start in range(0, n_cols, BLOCK_G):
        g = g_start + tl.arange(0, BLOCK_G)
        g_in = g < n_cols
        valid = tl.load(ColValid + b * n_cols + g, mask=g_in, other=0)
        pos_g = tl.load(ColIndex + b * n_cols + g, mask=g_in, other=0)
        kv_mask = g_in[:, None] & d_in[None, :]
        k = tl.load(K + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + k_base + pos_g[:, None] * stride_kn + offs_d[None, :], mask=kv_mask, other=0.0)
        ok = (valid != 0)[None, :] & row_ok[:, None]
        bias = _bias_tile(RelBias, h, reach, q_pos, pos_g, HAS_BIAS)
        _, ds = _grad_tile(q, k, v, do, lse, delta, ok, bias, seed, row_offsets, pos_g, dropout_p,
                           DROPOUT, PRECISION, HAS_BIAS)
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
        if HAS_BIAS:
            _add_bias_grad(DRelBias, h, reach, q_pos, pos_g, ds, ok)

    tl.store(DQ + q_offsets, dq.to(DQ.dtype.element_ty), mask=q_mask)


@triton.jit
def bwd_dkdv_kernel(
    Q, K, V, DO, DK, DV, Lse, Delta, Work, QueryPad, KeyExcluded,
    num_heads, n_q, n_k, num_programs, one_sided_window, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    RelBias, QueryPos, reach, stride_pos_b,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr,
):
    # A block of band keys against the query tiles whose band reaches it (the work table is
    # built over keys). Global keys are excluded here and get zero rows; bwd_columns_kernel
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
        q_pos = _query_positions(QueryPos, stride_pos_b, b, pos_m, m_in, HAS_BIAS)
        bias = _bias_tile(RelBias, h, reach, q_pos, pos_n, HAS_BIAS)
        p, ds = _grad_tile(q, k, v, do, lse, delta, ok, bias, seed, row_offsets, pos_n, dropout_p,
                           DROPOUT, PRECISION, HAS_BIAS)
        dv += tl.dot(tl.trans(p).to(do.dtype), do, input_precision=PRECISION)
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision=PRECISION)

    tl.store(DK + kv_offsets, dk.to(DK.dtype.element_ty), mask=kv_mask)
    tl.store(DV + kv_offsets, dv.to(DV.dtype.element_ty), mask=kv_mask)


@triton.jit
def bwd_columns_kernel(
    Q, K, V, DO, Lse, Delta, QueryPad, ColIndex, ColValid, DKPartial, DVPartial,
    num_heads, n_q, n_k, n_cols, queries_per_split, head_dim, seed, dropout_p,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    RelBias, QueryPos, reach, stride_pos_b,
    BLOCK_M: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr,
    DROPOUT: tl.constexpr, PRECISION: tl.constexpr, HAS_BIAS: tl.constexpr,
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
        q_pos = _query_positions(QueryPos, stride_pos_b, b, pos_m, m_in, HAS_BIAS)
        bias = _bias_tile(RelBias, h, reach, q_pos, pos_g, HAS_BIAS)
        p, ds = _grad_tile(q, k, v, do, lse, delta, ok, bias, seed, row_offsets, pos_g, dropout_p,
                           DROPOUT, PRECISION, HAS_BIAS)
        dv += tl.dot(tl.trans(p).to(do.dtype), do, input_precision=PRECISION)
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision=PRECISION)

    partial = ((split * tl.num_programs(1) + bh) * n_cols + g[:, None]) * head_dim + offs_d[None, :]
    tl.store(DKPartial + partial, dk, mask=kv_mask)
    tl.store(DVPartial + partial, dv, mask=kv_mask)
