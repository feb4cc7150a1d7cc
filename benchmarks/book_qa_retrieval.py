"""Retrieval for whole-book QA: how often the windows a question reads hold its answer.

`lfcli qa` (pipelines/tasks/qa/retrieve.py) reads, of a document longer than k windows, only
k windows around the passages most like the question. This measures, on the questions of
benchmarks/book_qa.json (asked of their whole books, LitBank's original texts in
../shared/data/litbank/original), the share of questions for which one of the k windows read
holds one of the gold answers (white space collapsed): the reader can be right only then.
Per passage size, k, and ranking (dense: the tier's sentence encoder; bm25: bm25s; fused:
reciprocal-rank fusion of the two, BM25's ranks weighted 1, 2 or 3: lfcli uses 3), separately
for the "fit" works, on which the defaults are chosen, and the "report" works.

The reader's top-1 at a given k is eval_book_qa.py's (`--read retrieve --top-windows K`).

    python benchmarks/book_qa_retrieval.py                       # small tier, passages 64/128/256
    python benchmarks/book_qa_retrieval.py -m base --sizes 128 --json out.json
    python benchmarks/book_qa_retrieval.py --quick              # two short books
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import eval_book_qa  # noqa: E402

KS = (1, 2, 4, 8, 12, 16, 24, 32)
RANKINGS = ("dense", "bm25", "fused")
WEIGHTS = (2.0, 3.0)  # fused with BM25's ranks counted this many times: "fused x2", "fused x3"


def rankings(retriever, found, question: str) -> dict[str, list[int]]:
    from lfcli.pipelines.tasks.qa import retrieve

    q = retriever.vectors([question])[0]
    dense = found.vectors @ q
    lexical = None if found.bm25 is None else retrieve.bm25_scores(found.bm25, question)
    n = dense.numel()
    out = {"dense": sorted(range(n), key=lambda i: (-float(dense[i]), i)),
           "fused": retrieve.fused_ranking(dense, lexical, lexical_weight=1.0),
           **{f"fused x{w:g}": retrieve.fused_ranking(dense, lexical, lexical_weight=w) for w in WEIGHTS}}
    out["bm25"] = (sorted(range(n), key=lambda i: (-float(lexical[i]), i)) if lexical is not None else list(range(n)))
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-m", "--model", default="small", help="a tier or a QA model (its tokenizer and encoder)")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--sizes", default="64,128,256", help="passage sizes in reader tokens")
    p.add_argument("--books", default=None, help="comma-separated book file prefixes (default: all)")
    p.add_argument("--cache", default=None, help="a folder for the passage vectors (as lfcli qa --cache)")
    p.add_argument("--json", default=None)
    p.add_argument("--quick", action="store_true", help="two short books (one fit, one report), 128-token passages")
    args = p.parse_args(argv)
    if args.quick:
        args.books, args.sizes = args.books or "11231,208", "128"  # one fit work, one report work
    import lfcli
    from lfcli.pipelines.infer.tokenize import plan_windows
    from lfcli.pipelines.tasks.qa import retrieve

    books_dir = common.shared_data_dir() / eval_book_qa.BOOKS
    questions, books = eval_book_qa.load_questions(eval_book_qa.QUESTIONS, books_dir,
                                                   args.books.split(",") if args.books else None)
    pipe = lfcli.Pipeline("qa", model=args.model, dtype=args.dtype, read="all")
    tok = pipe.task.tok
    weights = next(pipe.model.parameters())
    info = common.machine_info(common.resolve_device("cpu"))
    results = {"model": args.model, "machine": info, "questions": len(questions), "curves": {}}
    sizes = [int(s) for s in args.sizes.split(",")]
    names = RANKINGS + tuple(f"fused x{w:g}" for w in WEIGHTS)
    hits = {(size, r, part, k): 0 for size in sizes for r in names for part in ("fit", "report") for k in KS}
    counts = {"fit": 0, "report": 0}
    for book in dict.fromkeys(q["book"] for q in questions):
        text = (books_dir / book).read_text(encoding="utf-8")
        encoded = tok.encode(text)
        part = books[book]["split"]
        asked = [q for q in questions if q["book"] == book]
        counts[part] += len(asked)
        for size in sizes:
            t0 = time.perf_counter()
            r = retrieve.Retriever(retrieve.encoder_of(pipe.model.config), tok, device=weights.device,
                                   dtype=weights.dtype, passage_tokens=size, cache_dir=args.cache,
                                   reader_fingerprint=retrieve.reader_fingerprint(tok))
            found = r.passages(text, encoded)
            for q in asked:
                budget = tok.content_budget(len(tok.encode(q["question"]).ids))
                whole = plan_windows(len(encoded.ids), budget, pipe.task.overlap(budget))  # the whole read's
                answers = [" ".join(a.split()) for a in q["answers"]]
                for name, ranked in rankings(r, found, q["question"]).items():
                    for k in KS:
                        spans = retrieve.plan_windows_of(ranked, found.spans, whole, k)
                        read = [" ".join(text[encoded.offsets[a][0]:encoded.offsets[b - 1][1]].split()) for a, b in spans]
                        hits[(size, name, part, k)] += any(a in w for a in answers for w in read)
            print(f"{book}: {len(encoded.ids):,} tokens, passages of {size}: {len(found.spans)} "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    print(f"# {args.model}, {info.get('cpu', '?')}, {info['time']}: share of questions whose read windows hold "
          f"an answer ({counts['fit']} fit / {counts['report']} report questions)")
    print("| passage tokens | ranking | works | " + " | ".join(f"k={k}" for k in KS) + " |")
    print("| ---: | --- | --- | " + " | ".join("---:" for _ in KS) + " |")
    for size in sizes:
        for name in names:
            for part in ("fit", "report"):
                if not counts[part]:
                    continue
                row = [hits[(size, name, part, k)] / counts[part] for k in KS]
                results["curves"][f"{size}/{name}/{part}"] = dict(zip(map(str, KS), row))
                print(f"| {size} | {name} | {part} | " + " | ".join(f"{x:.1%}" for x in row) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
