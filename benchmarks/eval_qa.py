"""Quality: extractive QA on held-out SQuAD articles, one paragraph and a whole article as context.

The validation split is the one `lfcli finetune qa` holds out (whole articles, chosen by the
seed, pipelines/train_qa.split_by_article): no paragraph of these articles was trained on.
Every question is asked twice, through `lfcli.Pipeline("qa")`, exactly as `lfcli qa` runs:

  paragraph  its own paragraph as the document (SQuAD's setting)
  article    the whole article as the document (its paragraphs joined by blank lines, about
             3-8k tokens): the model has to find the paragraph as well as the span, across
             windows when the article is longer than one window (`--max-length`)

SQuAD v1.1 EM and F1 (official normalisation, max over the gold answers), with the number of
questions. Articles are long, so `--article-questions` caps how many questions (the first N
of each held-out article, in order) are asked of whole articles.

    python benchmarks/eval_qa.py                       # the bundled minilm-l6-long-squad
    python benchmarks/eval_qa.py -m DIR --max-length 512 --article-questions 100
    python benchmarks/eval_qa.py --quick --dtype float32   # 100 + 10 questions (under a minute)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SQUAD = "squad/squad-v1.1-dev-minus-xquad.json"


def article_records(records):
    """(article text, records re-anchored in it): paragraphs joined by blank lines, each
    answer offset moved by its paragraph's start."""
    from lfcli.pipelines.train_qa import QARecord

    by_article: dict[str, list] = {}
    for r in records:
        by_article.setdefault(r.article, []).append(r)
    out = {}
    for article, recs in by_article.items():
        contexts = list(dict.fromkeys(r.context for r in recs))
        starts, pos = {}, 0
        for c in contexts:
            starts[c] = pos
            pos += len(c) + 2
        text = "\n\n".join(contexts)
        out[article] = (text, [QARecord(r.id, text, r.question, [
            {"text": a["text"], "answer_start": a["answer_start"] + starts[r.context]} for a in r.answers], article) for r in recs])
    return out


def run(pipe, records) -> tuple[dict, float]:
    from lfcli.pipelines.metrics import squad_scores
    from lfcli.pipelines.readers import Document

    docs = [Document(r.id, r.context, fields={"question": r.question}) for r in records]
    t0 = time.perf_counter()
    rows = {row["id"]: row for row in pipe.run(docs)}
    dt = time.perf_counter() - t0
    scores = squad_scores((rows[r.id].get("answer"), [a["text"] for a in r.answers]) for r in records)
    return scores, dt


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default="minilm-l6-long-squad", help="QA model folder or bundled name")
    parser.add_argument("--quick", action="store_true", help="100 paragraph and 10 article questions (under a minute)")
    parser.add_argument("--dtype", default="auto", help="as lfcli qa --dtype (auto: bf16 on a CPU with native bf16)")
    parser.add_argument("--data", default=None, help="SQuAD JSON (default: ../shared/data/" + SQUAD + ")")
    parser.add_argument("--validation-split", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=None, help="window length for lfcli qa (default: the model's)")
    parser.add_argument("--article-questions", type=int, default=None, help="questions asked of whole articles (0: none; default 300, quick 10)")
    parser.add_argument("--limit", type=int, default=None, help="paragraph-level questions (default: all held out)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.limit = args.limit or 100
    if args.article_questions is None:
        args.article_questions = 10 if args.quick else 300

    import lfcli
    from lfcli.pipelines.train_qa import read_squad_json, split_by_article

    data = Path(args.data) if args.data else common.shared_data_dir() / SQUAD
    if not data.is_file():
        raise SystemExit(f"{data}: missing (the SQuAD file lives in ../shared/data)")
    records, _ = read_squad_json(data)
    _, validation = split_by_article(records, args.validation_split, args.seed)
    paragraph = validation[: args.limit] if args.limit else validation
    pipe = lfcli.Pipeline("qa", model=args.model, max_length=args.max_length, dtype=args.dtype)
    dtype = next(pipe.model.parameters()).dtype
    print(f"model {args.model} ({dtype}), window {pipe.max_length} tokens; held-out articles: "
          f"{sorted({r.article for r in validation})}", file=sys.stderr)
    results = {"model": args.model, "max_length": pipe.max_length, "dtype": str(dtype), "machine": common.machine_info(common.resolve_device("cpu"))}
    scores, dt = run(pipe, paragraph)
    results["paragraph"] = {**scores, "seconds": dt}
    print(f"paragraph: EM {scores['exact_match']:.1f}  F1 {scores['f1']:.1f}  (n = {scores['n']}, {dt:.0f} s)")
    if args.article_questions:
        articles = article_records(validation)
        per_article = max(1, args.article_questions // max(1, len(articles)))
        asked = [r for _, recs in articles.values() for r in recs[:per_article]]
        lengths = [len(pipe.tokenizer.encode(text).ids) for text, _ in articles.values()]
        scores, dt = run(pipe, asked)
        results["article"] = {**scores, "seconds": dt, "article_tokens": lengths}
        print(f"article:   EM {scores['exact_match']:.1f}  F1 {scores['f1']:.1f}  (n = {scores['n']} questions over "
              f"{len(articles)} articles of {min(lengths)}-{max(lengths)} tokens, {dt:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
