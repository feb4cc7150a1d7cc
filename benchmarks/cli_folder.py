"""Benchmark: the bundled model over a folder of long documents, through the CLI.

Documents: the first --chars characters (default 40,000, about 8,500 tokens, so each one is
longer than the model's 4,096 positions and gets windowed) of --docs (6) LitBank novels from
../shared/data/litbank/original, written as .txt files to a temporary folder (read from the
shared data at run time, never copied into the repository).

Two timings of the same job, `lfcli embed FOLDER -o OUT.jsonl` on the bundled minilm-l6-long
(fp32; --device, default the CPU), in the same rounds as a large matmul:
  cli        the command in a fresh process, as a user runs it: start to exit (interpreter,
             imports, model load, reading, tokenising, the encoder, writing)
  pipeline   the same folder through lfcli.Pipeline("embed") in this process, model already
             loaded: the steady rate that the CLI's progress line reports
Reported: docs/s, tokens/s (document tokens, from the output's n_tokens) and x roofline: the
encoder FLOPs of the windows actually run (counted by a forward hook on the real tokens of
every batch) over the fp32 matmul rate.

    python benchmarks/cli_folder.py            # 6 documents of 40k characters
    python benchmarks/cli_folder.py --quick    # 4 documents of 20k characters
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=None, help="number of novels (default 6; quick 4)")
    p.add_argument("--chars", type=int, default=None, help="characters taken from each (default 40000; quick 20000)")
    p.add_argument("--data", type=Path, default=None, help="folder of .txt novels (default: the shared LitBank originals)")
    p.add_argument("--model", default=None, help="model name or folder (default: the bundled model)")
    return p.parse_args(argv)


def write_documents(source: Path, target: Path, docs: int, chars: int) -> list[Path]:
    files = sorted(source.glob("*.txt"))[:docs]
    if not files:
        raise SystemExit(f"{source}: no .txt files (the LitBank originals; see ../shared/data/README.md)")
    out = []
    for f in files:
        path = target / f.name
        path.write_text(f.read_text(encoding="utf-8")[:chars], encoding="utf-8")
        out.append(path)
    return out


class FlopCounter:
    """Forward pre-hook on the encoder: adds up the encoder FLOPs of each batch's real tokens
    (common.encoder_layer_flops per sample and layer)."""

    def __init__(self, model):
        cfg = model.config
        self.cfg, self.flops, self.windows = cfg, 0.0, 0
        self.handle = model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
        ids = kwargs.get("input_ids", args[0] if args else None)
        lengths = mask.sum(-1).tolist() if mask is not None else [ids.shape[1]] * ids.shape[0]
        c = self.cfg
        for n in lengths:
            self.flops += sum(
                common.encoder_layer_flops(int(n), c.hidden_size, c.num_attention_heads, w, c.intermediate_size)
                for w in c.attention_windows
            )
        self.windows += len(lengths)


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    import lfcli
    from lfcli.models.bundled import DEFAULT_MODEL

    model = args.model or DEFAULT_MODEL
    docs = args.docs or (2 if args.tiny else 4 if args.quick else 6)
    chars = args.chars or (3000 if args.tiny else 20000 if args.quick else 40000)
    max_length = 512 if args.tiny else None
    warmup, repeats = common.repeats_for(args, quick=2, full=3)
    info = common.machine_info(device)
    common.print_header("Long documents through the CLI: lfcli embed on a folder", info)

    with tempfile.TemporaryDirectory(prefix="lfcli-bench-docs-") as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        files = write_documents(args.data or common.shared_data_dir() / "litbank" / "original", folder, docs, chars)
        output = Path(tmp) / "out.jsonl"
        length_flag = ["--max-length", str(max_length)] if max_length else []
        command = [sys.executable, "-m", "lfcli", "embed", str(folder), "-o", str(output), "--force", "-m", model,
                   "--device", str(device), *length_flag]

        def run_cli():
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"lfcli embed failed ({done.returncode}): {done.stderr.strip()[-500:]}")

        pipe = lfcli.Pipeline("embed", model, device=str(device), max_length=max_length)
        counter = FlopCounter(pipe.model)

        def run_pipeline():
            return list(pipe.run(lfcli.read_documents([str(folder)])))

        rows = run_pipeline()  # also the pipeline's first warm-up run
        flops, windows = counter.flops, counter.windows
        counter.handle.remove()
        tokens = sum(r["n_tokens"] for r in rows)
        matmul, matmul_flops = common.matmul_case(device, torch.float32, common.matmul_size(args))
        print(f"{len(files)} documents of {chars} characters ({tokens} tokens, {windows} windows of at most "
              f"{pipe.max_length} tokens), model {model}, fp32; median of {repeats} rounds after {warmup} warm-up; "
              f"each round runs the CLI, the pipeline and a matmul once, in turn")
        print("command: lfcli " + " ".join(command[3:]).replace(str(folder), "DOCS").replace(str(output), "OUT.jsonl"))
        timed = common.bench_rounds({"cli": run_cli, "pipeline": run_pipeline, "matmul": matmul}, device,
                                    warmup=warmup, repeats=repeats)
        written = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
        assert [r["n_tokens"] for r in written] == [r["n_tokens"] for r in rows], "CLI and pipeline disagree"

    rate = matmul_flops / timed["matmul"]["median_s"] / 1e9
    roof = flops / (rate * 1e9)
    results = {name: timed[name] for name in ("cli", "pipeline")}
    table = [[name, f"{r['median_s']:.2f}", f"{len(files) / r['median_s']:.2f}", f"{tokens / r['median_s']:.0f}",
              f"{r['median_s'] / roof:.2f}"] for name, r in results.items()]
    table.append(["roofline", f"{roof:.2f}", f"{len(files) / roof:.2f}", f"{tokens / roof:.0f}", "1.00"])
    print()
    common.print_table(["run", "time s", "docs/s", "tokens/s", "x roofline"], table)
    print(f"encoder FLOPs of the run: {flops / 1e9:.0f} G; fp32 matmul {rate:.0f} GFLOP/s in the same rounds. "
          "cli - pipeline = start-up, imports and model load.")
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    out = {"benchmark": "cli_folder", "machine": info, "model": model, "docs": len(files), "chars": chars,
           "tokens": tokens, "windows": windows, "flops": flops, "matmul_gflops": rate, "roofline_s": roof,
           "command": ["lfcli", *command[3:]], "results": results, "targets": []}
    return common.finish(args, out, plot)


def plot(out, path):
    tps = {k: out["tokens"] / r["median_s"] for k, r in out["results"].items()}
    tps["roofline"] = out["tokens"] / out["roofline_s"]
    common.bar_plot(path, tps, f"lfcli embed, {out['docs']} long documents ({out['tokens']} tokens)", "tokens/s",
                    ["tab:blue", "tab:green", "tab:gray"])


if __name__ == "__main__":
    main()
