"""How the chunked band cuts a sequence into query blocks and their key spans, and how the
global columns join the band afterwards (`merge_columns`).

Shared by the forward (`chunked.py`) and the training path (`chunked_grad.py`), so that both
visit the same blocks with the same masks and merge the columns alike.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

from .position_bias import bias_at


def merge_columns(o_band, lse_band, scores, v_cols, out=None):
    """One softmax over [global columns | band] from two: (total output, the columns' LSE);
    the total LSE, where wanted, is logaddexp(lse_band, lse_cols).

    o_band (..., L, H, D) and lse_band (..., L, H) are the band's; scores (..., L, H, G) the
    rows' fp32 scores against the G global columns (invalid ones masked to the dtype's min);
    v_cols (..., G, H, D). The band keeps exp(lse_band) / (exp(lse_band) + exp(lse_cols))
    = sigmoid(lse_band - lse_cols) of the probability mass, the columns the rest. `out`
    (o_band's dtype) takes the output in place."""
    if scores.shape[-1] == 1:  # one column: its softmax is 1, its output is v itself
        lse_cols, o_cols = scores[..., 0], v_cols.expand(o_band.shape)
    else:
        lse_cols = torch.logsumexp(scores, dim=-1)
        o_cols = torch.einsum("...lhg,...ghd->...lhd", torch.exp(scores - lse_cols[..., None]), v_cols)
    weight = torch.sigmoid(lse_band - lse_cols)[..., None]
    return torch.lerp(o_cols, o_band, weight, out=out), lse_cols


def flash_with_lse(q, k, v, bias):
    """PyTorch's fused CPU attention kernel, q pre-scaled, an additive mask: (output stored
    row-major as (nb, c, H, D), log-sum-exp (nb, H, c) in fp32). Only this CPU op returns the
    LSE that merging the columns and the blocked backward need."""
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, attn_mask=bias, scale=1.0)


def block_size_for(one_sided_window: int, dtype: torch.dtype = torch.float32) -> int:
    """Query rows per block.

    Useful fraction of the computed scores is (2*w1 + 1) / (c + 2*w1), so smaller blocks
    waste less; but each block is a tile of the fused kernel, and below ~32 rows its inner
    loops get short. In fp32, c = w1 / 4 keeps about 89% useful work, within [32, 128].
    Measured at window 512 (w1 = 256), fp32, 2 cores: c = 32 / 64 / 128 take 37 / 39 / 42 ms
    for the band at n = 4096 (min of 12 interleaved runs).

    In bf16 the fused kernel multiplies its tiles with AMX / AVX512-BF16 (brgemm), whose
    rate grows with the tile's rows far more than the wasted work: at w1 = 256, n = 4096,
    12 heads, the kernel alone took 52.7 / 24.1 / 21.8 / 24.6 ms for c = 64 / 128 / 256 /
    512 (2-core Intel Xeon with AMX). So bf16 takes c = w1, within [32, 256].
    """
    if dtype == torch.bfloat16:
        return max(32, min(256, one_sided_window))
    return max(32, min(128, one_sided_window // 4))


class LastBuilt:
    """A tensor a forward builds from the same inputs in every layer (the bias tile of MPNet's
    table, which all layers share; the padding mask): built once, then handed back while the
    inputs are the very same tensors (same objects, same versions) and `extra` is equal. One
    slot, so at most one such tensor is kept alive. Never while autograd needs the inputs:
    a kept tensor would carry a finished graph into the next step."""

    def __init__(self):
        self.slot = None

    def get(self, inputs: tuple, extra: tuple, build):
        if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
            return build()
        if torch.compiler.is_compiling():  # a compiled graph computes it once per call anyway
            return build()
        # inference tensors keep no version counter; the model makes new ones each forward
        key = (extra, tuple(None if t.is_inference() else t._version for t in inputs))
        if self.slot is not None:
            refs, cached_key, tensor = self.slot
            if cached_key == key and all(r() is t for r, t in zip(refs, inputs)):
                return tensor
        tensor = build()
        self.slot = (tuple(weakref.ref(t) for t in inputs), key, tensor)
        return tensor


_SHARED_BIAS = LastBuilt()


def _shared_bias(rel_bias, offsets, outside, dtype, neg):
    """(1, 1 or H, c, span): the band mask, with each tile entry's relative position bias
    (differentiable in rel_bias: a gather). Built once a forward (LastBuilt): gathering it
    took ~2 ms of each layer's attention at c = 256."""
    if rel_bias is None:
        return torch.zeros((1, 1, *offsets.shape), dtype=dtype, device=offsets.device).masked_fill_(outside, neg)
    return _SHARED_BIAS.get((rel_bias,), (tuple(offsets.shape), int(offsets[0, 0]), dtype),
                           lambda: bias_at(rel_bias, offsets).to(dtype)[None].masked_fill(outside, neg))


def _runs(dirty: list[bool]) -> list[tuple[int, int, bool]]:
    """Maximal runs [b0, b1) of consecutive blocks with the same dirtiness."""
    runs, b0 = [], 0
    for b in range(1, len(dirty) + 1):
        if b == len(dirty) or dirty[b] != dirty[b0]:
            runs.append((b0, b, dirty[b0]))
            b0 = b
    return runs


class BlockPlan:
    """How one (sub-)sequence of L rows is cut into query blocks, shared by the forward here
    and the training path's backward (`chunked_grad.py`), so both visit the same blocks.

    c rows a block, w1 keys on either side, num_blocks blocks, span = c + 2*w1 keys a block.
    A sequence that fits in the window (dilated heads on short inputs) is one block whose
    span is the whole sequence; otherwise blocks of c rows see w1 keys on either side.
    shared_bias (1, 1 or H, c, span): the band mask that every block without an excluded key
    uses, with the relative position bias of each (row, key) offset when there is one (it is
    the same in every block: key s of a block's span sits s - w1 - r after its row r);
    excluded (B, num_blocks, span): the excluded keys (padding, globals, past either end) of
    each block's span; dirty[b]: per block of sample b, whether its span holds one."""

    def __init__(self, L: int, w1: int, band_excluded: torch.Tensor, dtype: torch.dtype,
                 rel_bias: torch.Tensor | None = None, c: int | None = None):
        self.L = L
        self.c, self.w1 = (L, 0) if L <= w1 + 1 else (c or block_size_for(w1), w1)
        c, w1 = self.c, self.w1
        self.num_blocks, self.span = -(-L // c), c + 2 * w1
        self.neg = torch.finfo(dtype).min
        device = band_excluded.device
        # Key s of a block's span is in the band of the block's row r when 0 <= s - r <= 2*w1.
        rel = torch.arange(self.span, device=device)[None, :] - torch.arange(c, device=device)[:, None]
        outside = (rel < 0) | (rel > 2 * w1) if w1 else torch.zeros_like(rel, dtype=torch.bool)
        self.offsets = rel - w1  # (c, span) key-minus-query offset of each tile entry
        self.shared_bias = _shared_bias(rel_bias, self.offsets, outside, dtype, self.neg)
        pad_end = self.num_blocks * c - L + w1
        self.excluded = F.pad(band_excluded, (w1, pad_end), value=True).unfold(1, self.span, c)  # (B, nb, span)
        self.dirty = self.excluded.any(dim=-1).tolist()

    def runs(self, b: int):
        """Maximal runs [b0, b1) of consecutive blocks of sample b with the same dirtiness."""
        return _runs(self.dirty[b])

    def pieces(self, b: int, step: int):
        """The runs of sample b cut into pieces of at most `step` blocks: (b0, b1, is_dirty)."""
        for b0, b1, is_dirty in self.runs(b):
            for s0 in range(b0, b1, step):
                yield s0, min(b1, s0 + step), is_dirty

    def bias(self, b: int, b0: int, b1: int, is_dirty: bool) -> torch.Tensor:
        """The additive mask of blocks [b0, b1) of sample b: (1 or nb, 1 or H, c, span)."""
        if not is_dirty:
            return self.shared_bias
        return self.shared_bias.expand(b1 - b0, -1, self.c, self.span).masked_fill(
            self.excluded[b, b0:b1, None, None, :], self.neg)

    def rows(self, b0: int, b1: int) -> tuple[int, int]:
        """The query rows [r0, r1) of blocks [b0, b1)."""
        return b0 * self.c, min(b1 * self.c, self.L)

    def key_rows(self, b0: int, b1: int) -> tuple[int, int]:
        """The key rows [k0, k1) the spans of blocks [b0, b1) cover; outside [0, L) is padding."""
        return b0 * self.c - self.w1, b1 * self.c + self.w1

    def query_blocks(self, x: torch.Tensor, b0: int, b1: int) -> torch.Tensor:
        """Rows of blocks [b0, b1) of one sample's (L, H, ...) tensor as (nb, H, c, ...)
        (a view, except the zero-padded last block)."""
        r0, r1 = self.rows(b0, b1)
        rows = x[r0:r1]
        if r1 - r0 < (b1 - b0) * self.c:
            rows = F.pad(rows, (0, 0) * (x.dim() - 1) + (0, (b1 - b0) * self.c - (r1 - r0)))
        return rows.view(b1 - b0, self.c, *x.shape[1:]).transpose(1, 2)

    def key_spans(self, x: torch.Tensor, b0: int, b1: int) -> torch.Tensor:
        """Spans of blocks [b0, b1) of one sample's (L, H, D) keys or values as
        (nb, H, span, D): views of x, except at the two ends, where only those blocks' own
        keys are copied with their zero padding."""
        k0, k1 = self.key_rows(b0, b1)
        rows = x[max(0, k0) : min(self.L, k1)]
        pad = (max(0, -k0), max(0, k1 - self.L))
        if pad != (0, 0):
            rows = F.pad(rows, (0, 0, 0, 0, *pad))
        return rows.unfold(0, self.span, self.c).permute(0, 1, 3, 2)
