"""CUDA graphs for the encoder's inference forward: one launch instead of ~60 a layer.

On an H200 (benchmarks/README.md, "GPU check: results", 2026-11-28) the small shape's forward
kept the card busy a fifth of the time: its kernels took 54.6 ms of a 0.27 s forward while
Python launched 56 of them a layer. A CUDA graph records a forward's launches once for one input
shape and replays them with a single call, so the host's cost no longer grows with the layers.

`GraphedEncoder` stands in for a `LongformerModel`'s forward. A shape (batch, length, global
columns, token types given or not) runs eagerly the first `replay_after` times it is seen, which
compiles and tunes the Triton kernels and fills the plans' caches; after that it is captured
once into static input buffers and replayed: the inputs are copied into those buffers, the graph
runs, and the output is cloned out of the graph's memory. A pipeline's batches of full windows
are nearly all one shape; a document's last, shorter windows seldom repeat a shape and stay
eager. At most `max_graphs` shapes are kept (the oldest is dropped), in one shared memory pool.

Anything else runs the eager forward unchanged: training, autograd, a global mask already on
the device (its column count would be read back), or any shape whose capture fails (then graphs
are off for the model, with a note under LFCLI_DEBUG=1). Off unless LFCLI_CUDA_GRAPHS=1 until a
GPU run has measured it against the eager forward (benchmarks/gpu_check.py, step `graphs`).
"""

from __future__ import annotations

import os
import sys
from collections import Counter, OrderedDict
from typing import Callable

import torch

from .longformer import LongformerModel

ENV = "LFCLI_CUDA_GRAPHS"


def graphs_wanted(device: torch.device) -> bool:
    return torch.device(device).type == "cuda" and os.environ.get(ENV) == "1"


def cuda_capture(run: Callable[[], torch.Tensor], pool) -> tuple[Callable[[], None], torch.Tensor]:
    """Capture `run()` into a CUDA graph: a warm-up on a side stream first (as torch asks, so that
    lazy initialisation stays out of the graph), then the capture. Returns (replay, output)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    # thread_local: a read-ahead thread's own CUDA calls, if any, are not the capture's concern
    with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
        out = run()
    return graph.replay, out


class _Captured:
    """One shape's graph and the static buffers it reads and writes."""

    def __init__(self, ids, mask, glob, types, replay, out):
        self.ids, self.mask, self.glob, self.types = ids, mask, glob, types
        self.replay, self.out = replay, out


class GraphedEncoder:
    """Callable with LongformerModel.forward's arguments; see the module doc."""

    def __init__(self, encoder, replay_after: int = 2, max_graphs: int = 4,
                 capture: Callable | None = None, pool=None):
        self.eager = encoder.forward  # the model's own bound forward
        self.encoder = encoder
        self.replay_after, self.max_graphs = replay_after, max_graphs
        self.capture = capture or cuda_capture
        self.pool = pool  # one memory pool for every shape's graph, made at the first capture
        self.seen: Counter = Counter()
        self.graphs: OrderedDict = OrderedDict()
        self.enabled = True
        self.replays = 0

    def __call__(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None):
        args = (input_ids, attention_mask, global_attention_mask, token_type_ids)
        if not self._applies(*args):
            return self.eager(*args)
        B, n = input_ids.shape
        num_global = int(global_attention_mask.bool().sum(1).max()) if B and global_attention_mask is not None else 0
        key = (B, n, num_global, token_type_ids is not None)
        captured = self.graphs.get(key)
        if captured is None:
            self.seen[key] += 1
            if self.seen[key] <= self.replay_after:
                return self.eager(*args)
            captured = self._capture(key, *args)
            if captured is None:
                return self.eager(*args)
        self.graphs.move_to_end(key)
        captured.ids.copy_(input_ids, non_blocking=True)
        captured.mask.copy_(attention_mask, non_blocking=True)
        if global_attention_mask is None:
            captured.glob.zero_()
        else:
            captured.glob.copy_(global_attention_mask, non_blocking=True)
        if token_type_ids is not None:
            captured.types.copy_(token_type_ids, non_blocking=True)
        captured.replay()
        self.replays += 1
        return captured.out.clone()  # the graph's output buffer is overwritten by the next replay

    def _applies(self, input_ids, attention_mask, global_attention_mask, token_type_ids) -> bool:
        if not self.enabled or self.encoder.training or torch.is_grad_enabled() or attention_mask is None:
            return False
        # The column count is a shape: it must be read on the host, from a mask given there.
        return global_attention_mask is None or global_attention_mask.device.type == "cpu"

    def _capture(self, key, input_ids, attention_mask, global_attention_mask, token_type_ids) -> _Captured | None:
        B, n, num_global, with_types = key
        device = input_ids.device
        ids = input_ids.clone()
        mask = attention_mask.to(device).clone()
        glob = torch.zeros((B, n), dtype=torch.long, device=device)
        if global_attention_mask is not None:
            glob.copy_(global_attention_mask)
        types = token_type_ids.to(device).clone() if with_types else None

        def run():
            return self.eager(ids, mask, glob, types, num_global=num_global)

        try:
            if self.pool is None and self.capture is cuda_capture:
                self.pool = torch.cuda.graph_pool_handle()
            replay, out = self.capture(run, self.pool)
        except Exception as exc:  # noqa: BLE001 - a capture that fails leaves the eager forward
            self.enabled = False
            if os.environ.get("LFCLI_DEBUG") == "1":
                print(f"lfcli: CUDA graphs off: capturing {key} failed ({type(exc).__name__}: {exc})", file=sys.stderr)
            return None
        if len(self.graphs) >= self.max_graphs:
            self.graphs.popitem(last=False)
        self.graphs[key] = captured = _Captured(ids, mask, glob, types, replay, out)
        return captured


def use_cuda_graphs(model, **options) -> GraphedEncoder | None:
    """Replace the forward of `model`'s encoder (the model itself, or a head's `.longformer`)
    by a GraphedEncoder. Returns it, or None when the model has no such encoder."""
    encoder = model if isinstance(model, LongformerModel) else getattr(model, "longformer", None)
    if not isinstance(encoder, LongformerModel):
        return None
    graphed = GraphedEncoder(encoder, **options)
    encoder.forward = graphed  # nn.Module.__call__ calls self.forward: an instance attribute wins
    return graphed
