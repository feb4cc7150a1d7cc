"""Benchmark: the whole Longformer encoder on one long document, lfcli vs transformers.

A base-size Longformer with random weights (hidden 768, 12 layers, 12 heads, FFN 3072,
window 512, 4098 positions) is built with transformers, saved with save_pretrained and loaded
back with lfcli, so both run the same weights. Input: 4096 tokens, batch 1, global attention
on token 0. Reports tokens/s, the ratio to transformers and to the roofline.

    python benchmarks/encoder.py               # 12 layers, 4096 tokens
    python benchmarks/encoder.py --quick       # 4 layers, fewer repeats
    python benchmarks/encoder.py --model DIR   # a checkpoint folder instead of random weights

Hook for the bundled model: `resolve_model_dir` turns a --model value into a checkpoint folder;
`load_models` loads lfcli's and transformers' encoders from a folder. A CLI/folder mode for the
bundled lfcli model can plug its name lookup into `resolve_model_dir`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BASE = dict(vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, attention_window=512, max_position_embeddings=4098,
            type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, sep_token_id=2)
TINY = dict(BASE, vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=128, attention_window=64, max_position_embeddings=514)
TARGET_SPEEDUP = 2.5


def resolve_model_dir(name_or_path: str) -> Path:
    """--model value -> checkpoint folder (config.json + model.safetensors).

    Today: a folder path. The lead's CLI/folder mode for the bundled model can resolve a
    bundled model's name here (e.g. through lfcli's model registry) without touching the rest."""
    path = Path(name_or_path).expanduser()
    if (path / "config.json").exists():
        return path
    raise SystemExit(f"--model {name_or_path}: not a checkpoint folder (no config.json); "
                     "bundled-model names are not wired into this benchmark yet")


def save_random_model(config_kwargs: dict, folder: Path) -> None:
    """A transformers LongformerModel with its own random initialisation, saved to `folder`."""
    import transformers

    torch.manual_seed(0)
    config = transformers.LongformerConfig(**config_kwargs, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.LongformerModel(config)
    model.save_pretrained(folder)


def load_models(folder: Path, device, dtype):
    """(lfcli LongformerModel, transformers LongformerModel), same weights, eval mode."""
    import transformers
    from lfcli.models import LongformerModel

    lf = LongformerModel.from_pretrained(folder).to(device=device, dtype=dtype).eval()
    hf = transformers.LongformerModel.from_pretrained(folder).to(device=device, dtype=dtype).eval()
    return lf, hf


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=None, help="sequence length (default 4096; must fit the positions)")
    p.add_argument("--layers", type=int, default=None, help="number of layers (default 12; quick: 4)")
    p.add_argument("--dtype", default="fp32", choices=sorted(common.DTYPES))
    p.add_argument("--model", default=None, help="checkpoint folder to benchmark instead of random weights")
    p.add_argument("--no-transformers", action="store_true", help="time lfcli only")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    common.quiet_transformers()
    dtype = common.DTYPES[args.dtype]
    info = common.machine_info(device)
    common.print_header("Encoder: lfcli vs transformers LongformerModel", info)
    with tempfile.TemporaryDirectory(prefix="lfcli-bench-") as tmp:
        lf, hf = load_models(_model_folder(args, Path(tmp)), device, dtype)
        if args.no_transformers:
            hf = None
        run = _measure(args, lf, hf, device, dtype)
    out = _report(args, info, lf.config, run)
    return common.finish(args, out, plot)


def _model_folder(args, tmp: Path) -> Path:
    """--model's folder, else a random transformers Longformer saved into `tmp`."""
    if args.model:
        return resolve_model_dir(args.model)
    config_kwargs = dict(TINY if args.tiny else BASE)
    config_kwargs["num_hidden_layers"] = args.layers or (config_kwargs["num_hidden_layers"] if not args.quick else 4)
    t0 = time.perf_counter()
    save_random_model(config_kwargs, tmp)
    print(f"random transformers model saved in {time.perf_counter() - t0:.1f}s")
    return tmp


def _measure(args, lf, hf, device, dtype) -> dict:
    """Both encoders and the matmuls of the rooflines timed in the same rounds, on one
    sequence of n random tokens with one global token."""
    warmup, repeats = common.repeats_for(args, quick=2, full=3)
    cfg = lf.config
    n = args.tokens or (256 if args.tiny else min(4096, cfg.max_tokens))
    windows = cfg.attention_windows
    flops = sum(common.encoder_layer_flops(n, cfg.hidden_size, cfg.num_attention_heads, w, cfg.intermediate_size)
                for w in windows)
    size = common.matmul_size(args)
    matmuls = {"matmul fp32": common.matmul_case(device, torch.float32, size)}
    if dtype != torch.float32:
        matmuls[f"matmul {args.dtype}"] = common.matmul_case(device, dtype, size)
    print(f"{cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads, FFN "
          f"{cfg.intermediate_size}, window {windows[0]}, {n} tokens, batch 1, one global token, {args.dtype}; median "
          f"of {repeats} rounds after {warmup} warm-up; each round runs every implementation and a {size}^3 matmul "
          "once, in turn")
    print(common.ENCODER_FLOPS_TEXT)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(3, cfg.vocab_size, (1, n), generator=g).to(device)
    ids[:, 0] = cfg.bos_token_id
    mask = torch.ones_like(ids)
    global_mask = torch.zeros_like(ids)
    global_mask[:, 0] = 1
    runs = {"lfcli": lambda: lf(ids, attention_mask=mask, global_attention_mask=global_mask)}
    if hf is not None:
        runs["transformers"] = lambda: hf(input_ids=ids, attention_mask=mask, global_attention_mask=global_mask).last_hidden_state
    outs, first = {}, {}
    for name, fn in runs.items():  # the first call doubles as the first warm-up run
        with torch.inference_mode():
            t0 = time.perf_counter()
            outs[name] = fn().float()
            common.sync(device)
            first[name] = time.perf_counter() - t0
    timed = common.bench_rounds({**runs, **{k: fn for k, (fn, _) in matmuls.items()}}, device,
                                warmup=max(warmup - 1, 0), repeats=repeats)
    rate = matmuls["matmul fp32"][1] / timed["matmul fp32"]["median_s"] / 1e9
    rate_dt = matmuls[f"matmul {args.dtype}"][1] / timed[f"matmul {args.dtype}"]["median_s"] / 1e9 if dtype != torch.float32 else rate
    print(f"FLOPs per forward: {flops / 1e9:.1f} G; large fp32 matmul {rate:.0f} GFLOP/s"
          + (f", {args.dtype} matmul {rate_dt:.0f} GFLOP/s" if dtype != torch.float32 else "")
          + " (in the same rounds); roofline time = FLOPs / fp32 matmul rate")
    results = {}
    for name in runs:
        results[name] = {**timed[name], "first_call_s": first[name]}
        print(f"  measured {name}: {results[name]['median_s']:.2f} s", flush=True)
    diff = (outs["lfcli"] - outs["transformers"]).abs().max().item() if "transformers" in outs else None
    return {"n": n, "flops": flops, "rate": rate, "results": results, "diff": diff}


def _report(args, info, cfg, run) -> dict:
    """The table against the roofline and transformers, the target, and the JSON record."""
    n, flops, rate, results, diff = run["n"], run["flops"], run["rate"], run["results"], run["diff"]
    L = cfg.num_hidden_layers
    roof = flops / (rate * 1e9)
    hf_t = results.get("transformers", {}).get("median_s")
    rows = []
    for name, r in results.items():
        t = r["median_s"]
        rows.append([name, f"{t:.3f}", f"{n / t:.0f}", f"{hf_t / t:.2f}" if hf_t else "-",
                     f"{flops / t / 1e9:.0f}", f"{t / roof:.2f}", f"{r['first_call_s']:.2f}"])
    rows.append(["roofline", f"{roof:.3f}", f"{n / roof:.0f}", f"{hf_t / roof:.2f}" if hf_t else "-", f"{rate:.0f}", "1.00", ""])
    print()
    common.print_table(["impl", "time s", "tokens/s", "speed x transformers", "GFLOP/s", "x roofline", "1st call s"], rows)
    if diff is not None:
        print(f"max |lfcli - transformers| on the last hidden states: {diff:.2e}")
    targets = []
    if hf_t:
        speedup = hf_t / results["lfcli"]["median_s"]
        note = "" if L == 12 else f" ({L} layers)"
        targets.append({"name": f"encoder {n} tokens tokens/s lfcli/transformers{note}", "value": f"{speedup:.2f}x",
                        "target": f">= {TARGET_SPEEDUP}x", "pass": None if args.tiny else speedup >= TARGET_SPEEDUP})
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    return {"benchmark": "encoder", "machine": info, "tokens": n, "layers": L, "hidden": cfg.hidden_size,
            "heads": cfg.num_attention_heads, "intermediate": cfg.intermediate_size, "window": cfg.attention_windows[0],
            "dtype": args.dtype, "model": args.model or "random", "flops": flops,
            "flops_formula": common.ENCODER_FLOPS_TEXT, "matmul_gflops": rate, "roofline_s": roof,
            "results": results, "max_abs_diff": diff, "targets": targets}


def plot(out, path):
    tps = {k: out["tokens"] / r["median_s"] for k, r in out["results"].items()}
    tps["roofline"] = out["tokens"] / out["roofline_s"]
    common.bar_plot(path, tps, f"encoder, {out['layers']} layers, {out['tokens']} tokens ({out['dtype']})",
                    "tokens/s", ["tab:blue", "tab:orange", "tab:gray"])


if __name__ == "__main__":
    main()
