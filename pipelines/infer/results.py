"""A batch's window results brought from the device to the host in as few copies as possible
(runner.Pipeline._forward)."""

from __future__ import annotations

from typing import Any, Callable

import torch


def _on_host(t: torch.Tensor) -> bool:
    return t.device.type == "cpu"


def results_to_host(results: list[Any], on_host: Callable[[torch.Tensor], bool] = _on_host) -> list[Any]:
    """A batch's window results with every tensor on the CPU, brought over in one copy per
    dtype instead of one per tensor: on a GPU each copy waits for the device, so a batch of
    64 windows of a few small tensors each would wait a hundred times. Tensors already on the
    host (`on_host`) and other values pass through; the structure (lists, tuples) is kept."""
    leaves: list[torch.Tensor] = []

    def collect(r):
        if isinstance(r, torch.Tensor):
            if not on_host(r):
                leaves.append(r)
        elif isinstance(r, (list, tuple)):
            for x in r:
                collect(x)

    for r in results:
        collect(r)
    if not leaves:
        return results
    moved: dict[int, torch.Tensor] = {}
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for t in leaves:
        by_dtype.setdefault(t.dtype, []).append(t)
    for tensors in by_dtype.values():
        flat = torch.cat([t.reshape(-1) for t in tensors]).cpu()
        for t, piece in zip(tensors, flat.split([t.numel() for t in tensors])):
            moved[id(t)] = piece.view(t.shape)

    def rebuild(r):
        if isinstance(r, torch.Tensor):
            return moved.get(id(r), r)
        if isinstance(r, (list, tuple)):
            return type(r)(rebuild(x) for x in r)
        return r

    return [rebuild(r) for r in results]
