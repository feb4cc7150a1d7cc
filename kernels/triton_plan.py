"""Planning the Triton kernels' work on the host: which blocks each program visits, and with
which block sizes (kernels/triton_banded.py launches, kernels/triton_kernels.py computes).

Plain torch, no triton: the tables are small int tensors built once per shape and cached, and
`work_efficiency` (the share of computed scores the band needs) is importable without a GPU.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch


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


BLOCK_G_TILE = 16  # global columns per tile: the smallest tile tl.dot takes; most inputs have 1-64


@functools.lru_cache(maxsize=64)
def work_table(
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
