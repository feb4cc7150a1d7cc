"""Block sizes for the Triton band kernel, measured once per GPU and shape class and kept.

`kernel_config` (triton_plan.py) gives block sizes chosen on paper. Which of a few nearby
choices runs fastest depends on the card, the head size, the dtype and the window, so the
first inference call of each (card, head dim, dtype, window, bias, dilated) class times a
short list of candidates on the call's own inputs and keeps the fastest, in memory and in
`$LFCLI_CACHE/triton-tune.json` (default ~/.cache/lfcli), so a later process starts tuned.

Only inference forwards are tuned: training keeps `kernel_config`, whose backward kernels were
sized for their register budget. Nothing is tuned in Triton's interpreter, on the CPU, while a
CUDA graph is being captured, or with LFCLI_TRITON_TUNE=0. Every candidate computes the same
result (the tests run each one against the reference); only the time differs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

import torch

from .triton_plan import KernelConfig, kernel_config

TUNE_ENV = "LFCLI_TRITON_TUNE"
REPEATS = 5  # timed runs per candidate after one warm-up (which also compiles it)
# Calls with fewer tokens (batch x length) keep `kernel_config`'s blocks untuned: each candidate
# compiles once (a second or two apiece), which a short job would never win back; on an H200
# the first 4k-token call of an untuned class took 11 s, nearly all of it compiling.
TUNE_MIN_TOKENS = 8192


def candidates(head_dim: int, dtype: torch.dtype) -> list[KernelConfig]:
    """The short list tried for a head size and dtype, `kernel_config`'s choice first (kept on
    a tie). 128-row query blocks waste more of the band's edges (triton_plan.work_efficiency:
    window 512, 80% -> 67% of the scores useful) but halve the key loads per score; fp32 tiles
    take twice the registers and shared memory of 16-bit ones, so fp32 keeps the smaller ones."""
    base = kernel_config(head_dim)
    if head_dim <= 64:
        wide = [KernelConfig(64, 128, 4, 3), KernelConfig(128, 64, 8, 3), KernelConfig(128, 128, 8, 2)]
        narrow = [KernelConfig(64, 32, 4, 4), KernelConfig(64, 64, 4, 4)]
    else:
        wide = [KernelConfig(64, 64, 4, 2), KernelConfig(128, 32, 8, 2), KernelConfig(128, 64, 8, 2)]
        narrow = [KernelConfig(64, 32, 4, 3)]
    extra = narrow if dtype == torch.float32 else wide + narrow
    return [base] + [c for c in extra if c != base]


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def tuning_applies(q: torch.Tensor) -> bool:
    """Whether this call may be tuned: an inference forward on a real GPU."""
    if q.device.type != "cuda" or _interpreted() or os.environ.get(TUNE_ENV, "1") == "0":
        return False
    if torch.is_grad_enabled() and q.requires_grad:
        return False
    return not torch.cuda.is_current_stream_capturing()


def _cache_file() -> Path:
    root = Path(os.environ.get("LFCLI_CACHE") or Path.home() / ".cache" / "lfcli")
    return root / "triton-tune.json"


class Tuner:
    """The kept choices: key (a string naming the card and the shape class) -> KernelConfig.
    `timer(run) -> seconds` measures one candidate; the default times CUDA events."""

    def __init__(self, path: Path | None = None, timer: Callable[[Callable[[], object]], float] | None = None):
        self.path = path
        self.timer = timer or _cuda_seconds
        self.chosen: dict[str, KernelConfig] = {}
        self._loaded = False

    def _load(self) -> None:
        self._loaded = True
        if self.path is None or not self.path.is_file():
            return
        try:
            saved = json.loads(self.path.read_text())
            self.chosen.update({key: KernelConfig(*value) for key, value in saved.items()})
        except (OSError, ValueError, TypeError):
            pass  # a damaged file is measured again, not an error

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({key: list(cfg) for key, cfg in sorted(self.chosen.items())}, indent=1))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only cache only costs the next process a measurement

    def knows(self, key: str) -> bool:
        """Whether `key` has a kept choice (in memory or in the file)."""
        if not self._loaded:
            self._load()
        return key in self.chosen

    def choose(self, key: str, options: list[KernelConfig], run: Callable[[KernelConfig], object]) -> KernelConfig:
        """The kept choice for `key`, else the fastest of `options` (the first on a tie; one
        that fails to compile, e.g. out of shared memory, is skipped)."""
        if self.knows(key):
            return self.chosen[key]
        best, best_time = options[0], float("inf")
        for cfg in options:
            try:
                seconds = self.timer(lambda: run(cfg))
            except Exception:  # noqa: BLE001 - a candidate that cannot compile on this card
                continue
            if seconds < best_time:
                best, best_time = cfg, seconds
        self.chosen[key] = best
        self._save()
        return best


def _cuda_seconds(run: Callable[[], object]) -> float:
    run()  # compiles, and warms the caches
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPEATS):
        run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000 / REPEATS


_TUNER: Tuner | None = None


def tuner() -> Tuner:
    global _TUNER
    if _TUNER is None:
        _TUNER = Tuner(_cache_file())
    return _TUNER


def shape_class(q: torch.Tensor, rel_bias, dilations, one_sided_window: int) -> str:
    """The key a choice is kept under: the card, head dim, dtype, window, bias, dilation; and the
    length in powers of two (a 512-token input and a 16k one may want other blocks)."""
    name = torch.cuda.get_device_name(q.device).replace(" ", "_")
    length = 1 << max(0, (q.shape[2] - 1).bit_length())
    dilated = any(d != 1 for d in dilations)
    return (f"{name}/D{q.shape[-1]}/{str(q.dtype).removeprefix('torch.')}/w{one_sided_window}"
            f"/n{length}/{'bias' if rel_bias is not None else 'nobias'}/{'dilated' if dilated else 'plain'}")


def tuned_config(q: torch.Tensor, rel_bias, dilations, run: Callable[[KernelConfig], object],
                 one_sided_window: int = 0) -> KernelConfig:
    """The block sizes for this call: the tuned ones for an inference forward on a GPU,
    `kernel_config`'s otherwise. `run(config)` runs the kernel with a candidate."""
    large = q.shape[0] * q.shape[2] >= TUNE_MIN_TOKENS
    if q.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        # A CUDA graph (models/cuda_graphs.py) records the blocks its eager warm-up calls ran
        # with: the kept choice where they were tuned, else the paper's. Nothing is timed here.
        key = shape_class(q, rel_bias, dilations, one_sided_window)
        tuned = large and os.environ.get(TUNE_ENV, "1") != "0" and tuner().knows(key)
        return tuner().chosen[key] if tuned else kernel_config(q.shape[-1])
    if not tuning_applies(q) or not large:
        return kernel_config(q.shape[-1])
    started = time.perf_counter()
    key = shape_class(q, rel_bias, dilations, one_sided_window)
    known = tuner().knows(key)
    cfg = tuner().choose(key, candidates(q.shape[-1], q.dtype), run)
    if not known and os.environ.get("LFCLI_DEBUG") == "1":
        print(f"lfcli: tuned {key}: {tuple(cfg)} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return cfg
