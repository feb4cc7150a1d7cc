"""Benchmark: how big a forward pass should a CPU training step take (`--micro-tokens`)?

One LoRA training step (forward, the QA loss, backward; no optimizer) of a bundled tier's QA
model, as `lfcli finetune qa` builds it (`build_model`, rank 16), on SQuAD-like windows:
`--length` tokens each (176: about the mean of SQuAD's training windows), 16 global
question tokens, random ids and targets. Each micro-batch size packs as many windows as fit
into its token budget. After one warm-up step, `--rounds` steps each report the wall time,
the tokens per second and the process's user and system CPU seconds (os.times): system time
is the kernel, here mostly faulting in the fresh pages of large activations.

    python benchmarks/micro_batches.py                          # base tier, 8192,4096,2048,1024
    python benchmarks/micro_batches.py --model minilm-l6-long --sizes 8192,2048
    python benchmarks/micro_batches.py --quick                  # the small tier, 1024 and 256, seconds

Measured 2026-11-28, 2-core Intel Xeon (model 207), fp32, two threads, torch 2.13.0, the base
tier, this script (the training run paused), JSON in benchmarks/results/micro_batches_base*.json:

  | glibc malloc                        | 8,192          | 4,096   | 2,048   | 1,024   |
  | as it comes                         | 390-391 (8 s)  | 484-488 | 464-469 | 435-443 |
  | MALLOC_MMAP_THRESHOLD_=16777216     | 256-276 (18-20 s) | 413-457 | 475-490 | -   |

(tokens/s; in brackets the system CPU seconds of a step, about 0 elsewhere). The second
setting is what the base tier's training ran with, to keep its resident memory down. 2,048 is
within 5% of the fastest in both, with a quarter of 8,192's activations: hence
`micro_tokens_for`, 2,048 on the CPU. The small tier, as it comes: 2,668-2,716 tokens/s with
8,192, 2,864-2,866 with 4,096, 2,802-2,811 with 2,048, 2,596-2,607 with 1,024.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.nn.functional as F


def step(model, batch: dict) -> None:
    start, end = model(input_ids=batch["ids"], attention_mask=batch["mask"], global_attention_mask=batch["glob"])
    loss = F.cross_entropy(start.float(), batch["start"]) + F.cross_entropy(end.float(), batch["end"])
    loss.backward()


def windows(n: int, length: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 30000, (n, length), generator=g)
    ids[:, 0] = 0
    glob = torch.zeros(n, length, dtype=torch.long)
    glob[:, :16] = 1
    start = torch.randint(20, length, (n,), generator=g)
    return {"ids": ids, "mask": torch.ones(n, length, dtype=torch.long), "glob": glob, "start": start,
            "end": torch.minimum(start + 3, torch.tensor(length - 1))}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="mpnet-base-long")
    p.add_argument("--sizes", default="8192,4096,2048,1024", help="micro-batch token budgets")
    p.add_argument("--length", type=int, default=176)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None)
    p.add_argument("--quick", action="store_true", help="the small tier, 1024 and 256 tokens, 64-token windows, one round")
    a = p.parse_args(argv)
    if a.quick:
        a.model, a.sizes, a.length, a.rounds = "minilm-l6-long", "1024,256", 64, 1
    from lfcli.models.bundled import resolve_model
    from lfcli.pipelines.train.finetune import build_model

    torch.set_num_threads(a.threads)
    model = build_model("LongformerForQuestionAnswering", a.model, resolve_model(a.model), adapter="lora",
                        lora_rank=16, lora_alpha=32.0, seed=0)
    model.train()
    rows = []
    for size in (int(s) for s in a.sizes.split(",")):
        batch = windows(max(1, size // a.length), a.length)
        step(model, batch)
        for _ in range(a.rounds):
            model.zero_grad(set_to_none=True)
            c0, t0 = os.times(), time.perf_counter()
            step(model, batch)
            dt, c1 = time.perf_counter() - t0, os.times()
            row = {"micro_tokens": size, "windows": batch["ids"].shape[0], "seconds": round(dt, 3),
                   "tokens_per_s": round(batch["ids"].numel() / dt, 1), "user_s": round(c1.user - c0.user, 2),
                   "system_s": round(c1.system - c0.system, 2)}
            rows.append(row)
            print(f"{a.model} micro {size:>5} ({row['windows']} x {a.length}): {dt:6.2f} s  "
                  f"{row['tokens_per_s']:7.1f} tokens/s  user {row['user_s']:5.1f} s  system {row['system_s']:5.1f} s",
                  flush=True)
    result = {"model": a.model, "threads": a.threads, "length": a.length, "rows": rows}
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
