"""Banded attention with global columns on the CPU, in plain PyTorch, in O(n * w) memory.

The twin of `reference.reference_attention` (same arguments, same result), built for speed:

* Queries are cut into blocks of `c` rows. Block b's queries [b*c, b*c + c) can only see keys
  in [b*c - w1, b*c + c - 1 + w1], a span of S = c + 2*w1 keys. Every block's span is a
  strided *view* (`unfold`) of the key tensor, so no copy of K or V is made per block. Only
  the blocks at the two ends, whose spans run past the sequence, get a padded copy of their
  own few keys.
* The work is done in the row layout (B, n, H, D) in which the projections produce q, k, v
  and the fused kernel stores its output: nothing is transposed on the way in or out.
* All blocks share one (c x S) band mask, except the "dirty" ones whose span holds an
  excluded key (padding, a global token, or a position past either end): those get a mask
  of their own. Consecutive blocks of the same kind are one call.
* The global keys of the sample are joined to each span as extra columns, so a single
  softmax covers [global columns | band], as the reference does. In fp32 inference the
  columns are instead merged after the band by log-sum-exp (`_merge_columns`): the same
  softmax, without copying every span to prepend the columns.
* Each call is `scaled_dot_product_attention` with an additive mask. On CPU that is
  PyTorch's fused flash kernel: the (c x S) score tile never goes to memory, it accumulates
  in float32, and autograd works through it. Nothing of size n x n is ever allocated.
* Inputs that fit inside the window (n <= w1 + 1, so every key is in every query's band)
  take one dense fused call over the whole batch (`_dense`): no banded overhead, no copies.
* Dilation d is turned into undilated windows over the d interleaved sub-sequences of
  positions with the same residue mod d (a reshape, not a new kernel); heads are grouped by
  their dilation.

Masked scores get the dtype's most negative finite value rather than -inf, so a row with
every key masked (a padded query) gives a finite softmax instead of NaN in the forward and
backward passes; those rows are zeroed at the end.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .blocks import BlockPlan, LastBuilt, block_size_for, flash_with_lse, merge_columns
from .position_bias import bias_between
from .chunked_grad import band_attention_grad, fused_backward_applies


def global_columns(is_global: torch.Tensor, num_global: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the global tokens of each sample, left-aligned.

    is_global: (B, n) bool. Returns index (B, G) and valid (B, G), G = most globals in a sample,
    or `num_global` when the caller gives it: any number at least that (the model counts the
    globals on the host before the mask goes to the GPU). G is a shape, so without it the count
    is read back from the device, which on CUDA makes the host wait for the GPU. Slots past a
    sample's own count are invalid and point at distinct non-global positions.
    """
    counts = is_global.sum(dim=1)
    if num_global is None:
        num_global = int(counts.max()) if counts.numel() else 0
    num_global = min(num_global, is_global.shape[1])
    order = torch.argsort((~is_global).to(torch.int8), dim=1, stable=True)
    index = order[:, :num_global]
    valid = torch.arange(num_global, device=is_global.device)[None, :] < counts[:, None]
    return index, valid


def _gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x: (B, n, H, D), index: (B, G) -> (B, G, H, D)."""
    B, _, H, D = x.shape
    return torch.gather(x, 1, index[:, :, None, None].expand(B, index.shape[1], H, D))


def _banded(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w1: int,
    band_excluded: torch.Tensor,
    k_cols: torch.Tensor,
    v_cols: torch.Tensor,
    cols_valid: torch.Tensor,
    dropout_p: float,
    rel_bias: torch.Tensor | None = None,
    cols_pos: torch.Tensor | None = None,
) -> torch.Tensor:
    """Undilated band + global columns, in the row layout. q, k, v: (B, L, H, D) (any strides,
    D contiguous); band_excluded: (B, L) bool; k_cols, v_cols: (B, G, H, D); cols_valid: (B, G);
    with rel_bias (H, 2R+1), cols_pos (B, G) are the columns' positions.
    Returns (B, L, H, D), contiguous."""
    needs_grad = torch.is_grad_enabled() and any(
        x is not None and x.requires_grad for x in (q, k, v, k_cols, v_cols, rel_bias))
    if needs_grad and fused_backward_applies(q, dropout_p):  # training: a blocked backward of its own
        return band_attention_grad(q, k, v, w1, band_excluded, k_cols, v_cols, cols_valid, rel_bias, cols_pos)
    B, L, H, D = q.shape
    G = k_cols.shape[1]
    inference = _can_merge_columns_after(q, k, v, dropout_p)
    # Training keeps the fp32 block size: its blocked backward (chunked_grad) runs in fp32.
    plan = BlockPlan(L, w1, band_excluded, q.dtype, rel_bias, c=block_size_for(w1, q.dtype) if inference else None)
    merge_after = G > 0 and inference
    # Joining the columns to the spans (autograd's path) copies each block's keys; a few blocks
    # at a time bounds that copy (~8M elements).
    step = plan.num_blocks if not G or merge_after else max(1, (1 << 23) // (H * (G + plan.span) * D))

    out = q.new_empty((B, L, H, D))
    for b in range(B):  # per sample, so that each run's spans stay views of k and v
        for s0, s1, is_dirty in plan.pieces(b, step):
            r0, r1 = plan.rows(s0, s1)
            q_blocks = plan.query_blocks(q[b], s0, s1)  # (nb, H, c, D)
            k_spans, v_spans = plan.key_spans(k[b], s0, s1), plan.key_spans(v[b], s0, s1)  # (nb, H, span, D)
            bias = plan.bias(b, s0, s1, is_dirty)
            if merge_after:
                o, lse = flash_with_lse(q_blocks, k_spans, v_spans, bias)  # stored row-major as (nb, c, H, ...)
                o = o.transpose(1, 2).reshape(-1, H, D)[: r1 - r0]
                lse = lse.transpose(1, 2).reshape(-1, H)[: r1 - r0]
                cols_bias = None if rel_bias is None else column_bias(rel_bias, r0, r1, cols_pos[b])
                _merge_columns(o, lse, q[b, r0:r1], k_cols[b], v_cols[b], cols_valid[b], out[b, r0:r1], cols_bias)
                continue
            if G:
                c = plan.c
                k_spans = torch.cat([k_cols[b].transpose(0, 1).expand(s1 - s0, H, G, D), k_spans], dim=2)
                v_spans = torch.cat([v_cols[b].transpose(0, 1).expand(s1 - s0, H, G, D), v_spans], dim=2)
                cols = torch.zeros(G, dtype=q.dtype, device=q.device).masked_fill_(~cols_valid[b], plan.neg)
                if rel_bias is None:
                    bias = torch.cat([cols.expand(bias.shape[0], 1, c, G), bias], dim=-1)
                else:  # each row's own bias on each column: (nb, H, c, G), the last block's padding rows too
                    rows = column_bias(rel_bias, s0 * c, s1 * c, cols_pos[b]).view(s1 - s0, c, H, G).transpose(1, 2)
                    cols = (rows.to(q.dtype) + cols).masked_fill(~cols_valid[b], plan.neg)
                    bias = torch.cat([cols, bias.expand(s1 - s0, -1, -1, -1)], dim=-1)
            o = F.scaled_dot_product_attention(q_blocks, k_spans, v_spans, attn_mask=bias, dropout_p=dropout_p, scale=1.0)
            out[b, r0:r1] = o.transpose(1, 2).reshape(-1, H, D)[: r1 - r0]
    return out


def _band_inference(q, k, v, w1, key_padding, band_excluded, k_cols, v_cols, cols_valid, rel_bias, cols_pos) -> torch.Tensor:
    """Inference on the CPU (fp32 or bf16, no dropout): the band of each sample, then its
    global columns merged by log-sum-exp. Same result as the blocks of `_banded`, with no
    mask built per block for the usual input, whose only excluded keys are right padding and
    global tokens:

    * A block whose span runs past either end of the sample's keys (its first and last few)
      gets the keys that exist and the shared tile's matching slice (a view), instead of a
      zero-padded copy of its keys and a mask of its own.
    * A global key stays in the band of the rows whose window holds it, and the column of
      that key is masked for those rows instead: the key is counted once either way, with
      the same score (local key, the same bias of its true distance), and the (rows x G)
      column mask is tiny where the band's per-block masks were (H, c, span) each.

    A sample with padding before its last real token takes `_banded`'s masked blocks.
    q, k, v: (B, L, H, D); key_padding, band_excluded (padding or global): (B, L); k_cols, v_cols (B, G, H, D); cols_valid,
    cols_pos (B, G). Returns (B, L, H, D); padding rows are left unset."""
    B, L, H, D = q.shape
    G = k_cols.shape[1]
    real = (~key_padding).sum(dim=1).tolist()
    out = q.new_empty((B, L, H, D))  # padding rows: chunked_attention zeroes them (_zero_padded_rows)
    for b in range(B):
        n = real[b]
        if n == 0:
            continue
        if bool(key_padding[b, :n].any()):  # padding inside the sample: the masked blocks
            out[b : b + 1] = _banded(q[b : b + 1], k[b : b + 1], v[b : b + 1], w1, band_excluded[b : b + 1],
                                     k_cols[b : b + 1], v_cols[b : b + 1], cols_valid[b : b + 1], 0.0, rel_bias,
                                     cols_pos[b : b + 1])
            continue
        none_excluded = torch.zeros((1, n), dtype=torch.bool, device=q.device)
        plan = BlockPlan(n, w1, none_excluded, q.dtype, rel_bias, c=block_size_for(w1, q.dtype))
        for r0, r1, o, lse in _band_pieces(plan, q[b, :n], k[b, :n], v[b, :n]):
            if not G:
                out[b, r0:r1] = o
                continue
            rows = torch.arange(r0, r1, device=q.device)
            # each column once: masked for the rows whose band holds it (plan.w1 = 0: the band is everything)
            in_band = (cols_pos[b][None, :] - rows[:, None]).abs() <= (plan.w1 if plan.w1 else n)
            valid = (cols_valid[b][None, :] & ~in_band)[:, None, :]  # (rows, 1, G)
            cols_bias = None if rel_bias is None else column_bias(rel_bias, r0, r1, cols_pos[b])
            _merge_columns(o, lse, q[b, r0:r1], k_cols[b], v_cols[b], valid, out[b, r0:r1], cols_bias)
    return out


def _band_pieces(plan: BlockPlan, q, k, v):
    """The band of one sample with no excluded key, piece by piece: (r0, r1, o (rows, H, D),
    lse (rows, H) fp32). The blocks whose spans lie inside [0, n) are one call on views of k
    and v with the shared tile; each block at either end is a call of its own on the keys
    that exist, with the slice of the shared tile that covers them."""
    n, c, w1 = plan.L, plan.c, plan.w1
    H, D = q.shape[1:]
    first = -(-w1 // c)  # blocks before this one start their span before key 0
    last = (n - w1) // c if n >= w1 else 0  # blocks from here on end their span past key n
    inner = (first, last) if last > first else None
    for j in range(plan.num_blocks):
        if inner and j == inner[0]:
            o, lse = flash_with_lse(plan.query_blocks(q, first, last), plan.key_spans(k, first, last),
                            plan.key_spans(v, first, last), plan.shared_bias)
            yield first * c, last * c, o.transpose(1, 2).reshape(-1, H, D), lse.transpose(1, 2).reshape(-1, H)
        if inner and inner[0] <= j < inner[1]:
            continue
        r0, r1 = j * c, min(n, j * c + c)
        s0 = j * c - w1  # the span's first key; the tile's column t is key s0 + t
        k0, k1 = max(0, s0), min(n, s0 + plan.span)
        tile = plan.shared_bias[:, :, : r1 - r0, k0 - s0 : k1 - s0]
        o, lse = flash_with_lse(q[r0:r1].transpose(0, 1)[None], k[k0:k1].transpose(0, 1)[None],
                        v[k0:k1].transpose(0, 1)[None], tile)
        yield r0, r1, o[0].transpose(0, 1), lse[0].transpose(0, 1)


def _can_merge_columns_after(q, k, v, dropout_p: float) -> bool:
    """In inference on the CPU (fp32 or bf16) the global columns can be merged after the band
    by their log-sum-exp, which needs the fused kernel's LSE: only its CPU op returns it (in
    fp32 for both dtypes), and autograd does not differentiate through it. Training keeps the
    joined softmax."""
    needs_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    return q.device.type == "cpu" and q.dtype in (torch.float32, torch.bfloat16) and dropout_p == 0.0 and not needs_grad


def column_bias(rel_bias: torch.Tensor, r0: int, r1: int, cols_pos: torch.Tensor) -> torch.Tensor:
    """(r1 - r0, H, G) fp32: the relative position bias of rows r0..r1-1 on the global columns
    at positions cols_pos (G,), by the offset column - row."""
    rows = torch.arange(r0, r1, device=cols_pos.device)
    return bias_between(rel_bias, rows, cols_pos).permute(1, 0, 2).float()


MERGE_ROWS = 256  # rows a bf16 merge converts to fp32 at a time: they stay in cache


def _merge_columns(o_band, lse_band, q, k_cols, v_cols, cols_valid, out, cols_bias=None):
    """One softmax over [columns | band] from two, written to `out`. o_band (L, H, D) and
    lse_band (L, H) come from the band; q (L, H, D); k_cols, v_cols (G, H, D); cols_valid (G,)
    or per row (L, 1, G); cols_bias None or (L, H, G) fp32. The band's share
    of the probability mass is exp(lse_band) / (exp(lse_band) + exp(lse_cols))
    = sigmoid(lse_band - lse_cols). The merge runs in fp32 whatever the dtype (the band's LSE
    is fp32 already): in bf16 a difference of log-sum-exps would keep only 2-3 digits. A bf16
    merge goes MERGE_ROWS rows at a time, so that the fp32 copies of q and of the band's
    output never leave the cache: at 4,096 rows x 12 heads, one column, 1.8 ms against 8 ms
    converting every row at once (2-core Intel Xeon)."""
    with torch.autocast(q.device.type, enabled=False):  # autocast would run the einsums in bf16 again
        k_cols, v_cols = k_cols.float(), v_cols.float()
        L = q.shape[0]
        fp32 = out.dtype == o_band.dtype == q.dtype == torch.float32
        step = L if fp32 else MERGE_ROWS
        for r0 in range(0, L, step):
            r1 = min(L, r0 + step)
            qf = q[r0:r1].float()  # no copy in fp32
            if k_cols.shape[0] == 1:  # one global token ([CLS]): a product and a sum over D, 4x
                scores = (qf * k_cols).sum(-1, keepdim=True)  # faster than einsum's batched matmul
            else:
                scores = torch.einsum("lhd,ghd->lhg", qf, k_cols)  # (L, H, G): G is small
            if cols_bias is not None:
                scores = scores + cols_bias[r0:r1]
            valid = cols_valid if cols_valid.dim() == 1 else cols_valid[r0:r1]  # (G,) or per row (L, 1, G)
            scores.masked_fill_(~valid, torch.finfo(scores.dtype).min)
            if fp32:
                merge_columns(o_band, lse_band, scores, v_cols, out=out)
            else:
                out[r0:r1] = merge_columns(o_band[r0:r1].float(), lse_band[r0:r1], scores, v_cols)[0]
    return out


_DENSE_MASK = LastBuilt()


def _dense(q, k, v, key_padding_mask: torch.Tensor, dropout_p: float, rel_bias=None) -> torch.Tensor:
    """The window covers the whole input (n <= w1 + 1): every key is in every query's band, so
    this is plain attention over the non-padding keys, and a global key is just one of them
    (counted once, as in the band path). One fused call, no padding, no copies. A relative
    position bias is one (H, n, n) matrix shared by the batch; the (B, H, n, n) mask it makes
    with the padding is built once a forward (every layer passes the same masks and bias)."""
    def build():
        bias = torch.zeros(key_padding_mask.shape, dtype=q.dtype, device=q.device)
        bias = bias.masked_fill(key_padding_mask, torch.finfo(q.dtype).min)[:, None, None, :]  # (B, 1, 1, n)
        if rel_bias is None:
            return bias
        i = torch.arange(q.shape[2], device=q.device)
        return (bias + bias_between(rel_bias, i, i).to(q.dtype)[None]).masked_fill(
            key_padding_mask[:, None, None, :], torch.finfo(q.dtype).min)  # (B, H, n, n)

    inputs = (key_padding_mask,) if rel_bias is None else (key_padding_mask, rel_bias)
    bias = _DENSE_MASK.get(inputs, (q.dtype, q.shape[2]), build)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, scale=1.0)
    return _zero_padded_rows(out, key_padding_mask)


def _zero_padded_rows(out: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Rows of padded queries are zero (as in transformers). In place when autograd does not
    need the tensor (saves a copy of the output), and skipped when nothing is padding."""
    if not bool(key_padding_mask.any()):
        return out
    rows = key_padding_mask[:, None, :, None]
    return out.masked_fill_(rows, 0.0) if not torch.is_grad_enabled() or not out.requires_grad else out.masked_fill(rows, 0.0)


def _to_subsequences(x: torch.Tensor, d: int, fill) -> torch.Tensor:
    """(B, n, ...) -> the residues mod d as extra batch entries: (B*d, ceil(n/d), ...).
    Works for the masks (B, n) and for q/k/v in the row layout (B, n, H, D)."""
    B, n = x.shape[:2]
    L = -(-n // d)
    pad = [0, 0] * (x.dim() - 2) + [0, L * d - n]
    x = F.pad(x, pad, value=fill).view(B, L, d, *x.shape[2:]).transpose(1, 2)
    return x.reshape(B * d, L, *x.shape[3:])


def _from_subsequences(x: torch.Tensor, d: int, n: int) -> torch.Tensor:
    """Inverse of `_to_subsequences` for (B*d, L, H, D) -> (B, n, H, D)."""
    Bd, L, H, D = x.shape
    return x.view(Bd // d, d, L, H, D).transpose(1, 2).reshape(Bd // d, L * d, H, D)[:, :n]


def chunked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    one_sided_window: int,
    key_padding_mask: torch.Tensor,
    is_global: torch.Tensor,
    dilation: torch.Tensor,
    dropout_p: float = 0.0,
    rel_bias: torch.Tensor | None = None,
    columns: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Same contract as `reference_attention`: q, k, v (B, H, n, D), q scaled; masks (B, n);
    dilation (H,) ints; rel_bias None or (H, 2R+1) (dilation 1 only); columns, optional: the
    forward's `global_columns` of is_global & ~key_padding_mask, planned once for every layer.
    Returns (B, H, n, D).

    Inside, the work is done in the row layout (B, n, H, D): it is how the projections produce
    q, k and v (their (B, H, n, D) views are transposes of it), how the fused kernel stores its
    output, and how the layer's output projection wants it. So no transposing copy is made on
    the way in or out: the result is a (B, H, n, D) view of a row-major tensor."""
    B, H, n, D = q.shape
    if n <= one_sided_window + 1 and bool((dilation == 1).all()):
        return _dense(q, k, v, key_padding_mask, dropout_p, rel_bias)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, n, H, D) views
    is_global = is_global & ~key_padding_mask
    band_excluded = key_padding_mask | is_global
    index, valid = global_columns(is_global) if columns is None else columns
    k_cols, v_cols = _gather_rows(k, index), _gather_rows(v, index)

    dilations = dilation.tolist()
    outs, head_order = [], []
    for d in sorted(set(dilations)):
        heads = [h for h, dh in enumerate(dilations) if dh == d]
        sel = slice(heads[0], heads[-1] + 1) if heads == list(range(heads[0], heads[-1] + 1)) else heads
        qh, kh, vh = q[:, :, sel], k[:, :, sel], v[:, :, sel]
        kc, vc = k_cols[:, :, sel], v_cols[:, :, sel]
        # all heads: the tensor itself (a new view would miss blocks' cached bias tile)
        rb = rel_bias if rel_bias is None or len(heads) == H else rel_bias[sel]
        if d == 1 and _can_merge_columns_after(qh, kh, vh, dropout_p):
            o = _band_inference(qh, kh, vh, one_sided_window, key_padding_mask, band_excluded, kc, vc, valid, rb, index)
        elif d == 1:
            o = _banded(qh, kh, vh, one_sided_window, band_excluded, kc, vc, valid, dropout_p, rb, index)
        else:
            o = _banded(
                _to_subsequences(qh, d, 0),
                _to_subsequences(kh, d, 0),
                _to_subsequences(vh, d, 0),
                one_sided_window,
                _to_subsequences(band_excluded, d, True),
                kc.repeat_interleave(d, dim=0),
                vc.repeat_interleave(d, dim=0),
                valid.repeat_interleave(d, dim=0),
                dropout_p,
            )
            o = _from_subsequences(o, d, n)
        outs.append(o)
        head_order += heads
    out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
    if head_order != list(range(H)):
        out = out[:, :, torch.tensor(head_order, device=q.device).argsort()]
    return _zero_padded_rows(out.transpose(1, 2), key_padding_mask)
