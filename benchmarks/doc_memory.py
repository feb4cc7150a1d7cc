"""Benchmark: does a task's memory stay flat as one document grows? Peak RSS of a whole
`lfcli TASK` process on one text of each size, the smallest the reference.

Texts: LitBank's novels (../shared/data/litbank/original) joined end to end and cut to each
size at a paragraph break, so every text is real prose. Each run is a separate process;
its peak resident set comes from the kernel (os.wait4's ru_maxrss), so it counts torch,
the model and everything else the command holds.

    python benchmarks/doc_memory.py                        # embed, 500 KB and 5 MB
    python benchmarks/doc_memory.py --task corefs --sizes 100000,1000000
    python benchmarks/doc_memory.py --lfcli /other/venv/bin/lfcli   # another install

The bar (#33): the 5 MB text within 1.2x the 500 KB one's peak.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

LITBANK = common.shared_data_dir() / "litbank" / "original"


def novels_text(size: int) -> str:
    """The first `size` characters of LitBank's novels joined, ending at a paragraph break."""
    parts, total = [], 0
    for path in sorted(LITBANK.glob("*.txt"), key=lambda p: p.name):
        text = path.read_text(encoding="utf-8")
        parts.append(text)
        total += len(text)
        if total >= size + 10_000:
            break
    joined = "\n\n".join(parts)
    if len(joined) < size:
        raise SystemExit(f"LitBank holds only {len(joined):,} characters; asked for {size:,}")
    cut = joined.rfind("\n\n", 0, size)
    return joined[: cut if cut > size // 2 else size]


def peak_rss(command: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of `command` run as its own process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024, seconds  # Linux: KB


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="embed")
    p.add_argument("--sizes", default=None, help="characters, comma-separated (the first is the reference; "
                   "default 500000,5000000)")
    p.add_argument("--quick", action="store_true", help="--sizes 50000,500000")
    p.add_argument("--lfcli", default=None, help="the lfcli command to run (default: this Python's)")
    p.add_argument("--extra", default="", help="more options for the task, e.g. '--labels a,b' for classify")
    args = p.parse_args(argv)
    args.sizes = args.sizes or ("50000,500000" if args.quick else "500000,5000000")
    if not LITBANK.is_dir():
        raise SystemExit(f"needs LitBank's texts at {LITBANK} (../shared/data beside the repository)")
    lfcli = [args.lfcli] if args.lfcli else [sys.executable, "-m", "lfcli"]
    sizes = [int(s) for s in args.sizes.split(",")]
    info = common.machine_info(common.resolve_device("cpu"))
    print(f"# {info.get('cpu', '?')}, {info['cpu_count']} CPUs, {info['time']}: lfcli {args.task} on one text of each "
          "size; peak RSS of the whole process")
    print("| characters | seconds | peak RSS | vs the first |")
    print("| ---: | ---: | ---: | ---: |")
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            text = Path(tmp) / f"book-{size}.txt"
            text.write_text(novels_text(size), encoding="utf-8")
            out = Path(tmp) / f"out-{size}.jsonl"
            rss, seconds = peak_rss([*lfcli, args.task, str(text), "-o", str(out), "--quiet", *args.extra.split()])
            first = first or rss
            print(f"| {size:,} | {seconds:.1f} | {rss:,.0f} MB | {rss / first:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
