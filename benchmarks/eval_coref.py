"""Quality: coreference on LitBank fold-0 dev and on GAP validation, as `lfcli corefs` runs.

LitBank: the documents of `dev.ids` (10 novels' first ~2k words, never trained on; they chose
the kept update during training), each one document through `lfcli.Pipeline("corefs",
singletons=True)`, scored with the CoNLL-2012 definitions (pipelines/eval/metrics.py, checked
against scorch in the tests), with and without one-mention entities. Also documents/minute.

GAP: each validation row's passage is one document; a name counts as coreferent with the
pronoun when one predicted chain holds both (pipelines/metrics.gap_decisions); F1 overall,
masculine, feminine, and the bias ratio F/M.

    python benchmarks/eval_coref.py                          # the bundled minilm-l6-long-litbank-coref
    python benchmarks/eval_coref.py -m DIR --json out.json
    python benchmarks/eval_coref.py --quick                  # 3 LitBank documents, 60 GAP rows
    python benchmarks/eval_coref.py --link-threshold 1.0     # decode with another threshold
    python benchmarks/eval_coref.py --no-pronoun-agreement   # decode without the rules of coref_entities.py
    python benchmarks/eval_coref.py --joined 5               # also the dev documents joined five to a document
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def litbank(pipe, docs, parts=None) -> dict:
    from lfcli.pipelines.tasks.corefs.document import chain_spans
    from lfcli.pipelines.io.readers import Document
    from lfcli.pipelines.tasks.corefs.train import score_clusters

    t0 = time.perf_counter()
    rows = list(pipe.run([Document(d.id, d.text) for d in docs]))
    seconds = time.perf_counter() - t0
    pairs = [(d.clusters, chain_spans(row)) for d, row in zip(docs, rows)]
    scores = score_clusters(pairs)
    scores["docs_per_minute"] = len(docs) / seconds * 60
    scores["seconds"] = seconds
    if parts is not None:
        scores["cross_part_mentions"] = cross_part_share(rows, parts)
    return scores


def joined(docs, size: int):
    """The documents joined `size` to a document (blank lines between), gold chains shifted;
    and for each joined document the character ranges of its parts."""
    from lfcli.pipelines.tasks.corefs.train import CorefDocument

    out, parts = [], []
    for k in range(0, len(docs), size):
        text, clusters, ranges = "", [], []
        for d in docs[k:k + size]:
            shift = len(text) + (2 if text else 0)
            text = f"{text}\n\n{d.text}" if text else d.text
            clusters += [[(a + shift, z + shift) for a, z in c] for c in d.clusters]
            ranges.append((shift, shift + len(d.text)))
        out.append(CorefDocument(f"joined:{k // size}", text, clusters))
        parts.append(ranges)
    return out, parts


def cross_part_share(rows, parts) -> float:
    """The share of predicted mentions that sit in a chain holding mentions of two parts."""
    from lfcli.pipelines.tasks.corefs.document import chain_spans

    total = crossing = 0
    for row, ranges in zip(rows, parts):
        for chain in chain_spans(row):
            where = {next(i for i, (a, z) in enumerate(ranges) if a <= s < z) for s, _ in chain}
            total += len(chain)
            crossing += len(chain) if len(where) > 1 else 0
    return 100 * crossing / max(total, 1)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", default="minilm-l6-long-litbank-coref", help="coreference model folder or bundled name")
    p.add_argument("--quick", action="store_true", help="3 LitBank documents and 60 GAP rows (under a minute or two)")
    p.add_argument("--dtype", default="auto", help="as lfcli corefs --dtype")
    p.add_argument("--link-threshold", type=float, default=None, help="override the model's link threshold")
    p.add_argument("--mention-threshold", type=float, default=None, help="override the model's mention threshold")
    p.add_argument("--no-pronoun-agreement", action="store_true",
                   help="decode without the pronoun-agreement rule (pipelines/tasks/corefs/decode.py)")
    p.add_argument("--gap-rows", type=int, default=None, help="GAP validation rows (default all 454; quick 60; 0: skip GAP)")
    p.add_argument("--joined", type=int, default=0, metavar="N",
                   help="also score the dev documents joined N to a document (long documents of several novels: "
                        "no chain should cross from one to another)")
    p.add_argument("--max-length", type=int, default=None, help="as lfcli corefs --max-length (window length)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)

    import torch

    import lfcli
    from lfcli.pipelines.eval.metrics import read_gap
    from lfcli.pipelines.tasks.corefs.train import gap_evaluate, read_coref_documents

    if args.threads:
        torch.set_num_threads(args.threads)
    data = common.shared_data_dir()
    conll, ids, gap = data / "litbank" / "coref" / "conll", data / "litbank" / "dev.ids", data / "gap" / "gap-validation.tsv"
    if not conll.is_dir() or not gap.is_file():
        raise SystemExit(f"{conll} or {gap}: missing (the data lives in ../shared/data)")
    started = time.perf_counter()
    pipe = lfcli.Pipeline("corefs", model=args.model, singletons=True, dtype=args.dtype, max_length=args.max_length)
    if args.link_threshold is not None:
        pipe.model.link_threshold = args.link_threshold
    if args.mention_threshold is not None:
        pipe.model.mention_threshold = args.mention_threshold
    if args.no_pronoun_agreement:
        pipe.model.pronoun_agreement = False
    dtype = next(pipe.model.longformer.parameters()).dtype
    info = common.machine_info(torch.device("cpu"))
    common.print_header(f"Coreference: {args.model} ({dtype}, link threshold {pipe.model.link_threshold})", info)
    docs, _ = read_coref_documents([str(conll)], ids=ids)
    docs = docs[:3] if args.quick else docs
    results = {"model": args.model, "dtype": str(dtype), "max_length": pipe.tokenizer.max_length, "link_threshold": pipe.model.link_threshold,
               "mention_threshold": pipe.model.mention_threshold, "pronoun_agreement": pipe.model.pronoun_agreement,
               "machine": info}
    lit = results["litbank_dev"] = litbank(pipe, docs)
    print(f"LitBank fold-0 dev, {lit['documents']} documents: CoNLL F1 {lit['conll_f1']:.1f} (MUC {lit['muc_f1']:.1f}, "
          f"B3 {lit['b_cubed_f1']:.1f}, CEAF-e {lit['ceaf_e_f1']:.1f}; mentions {lit['mention_f1']:.1f}); "
          f"without singletons {lit['conll_f1_no_singletons']:.1f}; {lit['docs_per_minute']:.1f} documents/min")
    if args.joined:
        long_docs, parts = joined(docs, args.joined)
        j = results["litbank_dev_joined"] = litbank(pipe, long_docs, parts)
        print(f"LitBank fold-0 dev joined {args.joined} to a document ({len(long_docs)} documents): CoNLL F1 "
              f"{j['conll_f1']:.1f} (MUC {j['muc_f1']:.1f}, B3 {j['b_cubed_f1']:.1f}, CEAF-e {j['ceaf_e_f1']:.1f}); "
              f"mentions in chains that join two documents {j['cross_part_mentions']:.1f}%")
    examples = read_gap(str(gap))
    rows = args.gap_rows if args.gap_rows is not None else 60 if args.quick else len(examples)
    if not rows:
        return common.finish_evaluation(args, results, started)
    g = results["gap_validation"] = gap_evaluate(pipe, examples[:rows])
    o = g["overall"]
    bias = "-" if g["bias"] is None else f"{g['bias']:.2f}"
    print(f"GAP validation, {rows} rows: F1 {o['f1']:.1f} (precision {o['precision']:.1f}, recall {o['recall']:.1f}), "
          f"masculine {g['masculine']['f1']:.1f}, feminine {g['feminine']['f1']:.1f}, bias F/M {bias}")
    return common.finish_evaluation(args, results, started)


if __name__ == "__main__":
    main()
