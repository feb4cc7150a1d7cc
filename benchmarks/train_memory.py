"""Benchmark: does a training run's memory stay flat over updates?

A run of `lfcli finetune classify` on long documents of mixed lengths (the README's
Hyperpartisan command) held 5.7 GB after 11 minutes, 8.0 after 28 and 10.6 after 54. This
script trains the bundled model's shape (random weights, classification head, the trainer's
own `make_optimizer`, clip + AdamW, bf16 autocast where the CPU has native bf16) on one
document per update whose length is drawn from [--min-length, --max-length], and reads the
process's resident memory (VmRSS) after every update. Each variant runs in a fresh process:

  lfcli        what `lfcli finetune` does: lfcli bounds oneDNN's two kernel caches at 256
               entries each (lfcli/__init__.py)
  unbounded    oneDNN's defaults (1,024 entries each): every distinct sequence length leaves
               compiled bf16 matmul kernels behind until the caches are full

Reported: RSS after update 10 (warm), at the end, and their ratio (flat: <= 1.10).

    python benchmarks/train_memory.py                 # 120 updates, 256-4096 tokens
    python benchmarks/train_memory.py --quick         # 40 updates, 256-2048 tokens
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

VARIANTS = {"lfcli": {}, "unbounded": {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "1024", "LRU_CACHE_CAPACITY": "1024"}}

CHILD = textwrap.dedent(
    """
    import json, random, sys
    import lfcli  # first, as the CLI does: it bounds oneDNN's caches before torch runs a matmul
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, sys.argv[1])
    import train_profile, train_speed
    from lfcli.pipelines.infer.precision import cpu_has_native_bf16
    from lfcli.pipelines.train.optimizer import make_optimizer

    updates, lo, hi, tiny = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
    cfg = train_speed.TINY_MODELS["bundled"] if tiny else train_speed.MODELS["bundled"]
    model = train_profile.build_model(cfg, "full", 16)
    opt = make_optimizer(model, lr=1e-5, weight_decay=0.01)
    bf16 = cpu_has_native_bf16()
    rng = random.Random(0)

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    out = []
    for step in range(updates):
        n = rng.randint(lo, hi)
        inputs, labels = train_speed.make_batch(n, 1, cfg["vocab_size"], "cpu")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(**inputs)
        F.cross_entropy(logits.float(), labels).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        out.append(rss())
    print(json.dumps({"rss_mb": out, "bf16": bf16}))
    """
)


def run_variant(env_extra: dict, updates: int, lo: int, hi: int, tiny: bool) -> dict:
    env = {**os.environ, **env_extra}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(common.HERE), str(updates), str(lo), str(hi), "1" if tiny else "0"],
                          env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(f"child failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--updates", type=int, default=None)
    p.add_argument("--min-length", type=int, default=256)
    p.add_argument("--max-length", type=int, default=None)
    p.add_argument("--variants", default=",".join(VARIANTS))
    args = p.parse_args(argv)
    updates = args.updates or (12 if args.tiny else 40 if args.quick else 120)
    hi = args.max_length or (256 if args.tiny else 2048 if args.quick else 4096)
    lo = min(args.min_length, hi) if not args.tiny else 64
    device = common.setup(args)
    info = common.machine_info(device)
    common.print_header("Training memory over updates (VmRSS after each update, fresh process per variant)", info)
    print(f"bundled shape, one document a update, lengths uniform in [{lo}, {hi}], {updates} updates")
    rows, results = [], {}
    for name in args.variants.split(","):
        res = run_variant(VARIANTS[name], updates, lo, hi, args.tiny)
        rss = res["rss_mb"]
        warm = rss[min(9, len(rss) - 1)]
        res.update(warm_mb=warm, end_mb=rss[-1], peak_mb=max(rss), ratio=rss[-1] / warm)
        results[name] = res
        rows.append([name, "bf16" if res["bf16"] else "fp32", f"{warm:.0f}", f"{rss[-1]:.0f}", f"{max(rss):.0f}",
                     f"{res['ratio']:.2f}", common.verdict(res["ratio"] <= 1.10)])
        print(f"  {name}: RSS " + " ".join(f"{x:.0f}" for x in rss[:: max(1, len(rss) // 12)]), flush=True)
    common.print_table(["variant", "dtype", "RSS at 10 MB", "RSS at end MB", "peak MB", "end / 10", "flat (<= 1.10)"], rows)
    out = {"info": info, "updates": updates, "lengths": [lo, hi], "variants": results}
    common.write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
