"""Benchmark: a million short documents through `lfcli embed`, in bounded memory.

Writes a Parquet file of --rows short documents (sentences of the LitBank novels in
../shared/data/litbank/original, cycled; generated sentences when the shared data is absent),
ids `s0000000`..., row groups of 10,000 rows, then runs

    lfcli embed ROWS.parquet -o OUT --force --quiet [--engine ray]

in a subprocess on the bundled model (fp32) and samples the memory of its process tree every
--interval s (0.5): the proportional set size (PSS, /proc/PID/smaps_rollup; VmRSS where that is
missing) summed over the process and its descendants, so that Ray's own processes, which share
the object store's pages, are counted once. Also sampled: the rows in the output so far (the
local engine's Parquet parts, or Ray's output files, by their footers).

Reported: rows in and out (equal, or the run failed), wall time, docs/s and tokens/s (document
tokens, from the output's n_tokens), the memory after the first 10,000 rows are out (a fifth
of the rows in a shorter run) and the peak over the whole run; the target: peak <= 1.5x the
memory at that point (a flat profile).

    python benchmarks/million_rows.py                   # 1,000,000 rows, local engine
    python benchmarks/million_rows.py --quick           # 5,000 rows: about a minute at one thread
    python benchmarks/million_rows.py --engine ray      # 200,000 rows (--quick: 4,000), a local Ray instance
    python benchmarks/million_rows.py --threads 1       # one torch thread (a busy 2-core machine)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROW_GROUP = 10_000
FIRST_ROWS = 10_000
FLAT_TARGET = 1.5
# --quick is about a minute at one thread (75-90 short documents a second here, plus the model
# load, and Ray's and the actor's start): 50,000 and 20,000 rows took 11 and 4.5 minutes.
ROWS = {"local": {"full": 1_000_000, "quick": 5_000, "tiny": 400},
        "ray": {"full": 200_000, "quick": 4_000, "tiny": 300}}


def first_rows(rows: int) -> int:
    """Rows out at which the memory is the reference for the peak: 10,000, or a fifth of a
    shorter run (so that the peak is still compared with a point early in the run)."""
    return min(FIRST_ROWS, max(1, rows // 5))


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--engine", choices=("local", "ray"), default="local")
    p.add_argument("--rows", type=int, default=None, help="documents (default: local 1,000,000, ray 200,000; quick 5,000 / 4,000)")
    p.add_argument("--model", default=None, help="model name or folder (default: the bundled model)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="lfcli's --batch-size (default: the CLI's, 8)")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between memory samples")
    p.add_argument("--data", type=Path, default=None, help="folder of .txt novels (default: the shared LitBank originals)")
    p.add_argument("--workdir", type=Path, default=None, help="where the Parquet input and the output go (default: a temporary folder)")
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------
# the input
# ---------------------------------------------------------------------------------------
def sentences(folder: Path) -> tuple[list[str], str]:
    """Sentences of 20-400 characters from the novels in `folder`, else generated ones."""
    found: list[str] = []
    for novel in sorted(folder.glob("*.txt")) if folder.is_dir() else []:
        text = " ".join(novel.read_text(encoding="utf-8", errors="replace").split())
        found += [s for s in re.split(r"(?<=[.!?])\s+", text) if 20 <= len(s) <= 400]
    if found:
        return found, f"{len(found):,} sentences of the LitBank novels in {folder}"
    import random

    rng = random.Random(0)
    words = "the court held that contract was void she said he would come back before winter patients " \
            "who received treatment recovered faster it was a bright cold day in april".split()
    made = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 30))).capitalize() + "." for _ in range(50_000)]
    return made, f"{folder} has no novels: 50,000 generated sentences"


def write_input(path: Path, rows: int, pool: list[str]) -> None:
    """`rows` documents, written a row group at a time (the benchmark's memory stays small too)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.string()), ("text", pa.string())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            n = min(ROW_GROUP, rows - start)
            writer.write_table(pa.table({"id": [f"s{start + i:07d}" for i in range(n)],
                                         "text": [pool[(start + i) % len(pool)] for i in range(n)]}, schema=schema))


# ---------------------------------------------------------------------------------------
# memory and progress of a running job
# ---------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return kids


def _memory_kb(pid: int) -> int:
    """PSS of one process (its share of shared pages), else VmRSS; 0 when it is gone."""
    for path, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith(key):
                        return int(line.split()[1])
        except OSError:
            continue
    return 0


def tree_memory_mb(pid: int) -> float:
    seen, stack, total = set(), [pid], 0
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _memory_kb(p)
        stack += _children(p)
    return total / 1024


class RowCounter:
    """Rows in the output so far, from the footers of its Parquet files (each read once)."""

    def __init__(self, output: Path, engine: str):
        self.folder = output if engine == "ray" else Path(str(output) + ".parts")
        self.counted: dict[str, int] = {}

    def __call__(self) -> int:
        import pyarrow.parquet as pq

        if self.folder.is_dir():
            for f in self.folder.glob("*.parquet"):
                if f.name not in self.counted:
                    try:
                        self.counted[f.name] = pq.ParquetFile(f).metadata.num_rows
                    except Exception:  # noqa: BLE001 - a file still being written: next sample
                        pass
        return sum(self.counted.values())


def run_sampled(command: list[str], env: dict, counter: RowCounter, interval: float) -> dict:
    """Run `command`, sampling its tree's memory and the output's rows; the samples and times."""
    samples: list[tuple[float, float, int]] = []  # (seconds, MB, rows out)
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    reader.start()
    while proc.poll() is None:
        samples.append((time.perf_counter() - started, tree_memory_mb(proc.pid), counter()))
        time.sleep(interval)
    seconds = time.perf_counter() - started
    reader.join(timeout=10)
    if proc.returncode != 0:
        raise SystemExit(f"lfcli embed failed ({proc.returncode}): {''.join(err).strip()[-800:]}")
    return {"seconds": seconds, "samples": samples, "stderr": "".join(err)}


def read_output(output: Path, engine: str) -> tuple[int, int, int]:
    """(rows, error rows, document tokens) of the finished output."""
    import pyarrow.dataset as pads
    import pyarrow.compute as pc

    table = pads.dataset(output, format="parquet").to_table(columns=["n_tokens", "error"])
    return table.num_rows, table.num_rows - table.column("error").null_count, int(pc.sum(table.column("n_tokens")).as_py() or 0)


# ---------------------------------------------------------------------------------------
def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    from lfcli.models.bundled import DEFAULT_MODEL

    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    rows = args.rows or ROWS[args.engine][mode]
    model = args.model or DEFAULT_MODEL
    info = common.machine_info(device)
    common.print_header(f"A million rows, bounded memory: lfcli embed --engine {args.engine}, {rows:,} short documents", info)
    pool, source = sentences(args.data or common.shared_data_dir() / "litbank" / "original")
    with tempfile.TemporaryDirectory(prefix="lfcli-bench-rows-", dir=args.workdir) as tmp:
        src = Path(tmp) / "rows.parquet"
        t0 = time.perf_counter()
        write_input(src, rows, pool)
        print(f"input: {rows:,} rows from {source}; {src.stat().st_size / 2**20:.1f} MB Parquet, "
              f"written in {time.perf_counter() - t0:.1f} s")
        output = Path(tmp) / ("out" if args.engine == "ray" else "out.parquet")
        command = [sys.executable, "-m", "lfcli", "embed", str(src), "-o", str(output), "--force", "--quiet",
                   "-m", model, "--device", str(device), "--dtype", "float32"]
        command += ["--batch-size", str(args.batch_size)] if args.batch_size else []
        if args.engine == "ray":
            command += ["--engine", "ray"] + (["--cpus-per-worker", str(args.threads)] if args.threads else [])
        env = {**os.environ, **({"OMP_NUM_THREADS": str(args.threads)} if args.threads else {})}
        print("command: lfcli " + " ".join(command[3:]).replace(str(src), "ROWS.parquet").replace(str(output), "OUT"))
        run = run_sampled(command, env, RowCounter(output, args.engine), args.interval)
        rows_out, errors, tokens = read_output(output, args.engine)
    return report(args, info, run, rows, rows_out, errors, tokens, model)


def report(args, info, run, rows, rows_out, errors, tokens, model) -> dict:
    samples, seconds = run["samples"], run["seconds"]
    ref = first_rows(rows)
    first = next(((t, mb) for t, mb, n in samples if n >= ref), None)
    peak = max((mb for _, mb, _ in samples), default=float("nan"))
    at_first = first[1] if first else float("nan")
    ratio = peak / at_first if first else float("nan")
    steady = (rows - ref) / (seconds - first[0]) if first and seconds > first[0] else float("nan")
    print()
    common.print_table(
        ["engine", "rows in", "rows out", "errors", "time s", "docs/s", f"docs/s after {ref:,}", "tokens/s",
         f"MB at {ref:,} rows", "peak MB", f"peak / {ref:,}"],
        [[args.engine, f"{rows:,}", f"{rows_out:,}", str(errors), f"{seconds:.0f}", f"{rows / seconds:.1f}",
          f"{steady:.1f}", f"{tokens / seconds:,.0f}", f"{at_first:.0f}", f"{peak:.0f}", f"{ratio:.2f}"]],
    )
    print(f"{len(samples)} memory samples (PSS of the process tree) every {args.interval} s; times include "
          "start-up and the model load" + (" and Ray's start" if args.engine == "ray" else ""))
    targets = [
        {"name": "rows out == rows in", "value": rows_out, "target": rows, "pass": rows_out == rows},
        {"name": f"peak memory <= {FLAT_TARGET}x the memory after {ref:,} rows",
         "value": f"{ratio:.2f}x", "target": f"<= {FLAT_TARGET}x", "pass": bool(first) and ratio <= FLAT_TARGET},
    ]
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    out = {"benchmark": "million_rows", "machine": info, "engine": args.engine, "model": model, "rows": rows,
           "rows_out": rows_out, "errors": errors, "tokens": tokens, "seconds": seconds,
           "docs_per_s": rows / seconds, "docs_per_s_after_first": steady, "tokens_per_s": tokens / seconds,
           "first_rows": ref, "mb_at_first_rows": at_first, "peak_mb": peak, "peak_ratio": ratio,
           "samples": [{"s": t, "mb": mb, "rows_out": n} for t, mb, n in samples], "targets": targets}
    return common.finish(args, out, plot)


def plot(out, path):
    plt = common.get_pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot([s["s"] for s in out["samples"]], [s["mb"] for s in out["samples"]], color="tab:blue")
    ax.axhline(out["mb_at_first_rows"] * FLAT_TARGET, color="tab:gray", linestyle="--", label=f"{FLAT_TARGET}x at {out['first_rows']:,} rows")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB (PSS, process tree)")
    ax.set_title(f"lfcli embed --engine {out['engine']}: {out['rows']:,} rows")
    ax.legend()
    common.save_figure(plt, fig, path)


if __name__ == "__main__":
    main()
