"""The obviously-correct twin: Longformer's windowed attention as one dense masked softmax.

O(n^2) time and memory, so it is for tests and small inputs only. Every fast backend
(`chunked`, `triton`) is tested against this function.

Semantics (see ../shared/docs/longformer-reference.md, "Masks and padding"):
query i attends to key j when
  - j is in i's band: |i - j| <= w1 * d and (i - j) % d == 0, and j is neither padding nor
    global (a global key is counted once, as a global column), or
  - j is a global token that is not padding.
The softmax runs in float32. Rows of padded queries are zero.

A relative position bias (MPNet's; see `position_bias.py`) is added to the score of query i
on key j, band key or global key alike: `rel_bias[h, clamp(j - i, -R, R) + R]`.
"""

from __future__ import annotations

import torch

from .position_bias import bias_between


def allowed_keys(
    n: int,
    one_sided_window: int,
    key_padding_mask: torch.Tensor,
    is_global: torch.Tensor,
    dilation: torch.Tensor,
) -> torch.Tensor:
    """Boolean (B, H, n, n) matrix: True where query i may attend to key j."""
    i = torch.arange(n, device=key_padding_mask.device)
    rel = i[:, None] - i[None, :]  # (n, n) query minus key
    d = dilation.to(key_padding_mask.device).view(-1, 1, 1)  # (H, 1, 1)
    in_band = (rel.abs() <= one_sided_window * d) & (rel.remainder(d) == 0)  # (H, n, n)
    real_key = ~key_padding_mask[:, None, None, :]  # (B, 1, 1, n)
    global_key = (is_global & ~key_padding_mask)[:, None, None, :]
    return (in_band[None] & real_key & ~global_key) | global_key


def reference_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    one_sided_window: int,
    key_padding_mask: torch.Tensor,
    is_global: torch.Tensor,
    dilation: torch.Tensor,
    dropout_p: float = 0.0,
    rel_bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """q, k, v: (B, H, n, D) with q already scaled; rel_bias: None or (H, 2R+1), the score
    bias by key-minus-query offset. Returns (B, H, n, D) in q's dtype."""
    n = q.shape[2]
    allowed = allowed_keys(n, one_sided_window, key_padding_mask, is_global, dilation)
    scores = torch.matmul(q, k.transpose(-1, -2)).float()
    if rel_bias is not None:
        i = torch.arange(n, device=q.device)
        scores = scores + bias_between(rel_bias, i, i).float()  # (H, n, n): key minus query
    scores = scores.masked_fill(~allowed, torch.finfo(torch.float32).min)
    probs = torch.softmax(scores, dim=-1).to(q.dtype)
    probs = probs.masked_fill(key_padding_mask[:, None, :, None], 0.0)  # padded query rows
    if dropout_p > 0.0:
        probs = torch.nn.functional.dropout(probs, p=dropout_p)
    return torch.matmul(probs, v)


def reference_global_rows(
    q_global: torch.Tensor,
    k_global: torch.Tensor,
    v_global: torch.Tensor,
    key_padding_mask: torch.Tensor,
    dropout_p: float = 0.0,
    rel_bias: torch.Tensor | None = None,
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """Global queries attend to every non-padding key with the global projections.

    q_global: (B, H, G, D) scaled; k_global, v_global: (B, H, n, D); with rel_bias (H, 2R+1),
    positions (B, G) are the global queries' positions, and key j's score gets the bias of
    j - position. Returns (B, H, G, D).
    """
    scores = torch.matmul(q_global, k_global.transpose(-1, -2)).float()
    if rel_bias is not None:
        j = torch.arange(k_global.shape[2], device=q_global.device)
        scores = scores + bias_between(rel_bias, positions, j).transpose(0, 1).float()
    scores = scores.masked_fill(key_padding_mask[:, None, None, :], torch.finfo(torch.float32).min)
    probs = torch.softmax(scores, dim=-1).to(q_global.dtype)
    if dropout_p > 0.0:
        probs = torch.nn.functional.dropout(probs, p=dropout_p)
    return torch.matmul(probs, v_global)
