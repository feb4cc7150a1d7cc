"""First-person books: is the narrator one chain, and does a chain keep to one gender?

`lfcli corefs` on whole first-person novels from ../shared/data/litbank/original, one process
each, default options. Per novel:

  narration I          the "I", "me", "my", "mine", "myself" outside quotes (the quotes
                       lfcli reads: quotes.quote_spans) that sit in chains, but in the
                       passages another person tells (OTHERS, cut by hand: a letter copied
                       out, chapters "continued by the Doctor")
  narrator share       the share of those in the one chain that holds most of them
  others' I            the narration I of those other passages, and how many of them sit in
                       the narrator's chain (there they are wrong)
  narrator title       that chain's name (the bar: the narrator's name, "Jim", "Watson", "Jane")
  other gender         of the "he/him/his/himself" and "she/her/hers/herself" in chains whose
                       name says a gender (an honorific, "Mr.", "Miss", or a book's own "Miss
                       Lizzy": entities.NameForms), the share of the other gender
  minority gender      of the he/she pronouns in the chains of a proper name ("Basil", "Miss
                       Stapleton" apart from "Stapleton": all the
                       chains named so), the share of the gender the book gives that name
                       less often (names whose he and she are not two to one are left out)
  quotes with speaker  the share of found quotes given a speaker chain
  seconds              the whole process

    python benchmarks/coref_narrator.py                   # the bundled model, three novels
    python benchmarks/coref_narrator.py -m base --json out.json
    python benchmarks/coref_narrator.py --quick           # Treasure Island only
"""

from __future__ import annotations

import argparse
import bisect
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BOOKS = ("120_treasure_island.txt", "2852_the_hound_of_the_baskervilles.txt", "1260_jane_eyre_an_autobiography.txt")
FIRST_PERSON = frozenset("i me my mine myself".split())
# Passages of a first-person book told by someone else: (first words, words after the end, teller).
OTHERS = {
    "120_treasure_island.txt": [
        ("Dear Livesey--As I do not know", "You can fancy the excitement", "Squire Trelawney"),  # a letter copied out
        ("Narrative Continued by the Doctor: How the Ship", "Narrative Resumed by Jim Hawkins", "Dr. Livesey"),
    ],
}
HE, SHE = frozenset("he him his himself".split()), frozenset("she her hers herself".split())


def figures(text: str, row: dict, others: list = ()) -> dict:
    from lfcli.pipelines.tasks.corefs.entities import NameForms, proper_name
    from lfcli.pipelines.tasks.corefs.quotes import quote_spans

    quotes = quote_spans(text)
    starts = [a for a, _ in quotes]

    def in_quote(char: int) -> bool:
        k = bisect.bisect_right(starts, char) - 1
        return k >= 0 and char < quotes[k][1]

    elsewhere = [(text.index(a), text.index(z, text.index(a))) for a, z, _ in others]
    forms = NameForms(text)
    told, theirs, wrong, gendered, minority, named_he_she = Counter(), Counter(), 0, 0, 0, 0
    by_name: dict[tuple, list[tuple[int, int]]] = {}  # a name (its words and honorific) -> its chains' he, she
    for k, chain in enumerate(row["chains"]):
        for m in chain["mentions"]:
            if m["text"].lower() in FIRST_PERSON and not in_quote(m["start"]):
                if any(a <= m["start"] < z for a, z in elsewhere):
                    theirs[k] += 1
                else:
                    told[k] += 1
        name = proper_name(chain["name"] or "")
        gender = forms.apply(name, chain["name"]).gender if name else None
        words = [m["text"].lower() for m in chain["mentions"]]
        he, she = sum(w in HE for w in words), sum(w in SHE for w in words)
        if gender:
            gendered += he + she
            wrong += she if gender == "m" else he
        if name:  # the he/she of every chain of a name, to read the name's gender from the book
            by_name.setdefault((name.words, name.address, name.gender), []).append((he, she))
    for chains in by_name.values():  # a name's gender: the book's he/she for it, two to one at least
        he, she = sum(h for h, _ in chains), sum(s for _, s in chains)
        if max(he, she) >= 2 * min(he, she) and he + she:
            named_he_she += he + she
            minority += min(he, she)
    narrator, held = told.most_common(1)[0] if told else (None, 0)
    found = row.get("quotes") or []
    return {"narration_i": sum(told.values()), "narrator_share": held / max(sum(told.values()), 1),
            "others_i": sum(theirs.values()), "others_i_in_narrator_chain": theirs[narrator] if narrator is not None else 0,
            "narrator_title": row["chains"][narrator]["name"] if narrator is not None else None,
            "he_she_in_gendered_chains": gendered, "other_gender": wrong / max(gendered, 1),
            "he_she_in_named_chains": named_he_she, "minority_gender": minority / max(named_he_she, 1),
            "quotes": len(found), "quotes_with_speaker": sum(q["speaker"] is not None for q in found) / max(len(found), 1)}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", default="minilm-l6-long-litbank-coref")
    p.add_argument("--books", nargs="*", default=list(BOOKS), help="file names under litbank/original")
    p.add_argument("--quick", action="store_true", help="the first book only (Treasure Island, ~15 s)")
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    args.books = args.books[:1] if args.quick else args.books
    import torch

    folder = common.shared_data_dir() / "litbank" / "original"
    if not folder.is_dir():
        raise SystemExit(f"{folder}: missing (the data lives in ../shared/data)")
    info = common.machine_info(torch.device("cpu"))
    common.print_header(f"First-person novels: {args.model}", info)
    results, rows = {"model": args.model, "machine": info, "books": {}}, []
    with tempfile.TemporaryDirectory() as tmp:
        for book in args.books:
            out = Path(tmp) / "book.jsonl"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "lfcli.cli", "corefs", str(folder / book), "-m", args.model, "-o", str(out),
                            "--force", "--quiet"], check=True)
            seconds = time.perf_counter() - t0
            (row,) = [json.loads(line) for line in out.read_text().splitlines()]
            f = figures((folder / book).read_text(encoding="utf-8"), row, OTHERS.get(book, ()))
            f["seconds"] = seconds
            results["books"][book] = f
            rows.append([book[:30], f["narration_i"], f"{f['narrator_share']:.0%}", f["narrator_title"],
                         f"{f['others_i_in_narrator_chain']} of {f['others_i']}",
                         f"{f['other_gender']:.1%} of {f['he_she_in_gendered_chains']}",
                         f"{f['minority_gender']:.1%} of {f['he_she_in_named_chains']}", f"{f['quotes_with_speaker']:.0%} of {f['quotes']}",
                         f"{seconds:.0f}"])
    common.print_table(["novel", "narration I", "narrator share", "narrator title", "others' I in it", "other gender", "minority gender", "quotes with speaker", "s"], rows)
    common.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
