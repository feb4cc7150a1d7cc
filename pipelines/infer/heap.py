"""Keeping a long job's memory flat: freed heap pages go back to the system.

glibc's malloc keeps the memory a process frees for its next allocations. Over a long job the
encoder's large activations and the small tensors a task keeps per window (vectors, scores)
interleave on the heap; the small ones pin the pages between them, and the process's resident
memory creeps up batch after batch: `lfcli embed` on a 5 MB text peaked at 1.37 GB against
0.81 GB on a 500 KB one, though the pipeline holds the same at any moment. malloc_trim(0)
hands the free pages back. It is called after a batch only when the resident memory has grown
by SLACK over its level after the batch following the last call, so a job pays for it now and
then, not every batch (returned pages are faulted in again when next used). Elsewhere than glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Callable

# Bytes of growth in resident memory before the free pages are returned. lfcli embed, peak RSS
# of a 5 MB text over a 500 KB one: 1.22x with 64 MB, 1.10x with 32 MB, in the same time
# (368 and 360 s; 2-core AMD EPYC, python benchmarks/doc_memory.py).
SLACK = 32 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int | None:
    """This process's resident memory, from /proc (None where there is no /proc)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _glibc_trim() -> Callable[[], None] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0) and None


class HeapKeeper:
    """`after_batch()` returns the heap's free pages to the system when resident memory has
    grown by `slack` bytes over its level after the first batch since the last return (that
    batch's level holds the encoder's working set, which every batch reuses; see the module
    doc)."""

    def __init__(self, slack: int = SLACK, resident: Callable[[], int | None] = resident_bytes,
                 trim: Callable[[], None] | None = None):
        self.slack, self.resident = slack, resident
        self.trim = trim if trim is not None else _glibc_trim()
        self.mark: int | None = None  # resident bytes after the first batch since the last trim
        self.trims = 0

    def after_batch(self) -> None:
        if self.trim is None:
            return
        now = self.resident()
        if now is None:
            return
        if self.mark is None:
            self.mark = now
        elif now - self.mark > self.slack:
            self.trim()
            self.trims += 1
            self.mark = None
