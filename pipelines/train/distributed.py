"""The processes of a run under torchrun (or the one process without it): rank, world size,
the device each process uses, and the few collectives the loop needs."""

from __future__ import annotations

import os
from typing import Sequence

import torch
import torch.distributed as dist

from ..errors import UsageError


class Dist:
    """The process group (or its absence): rank, world size, and the few collectives used."""

    def __init__(self, device: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
        self.owned = False
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise UsageError(f"device {device!r}: CUDA is not available here")
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise UsageError(f"device {device!r} is not a device torch knows") from None
        if self.world > 1 and dev.type == "cuda":
            dev = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(dev)
        self.device = dev
        if self.world > 1:
            if not dist.is_initialized():
                dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
                self.owned = True
            self.rank, self.world = dist.get_rank(), dist.get_world_size()

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: Sequence[float]) -> list[float]:
        t = torch.tensor(list(values), dtype=torch.float64)
        if self.world > 1:
            t = t.to(self.device)
            dist.all_reduce(t)
        return t.cpu().tolist()

    def gather(self, obj) -> list:
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def close(self) -> None:
        if self.owned:
            dist.destroy_process_group()
