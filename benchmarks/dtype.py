"""fp32 vs bf16 on the CPU: what `--dtype auto` buys where the CPU has native bf16.

Three parts, each timed in rounds (every implementation, and a matmul of the case's own
shape in fp32 and in bf16, run once per round, in turn), so the ratios share the machine's
drift:

1. one self-attention layer (hidden 768, 12 heads, window 512, one global token) at 4k and
   16k tokens: lfcli fp32, lfcli bf16, transformers fp32;
2. the base encoder (12 x 768, FFN 3072, window 512; random weights) at 4k and 16k tokens:
   the same three;
3. the bundled model (all-MiniLM-L6-v2 weights) on 256-token documents, batch 32: lfcli
   fp32, lfcli bf16, sentence-transformers fp32 (its default).

`x roof` is time / (useful FLOPs / the matmul rate of the case's own dtype), the matmul being
of the case's widest shape ((n, h) @ (h, FFN) for the encoder). Targets where the CPU has
native bf16: encoder tokens/s bf16 >= 1.8x fp32 and <= 1.5x the bf16 roofline; bundled
model on 256-token documents (bf16) >= 2x sentence-transformers' docs/s. On a CPU without
native bf16 only fp32 is measured, and the script says so.

    python benchmarks/dtype.py               # 4k and 16k, 12 layers (about 15 min on 2 cores)
    python benchmarks/dtype.py --quick       # 4k, 1 layer, 32 documents (about a minute)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attention  # noqa: E402
import common  # noqa: E402
import encoder  # noqa: E402
import short_docs  # noqa: E402

from lfcli.pipelines.infer.precision import cpu_has_native_bf16  # noqa: E402

TARGET_BF16_OVER_FP32 = 1.8
TARGET_BF16_ROOF = 1.5
TARGET_DOCS_OVER_ST = 2.0


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=None, help="comma-separated token counts (default 4096,16384; quick 4096)")
    p.add_argument("--layers", type=int, default=None, help="encoder layers (default 12; quick 1)")
    p.add_argument("--docs", type=int, default=None, help="short documents (default 256; quick 32)")
    p.add_argument("--parts", default="attention,encoder,short", help="which parts to run")
    p.add_argument("--no-transformers", action="store_true", help="skip the transformers / sentence-transformers anchors")
    return p.parse_args(argv)


def timed_part(name: str, runs: dict, flops: float, shape: tuple[int, int, int], dtypes, device, warmup, repeats,
               units: float, unit_name: str) -> list[dict]:
    """Time `runs` ({(impl, dtype): fn}) with the shape's matmul in each dtype, in rounds."""
    mm = {f"matmul {dt}": common.matmul_case(device, common.DTYPES[dt], shape=shape) for dt in dtypes}
    fns = {f"{impl} {dt}": fn for (impl, dt), fn in runs.items()}
    fns.update({k: fn for k, (fn, _) in mm.items()})
    timed = common.bench_rounds(fns, device, warmup=warmup, repeats=repeats)
    rate = {dt: mm[f"matmul {dt}"][1] / timed[f"matmul {dt}"]["median_s"] for dt in dtypes}
    fp32 = {impl: timed[f"{impl} fp32"]["median_s"] for impl, dt in runs if dt == "fp32"}
    rows = []
    for impl, dt in runs:
        t = timed[f"{impl} {dt}"]["median_s"]
        rows.append({"part": name, "impl": impl, "dtype": dt, "time_s": t, "rate": units / t, "unit": unit_name,
                     "x_roof": t / (flops / rate[dt]) if flops else None,
                     "x_own_fp32": fp32.get(impl, t) / t, "matmul_gflops": rate[dt] / 1e9,
                     "times_s": timed[f"{impl} {dt}"]["times_s"]})
    return rows


def attention_part(n: int, dtypes, device, warmup, repeats, tiny: bool, anchors: bool) -> list[dict]:
    shape = {"hidden": 64, "heads": 2, "window": 64} if tiny else {"hidden": 768, "heads": 12, "window": 512}
    runs = {}
    for dt in dtypes:
        runs[("lfcli", dt)] = attention.build_case("lfcli", n, common.DTYPES[dt], device, shape, None)()
    if anchors:
        runs[("transformers", "fp32")] = attention.build_case("transformers", n, torch.float32, device, shape, None)()
    flops = common.attention_flops(n, shape["hidden"], shape["heads"], shape["window"])
    h = shape["hidden"]
    with torch.inference_mode():
        ref = runs[("lfcli", "fp32")]().float()
        cos = {dt: F.cosine_similarity(runs[("lfcli", dt)]().float()[0], ref[0], dim=-1).min().item() for dt in dtypes}
    rows = timed_part(f"attention {n}", runs, flops, (n, h, h), dtypes, device, warmup, repeats, n, "tokens/s")
    for r in rows:
        r["min_cosine_to_fp32"] = cos.get(r["dtype"]) if r["impl"] == "lfcli" else None
    return rows


def encoder_part(n: int, layers: int, dtypes, device, warmup, repeats, tiny: bool, anchors: bool) -> list[dict]:
    import transformers

    from lfcli.models import LongformerModel

    kwargs = dict(encoder.TINY if tiny else encoder.BASE, num_hidden_layers=layers, max_position_embeddings=n + 2)
    with tempfile.TemporaryDirectory(prefix="lfcli-bench-") as tmp:
        encoder.save_random_model(kwargs, Path(tmp))
        models = {dt: LongformerModel.from_pretrained(tmp, dtype=common.DTYPES[dt], device=device) for dt in dtypes}
        hf = transformers.LongformerModel.from_pretrained(tmp).eval().to(device) if anchors else None
    cfg = models["fp32"].config
    ids = torch.randint(3, cfg.vocab_size, (1, n), generator=torch.Generator().manual_seed(2)).to(device)
    ids[:, 0] = cfg.bos_token_id
    mask, glob = torch.ones_like(ids), torch.zeros_like(ids)
    glob[:, 0] = 1
    runs = {("lfcli", dt): (lambda m=m: m(ids, attention_mask=mask, global_attention_mask=glob)) for dt, m in models.items()}
    if hf is not None:
        runs[("transformers", "fp32")] = lambda: hf(input_ids=ids, attention_mask=mask, global_attention_mask=glob).last_hidden_state
    with torch.inference_mode():
        ref = models["fp32"](ids, attention_mask=mask, global_attention_mask=glob).float()
        cos = {dt: F.cosine_similarity(m(ids, attention_mask=mask, global_attention_mask=glob).float()[0], ref[0], dim=-1).min().item()
               for dt, m in models.items() if dt != "fp32"}
    flops = sum(common.encoder_layer_flops(n, cfg.hidden_size, cfg.num_attention_heads, w, cfg.intermediate_size)
                for w in cfg.attention_windows)
    rows = timed_part(f"encoder {n} x{layers}", runs, flops, (n, cfg.hidden_size, cfg.intermediate_size), dtypes,
                      device, warmup, repeats, n, "tokens/s")
    for r in rows:
        r["min_cosine_to_fp32"] = cos.get(r["dtype"]) if r["impl"] == "lfcli" else None
    return rows


def short_part(docs: int, dtypes, device, warmup, repeats, tiny: bool, anchors: bool) -> list[dict]:
    folder = short_docs.bundled_minilm_dir()
    max_tokens, batch = (32, 8) if tiny else (256, 32)
    texts = short_docs.make_texts(folder, docs, words=max_tokens + 40)
    embedders = {dt: short_docs.LfcliEmbedder(folder, max_tokens, device, common.DTYPES[dt]) for dt in dtypes}
    runs = {("lfcli", dt): (lambda e=e: e.encode(texts, batch)) for dt, e in embedders.items()}
    if anchors:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(folder), device=str(device))
        st.max_seq_length = max_tokens
        runs[("sentence-transformers", "fp32")] = lambda: st.encode(
            texts, batch_size=batch, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    n = len(embedders["fp32"].tokenizer.encode(texts[0]).ids)
    cfg = embedders["fp32"].model.config
    flops = docs * sum(common.encoder_layer_flops(n, cfg.hidden_size, cfg.num_attention_heads, w, cfg.intermediate_size)
                       for w in cfg.attention_windows)
    with torch.inference_mode():
        ref = embedders["fp32"].encode(texts, batch)
        cos = {dt: F.cosine_similarity(e.encode(texts, batch), ref, dim=-1).min().item() for dt, e in embedders.items()}
    rows = timed_part(f"bundled {n}-token docs", runs, flops, (batch * n, cfg.hidden_size, cfg.intermediate_size),
                      dtypes, device, warmup, repeats, docs, "docs/s")
    st_time = next((r["time_s"] for r in rows if r["impl"] == "sentence-transformers"), None)
    for r in rows:
        r["x_anchor"] = st_time / r["time_s"] if st_time else None
        r["min_cosine_to_fp32"] = cos.get(r["dtype"]) if r["impl"] == "lfcli" else None
    return rows


def targets_for(rows: list[dict], native: bool, tiny: bool) -> list[dict]:
    if not native:
        return []
    out = []
    for r in rows:
        if r["impl"] != "lfcli" or r["dtype"] != "bf16":
            continue
        if r["part"].startswith("encoder"):
            out.append({"name": f"{r['part']}: bf16 tokens/s over fp32's", "value": f"{r['x_own_fp32']:.2f}x",
                        "target": f">= {TARGET_BF16_OVER_FP32}x", "pass": None if tiny else r["x_own_fp32"] >= TARGET_BF16_OVER_FP32})
            out.append({"name": f"{r['part']}: bf16 time over the bf16 roofline", "value": f"{r['x_roof']:.2f}x",
                        "target": f"<= {TARGET_BF16_ROOF}x", "pass": None if tiny else r["x_roof"] <= TARGET_BF16_ROOF})
        if r["part"].startswith("bundled") and r.get("x_anchor"):
            out.append({"name": f"{r['part']}: bf16 docs/s over sentence-transformers'", "value": f"{r['x_anchor']:.2f}x",
                        "target": f">= {TARGET_DOCS_OVER_ST}x", "pass": None if tiny else r["x_anchor"] >= TARGET_DOCS_OVER_ST})
    return out


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    common.quiet_transformers()
    native = device.type == "cpu" and cpu_has_native_bf16()
    dtypes = ["fp32", "bf16"] if native else ["fp32"]
    info = common.machine_info(device)
    common.print_header("fp32 vs bf16 (the `--dtype auto` path)", info)
    if not native:
        print("This CPU has no native bf16 (no AVX512_BF16 / AMX): bf16 would be emulated and slower, so "
              "`--dtype auto` runs fp32 here and only fp32 is measured.")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [256] if args.tiny else [4096] if args.quick else [4096, 16384]
    layers = args.layers or (1 if args.quick or args.tiny else 12)
    docs = args.docs or (16 if args.tiny else 32 if args.quick else 256)
    warmup, repeats = common.repeats_for(args, quick=2, full=3)
    anchors = not args.no_transformers
    parts = args.parts.split(",")
    rows: list[dict] = []
    for n in sizes:
        if "attention" in parts:
            rows += attention_part(n, dtypes, device, warmup, repeats, args.tiny, anchors)
        if "encoder" in parts:
            rows += encoder_part(n, layers, dtypes, device, warmup, repeats, args.tiny, anchors)
    if "short" in parts:
        rows += short_part(docs, dtypes, device, warmup, repeats, args.tiny, anchors)
    print()
    common.print_table(
        ["part", "impl", "dtype", "time s", "rate", "x own-dtype roofline", "x fp32 (same impl)", "min cos to fp32", "matmul GFLOP/s"],
        [[r["part"], r["impl"], r["dtype"], f"{r['time_s']:.3f}", f"{r['rate']:.0f} {r['unit']}",
          f"{r['x_roof']:.2f}" if r["x_roof"] else "-", f"{r['x_own_fp32']:.2f}",
          f"{r['min_cosine_to_fp32']:.5f}" if r.get("min_cosine_to_fp32") is not None else "-", f"{r['matmul_gflops']:.0f}"]
         for r in rows])
    targets = targets_for(rows, native, args.tiny)
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    out = {"benchmark": "dtype", "machine": info, "native_bf16": native, "layers": layers, "sizes": sizes,
           "docs": docs, "rows": rows, "targets": targets}
    return common.finish(args, out, plot)


def plot(out, path):
    bars = {f"{r['part']}\n{r['impl']} {r['dtype']}": 1 / r["x_roof"] for r in out["rows"] if r["x_roof"]}
    common.bar_plot(path, bars, "share of the own-dtype roofline (1 = at the roofline)", "roofline time / time",
                    ["tab:blue", "tab:orange", "tab:gray"])


if __name__ == "__main__":
    main()
