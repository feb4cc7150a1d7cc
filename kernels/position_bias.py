"""A relative position bias as the attention kernels take it: one vector per head over
key-minus-query offsets.

MPNet (Song et al. 2020) adds to every head's score of query i on key j a learned value of
the bucket of j - i (models/longformer.py, `LongformerEncoder.offset_bias`). Buckets are exact
near 0 and constant beyond a maximum distance, so the bias of every offset is known from the
offsets -R..R alone, R at least that distance: `rel_bias` is (H, 2R + 1), entry R + o for
offset o, and an offset beyond R takes the value at R (or -R). A banded kernel reads one
small vector per head instead of an (n x n) matrix.
"""

from __future__ import annotations

import torch


def reach(rel_bias: torch.Tensor) -> int:
    """R of a (H, 2R + 1) bias vector."""
    return (rel_bias.shape[-1] - 1) // 2


def bias_at(rel_bias: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """rel_bias (H, 2R + 1) at key-minus-query `offsets` (any shape): (H, *offsets.shape).
    Differentiable in rel_bias (a gather)."""
    R = reach(rel_bias)
    index = offsets.clamp(-R, R) + R
    return rel_bias[:, index.reshape(-1)].view(rel_bias.shape[0], *offsets.shape)


def bias_between(rel_bias: torch.Tensor, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """The bias of queries at positions `queries` (..., Q) on keys at positions `keys` (..., K),
    leading dimensions broadcast: (H, ..., Q, K), by the offset key - query."""
    return bias_at(rel_bias, keys[..., None, :] - queries[..., :, None])
