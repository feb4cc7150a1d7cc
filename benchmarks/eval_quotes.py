"""Quality: finding quoted speech, on LitBank's quotation annotations, as `lfcli corefs` reads it.

LitBank's quotations (../shared/data/litbank/quotations: each quote's span and speaker, over the
tokenized first ~2k words of 90 novels) are placed on the novels' own text (litbank/original,
token by token in order), and the quotes lfcli finds there (quotes.quote_spans: the ranges
`lfcli corefs` treats as speech, where "I" is the speaker and "you" the one addressed) are
compared with them. A gold quote is found when a found one overlaps it; a found one is right
when it overlaps a gold one (LitBank annotates speech, not scare quotes or titles, so those
count as wrong).

Speakers: `lfcli corefs` (the Python API, -m MODEL) runs on each excerpt, and each gold quote it
found is scored by the speaker its row gives that quote: right when the speaker's chain holds
a mention of the gold speaker's entity (LitBank's coreference annotation of the same excerpt,
litbank/coref/conll: a mention with the same end character). The gold speaker's entity is the
one that holds the "I", "me", "my" inside that speaker's quotes (LitBank links a quote's "I" to
its speaker), else the one whose mentions read as the speaker id's name ("Mr_Woodhouse-4").
A quote given no speaker counts as wrong.

    python benchmarks/eval_quotes.py                 # dev.ids (10 documents)
    python benchmarks/eval_quotes.py --ids train     # train.ids
    python benchmarks/eval_quotes.py --quick         # the first 3 dev documents
    python benchmarks/eval_quotes.py --no-speakers   # quotes only (no model run)
    python benchmarks/eval_quotes.py --ids train --wrong   # each quote given a wrong speaker, or none
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter, defaultdict
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


def gold_entities(conll: Path) -> dict[int, list[tuple[int, int, int]]]:
    """entity -> its mentions as (sentence, first token, last token), from a LitBank CoNLL file
    (the same sentences and tokens as the quotations' *_brat.txt), read by lfcli's CoNLL reader."""
    from lfcli.pipelines.io.conll import read_conll

    (doc,) = read_conll(conll)
    sentence_of = [(s, t - first) for s, (first, end) in enumerate(doc.sentences) for t in range(first, end)]
    return {k: [(*sentence_of[a], sentence_of[z - 1][1]) for a, z in spans] for k, spans in enumerate(doc.token_clusters)}


def speaker_entities(gold: list[dict], entities: dict, offsets, text: str) -> dict[str, int]:
    """Each gold speaker id -> its entity: the one holding most first-person mentions inside its
    quotes, else the one whose mentions read most often as the id's name."""
    first_person = {"i", "me", "my", "myself", "mine"}
    where = {}  # (start char, end char) -> entity
    for e, mentions in entities.items():
        for s, a, z in mentions:
            if (s, a) in offsets and (s, z) in offsets:
                where[(offsets[(s, a)][0], offsets[(s, z)][1])] = e
    votes: dict[str, Counter] = defaultdict(Counter)
    for g in gold:
        for (a, z), e in where.items():
            if g["speaker"] and g["span"][0] <= a < g["span"][1] and text[a:z].lower() in first_person:
                votes[g["speaker"]][e] += 1
    out = {}
    for speaker in {g["speaker"] for g in gold if g["speaker"]}:
        if votes[speaker]:
            out[speaker] = votes[speaker].most_common(1)[0][0]
            continue
        name = re.sub(r"_+", " ", speaker.rsplit("-", 1)[0]).strip().lower()
        named = Counter(e for (a, z), e in where.items() if re.sub(r"\W+", " ", text[a:z]).strip().lower() == name)
        if named:
            out[speaker] = named.most_common(1)[0][0]
    return out


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score_document(doc: str, data: Path, pipe=None) -> dict:
    from lfcli.pipelines.tasks.corefs.quotes import quote_spans  # lazy: after the argument checks

    tokens = data / "quotations" / f"{doc}_brat.txt"
    text = (data / "original" / f"{doc}.txt").read_text(encoding="utf-8")
    offsets, missed = token_offsets(tokens, text)
    if missed > len(offsets) // 20:
        return {"document": doc, "skipped": f"{missed} of {missed + len(offsets)} tokens not found in the original text"}
    excerpt = text[: max(end for _, end in offsets.values())]
    gold = gold_quotes(data / "quotations" / f"{doc}_brat.ann", offsets)
    found = quote_spans(excerpt)
    speakers = score_speakers(doc, data, pipe, excerpt, gold, offsets) if pipe is not None else {}
    return {"document": doc, "gold": len(gold), "found": len(found), **speakers,
            "gold_found": sum(any(_overlap(g["span"], s) for s in found) for g in gold),
            "found_right": sum(any(_overlap(g["span"], s) for g in gold) for s in found),
            "missed": [excerpt[a:z][:80] for g in gold for a, z in [g["span"]] if not any(_overlap(g["span"], s) for s in found)],
            "extra": [excerpt[a:z][:80] for a, z in found if not any(_overlap(g["span"], (a, z)) for g in gold)]}


def score_speakers(doc: str, data: Path, pipe, excerpt: str, gold: list[dict], offsets) -> dict:
    from lfcli import Document
    """Of the gold quotes `lfcli corefs` finds in the excerpt, those whose speaker chain holds a
    mention of the gold speaker's entity (see the module's notes)."""
    (row,) = pipe.run([Document(doc, excerpt)])
    entities = gold_entities(data / "coref" / "conll" / f"{doc}.conll")
    who = speaker_entities(gold, entities, offsets, excerpt)
    ends = defaultdict(set)  # entity -> the end characters of its mentions
    for e, mentions in entities.items():
        for s, a, z in mentions:
            if (s, z) in offsets:
                ends[e].add(offsets[(s, z)][1])
    scored = right = given = 0
    wrong = []  # (the quote, the gold speaker id, the title of the chain given or None)
    for g in gold:
        quote = next((q for q in row.get("quotes") or [] if _overlap(g["span"], (q["start"], q["end"]))), None)
        if quote is None or g["speaker"] not in who:
            continue
        scored += 1
        if quote["speaker"] is None:
            wrong.append((excerpt[slice(*g["span"])][:70], g["speaker"], None))
            continue
        given += 1
        chain = row["chains"][quote["speaker"]]["mentions"]
        ok = any(m["end"] in ends[who[g["speaker"]]] for m in chain)
        right += ok
        if not ok:
            wrong.append((excerpt[slice(*g["span"])][:70], g["speaker"], row["chains"][quote["speaker"]].get("title")))
    return {"speaker_scored": scored, "speaker_given": given, "speaker_right": right, "speaker_wrong": wrong}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ids", default="dev", help="dev or train: LitBank fold 0's document list (default dev)")
    p.add_argument("--quick", action="store_true", help="the first 3 documents")
    p.add_argument("--json", metavar="FILE", default=None)
    p.add_argument("-m", "--model", default="minilm-l6-long-litbank-coref", help="the coreference model whose speakers are scored")
    p.add_argument("--no-speakers", action="store_true", help="score the quotes found only (no model run)")
    p.add_argument("--wrong", action="store_true", help="list each quote given a wrong speaker or none")
    args = p.parse_args(argv)
    data = common.shared_data_dir() / "litbank"
    ids_file = data / f"{args.ids}.ids"
    if not (data / "quotations").is_dir() or not ids_file.is_file():
        raise SystemExit(f"{data}: LitBank's quotations and {args.ids}.ids are needed (../shared/data beside the repository)")
    docs = [line.strip() for line in ids_file.read_text().splitlines() if line.strip()][: 3 if args.quick else None]
    started = time.perf_counter()
    common.print_header(f"Quotes found on LitBank {args.ids} ({len(docs)} documents)", common.machine_info(common.resolve_device("cpu")))
    pipe = None
    if not args.no_speakers:
        import lfcli

        pipe = lfcli.Pipeline("corefs", model=args.model)
    rows = [score_document(d, data, pipe) for d in docs]
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
    speakers = {}
    if pipe is not None:
        scored = sum(r["speaker_scored"] for r in rows)
        speakers = {"speaker_accuracy": sum(r["speaker_right"] for r in rows) / max(scored, 1),
                    "speaker_given": sum(r["speaker_given"] for r in rows) / max(scored, 1), "speaker_scored": scored}
        print(f"speakers ({args.model}): right {speakers['speaker_accuracy']:.3f} of {scored} gold quotes found "
              f"(a speaker given to {speakers['speaker_given']:.3f})")
    for r in rows if args.wrong else []:
        for text, gold_speaker, given in r.get("speaker_wrong", []):
            print(f"  wrong speaker ({r['document'][:24]}): {text!r} is {gold_speaker}'s, given {given or 'nobody'}")
    for r in rows:
        for text in r["extra"]:
            print(f"  not speech in LitBank ({r['document'][:24]}): {text!r}")
    return common.finish_evaluation(args, {"ids": args.ids, "model": None if pipe is None else args.model, "documents": rows,
                                           "recall": recall, "precision": precision, **speakers}, started)


if __name__ == "__main__":
    main()
