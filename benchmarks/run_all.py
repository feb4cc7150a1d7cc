"""Run every lfcli benchmark in one go and collect the results.

    python benchmarks/run_all.py                 # full runs (~13 min on 2 CPU cores, + ~25 min for train_speed)
    python benchmarks/run_all.py --quick         # small shapes, fewer repeats, and the quality evaluations' --quick
    python benchmarks/run_all.py --out DIR       # results.json, report.txt, per-benchmark JSON and PNG plots

Each benchmark runs in its own process (a crash or the OOM killer stops only that one).
Writes into --out (default benchmarks/out/, gitignored): <name>.json and <name>.png for each
benchmark, results.json (everything, plus the list of targets) and report.txt (the printed
output). Also prints the Triton work-efficiency table when
`lfcli.kernels.triton_plan.work_efficiency` is importable.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402

BENCHMARKS = ("attention", "encoder", "short_docs", "scaling", "cli_folder", "train_speed", "dtype")
# Quality evaluations: their full runs take from minutes to hours (cv_classify trains k
# models), so they run with --quick, or in full when named in --only.
EVALUATIONS = ("eval_qa", "eval_coref", "eval_zeroshot", "eval_retrieval", "cv_classify", "book_qa_retrieval",
               "book_qa_speed")
# GPU-only: run where torch sees CUDA, else skipped with the reason said (gpu_check.py measures
# the lent GPU machine; here it would only stop on "no CUDA device").
GPU_ONLY = ("gpu_check",)
TRITON_WINDOWS = (128, 256, 512, 1024)
TRITON_N = 16384
TRITON_BLOCKS = ((64, 32), (64, 64), (128, 64), (128, 128))


class Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for st in self.streams:
            st.write(s)
            st.flush()
        return len(s)

    def flush(self):
        for st in self.streams:
            st.flush()


def triton_work_efficiency() -> dict | None:
    """Table of lfcli.kernels.triton_plan.work_efficiency(n, window, block_m, block_n) at
    n = 16384 for windows 128..1024, or a notice when it cannot be imported."""
    print()
    print("Triton banded kernel: work efficiency (useful band FLOPs / computed tile FLOPs)")
    try:
        from lfcli.kernels.triton_plan import work_efficiency
    except Exception as exc:  # ImportError without triton, or the function not there yet
        print(f"notice: lfcli.kernels.triton_plan.work_efficiency is not importable here ({common.error_text(exc)}); "
              "no table")
        return None
    table = {}
    rows = []
    for window in TRITON_WINDOWS:
        row = [window]
        for bm, bn in TRITON_BLOCKS:
            try:
                value = work_efficiency(TRITON_N, window, bm, bn)
            except Exception as exc:
                value = f"error: {common.error_text(exc, 60)}"
            table[f"w{window}_m{bm}_n{bn}"] = value
            if hasattr(value, "_asdict"):  # a NamedTuple such as WorkEfficiency(blocks, scores)
                value = value._asdict()
                table[f"w{window}_m{bm}_n{bn}"] = value
            if isinstance(value, float):
                row.append(f"{value:.3f}")
            elif isinstance(value, dict):
                row.append(" ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()))
            else:
                row.append(str(value))
        rows.append(row)
    print(f"n = {TRITON_N}, one head; each cell: the fields work_efficiency returns (1.0 = no wasted work)")
    common.print_table(["window"] + [f"block {bm}x{bn}" for bm, bn in TRITON_BLOCKS], rows)
    return {"n": TRITON_N, "values": table}


def gpu_here() -> bool:
    import torch  # lazy: as common, only when a GPU-only benchmark is due

    return torch.cuda.is_available()


def run_one(name: str, flags: list[str], json_path: Path) -> dict:
    """Run benchmarks/<name>.py in its own process (so that a crash or the OOM killer stops
    only that benchmark, and no state such as compiled graphs leaks between them), echoing
    its output; returns the JSON it wrote, or {"error": ...}."""
    json_path.unlink(missing_ok=True)
    cmd = [sys.executable, "-u", str(HERE / f"{name}.py"), *flags]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
    code = proc.wait()
    if code != 0:
        reason = f"killed by signal {-code} (out of memory?)" if code < 0 else f"exit code {code}"
        print(f"{name} failed: {reason}")
        return {"error": reason}
    try:
        return json.loads(json_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return {"error": f"no results written ({exc})"}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="forwarded to every benchmark")
    p.add_argument("--tiny", action="store_true", help="forwarded: tiny shapes, only checks that everything runs")
    p.add_argument("--out", default=str(HERE / "out"), help="output folder (default benchmarks/out/)")
    p.add_argument("--device", default="auto")
    p.add_argument("--only", default=None, help=f"comma-separated subset of {','.join(BENCHMARKS + EVALUATIONS)}")
    p.add_argument("--repeats", type=int, default=None, help="forwarded to every benchmark")
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = (args.only.split(",") if args.only
             else list(BENCHMARKS) + (list(EVALUATIONS) if args.quick else []) + list(GPU_ONLY))
    unknown = set(names) - set(BENCHMARKS + EVALUATIONS + GPU_ONLY)
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    report = open(out / "report.txt", "w")
    results: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_average_start": common.load_average(),
                     "mode": "tiny" if args.tiny else "quick" if args.quick else "full", "benchmarks": {}}
    t_all = time.perf_counter()
    with contextlib.redirect_stdout(Tee(sys.stdout, report)):
        print(f"lfcli benchmarks ({results['mode']}), load average {results['load_average_start']}, output in {out}")
        for name in names:
            if name in GPU_ONLY and not gpu_here():
                print(f"[{name}: skipped: no CUDA GPU on this machine; it runs on a GPU machine "
                      f"(python benchmarks/{name}.py --prepare here, then the check there)]", flush=True)
                results["benchmarks"][name] = {"skipped": "no CUDA GPU on this machine"}
                continue
            flags = ["--json", str(out / f"{name}.json")] + (["--quick"] if args.quick else [])
            if name in BENCHMARKS:  # the evaluations take only --quick and --json
                flags += ["--device", args.device]
                flags += ["--tiny"] if args.tiny else []
                flags += ["--repeats", str(args.repeats)] if args.repeats else []
                flags += [] if args.no_plots else ["--plot", str(out / f"{name}.png")]
            t0 = time.perf_counter()
            results["benchmarks"][name] = run_one(name, flags, out / f"{name}.json")
            print(f"[{name}: {time.perf_counter() - t0:.0f}s]", flush=True)
        results["triton_work_efficiency"] = triton_work_efficiency()

        targets = [t for r in results["benchmarks"].values() for t in r.get("targets", [])]
        print()
        print("Summary of targets")
        print("------------------")
        common.print_targets(targets)
        failed = [n for n, r in results["benchmarks"].items() if "error" in r]
        if failed:
            print(f"benchmarks that failed: {', '.join(failed)}")
        results["targets"] = targets
        results["load_average_end"] = common.load_average()
        results["total_s"] = time.perf_counter() - t_all
        print(f"total {results['total_s'] / 60:.1f} min, load average at end {results['load_average_end']}")
        common.write_json(out / "results.json", results)
        print(f"printed output saved to {out / 'report.txt'}")
    report.close()
    return results


if __name__ == "__main__":
    main()
