"""Banded attention with global columns on the CPU, in plain PyTorch, in O(n * w) memory.

The twin of `reference.reference_attention` (same arguments, same result), built for speed:

* Queries are cut into blocks of `c` rows. Block b's queries [b*c, b*c + c) can only see keys
  in [b*c - w1, b*c + c - 1 + w1], a span of S = c + 2*w1 keys. After padding the keys with
  w1 rows on each side, every block's span is a strided *view* (`unfold`) of the key tensor,
  so no copy of K or V is made per block.
* The global keys of the sample are joined to each span as extra columns, so a single
  softmax covers [global columns | band], as the reference does. In fp32 inference the
  columns are instead merged after the band by log-sum-exp (`_merge_columns`): the same
  softmax, without copying every span to prepend the columns.
* Each block is then one call of `scaled_dot_product_attention` with an additive mask (band
  edges, padding and global keys removed from the band). On CPU that is PyTorch's fused
  flash kernel: the (c x S) score tile never goes to memory, it accumulates in float32, and
  autograd works through it. Nothing of size n x n is ever allocated.
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


def block_size_for(one_sided_window: int) -> int:
    """Query rows per block.

    Useful fraction of the computed scores is (2*w1 + 1) / (c + 2*w1), so smaller blocks
    waste less; but each block is one fused call, and below ~32 rows the per-call overhead
    and the short inner loops of the flash kernel dominate. c = w1 / 2 keeps about 80%
    useful work for any window, capped at 128 (measured: 64..128 are equally fast at w=512).
    """
    return max(32, min(128, one_sided_window // 2))


def global_columns(is_global: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the global tokens of each sample, left-aligned.

    is_global: (B, n) bool. Returns index (B, G) and valid (B, G), G = most globals in a sample.
    """
    counts = is_global.sum(dim=1)
    num_global = int(counts.max()) if counts.numel() else 0
    order = torch.argsort((~is_global).to(torch.int8), dim=1, stable=True)
    index = order[:, :num_global]
    valid = torch.arange(num_global, device=is_global.device)[None, :] < counts[:, None]
    return index, valid


def _gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x: (B, H, n, D), index: (B, G) -> (B, H, G, D)."""
    B, H, _, D = x.shape
    return torch.gather(x, 2, index[:, None, :, None].expand(B, H, index.shape[1], D))


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
) -> torch.Tensor:
    """Undilated band + global columns. q, k, v: (B, H, L, D); band_excluded: (B, L) bool;
    k_cols, v_cols: (B, H, G, D); cols_valid: (B, G). Returns (B, H, L, D)."""
    B, H, L, D = q.shape
    G = k_cols.shape[2]
    if L <= w1 + 1:
        c, num_blocks, left = L, 1, 0  # dense: one block whose span is the whole sequence
    else:
        c = block_size_for(w1)
        num_blocks, left = -(-L // c), w1
    padded = num_blocks * c
    span = c + 2 * left
    right = padded - L + left

    neg = torch.finfo(q.dtype).min
    # (c, span): key s of a block's span is in the band of row r when 0 <= s - r <= 2*w1
    rel = torch.arange(span, device=q.device)[None, :] - torch.arange(c, device=q.device)[:, None]
    outside_band = (rel < 0) | (rel > 2 * left) if left else torch.zeros_like(rel, dtype=torch.bool)
    excluded = F.pad(band_excluded, (left, right), value=True).unfold(1, span, c)  # (B, nb, span)
    band_bias = torch.zeros((B, num_blocks, c, span), dtype=q.dtype, device=q.device)
    band_bias.masked_fill_(outside_band[None, None] | excluded[:, :, None, :], neg)
    merge_after = G > 0 and _can_merge_columns_after(q, k, v, dropout_p)

    qp = F.pad(q, (0, 0, 0, padded - L))
    kp = F.pad(k, (0, 0, left, right))
    vp = F.pad(v, (0, 0, left, right))
    # With global columns joined, each block's keys become a copy ([columns | span]); taking a
    # few blocks at a time bounds that copy (~8M elements) instead of copying K and V span/c times.
    step = num_blocks if not G or merge_after else max(1, (1 << 23) // (H * (G + span) * D))
    outs = []
    for b in range(B):  # per sample, so that the spans below stay views of kp/vp
        q_blocks = qp[b].view(H, num_blocks, c, D).transpose(0, 1)  # (nb, H, c, D)
        k_spans = kp[b].unfold(1, span, c).permute(1, 0, 3, 2)  # (nb, H, span, D)
        v_spans = vp[b].unfold(1, span, c).permute(1, 0, 3, 2)
        if merge_after:
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q_blocks, k_spans, v_spans, 0.0, False, attn_mask=band_bias[b, :, None], scale=1.0
            )  # (nb, H, c, D), (nb, H, c)
            o = o.transpose(0, 1).reshape(H, padded, D)[:, :L]
            lse = lse.transpose(0, 1).reshape(H, padded)[:, :L]
            outs.append(_merge_columns(o, lse, q[b], k_cols[b], v_cols[b], cols_valid[b]))
            continue
        pieces = []
        for s0 in range(0, num_blocks, step):
            s1 = min(num_blocks, s0 + step)
            ks, vs, bias = k_spans[s0:s1], v_spans[s0:s1], band_bias[b, s0:s1]
            if G:
                ks = torch.cat([k_cols[b].expand(s1 - s0, H, G, D), ks], dim=2)
                vs = torch.cat([v_cols[b].expand(s1 - s0, H, G, D), vs], dim=2)
                cols = torch.zeros(G, dtype=q.dtype, device=q.device).masked_fill_(~cols_valid[b], neg)
                bias = torch.cat([cols.expand(s1 - s0, c, G), bias], dim=-1)
            pieces.append(
                F.scaled_dot_product_attention(
                    q_blocks[s0:s1], ks, vs, attn_mask=bias[:, None], dropout_p=dropout_p, scale=1.0
                )
            )  # (blocks, H, c, D)
        o = pieces[0] if len(pieces) == 1 else torch.cat(pieces)
        outs.append(o.transpose(0, 1).reshape(H, padded, D)[:, :L])
    return outs[0][None] if B == 1 else torch.stack(outs)


def _can_merge_columns_after(q, k, v, dropout_p: float) -> bool:
    """In fp32 inference on the CPU the global columns can be merged after the band by their
    log-sum-exp, which needs the fused kernel's LSE: only its CPU op returns it, and autograd
    does not differentiate through it. Training keeps the joined softmax."""
    needs_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    return q.device.type == "cpu" and q.dtype == torch.float32 and dropout_p == 0.0 and not needs_grad


def _merge_columns(o_band, lse_band, q, k_cols, v_cols, cols_valid):
    """One softmax over [columns | band] from two: o_band and lse_band (H, L, D), (H, L) from
    the band; the columns' scores are tiny (H, L, G). The band's share of the probability mass
    is exp(lse_band) / (exp(lse_band) + exp(lse_cols)) = sigmoid(lse_band - lse_cols)."""
    scores = torch.matmul(q, k_cols.transpose(-1, -2))  # (H, L, G)
    scores.masked_fill_(~cols_valid, torch.finfo(scores.dtype).min)
    lse_cols = torch.logsumexp(scores, dim=-1)
    o_cols = torch.matmul(torch.exp(scores - lse_cols[..., None]), v_cols)
    return torch.lerp(o_cols, o_band, torch.sigmoid(lse_band - lse_cols)[..., None])


def _dense(q, k, v, key_padding_mask: torch.Tensor, dropout_p: float) -> torch.Tensor:
    """The window covers the whole input (n <= w1 + 1): every key is in every query's band, so
    this is plain attention over the non-padding keys, and a global key is just one of them
    (counted once, as in the band path). One fused call, no padding, no copies."""
    bias = torch.zeros(key_padding_mask.shape, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill(key_padding_mask, torch.finfo(q.dtype).min)[:, None, None, :]  # (B, 1, 1, n)
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
    """(B, ..., n, [D]) with the sequence at dim 1 of the mask or dim 2 of q/k/v -> residues mod d
    as extra batch entries: (B*d, ..., ceil(n/d), [D])."""
    if x.dim() == 2:  # mask (B, n)
        B, n = x.shape
        L = -(-n // d)
        x = F.pad(x, (0, L * d - n), value=fill).view(B, L, d).transpose(1, 2)
        return x.reshape(B * d, L)
    B, H, n, D = x.shape
    L = -(-n // d)
    x = F.pad(x, (0, 0, 0, L * d - n)).view(B, H, L, d, D).permute(0, 3, 1, 2, 4)
    return x.reshape(B * d, H, L, D)


def _from_subsequences(x: torch.Tensor, d: int, n: int) -> torch.Tensor:
    """Inverse of `_to_subsequences` for (B*d, H, L, D) -> (B, H, n, D)."""
    Bd, H, L, D = x.shape
    x = x.view(Bd // d, d, H, L, D).permute(0, 2, 3, 1, 4)
    return x.reshape(Bd // d, H, L * d, D)[:, :, :n]


def chunked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    one_sided_window: int,
    key_padding_mask: torch.Tensor,
    is_global: torch.Tensor,
    dilation: torch.Tensor,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """Same contract as `reference_attention`: q, k, v (B, H, n, D), q scaled; masks (B, n);
    dilation (H,) ints. Returns (B, H, n, D)."""
    B, H, n, D = q.shape
    if n <= one_sided_window + 1 and bool((dilation == 1).all()):
        return _dense(q, k, v, key_padding_mask, dropout_p)
    is_global = is_global & ~key_padding_mask
    band_excluded = key_padding_mask | is_global
    index, valid = global_columns(is_global)
    k_cols, v_cols = _gather_rows(k, index), _gather_rows(v, index)

    dilations = dilation.tolist()
    outs, head_order = [], []
    for d in sorted(set(dilations)):
        heads = [h for h, dh in enumerate(dilations) if dh == d]
        sel = slice(heads[0], heads[-1] + 1) if heads == list(range(heads[0], heads[-1] + 1)) else heads
        qh, kh, vh = q[:, sel], k[:, sel], v[:, sel]
        kc, vc = k_cols[:, sel], v_cols[:, sel]
        if d == 1:
            o = _banded(qh, kh, vh, one_sided_window, band_excluded, kc, vc, valid, dropout_p)
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
    out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)
    if head_order != list(range(H)):
        out = out[:, torch.tensor(head_order, device=q.device).argsort()]
    return _zero_padded_rows(out, key_padding_mask)
