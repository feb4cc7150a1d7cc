"""Check that a change of the code's shape changes nothing a user sees: every task's output on
the README's examples, written by two installs of lfcli, compared file by file.

    python benchmarks/same_outputs.py run DIR [--lfcli PATH]    # write every output into DIR
    python benchmarks/same_outputs.py compare OLD_DIR NEW_DIR   # floats within --tol (1e-6)

`run` calls the `lfcli` command (or --lfcli PATH, e.g. another venv's) on:
  embed, classify (zero-shot), qa (top 3) and corefs over examples/, as JSONL;
  pretrain-continue (the mlm task) and finetune classify for two updates each, from the
  bundled base on examples/docs: their metrics.jsonl losses and their saved weights.
`compare` exits 1 and names the first difference of each file when any differs.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
LABELS = "law,medicine,news,fiction"
# Two updates of each trainer: enough to run every part of the loop (loss, backward, step,
# evaluation, save) in about half a minute each on 2 cores.
TRAIN = ["--max-steps", "2", "--max-length", "256", "--seed", "0"]


def _jobs(out: Path) -> list[list[str]]:
    docs = str(EX / "docs")
    return [
        ["embed", docs, "-o", str(out / "embed.jsonl")],
        ["classify", docs, "--labels", LABELS, "-o", str(out / "classify.jsonl")],
        ["qa", str(EX / "questions.jsonl"), "-k", "3", "-o", str(out / "qa.jsonl")],
        ["corefs", docs, "-o", str(out / "corefs.jsonl")],
        ["pretrain-continue", docs, "-o", str(out / "mlm"), "--grad-accum", "1", "--eval-fraction", "0.25", "--save-every", "2", *TRAIN],
        ["finetune", "classify", str(out / "labelled.jsonl"), "-o", str(out / "classify-run"), "--validation-split", "0.5", *TRAIN],
    ]


def run(out: Path, lfcli: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    labels = {"discharge_summary": "medicine", "lease_agreement_excerpt": "law", "news_harbour_bridge": "news",
              "the_lamplighter": "fiction"}
    with open(out / "labelled.jsonl", "w", encoding="utf-8") as f:
        for path in sorted((EX / "docs").glob("*.txt")):  # each document's two halves: two per label
            text = path.read_text(encoding="utf-8")
            for k, half in enumerate((text[: len(text) // 2], text[len(text) // 2:])):
                f.write(json.dumps({"id": f"{path.stem}-{k}", "text": half, "label": labels[path.stem]}) + "\n")
    for job in _jobs(out):
        print("lfcli", *job, file=sys.stderr, flush=True)
        subprocess.run([lfcli, *job, "--force", "--quiet"], check=True)


def _same(a, b, tol: float, where: str) -> str | None:
    """Where a and b first differ (None: the same, floats within tol)."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and (
                a == b or abs(a - b) <= tol or (math.isnan(a) and math.isnan(b))):
            return None
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a)} != {sorted(b)}"
        return next((d for k in a if (d := _same(a[k], b[k], tol, f"{where}.{k}"))), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items != {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := _same(x, y, tol, f"{where}[{i}]"))), None)
    return None if a == b else f"{where}: {a!r} != {b!r}"


def _rows(path: Path) -> list:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:  # a run's clock is not its output
        if isinstance(row, dict):
            for key in ("tokens_per_s", "eta_s", "elapsed_s", "train_tokens_per_s"):
                row.pop(key, None)
    return rows


def _gap(a, b) -> float:
    """The largest difference of two tensors (inf when their shapes differ)."""
    if a.shape != b.shape:
        return math.inf
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def compare(old: Path, new: Path, tol: float) -> int:
    from safetensors.torch import load_file

    bad = 0
    files = sorted(p.relative_to(old) for p in old.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".safetensors")
                   and "train_state" not in p.parts)
    for rel in files:
        other = new / rel
        if not other.is_file():
            print(f"{rel}: missing from {new}")
            bad += 1
            continue
        if rel.suffix == ".jsonl":
            diff = _same(_rows(old / rel), _rows(other), tol, str(rel))
        else:
            a, b = load_file(old / rel), load_file(other)
            diff = f"{rel}: tensors {sorted(a)} != {sorted(b)}" if a.keys() != b.keys() else next(
                (f"{rel}:{k}: {_gap(a[k], b[k]):.3g} apart" for k in a if _gap(a[k], b[k]) > tol), None)
        print(diff or f"{rel}: same")
        bad += diff is not None
    print(f"{len(files) - bad} of {len(files)} files the same (floats within {tol:g})")
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="without a subcommand: `run` into a temporary folder, then `compare` it with itself")
    sub = parser.add_subparsers(dest="cmd")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--lfcli", default="lfcli")
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--tol", type=float, default=1e-6)
    args = parser.parse_args(argv)
    if args.cmd is None:
        if not args.quick:
            parser.error("a subcommand: run DIR or compare OLD NEW")
        with tempfile.TemporaryDirectory() as tmp:  # a smoke test of both halves (run_all.py --quick)
            run(Path(tmp), "lfcli")
            return compare(Path(tmp), Path(tmp), 1e-6)
    if args.cmd == "run":
        run(args.dir, args.lfcli)
        return 0
    return compare(args.old, args.new, args.tol)


if __name__ == "__main__":
    sys.exit(main())
