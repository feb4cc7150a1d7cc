"""Quality: k-fold cross-validation of `lfcli finetune classify` with its default settings.

The labelled documents (JSONL/Parquet/folder, or the SemEval-2019 hyperpartisan articles XML)
are split into k stratified folds (seeded). For each fold the other k-1 folds are written to a
JSONL file and trained on exactly as a user would (`lfcli finetune classify train.jsonl -o
DIR`, defaults only: the command holds out its own validation split from that file for early
stopping), then the held-out fold is labelled with `lfcli classify fold.jsonl -m DIR` and
scored with `lfcli evaluate classify`. The test fold is never seen by training or model
choice. Reports accuracy and macro-F1 per fold and their mean, and the training time.

    python benchmarks/cv_classify.py ../shared/data/hyperpartisan/articles-training-byarticle-20181122.xml --folds 5
    python benchmarks/cv_classify.py DATA --folds 3 --work /tmp/cv --resume     # continue after a stop
    python benchmarks/cv_classify.py --quick      # 2 folds of ~24 articles, 6 updates: checks the script
                                                  # runs end to end (under a minute); its scores mean nothing

DATA defaults to the shared Hyperpartisan articles (../shared/data/hyperpartisan).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path


def folds_of(docs, k: int, seed: int) -> list[list]:
    """k stratified folds: each label's documents shuffled (seeded) and dealt round-robin."""
    rng = random.Random(seed)
    folds: list[list] = [[] for _ in range(k)]
    start = 0
    for label in sorted({d.label for d in docs}):
        group = sorted((d for d in docs if d.label == label), key=lambda d: d.id)
        rng.shuffle(group)
        for i, d in enumerate(group):
            folds[(start + i) % k].append(d)
        start += len(group)
    return folds


def write_jsonl(path: Path, docs) -> None:
    path.write_text("".join(json.dumps({"id": d.id, "text": d.text, "label": d.label}) + "\n" for d in docs), encoding="utf-8")


def lfcli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "lfcli", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"lfcli {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="*", help="labelled documents (default: the shared Hyperpartisan articles XML)")
    parser.add_argument("--quick", action="store_true", help="2 folds of a ~24-document stratified subset, 6 updates at 512 tokens")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default=None, help="folder for the folds' data and models (default benchmarks/out/cv_classify[_quick])")
    parser.add_argument("--resume", action="store_true", help="reuse folds already trained and scored in --work")
    parser.add_argument("--only", type=int, nargs="*", help="run these folds only (0-based)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import common

    from lfcli.pipelines.tasks.classify.train import read_labelled

    if not args.data:
        xml = common.shared_data_dir() / "hyperpartisan" / "articles-training-byarticle-20181122.xml"
        if not xml.is_file():
            raise SystemExit(f"{xml}: not found; pass DATA")
        args.data = [str(xml)]
    docs, problems = read_labelled(args.data)
    train_options: list[str] = []
    if args.quick:
        args.folds = 2
        docs = folds_of(docs, max(2, len(docs) // 24), args.seed)[0]  # a stratified ~24
        train_options = ["--max-steps", "6", "--max-length", "512", "--batch-tokens", "1024"]
        print(f"--quick: {len(docs)} documents, 2 folds, 6 updates: a check that the script runs, not a score")
    work = Path(args.work or ("benchmarks/out/cv_classify_quick" if args.quick else "benchmarks/out/cv_classify"))
    work.mkdir(parents=True, exist_ok=True)
    folds = folds_of(docs, args.folds, args.seed)
    results = []
    for k in args.only if args.only is not None else range(args.folds):
        fold_dir = work / f"fold{k}"
        score_file = fold_dir / "scores.json"
        if args.resume and score_file.is_file():
            results.append(json.loads(score_file.read_text()))
            continue
        fold_dir.mkdir(exist_ok=True)
        train = [d for j, f in enumerate(folds) if j != k for d in f]
        write_jsonl(fold_dir / "train.jsonl", train)
        write_jsonl(fold_dir / "test.jsonl", folds[k])
        t0 = time.perf_counter()
        lfcli("finetune", "classify", str(fold_dir / "train.jsonl"), "-o", str(fold_dir / "model"), *train_options,
              *(["--resume"] if args.resume and (fold_dir / "model").exists() else ["--force"]), "--quiet")
        train_s = time.perf_counter() - t0
        lfcli("classify", str(fold_dir / "test.jsonl"), "-m", str(fold_dir / "model"), "-o",
              str(fold_dir / "predictions.jsonl"), "--force", "--quiet")
        scores = json.loads(lfcli("evaluate", "classify", str(fold_dir / "predictions.jsonl"), str(fold_dir / "test.jsonl"), "--quiet"))
        result = {"fold": k, "train_documents": len(train), "test_documents": len(folds[k]),
                  "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"], "train_seconds": train_s}
        score_file.write_text(json.dumps(result) + "\n")
        results.append(result)
        print(f"fold {k}: accuracy {result['accuracy']:.3f}  macro-F1 {result['macro_f1']:.3f}  "
              f"({len(folds[k])} test documents, trained in {train_s / 60:.1f} min)", flush=True)
    mean = {m: sum(r[m] for r in results) / len(results) for m in ("accuracy", "macro_f1")}
    print(f"mean over {len(results)} folds: accuracy {mean['accuracy']:.3f}  macro-F1 {mean['macro_f1']:.3f}"
          f" ({len(docs)} documents, {len(problems)} unusable)")
    out = {"folds": results, "mean": mean, "documents": len(docs), "k": args.folds, "seed": args.seed}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
