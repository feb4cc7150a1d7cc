"""Benchmark: time per token of lfcli's encoder from 1k to 32k tokens (linear scaling check).

A smaller random encoder for speed (6 layers, hidden 384, 6 heads of 64, FFN 1536, window 512,
positions for 32k tokens), batch 1, one global token. With banded attention the work per token
is constant, so time per token should stay flat; the ratio column is relative to n = 2k.

    python benchmarks/scaling.py             # n = 1k, 2k, 4k, 8k, 16k, 32k
    python benchmarks/scaling.py --quick     # n = 1k, 2k, 4k, 16k
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

FULL_SIZES = (1024, 2048, 4096, 8192, 16384, 32768)
QUICK_SIZES = (1024, 2048, 4096, 16384)
TINY_SIZES = (128, 256, 512)
SMALL = dict(vocab_size=50265, hidden_size=384, num_hidden_layers=6, num_attention_heads=6,
             intermediate_size=1536, attention_window=512, type_vocab_size=1, pad_token_id=1,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TINY = dict(SMALL, vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=128, attention_window=64)
BASE_N, CHECK_N, TARGET = 2048, 16384, 1.15


def build_model(config_kwargs: dict, max_tokens: int, device, dtype):
    from lfcli.models import LongformerConfig, LongformerModel

    torch.manual_seed(0)
    config = LongformerConfig(**config_kwargs, max_position_embeddings=max_tokens + config_kwargs["pad_token_id"] + 1)
    return LongformerModel(config, add_pooling_layer=False).to(device=device, dtype=dtype).eval()


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=None, help="comma-separated n (default 1k..32k)")
    p.add_argument("--dtype", default="fp32", choices=sorted(common.DTYPES))
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    dtype = common.DTYPES[args.dtype]
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(
        TINY_SIZES if args.tiny else QUICK_SIZES if args.quick else FULL_SIZES)
    cfg = dict(TINY if args.tiny else SMALL)
    base_n = BASE_N if BASE_N in sizes else sizes[min(1, len(sizes) - 1)]
    warmup, repeats = common.repeats_for(args, quick=2, full=3)
    info = common.machine_info(device)
    common.print_header("Scaling: lfcli encoder time per token, 1k..32k tokens", info)
    model = build_model(cfg, max(sizes), device, dtype)
    c = model.config
    rate = common.matmul_gflops(device, torch.float32, size=common.matmul_size(args))
    print(f"{c.num_hidden_layers} layers, hidden {c.hidden_size}, {c.num_attention_heads} heads, FFN "
          f"{c.intermediate_size}, window {c.attention_windows[0]}, batch 1, one global token, {args.dtype}; "
          f"median of {repeats} runs after {warmup} warm-up")
    print(common.ENCODER_FLOPS_TEXT + f"; large fp32 matmul {rate:.0f} GFLOP/s")

    cases = []
    for n in sizes:
        g = torch.Generator().manual_seed(n)
        ids = torch.randint(3, c.vocab_size, (1, n), generator=g).to(device)
        glob = torch.zeros_like(ids)
        glob[:, 0] = 1
        fn = lambda: model(ids, global_attention_mask=glob)  # noqa: E731
        r = common.bench(fn, device, warmup=warmup, repeats=repeats)
        flops = sum(common.encoder_layer_flops(n, c.hidden_size, c.num_attention_heads, w, c.intermediate_size)
                    for w in c.attention_windows)
        r.update(n=n, flops=flops, per_token_us=r["median_s"] / n * 1e6, roofline_s=flops / (rate * 1e9))
        cases.append(r)
        print(f"  measured n={n:6d}: {r['median_s']:.3f} s", flush=True)
    base = next(r for r in cases if r["n"] == base_n)
    rows = [[r["n"], f"{r['median_s']:.3f}", f"{r['per_token_us']:.1f}", f"{r['per_token_us'] / base['per_token_us']:.3f}",
             f"{r['roofline_s'] / r['n'] * 1e6:.1f}", f"{r['median_s'] / r['roofline_s']:.2f}"] for r in cases]
    print()
    common.print_table(["n", "time s", "us/token", f"x n={base_n}", "roofline us/token", "x roofline"], rows)
    targets = []
    check = next((r for r in cases if r["n"] == CHECK_N), None)
    if check is not None:
        ratio = check["per_token_us"] / base["per_token_us"]
        targets.append({"name": f"scaling time/token n={CHECK_N} vs n={base_n}", "value": f"{ratio:.3f}x",
                        "target": f"<= {TARGET}x", "pass": ratio <= TARGET})
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    out = {"benchmark": "scaling", "machine": info, "config": {k: v for k, v in cfg.items()}, "dtype": args.dtype,
           "base_n": base_n, "matmul_gflops": rate, "flops_formula": common.ENCODER_FLOPS_TEXT,
           "cases": cases, "targets": targets}
    return common.finish(args, out, plot)


def plot(out, path):
    plt = common.get_pyplot()
    if plt is None:
        return
    ns = [r["n"] for r in out["cases"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ns, [r["per_token_us"] for r in out["cases"]], "o-", label="lfcli")
    ax.plot(ns, [r["roofline_s"] / r["n"] * 1e6 for r in out["cases"]], "k--", label="fp32 roofline")
    ax.set(title="encoder time per token", xlabel="tokens", ylabel="us / token")
    common.size_axis(ax, ns)
    ax.set_ylim(bottom=0)
    ax.legend()
    common.save_figure(plt, fig, path)


if __name__ == "__main__":
    main()
