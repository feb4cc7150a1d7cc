"""Benchmark: one Longformer self-attention layer (q, k, v projections included), four ways.

  lfcli         lfcli.models.longformer.LongformerSelfAttention (the chunked backend on CPU)
  transformers  transformers' LongformerSelfAttention with the same weights
  sdpa_dense    the same projections + F.scaled_dot_product_attention with a dense n x n
                band+global mask (the O(n^2) anchor)
  flex          the same projections + torch.compile(flex_attention) with a sliding-window +
                global mask_mod (compile time reported separately; errors are reported, not raised)

The global projections are copies of the local ones (the paper's initialisation), so all four
compute the same function and the table shows each one's max |difference| to lfcli.
Shape: batch 1, hidden 768, 12 heads of 64, window 512 (w1 = 256), one global token (position 0).
Peak memory is measured per case in a fresh subprocess (see common.PeakMemory).

    python benchmarks/attention.py            # n = 1k..16k, fp32 and bf16
    python benchmarks/attention.py --quick    # n = 1k, 4k, fp32, no flex
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

IMPLS = ("lfcli", "transformers", "sdpa_dense", "flex")
FULL_SIZES = (1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (1024, 4096)
TINY_SIZES = (128, 256)
TARGET_N, LARGE_N = 4096, 16384


def shape_for(args) -> dict:
    if args.tiny:
        return {"hidden": 64, "heads": 2, "window": 64}
    return {"hidden": args.hidden, "heads": args.heads, "window": args.window}


# ---------------------------------------------------------------------------------------
# building one case: (impl, n, dtype) -> a zero-argument callable
# ---------------------------------------------------------------------------------------
def lfcli_layer(shape: dict, device, dtype):
    from lfcli.models.config import LongformerConfig
    from lfcli.models.longformer import LongformerSelfAttention

    config = LongformerConfig(
        hidden_size=shape["hidden"],
        num_attention_heads=shape["heads"],
        num_hidden_layers=1,
        attention_window=shape["window"],
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(0)
    layer = LongformerSelfAttention(config, 0)
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.02)
    with torch.no_grad():  # global projections start as copies of the local ones
        for local, glob in (("query", "query_global"), ("key", "key_global"), ("value", "value_global")):
            getattr(layer, glob).load_state_dict(getattr(layer, local).state_dict())
    return layer.eval().to(device=device, dtype=dtype)


def inputs(n: int, shape: dict, device, dtype):
    """Hidden states and the O(n) masks LongformerModel.forward builds (global token 0)."""
    from lfcli.kernels.chunked import global_columns

    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, n, shape["hidden"], generator=g).to(device=device, dtype=dtype)
    key_padding_mask = torch.zeros(1, n, dtype=torch.bool, device=device)
    is_global = torch.zeros_like(key_padding_mask)
    is_global[:, 0] = True
    global_index, global_valid = global_columns(is_global)
    return x, (key_padding_mask, is_global, global_index, global_valid)


def allowed_mask_mod(w1: int):
    def mask_mod(b, h, q_idx, kv_idx):
        return ((q_idx - kv_idx).abs() <= w1) | (kv_idx == 0) | (q_idx == 0)

    return mask_mod


def band_block_mask(n: int, w1: int, device, block: int = 128):
    """FlexAttention BlockMask for band(w1) + global token 0, built from block bounds
    (create_block_mask would evaluate the mask on all n^2 pairs: GBs at 16k)."""
    from torch.nn.attention.flex_attention import BlockMask

    nb = -(-n // block)
    start = torch.arange(nb) * block
    end = torch.clamp(start + block - 1, max=n - 1)
    qa, qb = start[:, None], end[:, None]  # query block [qa, qb]
    ka, kb = start[None, :], end[None, :]  # key block [ka, kb]
    min_dist = torch.clamp(torch.maximum(ka - qb, qa - kb), min=0)
    max_dist = torch.maximum((qa - kb).abs(), (qb - ka).abs())
    full = max_dist <= w1
    any_ = (min_dist <= w1) | (ka == 0) | (qa == 0)
    partial = any_ & ~full

    def ordered(m):
        num = m.sum(-1).to(torch.int32)
        idx = torch.argsort((~m).to(torch.int8), dim=-1, stable=True).to(torch.int32)
        return num[None, None].to(device), idx[None, None].to(device)

    kv_num, kv_idx = ordered(partial)
    full_num, full_idx = ordered(full)
    return BlockMask.from_kv_blocks(
        kv_num, kv_idx, full_num, full_idx, BLOCK_SIZE=block, mask_mod=allowed_mask_mod(w1), seq_lengths=(n, n)
    )


def dense_mask(n: int, w1: int, device, dtype) -> torch.Tensor:
    """Additive (n, n) mask in the compute dtype: 0 where allowed, -inf elsewhere."""
    allowed = torch.ones(n, n, dtype=torch.bool, device=device).triu_(-w1).tril_(w1)
    allowed[:, 0] = True
    allowed[0, :] = True
    mask = torch.zeros(n, n, dtype=dtype, device=device)
    mask.masked_fill_(~allowed, float("-inf"))
    return mask


def build_case(impl: str, n: int, dtype, device, shape: dict, backend: str | None):
    """Returns (x, masks, layer) and a `setup(x, masks, layer) -> fn` for the case.

    The split lets the memory subprocess count what `setup` allocates (the dense mask, the
    block mask) while the inputs (hidden states, O(n) masks, weights) form the baseline."""
    layer = lfcli_layer(shape, device, dtype)
    x, masks = inputs(n, shape, device, dtype)
    H, D = shape["heads"], shape["hidden"] // shape["heads"]
    w1 = shape["window"] // 2

    def heads(t):
        return t.view(1, n, H, D).transpose(1, 2)

    def merge(t):
        return t.transpose(1, 2).reshape(1, n, H * D)

    if impl == "lfcli":
        from lfcli.kernels import resolve_backend

        name = resolve_backend(backend, None, device)

        def setup():
            return lambda: layer(x, *masks, name)

    elif impl == "transformers":
        import transformers
        from transformers.models.longformer.modeling_longformer import LongformerSelfAttention as HFSelfAttention

        hf_config = transformers.LongformerConfig(
            hidden_size=shape["hidden"],
            num_attention_heads=H,
            num_hidden_layers=1,
            attention_window=[shape["window"]],
            attention_probs_dropout_prob=0.0,
        )
        hf = HFSelfAttention(hf_config, 0)
        hf.load_state_dict(layer.state_dict())
        hf = hf.eval().to(device=device, dtype=dtype)
        # What LongformerModel.forward hands every layer: 0 local, +max global, min padding.
        mask = torch.zeros(1, n, dtype=dtype, device=device)
        mask[:, 0] = torch.finfo(dtype).max
        is_masked, is_global = mask < 0, mask > 0

        def setup():
            return lambda: hf(x, attention_mask=mask, is_index_masked=is_masked, is_index_global_attn=is_global, is_global_attn=True)[0]

    elif impl == "sdpa_dense":

        def setup():
            attn_mask = dense_mask(n, w1, device, dtype)

            def fn():
                q, k, v = heads(layer.query(x)), heads(layer.key(x)), heads(layer.value(x))
                return merge(F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask))

            return fn

    elif impl == "flex":
        from torch.nn.attention.flex_attention import flex_attention

        # Each (n, dtype) is its own compilation. Dynamo counts recompilations per function
        # and, past its limit, silently runs flex_attention eagerly, which materialises the
        # n x n scores (13 GB at 16k): start every case from a clean cache instead.
        torch._dynamo.reset()
        compiled = torch.compile(flex_attention, dynamic=False)

        def setup():
            block_mask = band_block_mask(n, w1, device)

            def fn():
                q, k, v = heads(layer.query(x)), heads(layer.key(x)), heads(layer.value(x))
                return merge(compiled(q, k, v, block_mask=block_mask))

            return fn

    else:
        raise ValueError(f"unknown implementation {impl!r}")
    return setup


# ---------------------------------------------------------------------------------------
# memory, in a fresh process
# ---------------------------------------------------------------------------------------
def memory_case(spec: dict) -> dict:
    """Runs inside the subprocess: build inputs (baseline), setup (counted), warm up
    (compiles flex), then measure the peak growth of one call."""
    device = torch.device(spec["device"])
    dtype = common.DTYPES[spec["dtype"]]
    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    setup = build_case(spec["impl"], spec["n"], dtype, device, spec["shape"], spec["backend"])
    meter = common.PeakMemory(device)
    with torch.inference_mode():
        meter.start()
        fn = setup()  # the dense mask / the flex block mask
        built = meter.stop()
        fn()  # warm-up (flex: compilation), not counted
        meter.start()
        fn()
        call = meter.stop()
    held = built.get("resident_mb", built["peak_mb"])  # what setup leaves allocated during the call
    return {"peak_mb": max(built["peak_mb"], held + call["peak_mb"]), "setup_mb": held, "setup_peak_mb": built["peak_mb"],
            "call_mb": call["peak_mb"], "vmhwm_mb": call.get("vmhwm_mb"), "method": call["method"], "reset": call["reset"]}


# ---------------------------------------------------------------------------------------
# the benchmark
# ---------------------------------------------------------------------------------------
def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=None, help="comma-separated n (default 1k..16k; quick: 1k,4k)")
    p.add_argument("--dtypes", default=None, help="comma-separated of fp32,bf16,fp16 (default fp32,bf16; quick: fp32)")
    p.add_argument("--impls", default=None, help=f"comma-separated of {','.join(IMPLS)} (quick: no flex)")
    p.add_argument("--memory", choices=("all", "targets", "none"), default=None,
                   help="peak-memory subprocesses: every case, only lfcli+transformers at 4k/16k, or none "
                        "(default all; quick: targets)")
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--window", type=int, default=512, help="full window (w1 = window/2)")
    p.add_argument("--backend", default=None, help="lfcli attention backend (default: auto = chunked on CPU)")
    p.add_argument("--_memory-case", dest="memory_case", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.memory_case:
        common.emit_memory_result(memory_case(json.loads(args.memory_case)))
        return {}
    device = common.setup(args)
    plan = _plan(args, device)
    info = common.machine_info(device)
    _print_intro(args, plan, info)
    matmuls = {dt: common.matmul_case(device, common.DTYPES[dt], common.matmul_size(args))
               for dt in {"fp32", *plan["dtypes"]}}
    cases = []
    for dt in plan["dtypes"]:
        for n in plan["sizes"]:
            cases += _measure_group(args, plan, device, dt, n, matmuls)
    return _report(args, plan, info, matmuls, cases)


def _plan(args, device) -> dict:
    """What to run: shape, sizes, dtypes, implementations, memory mode, rounds and budget."""
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(
        TINY_SIZES if args.tiny else QUICK_SIZES if args.quick else FULL_SIZES)
    warmup, repeats = common.repeats_for(args, quick=3, full=5)
    return {
        "shape": shape_for(args), "sizes": sizes,
        "dtypes": args.dtypes.split(",") if args.dtypes else (["fp32"] if (args.quick or args.tiny) else ["fp32", "bf16"]),
        "impls": args.impls.split(",") if args.impls else [i for i in IMPLS if not (args.quick and i == "flex")],
        "memory": args.memory or ("targets" if args.quick else "all"),
        "warmup": warmup, "repeats": repeats,
        "budget": 20.0 if not args.quick else 5.0,  # seconds of timed runs per case before repeats are cut
    }


def _print_intro(args, plan, info) -> None:
    shape = plan["shape"]
    w1, H, hidden = shape["window"] // 2, shape["heads"], shape["hidden"]
    common.print_header("Attention layer: lfcli vs transformers vs dense SDPA vs FlexAttention", info)
    print(f"batch 1, hidden {hidden}, {H} heads of {hidden // H}, window {shape['window']} (w1 {w1}), one global token; "
          f"median of {plan['repeats']} rounds after {plan['warmup']} warm-up; each round runs every implementation of "
          f"one (n, dtype) and a {common.matmul_size(args)}^3 matmul once, in turn (fewer rounds, at least 2, when one "
          f"round exceeds {plan['budget'] / plan['repeats']:.0f}s per implementation)")
    print(common.ATTENTION_FLOPS_TEXT)
    print("roofline time = FLOPs / fp32 matmul rate, the matmul timed in the same rounds (as specified); "
          "'x roof(dt)' uses the matmul rate of the case's dtype")


def _first_calls(args, plan, device, dt, n) -> tuple[list[dict], dict]:
    """Each implementation's case built and called once (its first warm-up run): its rows
    (setup and first-call times, its difference from lfcli's output, or its error) and the
    callables to time."""
    shape, dtype = plan["shape"], common.DTYPES[dt]
    flops = common.attention_flops(n, shape["hidden"], shape["heads"], shape["window"])
    group, fns, reference = [], {}, None
    for impl in plan["impls"]:
        row = {"impl": impl, "n": n, "dtype": dt, "flops": flops}
        try:
            setup = build_case(impl, n, dtype, device, shape, args.backend)
            t0 = time.perf_counter()
            fn = setup()
            common.sync(device)
            row["setup_s"] = time.perf_counter() - t0
            with torch.inference_mode():
                t0 = time.perf_counter()
                out = fn()
                common.sync(device)
                row["first_call_s"] = time.perf_counter() - t0
            if impl == "lfcli":
                reference = out.float()
            elif reference is not None:
                row["max_abs_diff"] = (out.float() - reference).abs().max().item()
            del out, setup
            fns[impl] = fn
        except Exception as exc:  # reported in the table, e.g. flex failing to compile
            row["error"] = common.error_text(exc)
        group.append(row)
    return group, fns


def _measure_group(args, plan, device, dt, n, matmuls) -> list[dict]:
    """The rows of one (n, dtype): every implementation timed in the same rounds as the
    matmuls that give the rooflines, then (where asked) its peak memory in a fresh process."""
    group, fns = _first_calls(args, plan, device, dt, n)
    rate_keys = {"fp32", dt}
    timed = common.bench_rounds({**fns, **{f"matmul {k}": matmuls[k][0] for k in rate_keys}}, device,
                                warmup=max(plan["warmup"] - 1, 0), repeats=plan["repeats"],
                                budget_s=plan["budget"] * max(len(fns), 1), min_repeats=2)
    group_rates = {k: matmuls[k][1] / timed[f"matmul {k}"]["median_s"] / 1e9 for k in rate_keys}
    del fns
    for row in group:
        impl = row["impl"]
        row["matmul_gflops"] = group_rates
        if "error" not in row:
            row.update(timed[impl])
            if impl == "flex":  # compilation = first call minus a steady-state call
                row["compile_s"] = max(row["first_call_s"] - row["median_s"], 0.0)
        want_memory = plan["memory"] == "all" or (plan["memory"] == "targets" and impl in ("lfcli", "transformers")
                                                   and n in (TARGET_N, LARGE_N, max(plan["sizes"])))
        if want_memory and "error" not in row:
            spec = {"impl": impl, "n": n, "dtype": dt, "device": str(device), "shape": plan["shape"],
                    "backend": args.backend, "threads": args.threads}
            mem = common.run_memory_subprocess(Path(__file__), [json.dumps(spec)])
            if "error" in mem:
                row["memory_error"] = mem["error"]
            else:
                row.update({k: mem.get(k) for k in ("peak_mb", "setup_mb", "setup_peak_mb", "call_mb", "vmhwm_mb", "method", "reset")})
        status = row.get("error") or f"{row['median_s'] * 1e3:.1f} ms"
        print(f"  measured {impl:12s} n={n:6d} {dt}: {status}", flush=True)
    print("  matmul in the same rounds: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in group_rates.items()))
    return group


def _report(args, plan, info, matmuls, cases) -> dict:
    """The table, the targets, the JSON and the plot."""
    # one rate per dtype for the summary and the plot: the median over the groups
    rates = {k: statistics.median(c["matmul_gflops"][k] for c in cases if k in c["matmul_gflops"]) for k in matmuls}
    rows = table_rows(cases, plan["dtypes"], plan["sizes"], plan["impls"])
    print()
    common.print_table(
        ["n", "dtype", "impl", "time ms", "x transformers", "GFLOP/s", "x roofline", "x roof(dt)",
         "peak MB", "mem x transf.", "1st call s", "compile s", "max|diff|"],
        rows,
    )
    print("roofline rows: FLOPs / matmul rate. '1st call s': the first call; 'compile s' (flex): first call minus a "
          "steady call, with whatever Inductor cache is on disk. peak MB = peak RSS growth of one call after "
          "warm-up, in a fresh process (baseline after inputs and weights), plus what the case's setup keeps allocated "
          "(dense: the n x n mask; flex: the block mask).")
    targets = evaluate_targets(cases, plan["dtypes"])
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    results = {"benchmark": "attention", "machine": info, "shape": plan["shape"], "matmul_gflops": rates,
               "flops_formula": common.ATTENTION_FLOPS_TEXT, "cases": cases, "targets": targets}
    common.write_json(args.json, results)
    if args.plot:
        plot(results, args.plot)
    return results


def _find(cases, impl, n, dt):
    for c in cases:
        if c["impl"] == impl and c["n"] == n and c["dtype"] == dt:
            return c
    return None


def table_rows(cases, dtypes, sizes, impls):
    rows = []
    for dt in dtypes:
        for n in sizes:
            hf = _find(cases, "transformers", n, dt)
            hf_t = hf.get("median_s") if hf else None
            hf_m = hf.get("peak_mb") if hf else None
            for impl in impls:
                c = _find(cases, impl, n, dt)
                flops = c["flops"]
                if "error" in c:
                    rows.append([n, dt, impl, "ERROR: " + c["error"], "", "", "", "", "", "", "", "", ""])
                    continue
                t = c["median_s"]
                rate = c["matmul_gflops"]
                roof = flops / (rate["fp32"] * 1e9)
                roof_dt = flops / (rate[dt] * 1e9)
                mem = c.get("peak_mb")
                rows.append([
                    n, dt, impl, f"{t * 1e3:.1f}",
                    f"{t / hf_t:.3f}" if hf_t else "-",
                    f"{flops / t / 1e9:.0f}",
                    f"{t / roof:.2f}",
                    f"{t / roof_dt:.2f}",
                    common.fmt_mb(mem) if mem is not None else c.get("memory_error", "-"),
                    f"{mem / hf_m:.3f}" if (mem is not None and hf_m) else "-",
                    f"{c['first_call_s']:.2f}" if "first_call_s" in c else "-",
                    f"{c['compile_s']:.2f}" if "compile_s" in c else "-",
                    f"{c['max_abs_diff']:.1e}" if "max_abs_diff" in c else "-",
                ])
            rate = _find(cases, impls[0], n, dt)["matmul_gflops"]  # one per group
            roof = flops / (rate["fp32"] * 1e9)
            rows.append([n, dt, "roofline", f"{roof * 1e3:.1f}", f"{roof / hf_t:.3f}" if hf_t else "-",
                         f"{rate['fp32']:.0f}", "1.00", f"{rate['fp32'] / rate[dt]:.2f}", "", "", "", "", ""])
    return rows


def evaluate_targets(cases, dtypes):
    targets = []
    for dt in dtypes:
        lf, hf = _find(cases, "lfcli", TARGET_N, dt), _find(cases, "transformers", TARGET_N, dt)
        lf16 = _find(cases, "lfcli", LARGE_N, dt)
        ok = lambda c, k: c is not None and k in c  # noqa: E731
        if ok(lf, "median_s") and ok(hf, "median_s"):
            r = lf["median_s"] / hf["median_s"]
            targets.append({"name": f"attention {dt} n=4k time lfcli/transformers", "value": f"{r:.3f}x",
                            "target": "<= 0.3x", "pass": r <= 0.3})
        if ok(lf, "median_s"):
            r = lf["median_s"] / (lf["flops"] / (lf["matmul_gflops"]["fp32"] * 1e9))
            targets.append({"name": f"attention {dt} n=4k time / fp32 roofline", "value": f"{r:.2f}x",
                            "target": "<= 1.5x", "pass": r <= 1.5})
        if ok(lf, "peak_mb") and ok(hf, "peak_mb") and hf["peak_mb"] > 0:
            r = lf["peak_mb"] / hf["peak_mb"]
            targets.append({"name": f"attention {dt} n=4k peak memory lfcli/transformers", "value": f"{r:.3f}x",
                            "target": "<= 0.5x", "pass": r <= 0.5})
        if ok(lf, "peak_mb") and ok(lf16, "peak_mb") and lf["peak_mb"] > 0:
            r = lf16["peak_mb"] / lf["peak_mb"]
            targets.append({"name": f"attention {dt} lfcli peak memory 16k/4k", "value": f"{r:.2f}x",
                            "target": "<= 4.5x", "pass": r <= 4.5})
    return targets


def plot(results, path):
    plt = common.get_pyplot()
    if plt is None:
        return
    dtypes = list(dict.fromkeys(c["dtype"] for c in results["cases"]))
    impls = list(dict.fromkeys(c["impl"] for c in results["cases"]))
    fig, axes = plt.subplots(len(dtypes), 2, figsize=(11, 4 * len(dtypes)), squeeze=False)
    for r, dt in enumerate(dtypes):
        for impl in impls:
            pts = [c for c in results["cases"] if c["impl"] == impl and c["dtype"] == dt and "median_s" in c]
            if pts:
                axes[r][0].plot([c["n"] for c in pts], [c["median_s"] * 1e3 for c in pts], "o-", label=impl)
            mem = [c for c in pts if "peak_mb" in c]
            if mem:
                axes[r][1].plot([c["n"] for c in mem], [c["peak_mb"] for c in mem], "o-", label=impl)
        ns = sorted({c["n"] for c in results["cases"]})
        roof = [common.attention_flops(n, results["shape"]["hidden"], results["shape"]["heads"], results["shape"]["window"])
                / (results["matmul_gflops"]["fp32"] * 1e9) * 1e3 for n in ns]
        axes[r][0].plot(ns, roof, "k--", label="fp32 roofline")
        axes[r][0].set(title=f"attention layer time ({dt})", xlabel="tokens", ylabel="ms", yscale="log")
        axes[r][1].set(title=f"peak memory growth ({dt})", xlabel="tokens", ylabel="MB", yscale="log")
        common.size_axis(axes[r][0], ns)
        common.size_axis(axes[r][1], ns)
        axes[r][0].legend()
        axes[r][1].legend()
    common.save_figure(plt, fig, path)


if __name__ == "__main__":
    main()
