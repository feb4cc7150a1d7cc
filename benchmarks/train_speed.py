"""Benchmark: training throughput (forward + loss + backward), lfcli vs transformers' Longformer.

Two model sizes with random weights: `bundled` (the bundled minilm-l6-long's shape: 6 layers,
hidden 384, 12 heads, FFN 1536, window 512, 4096 positions) and `base` (12 x 768, 12 heads,
FFN 3072, window 512). Each is built once as transformers' LongformerForSequenceClassification
(2 labels), saved with save_pretrained and loaded by both lfcli's
`lfcli.models.LongformerForSequenceClassification` and transformers', so both train the same
weights. Inputs: 512 tokens (batch 1 and 8) and 4096 tokens (batch 1), one global token
(position 0), random ids and labels.

A step is: gradients set to None, forward (under bf16 autocast for bf16), cross-entropy of the
fp32 logits, backward. Two modes, as `lfcli finetune --adapter full|lora` trains:
  full  every weight trains
  lora  lfcli.models.lora.add_lora(model, r=16, alpha=32): frozen base weights, trainable
        low-rank adapters on every encoder linear layer, and the head trains. The same
        add_lora (same seed, same adapters) is applied to transformers' model, whose
        modules have the same names.
Dropout as `lfcli finetune` sets it, on both sides: attention-probability dropout 0,
hidden-state dropout 0.1 (transformers' default), models in train mode. The gradient
clipping + AdamW update (`lfcli.pipelines.train.optimizer.make_optimizer`, clip at 1.0) is timed
apart, on lfcli's parameters (transformers' are the same tensors in number and shape).

Roofline: 3x the forward FLOPs at the rate of a large matmul of the run's dtype timed in the
same rounds (LoRA: its own count too, see LORA_FLOPS_TEXT). Targets: lfcli <= 5x it in bf16,
<= 1.5x in fp32 (TARGET_ROOFLINE).

    python benchmarks/train_speed.py                 # both sizes, 512x1, 512x8, 4096x1, fp32 + bf16 (~25 min)
    python benchmarks/train_speed.py --quick         # bundled shape with 2 layers, 512 and 4096, batch 1
    python benchmarks/train_speed.py --models base --cases 4096x1 --dtypes bf16 --modes full
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SPECIALS = dict(type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, sep_token_id=2)
MODELS = {
    # all-MiniLM-L6-v2's shape (BERT vocabulary) as lfcli bundles it: 4096 positions, window
    # 512; RoBERTa-style position table (4096 + pad + 1 rows) so that transformers' Longformer
    # runs it too.
    "bundled": dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                    intermediate_size=1536, attention_window=512, max_position_embeddings=4098, **SPECIALS),
    "base": dict(vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, attention_window=512, max_position_embeddings=4098, **SPECIALS),
}
TINY_MODELS = {
    "bundled": dict(MODELS["bundled"], vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, attention_window=64, max_position_embeddings=514),
    "base": dict(MODELS["base"], vocab_size=1000, hidden_size=96, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=192, attention_window=64, max_position_embeddings=514),
}
FULL_CASES = ((512, 1), (512, 8), (4096, 1))
QUICK_CASES = ((512, 1), (4096, 1))
TINY_CASES = ((128, 1), (128, 2), (256, 1))
QUICK_LAYERS = 2
TARGET_N = (512, 4096)  # the issue's lengths at batch 1 go into the summary of targets
# lfcli's step / its roofline, at most: bf16 steps pay for casts and fp32 band attention
# (kernels/chunked_grad.py) beside the bf16 matmuls the roofline counts.
TARGET_ROOFLINE = {"fp32": 1.5, "bf16": 5.0}
LORA_RANK = 16  # alpha = 2 * rank, as lfcli finetune
HIDDEN_DROPOUT, ATTENTION_DROPOUT = 0.1, 0.0
MODES = ("full", "lora")
IMPLS = ("lfcli", "transformers")

FLOPS_TEXT = (
    "forward F = B * L * [2*n*(4*h*h + 2*h*i) (q, k, v, output dense, FFN) + 4*h*K] with K = sum over the n queries "
    "of the keys each one attends to (band of 2*w1+1 clipped at the sequence ends; w1 = window/2); "
    "embeddings, head and the global token's rows not counted"
)
FULL_FLOPS_TEXT = "full fine-tuning: 3 * F (backward = input gradients + weight gradients = 2 * F)"
LORA_FLOPS_TEXT = (
    "LoRA: F + F_lin (input gradients only: frozen weights get none) - 3*2*n*h*h (layer 0's q, k, v need no input "
    "gradient: the embeddings are frozen) + 2 * F_band (the band's backward is 2x its forward) + 3 * F_adapters, "
    "F_adapters = B * L * 2*n*r*(10*h + 2*i) (x A^T B^T on q, k, v, both output denses and the FFN input); "
    "F_lin / F_band = the linear / band parts of F"
)


# ---------------------------------------------------------------------------------------
# FLOPs
# ---------------------------------------------------------------------------------------
def band_key_count(n: int, window: int) -> int:
    """Sum over the n queries of the keys in their band (2*w1 + 1, clipped to [0, n))."""
    w1 = window // 2
    return sum(min(p + w1, n - 1) - max(p - w1, 0) + 1 for p in range(n))


def flop_counts(n: int, batch: int, cfg: dict, rank: int = LORA_RANK) -> dict:
    """Forward FLOPs (split into linear and band parts) and the training counts per mode."""
    L, h, i = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"]
    lin = batch * L * 2 * n * (4 * h * h + 2 * h * i)
    band = batch * L * 4 * h * band_key_count(n, cfg["attention_window"])
    adapters = batch * L * 2 * n * rank * (10 * h + 2 * i)
    forward = lin + band
    full = 3 * forward
    lora = forward + (lin - batch * 3 * 2 * n * h * h) + 2 * band + 3 * adapters
    return {"forward": float(forward), "linear": float(lin), "band": float(band), "adapters": float(adapters),
            "full": float(full), "lora": float(lora)}


# ---------------------------------------------------------------------------------------
# models and steps
# ---------------------------------------------------------------------------------------
def native_bf16(device: torch.device) -> tuple[bool, str]:
    """(bf16 runs natively here, a sentence saying why or why not): lfcli's own test, the one
    `--dtype auto` and the trainer's autocast use."""
    from lfcli.pipelines.infer.precision import cpu_has_native_bf16

    if device.type == "cuda":
        return True, "CUDA"
    if cpu_has_native_bf16():
        return True, "native bf16 (AVX512_BF16 / AMX)"
    return False, "this CPU has no native bf16 (no AVX512_BF16 / AMX): bf16 is emulated"


def save_random_model(config_kwargs: dict, folder: Path) -> None:
    """transformers' LongformerForSequenceClassification with its own random init, saved."""
    import transformers

    torch.manual_seed(0)
    config = transformers.LongformerConfig(**config_kwargs, num_labels=2, hidden_dropout_prob=HIDDEN_DROPOUT,
                                           attention_probs_dropout_prob=ATTENTION_DROPOUT)
    transformers.LongformerForSequenceClassification(config).save_pretrained(folder)


def load_models(folder: Path, device, modes, impls, rank: int) -> dict:
    """{(impl, mode): model in train mode}; LoRA adapters from the same seed on both sides."""
    import transformers
    from lfcli.models import LongformerForSequenceClassification
    from lfcli.models.lora import add_lora

    models = {}
    for impl in impls:
        for mode in modes:
            if impl == "lfcli":
                model = LongformerForSequenceClassification.from_pretrained(folder)
                model.config.attention_probs_dropout_prob = ATTENTION_DROPOUT  # as lfcli finetune (already 0 here)
            else:
                model = transformers.LongformerForSequenceClassification.from_pretrained(folder)
            if mode == "lora":
                torch.manual_seed(1)
                add_lora(model, r=rank, alpha=2.0 * rank)
            models[(impl, mode)] = model.to(device).train()
    return models


def make_batch(n: int, batch: int, vocab: int, device):
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(3, vocab, (batch, n), generator=g)
    ids[:, 0] = 0
    gmask = torch.zeros_like(ids)
    gmask[:, 0] = 1
    labels = torch.randint(0, 2, (batch,), generator=g)
    return {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device),
            "global_attention_mask": gmask.to(device)}, labels.to(device)


def make_step(model, inputs: dict, labels, autocast):
    """forward (+ autocast) + cross-entropy + backward, gradients set to None first."""
    params = [p for p in model.parameters() if p.requires_grad]

    def step():
        for p in params:
            p.grad = None
        with autocast():
            out = model(**inputs)
        logits = out if isinstance(out, torch.Tensor) else out.logits
        loss = F.cross_entropy(logits.float(), labels)
        loss.backward()
        return loss

    return step


def make_update(model):
    """The trainer's update: clip the gradient norm at 1.0, AdamW step (lfcli finetune's optimizer)."""
    from lfcli.pipelines.train.optimizer import make_optimizer

    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(model, lr=1e-5, weight_decay=0.01)

    def update():
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    return update


def check_same_function(models: dict, inputs: dict, labels) -> dict:
    """One fp32 step of each full (and LoRA) pair with dropout off: loss difference and the
    largest gradient difference over parameters both sides name alike, relative to the largest
    gradient. Gradients are cleared afterwards; weights are untouched."""
    out = {}
    for mode in MODES:
        pair = [models.get((impl, mode)) for impl in IMPLS]
        if None in pair:
            continue
        losses, grads = [], []
        for model in pair:
            model.eval()
            model.zero_grad(set_to_none=True)
            logits = model(**inputs)
            logits = logits if isinstance(logits, torch.Tensor) else logits.logits
            loss = F.cross_entropy(logits.float(), labels)
            loss.backward()
            losses.append(loss.item())
            grads.append({k: p.grad.detach().clone() for k, p in model.named_parameters() if p.grad is not None})
            model.zero_grad(set_to_none=True)
            model.train()
        common_names = sorted(set(grads[0]) & set(grads[1]))
        scale = max((grads[1][k].abs().max().item() for k in common_names), default=0.0) or 1.0
        diff = max(((grads[0][k] - grads[1][k]).abs().max().item() for k in common_names), default=float("nan"))
        out[mode] = {"loss_diff": abs(losses[0] - losses[1]), "grad_rel_diff": diff / scale,
                     "params_compared": len(common_names), "params_lfcli": len(grads[0]), "params_transformers": len(grads[1])}
    return out


def run_model(model_name: str, cfg: dict, args, device, dtypes, cases, warmup: int, repeats: int, size: int):
    """Build one model size (four copies: lfcli and transformers, full and LoRA), check that
    both sides compute the same loss and gradients, then time every (case, dtype) in rounds.
    Returns (records, same-function check, model info)."""
    from lfcli.models.lora import trainable_parameters

    rank = args.lora_rank
    with tempfile.TemporaryDirectory(prefix="lfcli-train-bench-") as tmp:
        t0 = time.perf_counter()
        save_random_model(cfg, Path(tmp))
        models = load_models(Path(tmp), device, args.modes, args.impls, rank)
    params = {f"{i} {m}": trainable_parameters(model) for (i, m), model in models.items()}
    info = {"config": cfg, "trainable_parameters": params}
    shape = (f"{cfg['num_hidden_layers']} layers, hidden {cfg['hidden_size']}, {cfg['num_attention_heads']} heads, "
             f"FFN {cfg['intermediate_size']}, window {cfg['attention_window']}")
    print(f"\n{model_name}: {shape}; built and loaded in {time.perf_counter() - t0:.1f}s; trainable parameters: "
          + ", ".join(f"{k} {t:,}" for k, (t, _) in params.items()), flush=True)
    max_n = cfg["max_position_embeddings"] - cfg["pad_token_id"] - 1
    runnable = [(n, b) for n, b in cases if n <= max_n]
    if len(runnable) < len(cases):
        print(f"  skipped (longer than {max_n} positions): {[c for c in cases if c not in runnable]}")
    check = {}
    if runnable and len(args.impls) == 2:
        inputs, labels = make_batch(runnable[0][0], 1, cfg["vocab_size"], device)
        check = check_same_function(models, inputs, labels)
        for mode, c in check.items():
            print(f"  same function ({mode}, fp32, dropout off, n={runnable[0][0]}): |loss diff| {c['loss_diff']:.1e}, "
                  f"max |grad diff| / max |grad| {c['grad_rel_diff']:.1e} over {c['params_compared']} parameters")
    updates = {} if args.no_update else {m: make_update(models[("lfcli", m)]) for m in args.modes if ("lfcli", m) in models}
    records = []
    for n, batch in runnable:
        inputs, labels = make_batch(n, batch, cfg["vocab_size"], device)
        flops = flop_counts(n, batch, cfg, rank)
        for dt in dtypes:
            dtype = common.DTYPES[dt]
            autocast = nullcontext if dtype == torch.float32 else (lambda dtype=dtype: torch.autocast(device.type, dtype=dtype))
            fns = {}
            for mode in args.modes:
                for impl in args.impls:
                    fns[f"{impl} {mode}"] = make_step(models[(impl, mode)], inputs, labels, autocast)
                    if impl == "lfcli" and mode in updates:
                        fns[f"update {mode}"] = updates[mode]  # right after the backward that made its gradients
            mm, mm_flops = common.matmul_case(device, dtype, size)
            fns["matmul"] = mm
            timed = common.bench_rounds(fns, device, warmup=warmup, repeats=repeats, grad=True)
            del fns, mm
            rate = mm_flops / timed["matmul"]["median_s"]  # FLOP/s
            records.append({"model": model_name, "n": n, "batch": batch, "tokens": n * batch, "dtype": dt,
                            "flops": flops, "matmul_gflops": rate / 1e9, "timed": timed})
            line = ", ".join(f"{k} {fmt_ms(v['median_s'])} ms" for k, v in timed.items())
            print(f"  {model_name} {n}x{batch} {dt}: {line} ({rate / 1e9:.0f} GFLOP/s; F = {flops['forward'] / 1e9:.3g} "
                  f"GFLOP, LoRA count = {flops['lora'] / flops['forward']:.2f} F)", flush=True)
    return records, check, info


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 10 else f"{ms:.3g}"


# ---------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------
def parse_cases(text: str) -> list[tuple[int, int]]:
    cases = []
    for part in text.split(","):
        n, _, b = part.strip().partition("x")
        cases.append((int(n), int(b or 1)))
    return cases


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--models", default="bundled,base", help="comma-separated subset of bundled,base (quick: bundled)")
    p.add_argument("--cases", default=None, help="tokens x batch, comma-separated (default 512x1,512x8,4096x1; quick: 512x1,4096x1)")
    p.add_argument("--dtypes", default=None, help="fp32,bf16 (default: both where the CPU has native bf16, else fp32)")
    p.add_argument("--modes", default="full,lora", help="full, lora or both")
    p.add_argument("--impls", default="lfcli,transformers", help="lfcli, transformers or both")
    p.add_argument("--layers", type=int, default=None, help=f"override the number of layers (quick: {QUICK_LAYERS})")
    p.add_argument("--lora-rank", type=int, default=LORA_RANK)
    p.add_argument("--no-update", action="store_true", help="do not time the clip + AdamW update")
    args = p.parse_args(argv)
    for name, allowed in (("models", MODELS), ("modes", MODES), ("impls", IMPLS)):
        values = [v for v in getattr(args, name).split(",") if v]
        if not values or set(values) - set(allowed):
            p.error(f"--{name}: choose from {','.join(allowed)}")
        setattr(args, name, values)
    if args.quick and args.models == ["bundled", "base"]:
        args.models = ["bundled"]
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    common.quiet_transformers()
    warmup, repeats = common.repeats_for(args, quick=2, full=3)
    info = common.machine_info(device)
    common.print_header("Training throughput: lfcli vs transformers LongformerForSequenceClassification", info)

    bf16_ok, bf16_why = native_bf16(device)
    info["native_bf16"], info["bf16_note"] = bf16_ok, bf16_why
    if args.dtypes:
        dtypes = [d for d in args.dtypes.split(",") if d]
        if set(dtypes) - {"fp32", "bf16"}:
            raise SystemExit("--dtypes: choose from fp32,bf16")
        if "bf16" in dtypes and not bf16_ok:
            print(f"notice: {bf16_why}; bf16 skipped, fp32 only")
            dtypes = [d for d in dtypes if d != "bf16"] or ["fp32"]
    else:
        dtypes = ["fp32", "bf16"] if bf16_ok else ["fp32"]
    print(f"bf16: {bf16_why}" + ("" if bf16_ok else "; reporting fp32 only"))
    cases = parse_cases(args.cases) if args.cases else list(TINY_CASES if args.tiny else QUICK_CASES if args.quick else FULL_CASES)
    size = common.matmul_size(args)
    rank = args.lora_rank
    print(f"step = forward (bf16: under torch.autocast) + cross-entropy + backward; modes {','.join(args.modes)} "
          f"(lora: r={rank}, alpha={2 * rank}, frozen base); dropout: hidden {HIDDEN_DROPOUT}, attention "
          f"{ATTENTION_DROPOUT}, train mode, both sides; one global token; median of {repeats} rounds after {warmup} "
          f"warm-up; each round runs every step, the update and a {size}^3 matmul of the run's dtype once, in turn")
    print(FLOPS_TEXT)
    print(FULL_FLOPS_TEXT)
    print(LORA_FLOPS_TEXT)

    records, checks, model_info = [], {}, {}
    for model_name in args.models:
        cfg = dict((TINY_MODELS if args.tiny else MODELS)[model_name])
        if args.layers or args.quick:
            cfg["num_hidden_layers"] = args.layers or QUICK_LAYERS
        recs, check, model_info[model_name] = run_model(model_name, cfg, args, device, dtypes, cases, warmup, repeats, size)
        records += recs
        if check:
            checks[model_name] = check
        gc.collect()  # this model's four copies, optimizers and gradients go before the next is built

    rows, targets, results = [], [], []
    reduced = bool(args.quick or args.tiny or args.layers)
    for rec in records:
        for mode in args.modes:
            r = summarise(rec, mode, args.impls, judge=not args.tiny)
            results.append(r)
            rows.append(table_row(r))
            if "lfcli_x_roof" in r and rec["batch"] == 1 and (args.tiny or rec["n"] in TARGET_N):
                note = f" ({model_info[rec['model']]['config']['num_hidden_layers']} layers)" if reduced else ""
                targets.append({
                    "name": f"train {rec['model']}{note} {rec['n']}x{rec['batch']} {rec['dtype']} {mode}: lfcli step / "
                            f"{'3x forward' if mode == 'full' else 'LoRA'} roofline",
                    "value": f"{r['lfcli_x_roof']:.2f}x", "target": f"<= {target_of(rec['dtype'])}x",
                    "pass": r["pass"]})
    print()
    common.print_table(HEADERS, rows)
    print("x tf = transformers' step time / lfcli's (> 1: lfcli faster); x roof = step time / roofline time, "
          "roofline = the mode's FLOPs / the matmul rate of the row's dtype in the same rounds (full: 3F; lora: the "
          "LoRA count); x 3F = lfcli's step / (3F / rate) for both modes; update = clip + AdamW on lfcli's trainable "
          "parameters; target: lfcli x roof <= 1.5 in fp32, <= 5 in bf16")
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    out = {"benchmark": "train_speed", "machine": info, "models": model_info, "dtypes": dtypes, "modes": args.modes,
           "impls": args.impls, "lora_rank": rank, "hidden_dropout": HIDDEN_DROPOUT, "attention_dropout": ATTENTION_DROPOUT,
           "flops_formula": [FLOPS_TEXT, FULL_FLOPS_TEXT, LORA_FLOPS_TEXT], "same_function": checks,
           "cases": records, "results": results, "targets": targets}
    return common.finish(args, out, plot)


HEADERS = ["model", "n x B", "dtype", "mode", "lfcli ms", "lfcli tok/s", "tf ms", "tf tok/s", "x tf",
           "roof ms", "lfcli x roof", "tf x roof", "lfcli x 3F", "update ms", "matmul GF/s", "target"]


def target_of(dtype: str) -> float:
    """The roofline ratio a step of this dtype should reach (fp32 unless it names bf16)."""
    return TARGET_ROOFLINE["bf16" if "bf16" in str(dtype) or "bfloat16" in str(dtype) else "fp32"]


def summarise(rec: dict, mode: str, impls, judge: bool = True) -> dict:
    """One side-by-side comparison: (model, n, batch, dtype, mode). judge=False (--tiny): no
    verdict on the target."""
    timed, tokens, rate = rec["timed"], rec["tokens"], rec["matmul_gflops"] * 1e9
    roof = rec["flops"][mode] / rate
    roof3 = rec["flops"]["full"] / rate
    r = {k: rec[k] for k in ("model", "n", "batch", "tokens", "dtype", "matmul_gflops")}
    r.update(mode=mode, roofline_s=roof, roofline_3f_s=roof3, roofline_tokens_s=tokens / roof)
    for impl in impls:
        t = timed[f"{impl} {mode}"]["median_s"]
        r[f"{impl}_s"], r[f"{impl}_tokens_s"], r[f"{impl}_x_roof"] = t, tokens / t, t / roof
    if "lfcli" in impls:
        r["lfcli_x_3f"] = r["lfcli_s"] / roof3
        r["pass"] = r["lfcli_x_roof"] <= target_of(rec["dtype"]) if judge else None
    if len(impls) == 2:
        r["speedup_vs_transformers"] = r["transformers_s"] / r["lfcli_s"]
    if f"update {mode}" in timed:
        r["update_s"] = timed[f"update {mode}"]["median_s"]
        r["lfcli_tokens_s_with_update"] = tokens / (r["lfcli_s"] + r["update_s"])
    return r


def table_row(r: dict) -> list[str]:
    def ms(key):
        return fmt_ms(r[key]) if key in r else "-"

    def x(key):
        return f"{r[key]:.2f}" if key in r else "-"

    def tps(key):
        return f"{r[key]:.0f}" if key in r else "-"

    target = "-" if "pass" not in r else "n/a" if r["pass"] is None else ("met" if r["pass"] else "missed")
    return [r["model"], f"{r['n']}x{r['batch']}", r["dtype"], r["mode"], ms("lfcli_s"), tps("lfcli_tokens_s"),
            ms("transformers_s"), tps("transformers_tokens_s"), x("speedup_vs_transformers"), ms("roofline_s"),
            x("lfcli_x_roof"), x("transformers_x_roof"), x("lfcli_x_3f"), ms("update_s"),
            f"{r['matmul_gflops']:.0f}", target]


def plot(out, path):
    """Tokens/s of the largest case (largest model, longest n, batch 1, fp32 if run): each
    implementation and mode, and the two rooflines."""
    if not out["results"]:
        return
    order = list(MODELS)
    res = out["results"]
    key = max(((order.index(r["model"]), r["n"], r["batch"] == 1, r["dtype"] == "fp32") for r in res))
    pick = [r for r in res if (order.index(r["model"]), r["n"], r["batch"] == 1, r["dtype"] == "fp32") == key]
    bars = {}
    for r in pick:
        for impl in out["impls"]:
            bars[f"{impl}\n{r['mode']}"] = r[f"{impl}_tokens_s"]
    for r in pick:
        bars[f"roofline\n{r['mode']}"] = r["roofline_tokens_s"]
    colors = []
    for name in bars:
        colors.append("tab:gray" if name.startswith("roofline") else "tab:blue" if name.startswith("lfcli") else "tab:orange")
    r0 = pick[0]
    common.bar_plot(path, bars, f"training step, {r0['model']}, {r0['n']}x{r0['batch']} tokens ({r0['dtype']})",
                    "tokens/s (forward + backward)", colors)


if __name__ == "__main__":
    main()
