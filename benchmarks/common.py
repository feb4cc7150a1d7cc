"""Shared helpers for the lfcli benchmark scripts (timing, roofline, memory, tables, output).

Not a benchmark itself. Every script in this folder imports it as `common` (the scripts are
plain files, run as `python benchmarks/<name>.py`, so this folder is on sys.path).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


# ---------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------
def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="small shapes, fewer repeats (well under a minute)")
    p.add_argument("--tiny", action="store_true", help="tiny shapes: only checks that the script works (tests)")
    p.add_argument("--device", default="auto", help="auto (cuda when present, else cpu), cpu or cuda[:i]")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per case (median is reported)")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs before timing")
    p.add_argument("--json", metavar="FILE", default=None, help="write the results as JSON")
    p.add_argument("--plot", metavar="FILE", default=None, help="write a PNG plot (needs matplotlib)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    return p


def setup(args) -> torch.device:
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return resolve_device(args.device)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {name}: CUDA is not available here")
    return dev


def repeats_for(args, quick: int, full: int, tiny: int = 1) -> tuple[int, int]:
    """(warmup, repeats) from the flags, with per-mode defaults."""
    default = tiny if args.tiny else quick if args.quick else full
    warmup = args.warmup if args.warmup is not None else 1
    return warmup, args.repeats if args.repeats is not None else default


def shared_data_dir() -> Path:
    """The shared data folder: $LFCLI_SHARED[/data], else ../shared/data next to the repo."""
    env = os.environ.get("LFCLI_SHARED")
    if env:
        base = Path(env).expanduser()
        return base / "data" if (base / "data").is_dir() else base
    return REPO.parent / "shared" / "data"


# ---------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(fn: Callable[[], Any], device: torch.device, warmup: int = 1, repeats: int = 5,
          budget_s: float | None = None, min_repeats: int = 3) -> dict:
    """Median wall time of `fn` over `repeats` runs after `warmup` runs (inference mode).
    The one-callable case of `bench_rounds` (see there for budget_s)."""
    return bench_rounds({"fn": fn}, device, warmup, repeats, budget_s, min_repeats)["fn"]


def bench_rounds(fns: dict[str, Callable[[], Any]], device: torch.device, warmup: int = 1, repeats: int = 5,
                 budget_s: float | None = None, min_repeats: int = 3, grad: bool = False) -> dict[str, dict]:
    """Time several callables side by side, in rounds: after `warmup` calls of each, every
    round calls each of them once, in turn. The speed of a shared machine drifts by tens of
    percent over minutes; callables timed in the same rounds see the same drift, so the
    ratios of their medians hold steady where back-to-back series of runs would not.

    budget_s: when the warm-up shows that `repeats` rounds would take longer than budget_s,
    fewer are made (never fewer than min_repeats), so that slow anchors (dense attention at
    16k) do not dominate the run time. The number of runs made is in each result.

    grad: run with autograd on (training steps: forward + backward) instead of under
    torch.inference_mode().
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    with contextlib.nullcontext() if grad else torch.inference_mode():
        round_s = 0.0
        for fn in fns.values():
            last = 0.0
            for _ in range(max(warmup, 0)):
                sync(device)
                t = time.perf_counter()
                fn()
                sync(device)
                last = time.perf_counter() - t
            round_s += last
        if budget_s is not None and round_s * repeats > budget_s:
            repeats = max(min(min_repeats, repeats), int(budget_s // max(round_s, 1e-9)))
        for _ in range(repeats):
            for name, fn in fns.items():
                sync(device)
                t = time.perf_counter()
                fn()
                sync(device)
                times[name].append(time.perf_counter() - t)
    return {
        name: {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts), "repeats": len(ts), "times_s": ts}
        for name, ts in times.items()
    }


def matmul_case(device: torch.device, dtype: torch.dtype = torch.float32, size: int = 4096,
                shape: tuple[int, int, int] | None = None) -> tuple[Callable[[], Any], float]:
    """A large matmul and its FLOPs: square (size^3) by default, or (m, k) @ (k, n) for
    shape=(m, k, n). Timed alongside a case, its rate is the roofline's compute ceiling under
    the same conditions."""
    m, k, n = shape or (size, size, size)
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    return (lambda: a @ b), 2.0 * m * k * n


_MATMUL_CACHE: dict[tuple, float] = {}


def matmul_gflops(device: torch.device, dtype: torch.dtype = torch.float32, size: int = 4096, repeats: int = 5) -> float:
    """GFLOP/s of a large square matmul (2*size^3 FLOPs), measured on its own (once per process)."""
    key = (str(device), dtype, size)
    if key not in _MATMUL_CACHE:
        fn, flops = matmul_case(device, dtype, size)
        _MATMUL_CACHE[key] = flops / bench(fn, device, warmup=1, repeats=repeats)["median_s"] / 1e9
    return _MATMUL_CACHE[key]


# ---------------------------------------------------------------------------------------
# FLOP formulas (also printed by the scripts; see README.md)
# ---------------------------------------------------------------------------------------
def band_keys(n: int, window: int) -> int:
    """Keys per query in Longformer's band: 2*w1 + 1 with w1 = window // 2 (not clipped)."""
    return 2 * (window // 2) + 1


def attention_flops(n: int, hidden: int, heads: int, window: int) -> float:
    """q, k, v projections (3 * 2*n*h*h) + band (per head 4*n*(2*w1+1)*d: scores and P@V)."""
    d = hidden // heads
    return 3 * 2 * n * hidden * hidden + heads * 4 * n * band_keys(n, window) * d


def encoder_layer_flops(n: int, hidden: int, heads: int, window: int, intermediate: int) -> float:
    """One encoder layer: q,k,v projections + band (attention_flops) + output dense (2*n*h*h)
    + FFN (2 * 2*n*h*i)."""
    return attention_flops(n, hidden, heads, window) + 2 * n * hidden * hidden + 2 * 2 * n * hidden * intermediate


ATTENTION_FLOPS_TEXT = "FLOPs = 3*2*n*h*h (q,k,v projections) + H*4*n*(2*w1+1)*d (band: QK^T and PV), w1 = window/2"
ENCODER_FLOPS_TEXT = (
    "FLOPs = L * [3*2*n*h*h (q,k,v) + H*4*n*(2*w1+1)*d (band) + 2*n*h*h (output dense) + 2*2*n*h*i (FFN)]"
)


# ---------------------------------------------------------------------------------------
# memory: peak RSS growth in a fresh process
# ---------------------------------------------------------------------------------------
def _maxrss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024  # Linux reports KiB


def _release_freed_memory() -> None:
    gc.collect()
    try:  # give freed heap pages back to the OS so that they do not hide the next peak
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux >= 4.0); False if impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakMemory:
    """Peak memory growth of what runs between `start()` and `stop()`.

    CPU: peak RSS (resource.getrusage ru_maxrss) minus the RSS at `start()`; the peak mark is
    reset at `start()` through /proc/self/clear_refs so that earlier peaks (imports, warm-up,
    compilation) are not counted. Without that file the baseline is the peak so far and an
    earlier larger peak would hide this one (reported as `reset=False`). On Linux the kernel's
    VmHWM (the same peak, read from /proc/self/status) is recorded too, as a cross-check.
    CUDA: torch.cuda.max_memory_allocated growth.
    """

    def __init__(self, device: torch.device):
        self.device = device

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
            self.reset = True
            return
        _release_freed_memory()
        self.reset = _reset_peak_rss()
        self.base = _maxrss_bytes()
        self.base_rss = _proc_status_bytes("VmRSS")

    def stop(self) -> dict:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            peak = torch.cuda.max_memory_allocated(self.device) - self.base
            return {"peak_mb": peak / 2**20, "method": "cuda.max_memory_allocated", "reset": True}
        peak = _maxrss_bytes() - self.base
        out = {"peak_mb": peak / 2**20, "method": "ru_maxrss growth", "reset": self.reset}
        rss = _proc_status_bytes("VmRSS")
        if rss is not None and self.base_rss is not None:
            out["resident_mb"] = (rss - self.base_rss) / 2**20  # still held at stop()
        hwm = _proc_status_bytes("VmHWM")
        if hwm is not None and self.base_rss is not None:
            out["vmhwm_mb"] = (hwm - self.base_rss) / 2**20
        return out


def _proc_status_bytes(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def run_memory_subprocess(script: Path, case_args: Sequence[str], timeout: float = 1800) -> dict:
    """Run `script --_memory-case ...` in a fresh interpreter; it prints one JSON line
    prefixed with MEMORY_JSON. Returns that dict, or {"error": ...}.

    Started through `sh -c '"$@"; exit $?'` so that sh forks it: on exec, Linux folds the
    peak RSS of the process image being replaced into the process's ru_maxrss, so a worker
    exec'd straight from this (large) process would report at least our RSS as its peak;
    sh's forked child starts from sh's few MB instead."""
    cmd = [sys.executable, str(script), "--_memory-case", *case_args]
    if os.name == "posix" and Path("/bin/sh").exists():
        cmd = ["/bin/sh", "-c", '"$@"; exit $?', "sh", *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    for line in proc.stdout.splitlines():
        if line.startswith("MEMORY_JSON "):
            return json.loads(line[len("MEMORY_JSON "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
    if proc.returncode < 0:
        tail = [f"killed by signal {-proc.returncode} (out of memory?)"]
    return {"error": tail[0][:200]}


def emit_memory_result(result: dict) -> None:
    print("MEMORY_JSON " + json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------
# machine, load, output
# ---------------------------------------------------------------------------------------
def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
        return f"{one:.2f} {five:.2f} {fifteen:.2f}"
    except OSError:
        return "n/a"


def machine_info(device: torch.device) -> dict:
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": str(device),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_start": load_average(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    else:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    return info


def print_header(title: str, info: dict) -> None:
    print()
    print("=" * len(title))
    print(title)
    print("=" * len(title))
    cpu = info.get("gpu") or info.get("cpu") or ""
    print(
        f"device {info['device']} {cpu} | {info['torch_threads']} torch threads, {info['cpu_count']} CPUs | "
        f"torch {info['torch']}" + (f", transformers {info['transformers']}" if "transformers" in info else "")
    )
    print(f"load average at start: {info['load_average_start']}")


def fmt(x: Any, spec: str = ".3g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        return format(x, spec)
    return str(x)


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    rows = [[fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def print_targets(targets: list[dict]) -> None:
    print("targets:")
    for t in targets:
        print(f"  [{verdict(t['pass'])}] {t['name']}: {t['value']} (target {t['target']})")


def write_json(path: str | os.PathLike | None, results: dict) -> None:
    if not path:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"results written to {path}")


def finish(args, out: dict, plot: Callable[[dict, str], None]) -> dict:
    """Every script's last step: the JSON file (--json) and the plot (--plot), if asked."""
    write_json(args.json, out)
    if args.plot:
        plot(out, args.plot)
    return out


def start_evaluation(args, title: str) -> tuple[float, dict]:
    """The evaluation scripts' first step: --threads, the clock, the machine and the header."""
    if getattr(args, "threads", None):
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    info = machine_info(torch.device("cpu"))
    print_header(title, info)
    return started, info


def finish_evaluation(args, results: dict, started: float) -> dict:
    """The evaluation scripts' last step: total time and load average, then --json."""
    results["seconds_total"] = time.perf_counter() - started
    print(f"\ntotal {results['seconds_total']:.0f} s; load average now {load_average()}")
    write_json(args.json, results)
    return results


def get_pyplot():
    """matplotlib.pyplot with the Agg backend, or None (after a notice) when not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        print("notice: matplotlib is not installed, no plot written (pip install matplotlib)")
        return None


def save_figure(plt, fig, path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot written to {path}")


def bar_plot(path, bars: dict[str, float], title: str, ylabel: str, colors: Sequence[str]) -> None:
    """One bar per name (a throughput per implementation), saved to `path`."""
    plt = get_pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(list(bars), list(bars.values()), color=list(colors)[: len(bars)])
    ax.set(title=title, ylabel=ylabel)
    save_figure(plt, fig, path)


def error_text(exc: BaseException, limit: int = 120) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fmt_mb(mb: float) -> str:
    return f"{mb:.0f}" if abs(mb) >= 100 else f"{mb:.3g}"


def quiet_transformers() -> None:
    """No progress bars or info logs from transformers / huggingface_hub in the tables."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import transformers

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
    except (ImportError, AttributeError):
        pass


def matmul_size(args) -> int:
    """Side of the square matmul that measures the roofline rate (small for --tiny)."""
    return 1024 if getattr(args, "tiny", False) else 4096


def size_axis(ax, ns) -> None:
    """Log2 x axis with one labelled tick per sequence length (1k, 2k, ...)."""
    ns = sorted(set(ns))
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n) for n in ns])
    ax.minorticks_off()
