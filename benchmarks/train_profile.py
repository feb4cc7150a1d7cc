"""Benchmark: where one training step's time goes (forward + loss + backward + clip + AdamW).

The bundled model's shape (6 layers, hidden 384, 12 heads, FFN 1536, window 512; random
weights, lfcli's LongformerForSequenceClassification, one global token), one step under
torch.profiler after warm-up, at each (length, dtype, mode). Every profiled op is put into
one of these parts, each counted once:

  linear fwd / linear bwd   the encoder's and head's nn.Linear (and LoRA's A, B) and their
                            input and weight gradients
  band fwd / band bwd       `banded_attention` and the global rows, everything inside them,
                            and the backward nodes those ops made (matched by autograd's
                            sequence numbers)
  layer norm, GELU, dropout, softmax   forward and backward
  casts                     dtype conversions (autocast's, and the fp32 band's) and their
                            backward
  loss                      cross-entropy of the logits
  optimizer                 gradient clipping + AdamW
  rest                      everything else (embeddings, adds, views, the autograd engine)

    python benchmarks/train_profile.py                      # 512 and 4096 tokens, fp32/bf16, full/LoRA
    python benchmarks/train_profile.py --cases 4096 --dtypes bf16 --modes full
    LFCLI_BAND_GRAD=autograd python benchmarks/train_profile.py   # the band's autograd twin

Also prints the step's wall time and its bf16/fp32 roofline (the mode's FLOPs, as in
train_speed.py, at the rate of a 4096^3 matmul timed in the same run).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import train_speed  # noqa: E402  (the model shapes and the FLOP counts)

PARTS = ("linear fwd", "linear bwd", "band fwd", "band bwd", "layer norm", "GELU", "dropout", "softmax", "casts",
         "loss", "optimizer", "rest")
BAND_REGION = "lfcli band attention"
# Outermost forward ops and backward nodes, by name, for the parts that are not regions.
FORWARD_OPS = {
    "aten::linear": "linear", "aten::addmm": "linear", "aten::mm": "linear", "aten::matmul": "linear",
    "aten::layer_norm": "layer norm", "aten::native_layer_norm": "layer norm",
    "aten::gelu": "GELU", "aten::dropout": "dropout", "aten::native_dropout": "dropout", "aten::bernoulli_": "dropout",
    "_Dropout": "dropout",  # lfcli.kernels.fused's dropout (an autograd function)
    "aten::softmax": "softmax", "aten::_softmax": "softmax",
    "aten::to": "casts", "aten::_to_copy": "casts",
}
BACKWARD_NODES = {
    "AddmmBackward0": "linear", "MmBackward0": "linear", "LinearBackward0": "linear", "_DropoutBackward": "dropout",
    "NativeLayerNormBackward0": "layer norm", "GeluBackward0": "GELU", "NativeDropoutBackward0": "dropout",
    "SoftmaxBackward0": "softmax", "ToCopyBackward0": "casts",
    "NllLossBackward0": "loss", "LogSoftmaxBackward0": "loss",
}
CAST_OPS = ("aten::_to_copy",)


def build_model(cfg: dict, mode: str, rank: int):
    from lfcli.models import LongformerConfig, LongformerForSequenceClassification, apply_fast_paths
    from lfcli.models.lora import add_lora

    torch.manual_seed(0)
    config = LongformerConfig(**cfg, id2label={0: "0", 1: "1"}, hidden_dropout_prob=train_speed.HIDDEN_DROPOUT,
                              attention_probs_dropout_prob=train_speed.ATTENTION_DROPOUT)
    model = apply_fast_paths(LongformerForSequenceClassification(config))  # as loading gives them
    if mode == "lora":
        torch.manual_seed(1)
        add_lora(model, r=rank, alpha=2.0 * rank)
    return model.train()


def instrument_band() -> None:
    """Name the band's region in the profile: `banded_attention` and the global rows, as the
    model calls them."""
    from lfcli.models import longformer

    def region(fn):
        def wrapped(*args, **kwargs):
            with record_function(BAND_REGION):
                return fn(*args, **kwargs)
        return wrapped

    longformer.banded_attention = region(longformer.banded_attention)
    cls = longformer.LongformerSelfAttention
    cls.global_rows = region(cls.global_rows)


def make_step(model, n: int, dtype: torch.dtype):
    from lfcli.pipelines.train.optimizer import make_optimizer

    inputs, labels = train_speed.make_batch(n, 1, model.config.vocab_size, "cpu")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(model, lr=1e-5, weight_decay=0.01)
    autocast = nullcontext() if dtype == torch.float32 else torch.autocast("cpu", dtype=dtype)

    def step():
        for p in params:
            p.grad = None
        with record_function("forward"):
            with autocast:
                logits = model(**inputs)
            with record_function("loss"):
                loss = F.cross_entropy(logits.float(), labels)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()

    return step


def split_profile(events) -> dict[str, float]:
    """Milliseconds per part of one profiled step (see the module docstring)."""
    parts: dict[str, float] = defaultdict(float)
    forward_part_of_seq: dict[int, str] = {}

    def ms(ev) -> float:
        return ev.cpu_time_total / 1e3

    def casts_inside(ev) -> float:
        """Outermost cast ops below ev (not counted in ev's own part)."""
        total = 0.0
        for child in ev.cpu_children:
            total += ms(child) if child.name in CAST_OPS else casts_inside(child)
        return total

    def mark(ev, part: str) -> None:
        if ev.sequence_nr >= 0:
            forward_part_of_seq.setdefault(ev.sequence_nr, part)
        for child in ev.cpu_children:
            mark(child, part)

    def claim(ev, part: str) -> None:
        inner = casts_inside(ev) if part != "casts" else 0.0
        parts[part] += ms(ev) - inner
        parts["casts"] += inner

    def rest_then_children(ev, walk) -> None:
        """An event of no part: its own time (outside its children) is rest, its children walked."""
        parts["rest"] += max(0.0, ms(ev) - sum(ms(c) for c in ev.cpu_children))
        for child in ev.cpu_children:
            walk(child)

    def walk_forward(ev) -> None:
        if ev.name == BAND_REGION:
            mark(ev, "band")
            claim(ev, "band fwd")
            return
        part = FORWARD_OPS.get(ev.name)
        if part is not None:
            mark(ev, part)
            claim(ev, part if part in ("layer norm", "GELU", "dropout", "softmax", "casts") else f"{part} fwd")
            return
        rest_then_children(ev, walk_forward)

    def walk_backward(ev) -> None:
        prefix = "autograd::engine::evaluate_function: "
        if ev.name.startswith(prefix):
            node = ev.name[len(prefix):]
            part = forward_part_of_seq.get(ev.sequence_nr) or BACKWARD_NODES.get(node)
            if node in BACKWARD_NODES and BACKWARD_NODES[node] in ("casts", "loss"):
                part = BACKWARD_NODES[node]
            if part is None:
                parts["rest"] += ms(ev)
            else:
                claim(ev, f"{part} bwd" if part in ("linear", "band") else part)
            return
        rest_then_children(ev, walk_backward)

    roots = [ev for ev in events if ev.cpu_parent is None]
    for root in roots:
        if root.name == "forward":
            for child in root.cpu_children:
                if child.name == "loss":
                    parts["loss"] += ms(child)
                else:
                    walk_forward(child)
            parts["rest"] += max(0.0, ms(root) - sum(ms(c) for c in root.cpu_children))
        elif root.name == "backward":
            walk_backward(root)
        elif root.name == "optimizer":
            parts["optimizer"] += ms(root)
    return dict(parts)


def profile_case(n: int, dt: str, mode: str, cfg: dict, rank: int, warmup: int) -> dict:
    dtype = common.DTYPES[dt]
    model = build_model(cfg, mode, rank)
    step = make_step(model, n, dtype)
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    step()
    wall = time.perf_counter() - t0
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    parts = split_profile(prof.events())
    return {"n": n, "dtype": dt, "mode": mode, "step_ms": wall * 1e3, "profiled_ms": sum(parts.values()), "parts": parts}


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=None, help="lengths, comma-separated (default 512,4096)")
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--modes", default="full,lora")
    args = p.parse_args(argv)
    default = "128,256" if args.tiny else "512" if args.quick else "512,4096"
    args.cases = [int(x) for x in (args.cases or default).split(",")]
    args.dtypes = args.dtypes.split(",")
    args.modes = args.modes.split(",")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    if device.type != "cpu":
        raise SystemExit("train_profile.py profiles the CPU path")
    info = common.machine_info(device)
    common.print_header("Where a training step's time goes (torch.profiler, one step after warm-up)", info)
    import os

    band_grad = os.environ.get("LFCLI_BAND_GRAD", "fused")
    cfg = train_speed.TINY_MODELS["bundled"] if args.tiny else train_speed.MODELS["bundled"]
    print(f"bundled shape: {cfg['num_hidden_layers']} layers, hidden {cfg['hidden_size']}, FFN {cfg['intermediate_size']}, "
          f"window {cfg['attention_window']}; batch 1, one global token; hidden dropout {train_speed.HIDDEN_DROPOUT}; "
          f"band backward: {band_grad}")
    instrument_band()
    warmup = 1 if args.tiny else 2
    rates = {dt: common.matmul_gflops(device, common.DTYPES[dt], 512 if args.tiny else 4096) for dt in args.dtypes}
    print("matmul rate: " + ", ".join(f"{dt} {r:.0f} GFLOP/s" for dt, r in rates.items()))
    rows, records = [], []
    for n in args.cases:
        for dt in args.dtypes:
            for mode in args.modes:
                rec = profile_case(n, dt, mode, cfg, train_speed.LORA_RANK, warmup)
                flops = train_speed.flop_counts(n, 1, cfg)[mode]
                rec["roofline_ms"] = flops / (rates[dt] * 1e9) * 1e3
                records.append(rec)
                total = rec["profiled_ms"]
                rows.append([n, dt, mode, f"{rec['step_ms']:.0f}", f"{rec['roofline_ms']:.0f}",
                             f"{rec['step_ms'] / rec['roofline_ms']:.1f}"]
                            + [f"{rec['parts'].get(p, 0.0):.0f} ({100 * rec['parts'].get(p, 0.0) / total:.0f}%)"
                               for p in PARTS])
                print(f"  {n} {dt} {mode}: step {rec['step_ms']:.0f} ms (profiled {total:.0f} ms)", flush=True)
    print("\nms per part of one step (share of the profiled step):")
    common.print_table(["n", "dtype", "mode", "step ms", "roof ms", "x roof"] + list(PARTS), rows)
    print("x roof = step / roofline (the mode's FLOPs at the dtype's matmul rate); profiled steps run slower than "
          "unprofiled ones (the profiler's own cost), so the shares, not the sums, are the point")
    out = {"info": info, "band_grad": band_grad, "matmul_gflops": rates, "records": records}
    common.write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
