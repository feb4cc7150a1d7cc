"""Which examples each update of the training loop takes (loop.py): a seeded permutation of
the examples per epoch (`Stream`), updates of about `batch_tokens` real tokens that never reach
into the next epoch, sorted by length into micro-batches of at most `micro_tokens` padded
tokens (`plan_update`), or fixed batches of examples (`plan_fixed`, pretraining's
--batch-size/--grad-accum); and the stable seeds every process derives alike (`mix_seed`).
Everything here is a pure function of the examples' lengths, the seed and the stream
position, so a resumed run takes the same updates as one that never stopped."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import torch


def mix_seed(*parts: object) -> int:
    """A 63-bit seed from `parts`, stable across processes and runs."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def unit_hash(*parts: object) -> float:
    """A stable number in [0, 1) from `parts` (sha256; the same in every process and run)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class Stream:
    """Training example k of the run: epoch k // n, position k % n of that epoch's seeded
    permutation of the n training examples."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed = n, seed
        self._epoch, self._perm = -1, None

    def __getitem__(self, k: int) -> int:
        epoch, i = divmod(k, self.n)
        if epoch != self._epoch:
            gen = torch.Generator().manual_seed(mix_seed(self.seed, "epoch", epoch))
            self._epoch, self._perm = epoch, torch.randperm(self.n, generator=gen).tolist()
        return self._perm[i]


@dataclass
class Plan:
    """The update's micro-batches for this process (lists of example indices)."""

    micro: list[list[int]]
    cursor: int  # stream position after the update
    tokens: int  # real tokens of the whole update (all processes)


def micro_tokens_for(device: torch.device) -> int:
    """The default padded tokens of one forward pass. On the CPU a micro-batch of 8,192 tokens
    made the base tier's activations (several GB a pass) fault in fresh pages at every step: a
    LoRA step of mpnet-base-long on 176-token windows ran at 256-391 tokens/s with 8,192 (8-20 s
    of a step in the kernel) and 464-490 with 2,048 (benchmarks/micro_batches.py, 2-core Xeon,
    fp32, two threads, 2026-11-28); the small tier ran the same in both. A GPU wants the bigger
    passes."""
    return 8192 if device.type == "cuda" else 2048


def plan_update(stream: Stream, examples: Sequence, cursor: int, batch_tokens: int, micro_tokens: int,
                rank: int = 0, world: int = 1) -> Plan:
    """The update starting at stream position `cursor`: its examples, longest first in
    micro-batches of at most micro_tokens padded tokens, dealt to the processes round-robin.

    An update never reaches into the next epoch: each epoch is split into exactly
    steps_per_epoch(examples, batch_tokens) updates, update k ending once the epoch's examples
    so far hold k/steps_per_epoch of its tokens (at least one example each). So an update
    holds about batch_tokens tokens, or the whole data set when that is smaller, and
    `--epochs 1` is one pass over the data. (Under torchrun an update takes a few examples
    more when its micro-batches do not share evenly among the processes.)"""
    n_examples = len(examples)
    per_epoch = steps_per_epoch(examples, batch_tokens)
    start = cursor - cursor % n_examples  # of the epoch
    # The epoch's update ends (stream positions, relative to its start), from its token count
    # so far at each position: the same in every process and on every call, so the plan needs
    # no state beyond the cursor (resume included).
    cum = list(itertools.accumulate((len(examples[stream[start + p]]) for p in range(n_examples)), initial=0))
    ends, end = [], 0
    for k in range(1, per_epoch):
        end = max(end + 1, bisect.bisect_left(cum, -(-k * cum[-1] // per_epoch)))
        ends.append(min(end, n_examples - (per_epoch - k)))  # leave an example for each update after it
    stop = start + next(e for e in [*ends, n_examples] if e > cursor - start)
    taken = [stream[k] for k in range(cursor, stop)]
    cursor = stop
    while True:
        while len(taken) < world:  # an example for each process
            taken.append(stream[cursor])
            cursor += 1
        tokens = sum(len(examples[i]) for i in taken)
        taken.sort(key=lambda i: (-len(examples[i]), i))
        micro: list[list[int]] = []
        for i in taken:
            n = len(examples[i])
            if micro and max(len(examples[micro[-1][0]]), n) * (len(micro[-1]) + 1) <= micro_tokens:
                micro[-1].append(i)
            else:
                micro.append([i])
        if len(micro) % world == 0:
            return Plan(micro[rank::world], cursor, tokens)
        taken.append(stream[cursor])  # one more example, until the processes share evenly
        cursor += 1


def plan_fixed(stream: Stream, examples: Sequence, cursor: int, batch_size: int, grad_accum: int,
               rank: int = 0, world: int = 1) -> Plan:
    """grad_accum x world micro-batches of batch_size examples in stream order; micro-batch
    a * world + r is process r's a-th, so the processes share what one process would take."""
    taken = [stream[k] for k in range(cursor, cursor + batch_size * grad_accum * world)]
    micro = [taken[j:j + batch_size] for j in range(0, len(taken), batch_size)]
    return Plan(micro[rank::world], cursor + len(taken), sum(len(examples[i]) for i in taken))


def steps_per_epoch(examples: Sequence, batch_tokens: int) -> int:
    """Updates in one pass over the examples (plan_update's split of every epoch): as many as
    updates of at most batch_tokens tokens on average need, at least one, at most one per
    example. A data set smaller than batch_tokens is one update per epoch, not dozens of
    passes over it in one update."""
    total = sum(len(e) for e in examples)
    return max(1, min(len(examples), math.ceil(total / batch_tokens)))
