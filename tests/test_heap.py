"""pipelines/infer/heap.py: a long job's freed heap pages go back to the system, now and then."""

from __future__ import annotations

import subprocess
import sys

from lfcli.pipelines.infer.heap import HeapKeeper, resident_bytes

MB = 1 << 20


def test_the_keeper_trims_only_past_the_slack_over_the_working_set():
    levels = iter([500, 510, 530, 560, 700, 705, 720, 790])  # resident MB after each batch
    trims = []
    keeper = HeapKeeper(slack=64 * MB, resident=lambda: next(levels) * MB, trim=lambda: trims.append(1))
    seen = []
    for _ in range(8):
        keeper.after_batch()
        seen.append(len(trims))
    # 500 is the working set; 560 is within 64 of it; 700 is past: trim; 705 is the new level
    # (the batch after a trim); 790 is 85 over it: trim
    assert seen == [0, 0, 0, 0, 1, 1, 1, 2] and keeper.trims == 2


def test_returning_free_pages_shrinks_a_fragmented_heap():
    """A real process: a heap of 1 KB blocks, all freed but every 64th (each pins its page),
    then the keeper: resident memory falls."""
    code = """
import ctypes
from lfcli.pipelines.infer.heap import HeapKeeper, resident_bytes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(1024) for _ in range(200_000)]
for i, b in enumerate(blocks):
    ctypes.memset(b, 1, 1024)
for i, b in enumerate(blocks):
    if i % 64:
        libc.free(b)
keeper = HeapKeeper(slack=0)
keeper.after_batch()  # the level
before = resident_bytes()
keeper.mark = before - 1
keeper.after_batch()
print(before, resident_bytes(), keeper.trims)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    before, after, trims = map(int, out)
    assert trims == 1 and after < before - 100 * MB, (before, after)


def test_resident_bytes_reads_this_process():
    assert resident_bytes() > 10 * MB
