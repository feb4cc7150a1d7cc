"""Quality: zero-shot topic classification, the small tier against the base tier.

A labelled sample from ../shared/data/squad: SQuAD's paragraphs come from 48 Wikipedia
articles, and an article's title names its topic ("Amazon rainforest", "Super Bowl 50",
"Immune system"). Each paragraph is classified, zero-shot, among all 48 titles (underscores
read as spaces; nothing chosen or tuned on the results), exactly as
`lfcli classify paragraphs.jsonl --labels "TITLE,TITLE,..." -m TIER` does; a paragraph's label
is right when it is its own article's title. Chance is 1/48 = 2.1%.

    python benchmarks/eval_topics.py                 # 10 paragraphs an article (seeded), both tiers
    python benchmarks/eval_topics.py --per-article 3 --tiers small
    python benchmarks/eval_topics.py --quick         # 2 an article
    python benchmarks/eval_topics.py --label-prior none   # without label priors (default: auto, as lfcli)
    python benchmarks/eval_topics.py --label-prior docs   # --label-prior the paragraphs themselves
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SQUAD = common.shared_data_dir() / "squad" / "squad-v1.1-dev-minus-xquad.json"


def sample(per_article: int, seed: int = 0) -> tuple[list[dict], list[str]]:
    """(documents {id, text, label}, the 48 titles), `per_article` paragraphs of each article."""
    data = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    rng = random.Random(seed)
    titles = [article["title"].replace("_", " ") for article in data]
    docs = []
    for article, title in zip(data, titles):
        paragraphs = [p["context"] for p in article["paragraphs"]]
        for i, text in enumerate(rng.sample(paragraphs, min(per_article, len(paragraphs)))):
            docs.append({"id": f"{article['title']}/{i}", "text": text, "label": title})
    return docs, titles


def accuracy(tier: str, docs: list[dict], titles: list[str], dtype: str, label_prior: str = "auto") -> tuple[float, float]:
    """(top-1 accuracy, seconds) of `lfcli.classify` with the tier's model and --label-prior
    `label_prior` (auto, none, or docs: the documents themselves, written to a temporary JSONL)."""
    import tempfile

    import lfcli

    with tempfile.TemporaryDirectory() as tmp:
        prior = {"label_prior": label_prior}
        if label_prior == "docs":
            path = Path(tmp) / "docs.jsonl"
            path.write_text("".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs), encoding="utf-8")
            prior = {"label_prior": str(path)}
        started = time.perf_counter()
        rows = lfcli.classify([{"id": d["id"], "text": d["text"]} for d in docs], model=tier, labels=titles, dtype=dtype,
                              **prior)
        seconds = time.perf_counter() - started
    right = sum(row.get("label") == doc["label"] for row, doc in zip(rows, docs))
    return right / len(docs), seconds


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-article", type=int, default=10, help="paragraphs of each article (default 10)")
    p.add_argument("--tiers", default="small,base", help="comma-separated: small, base")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--quick", action="store_true", help="2 paragraphs an article")
    p.add_argument("--label-prior", default="auto", choices=("auto", "none", "docs"),
                   help="lfcli classify --label-prior: auto (the default), none, or docs (the paragraphs themselves)")
    args = p.parse_args(argv)
    if not SQUAD.is_file():
        raise SystemExit(f"needs {SQUAD} (../shared/data beside the repository)")
    docs, titles = sample(2 if args.quick else args.per_article)
    info = common.machine_info(common.resolve_device("cpu"))
    print(f"# {info.get('cpu', '?')}, {info['cpu_count']} CPUs, {info['time']}; {len(docs)} SQuAD paragraphs, "
          f"{len(titles)} article titles as labels (chance {100 / len(titles):.1f}%), {args.dtype}"
          f", --label-prior {'the paragraphs' if args.label_prior == 'docs' else args.label_prior}")
    print("| tier | model | accuracy | seconds |")
    print("| --- | --- | ---: | ---: |")
    from lfcli.models.bundled import TIERS

    out = {}
    for tier in args.tiers.split(","):
        acc, seconds = accuracy(tier, docs, titles, args.dtype, args.label_prior)
        out[tier] = {"accuracy": acc, "seconds": seconds, "documents": len(docs)}
        print(f"| {tier} | {TIERS[tier]} | {100 * acc:.1f}% | {seconds:.0f} |")
    return out


if __name__ == "__main__":
    main()
