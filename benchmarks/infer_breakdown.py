"""Benchmark: where the time of a task over whole novels goes, stage by stage, against the roofline.

Documents: --books whole novels from ../shared/data/litbank/original (the first N by file
name; read at run time, never copied into the repository). For each task of --tasks, one job
through lfcli.Pipeline with the command's default options (the task's bundled model: embed
minilm-l6-long, qa minilm-l6-long-squad with one question, corefs minilm-l6-long-litbank-coref,
classify zero-shot over three labels), rows written as JSONL as `-o OUT.jsonl` would. Each
stage is timed where the job spends it:

  read      the reader: files to Document objects
  tokenize  task.prepare: tokenizer, windows, global positions (and the task's own reading)
  encode    the Longformer encoder's forward (the model's `longformer` module, or the model)
  head      the rest of task.forward: heads, pooling, span scoring, window decoding
  finish    task.finish: a document's windows joined into its row
  write     the writer
  other     the rest of the wall time: batching, padding, tensors, the runner

Roofline: the encoder's matmul FLOPs of the novels' tokens, each token once (common.
encoder_layer_flops, banded attention included), over the best rate a large square matmul
reaches in the job's dtype, measured before the jobs and after each (the highest).
`x roofline` = wall time / that time; tokens/s counts the novels' tokens (not the overlapping windows' ones), so the
windows' overlap, padding and every non-matmul op show as distance from 1.

    python benchmarks/infer_breakdown.py                          # embed on 8 novels, fp32
    python benchmarks/infer_breakdown.py --tasks embed,classify,qa,corefs --books 3
    python benchmarks/infer_breakdown.py --dtype bfloat16         # where the CPU has bf16 matmul
    python benchmarks/infer_breakdown.py --books 2 --ops          # and the encoder's ops, by kind

--ops runs the jobs under torch.profiler (CPU ops) and sums each op's own time by kind: the
matmuls, the attention's own kernels (SDPA over the band's blocks, softmax), layer norms, GELU,
other elementwise ops, copies and gathers, reductions; "python" is the encoder's wall time that
no op holds (the interpreter between ops). Each kind is shown as a share of the encoder's time
and in units of the roofline's time. The profiler adds its own cost to every op call, so the
figures are shares, not speeds (the stage table comes from the same, profiled run).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

STAGES = ("read", "tokenize", "encode", "head", "finish", "write", "other")
TASK_OPTIONS = {
    "embed": {},
    "classify": {"labels": [("adventure", ""), ("romance", ""), ("satire", "")]},
    "qa": {"question": "Who is the narrator?"},
    "corefs": {},
}


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="embed", help="comma-separated: embed, classify, qa, corefs (default embed)")
    p.add_argument("--books", type=int, default=None, help="how many novels (default 8; quick 2; tiny 1)")
    p.add_argument("--chars", type=int, default=None, help="only the first CHARS characters of each (tiny: 6000)")
    p.add_argument("--dtype", default="float32", help="float32 or bfloat16 (the job's dtype)")
    p.add_argument("-m", "--model", default=None, help="as the commands' -m: a model, or a tier (small, base); "
                                                        "default: each task's default model")
    p.add_argument("--data", type=Path, default=None, help="folder of .txt novels (default: the shared LitBank originals)")
    p.add_argument("--max-length", type=int, default=None, help="as the commands' --max-length (tiny: 512)")
    p.add_argument("--ops", action="store_true", help="the encoder's time by kind of op (torch.profiler)")
    return p.parse_args(argv)


# The kinds of op --ops sums (torch.profiler's op names, without their namespace), first match wins.
OP_KINDS = (
    ("matmul", ("addmm", "mm", "bmm", "baddbmm", "linear", "_linear_pointwise", "matmul", "einsum")),
    ("attention", ("_scaled_dot_product_flash_attention_for_cpu", "scaled_dot_product_attention",
                   "_scaled_dot_product_attention_math", "_softmax", "softmax", "_safe_softmax")),
    ("layer norm", ("native_layer_norm", "layer_norm")),
    ("gelu", ("gelu", "gelu_")),
    ("copies", ("copy_", "clone", "contiguous", "cat", "stack", "_to_copy", "to", "index", "index_select",
                "gather", "scatter", "scatter_", "index_put_", "index_add_", "constant_pad_nd", "pad", "empty",
                "empty_like", "zeros", "zeros_like", "full", "new_zeros", "new_empty", "fill_", "zero_")),
    ("reductions", ("sum", "mean", "amax", "max", "argsort", "sort", "cumsum", "any", "all")),
    ("elementwise", ("add", "add_", "mul", "mul_", "div", "div_", "sub", "sub_", "lerp", "lerp_", "where",
                     "masked_fill", "masked_fill_", "tanh", "exp", "exp_", "neg", "rsub", "eq", "ne", "lt", "gt",
                     "ge", "le", "bitwise_and", "bitwise_or", "bitwise_not", "logical_not", "clamp", "clamp_")),
)


def op_kind(name: str) -> str:
    short = name.split("::")[-1]
    return next((kind for kind, names in OP_KINDS if short in names), "other ops")


def ops_by_kind(prof) -> dict[str, float]:
    """Seconds of own (self) CPU time per kind of op, over every op the profiler saw."""
    out: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        if "::" in event.key:  # aten:: / mkldnn:: / lfcli:: ops; the profiler's own records aside
            out[op_kind(event.key)] += event.self_cpu_time_total / 1e6
    return dict(out)


class Clock:
    """Seconds per stage, added up by `timed` wrappers around the job's functions."""

    def __init__(self):
        self.seconds = defaultdict(float)

    def timed(self, stage: str, fn):
        def run(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - t0
        return run

    def stream(self, stage: str, iterable):
        it = iter(iterable)
        while True:
            t0 = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                self.seconds[stage] += time.perf_counter() - t0
                return
            self.seconds[stage] += time.perf_counter() - t0
            yield item


def encoder_of(model):
    return getattr(model, "longformer", model)


def book_flops(cfg, tokens: int) -> float:
    return sum(common.encoder_layer_flops(tokens, cfg.hidden_size, cfg.num_attention_heads, w, cfg.intermediate_size)
               for w in cfg.attention_windows)


def run_task(task: str, files: list[Path], args, device) -> dict:
    import lfcli
    from lfcli.pipelines.io.writers import open_writer

    pipe = lfcli.Pipeline(task, model=args.model, device=str(device), dtype=args.dtype, max_length=args.max_length,
                          **TASK_OPTIONS[task])
    clock = Clock()
    encoder = encoder_of(pipe.model)
    encoder.forward = clock.timed("encode", encoder.forward)
    pipe.task.forward = clock.timed("forward", pipe.task.forward)
    pipe.task.prepare = clock.timed("tokenize", pipe.task.prepare)
    pipe.task.finish = clock.timed("finish", pipe.task.finish)
    windows = {"windows": 0, "window_tokens": 0}
    batches = pipe._batches

    def counted(items):
        for batch in batches(items):
            windows["windows"] += len(batch)
            windows["window_tokens"] += sum(len(it) for it in batch)
            yield batch
    pipe._batches = counted
    with tempfile.TemporaryDirectory(prefix="lfcli-breakdown-") as tmp:
        out = Path(tmp) / "out.jsonl"
        started = time.perf_counter()
        with open_writer(str(out), resume=False, force=True) as writer:
            writer.write = clock.timed("write", writer.write)
            docs = clock.stream("read", lfcli.read_documents([str(f) for f in files]))
            if args.ops:
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    for row in pipe.run(docs):
                        writer.write(row)
            else:
                for row in pipe.run(docs):
                    writer.write(row)
        wall = time.perf_counter() - started
        errors = [json.loads(line).get("error") for line in out.read_text(encoding="utf-8").splitlines()]
    if any(errors):
        raise SystemExit(f"{task}: a document failed: {next(e for e in errors if e)}")
    s = dict(clock.seconds)
    s["head"] = s.pop("forward", 0.0) - s.get("encode", 0.0)
    s["other"] = wall - sum(s.get(k, 0.0) for k in STAGES if k != "other")
    out = {"wall_s": wall, "stages": {k: s.get(k, 0.0) for k in STAGES}, "tokens": pipe.stats.tokens,
           "docs": pipe.stats.docs, "max_length": pipe.max_length, "config": pipe.model.config, **windows}
    if args.ops:  # the ops of the whole job; the head's and the tokenizer's are few beside the encoder's
        out["ops"] = ops_by_kind(prof)
    return out


def print_ops(task: str, r: dict) -> None:
    """The --ops table of one task: each kind's seconds, share of the encoder, x roofline."""
    ops, encode = r["ops"], r["stages"]["encode"]
    r["ops"]["python"] = max(0.0, encode - sum(ops.values()))  # the encoder's time no op holds
    rows = [[kind, f"{sec:.2f}", f"{100 * sec / max(encode, 1e-9):.0f}%", f"{sec / r['roofline_s']:.2f}"]
            for kind, sec in sorted(ops.items(), key=lambda kv: -kv[1])]
    print(f"\n{task}: the encoder's {encode:.1f} s by kind of op (profiled; roofline {r['roofline_s']:.1f} s)")
    common.print_table(["kind", "seconds", "of encode", "x roofline time"], rows)


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
    books = args.books or (1 if args.tiny else 2 if args.quick else 8)
    if args.tiny:
        args.chars, args.max_length = args.chars or 6000, args.max_length or 512
    info = common.machine_info(device)
    common.print_header(f"Inference stage by stage on whole novels ({args.dtype})", info)
    source = args.data or common.shared_data_dir() / "litbank" / "original"
    files = sorted(source.glob("*.txt"))[:books]
    if not files:
        raise SystemExit(f"{source}: no .txt files (the LitBank originals; see ../shared/data/README.md)")
    with tempfile.TemporaryDirectory(prefix="lfcli-novels-") as tmp:
        if args.chars:
            cut = []
            for f in files:
                (Path(tmp) / f.name).write_text(f.read_text(encoding="utf-8")[:args.chars], encoding="utf-8")
                cut.append(Path(tmp) / f.name)
            files = cut
        matmul, flops = common.matmul_case(device, dtype, common.matmul_size(args))

        def matmul_rate() -> float:
            return flops / common.bench(matmul, device, warmup=1, repeats=5)["median_s"] / 1e9
        # The rate is sampled before the jobs and after each: on a shared machine it drifts by 20%
        # over minutes, and the roofline is the best of the samples.
        rates, results = [matmul_rate()], {}
        for task in args.tasks.split(","):
            results[task.strip()] = run_task(task.strip(), files, args, device)
            rates.append(matmul_rate())
    rate = max(rates)
    kb = sum(f.stat().st_size for f in files) / 1e3 if not args.chars else books * args.chars / 1e3
    print(f"{books} novels ({', '.join(f.stem for f in files)}), {kb:,.0f} KB; {args.dtype}; matmul "
          f"{' / '.join(f'{r:.0f}' for r in rates)} GFLOP/s before the jobs and after each (the roofline takes the highest)")
    table, out = [], {}
    for task, r in results.items():
        cfg = r.pop("config")
        roof = book_flops(cfg, r["tokens"]) / (rate * 1e9)
        r.update(roofline_s=roof, x_roofline=r["wall_s"] / roof, tokens_per_s=r["tokens"] / r["wall_s"],
                 roofline_tokens_per_s=r["tokens"] / roof, docs_per_min=60 * r["docs"] / r["wall_s"],
                 window_overhead=r["window_tokens"] / max(r["tokens"], 1))
        table.append([task, f"{r['wall_s']:.1f}", f"{r['docs_per_min']:.2f}", f"{r['tokens_per_s']:,.0f}",
                      f"{r['roofline_tokens_per_s']:,.0f}", f"{r['x_roofline']:.2f}", f"{r['window_overhead']:.2f}"]
                     + [f"{100 * r['stages'][k] / r['wall_s']:.0f}%" for k in STAGES])
        out[task] = r
    print()
    common.print_table(["task", "wall s", "docs/min", "tokens/s", "roofline tok/s", "x roofline", "windows/tokens",
                        *STAGES], table)
    print("windows/tokens: tokens encoded (windows, overlap and padding aside) per novel token. Stages as shares "
          "of wall time.")
    for task, r in out.items():
        if "ops" in r:
            print_ops(task, r)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    return common.finish(args, {"benchmark": "infer_breakdown", "machine": info, "dtype": args.dtype, "books": [f.name for f in files],
                                "matmul_gflops": rates, "results": out, "targets": []}, lambda out, path: None)


if __name__ == "__main__":
    main()
