"""Quality: finding quoted speech, on LitBank's quotation annotations, as `lfcli corefs` reads it.

LitBank's quotations (../shared/data/litbank/quotations: each quote's span and speaker, over the
tokenized first ~2k words of 90 novels) are placed on the novels' own text (litbank/original,
token by token in order), and the quotes lfcli finds there (quotes.quote_spans: the ranges
`lfcli corefs` treats as speech, where "I" is the speaker and "you" the one addressed) are
compared with them. A gold quote is found when a found one overlaps it; a found one is right
when it overlaps a gold one (LitBank annotates speech, not scare quotes or titles, so those
count as wrong). Speakers are not scored yet.

    python benchmarks/eval_quotes.py                 # dev.ids (10 documents)
    python benchmarks/eval_quotes.py --ids train     # train.ids
    python benchmarks/eval_quotes.py --quick         # the first 3 dev documents
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def token_offsets(tokens_file: Path, text: str) -> tuple[dict[tuple[int, int], tuple[int, int]], int]:
    """(sentence, token) of the sentence-per-line tokens -> (start, end) in `text`: each token
    found in order, at most 40 characters past the previous one (the tokenizer splits words,
    "can not", and spaces punctuation, but keeps every character); and how many tokens were
    not found so (an edition that differs: those tokens have no offsets)."""
    offsets, cursor, missed = {}, 0, 0
    for s, line in enumerate(tokens_file.read_text(encoding="utf-8").split("\n")):
        for t, token in enumerate(line.split(" ")):
            if not token:
                continue
            at = text.find(token, cursor, cursor + 40 + len(token))
            if at < 0:
                missed += 1
                continue
            offsets[(s, t)] = (at, at + len(token))
            cursor = at + len(token)
    return offsets, missed


def gold_quotes(ann: Path, offsets) -> list[dict]:
    """The QUOTE lines as character spans, with their ATTRIB speaker ids."""
    quotes, speakers = {}, {}
    for line in ann.read_text(encoding="utf-8").splitlines():
        f = line.split("\t")
        if f[0] == "QUOTE":
            first, last = (int(f[2]), int(f[3])), (int(f[4]), int(f[5]))
            if first in offsets and last in offsets:
                quotes[f[1]] = (offsets[first][0], offsets[last][1])
        elif f[0] == "ATTRIB":
            speakers[f[1]] = f[2]
    return [{"id": q, "span": span, "speaker": speakers.get(q)} for q, span in sorted(quotes.items(), key=lambda kv: kv[1])]


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score_document(doc: str, data: Path) -> dict:
    from lfcli.pipelines.tasks.corefs.quotes import quote_spans  # lazy: after the argument checks

    tokens = data / "quotations" / f"{doc}_brat.txt"
    text = (data / "original" / f"{doc}.txt").read_text(encoding="utf-8")
    offsets, missed = token_offsets(tokens, text)
    if missed > len(offsets) // 20:
        return {"document": doc, "skipped": f"{missed} of {missed + len(offsets)} tokens not found in the original text"}
    excerpt = text[: max(end for _, end in offsets.values())]
    gold = gold_quotes(data / "quotations" / f"{doc}_brat.ann", offsets)
    found = quote_spans(excerpt)
    return {"document": doc, "gold": len(gold), "found": len(found),
            "gold_found": sum(any(_overlap(g["span"], s) for s in found) for g in gold),
            "found_right": sum(any(_overlap(g["span"], s) for g in gold) for s in found),
            "missed": [excerpt[a:z][:80] for g in gold for a, z in [g["span"]] if not any(_overlap(g["span"], s) for s in found)],
            "extra": [excerpt[a:z][:80] for a, z in found if not any(_overlap(g["span"], (a, z)) for g in gold)]}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ids", default="dev", help="dev or train: LitBank fold 0's document list (default dev)")
    p.add_argument("--quick", action="store_true", help="the first 3 documents")
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    data = common.shared_data_dir() / "litbank"
    ids_file = data / f"{args.ids}.ids"
    if not (data / "quotations").is_dir() or not ids_file.is_file():
        raise SystemExit(f"{data}: LitBank's quotations and {args.ids}.ids are needed (../shared/data beside the repository)")
    docs = [line.strip() for line in ids_file.read_text().splitlines() if line.strip()][: 3 if args.quick else None]
    started = time.perf_counter()
    common.print_header(f"Quotes found on LitBank {args.ids} ({len(docs)} documents)", common.machine_info(common.resolve_device("cpu")))
    rows = [score_document(d, data) for d in docs]
    for r in rows:
        if "skipped" in r:
            print(f"  skipped {r['document']}: {r['skipped']}")
    rows = [r for r in rows if "skipped" not in r]
    common.print_table(["document", "gold quotes", "found", "gold found", "found right"],
                       [[r["document"][:40], r["gold"], r["found"], r["gold_found"], r["found_right"]] for r in rows])
    gold, found = sum(r["gold"] for r in rows), sum(r["found"] for r in rows)
    recall = sum(r["gold_found"] for r in rows) / max(gold, 1)
    precision = sum(r["found_right"] for r in rows) / max(found, 1)
    print(f"gold quotes found: {recall:.3f} of {gold}; found quotes that are gold: {precision:.3f} of {found}")
    for r in rows:
        for text in r["extra"]:
            print(f"  not speech in LitBank ({r['document'][:24]}): {text!r}")
    return common.finish_evaluation(args, {"ids": args.ids, "documents": rows, "recall": recall, "precision": precision}, started)


if __name__ == "__main__":
    main()
