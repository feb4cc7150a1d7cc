"""Books of several narrators: is each narrator's "I" in that narrator's own chain?

For each book of benchmarks/coref_narrators_many.json (the book cut by hand into sections,
each with its writer, and the writer's name forms), `lfcli corefs` runs on the whole book, and
for each named narrator:

  narration I    the "I", "me", "my", "mine", "myself" outside quotes (lfcli's quotes) in the
                 narrator's sections that sit in chains
  own share      of those, the share in the one chain that holds most of them
  titled         whether that chain's title is one of the narrator's name forms
  others'        how many of those sit in a chain titled with another narrator's name

    python benchmarks/coref_narrators_many.py                    # small tier, every listed book
    python benchmarks/coref_narrators_many.py -m base --books 155_the_moonstone.txt --json out.json
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
from coref_books import name_key  # noqa: E402

SECTIONS = Path(__file__).resolve().parent / "coref_narrators_many.json"
FIRST_PERSON = frozenset("i me my mine myself".split())


def narrator_figures(text: str, row: dict, sections: list[dict]) -> dict:
    """Per narrator: narration I, own share, titled, others' (see the module's notes)."""
    from lfcli.pipelines.tasks.corefs.quotes import quote_spans

    quotes = quote_spans(text)
    quote_starts = [a for a, _ in quotes]

    def quoted(c: int) -> bool:
        k = bisect.bisect_right(quote_starts, c) - 1
        return k >= 0 and c < quotes[k][1]

    starts = [text.index(s["start"]) for s in sections]
    titles = [c.get("name") or "" for c in row.get("chains") or []]
    forms = {s["narrator"]: {name_key(n) for n in s["names"]} for s in sections if s["narrator"]}
    per: dict[str, Counter] = {}
    for k, chain in enumerate(row.get("chains") or []):
        for m in chain["mentions"]:
            if m["text"].lower() not in FIRST_PERSON or quoted(m["start"]):
                continue
            at = bisect.bisect_right(starts, m["start"]) - 1
            who = sections[at]["narrator"] if at >= 0 else None
            if who:
                per.setdefault(who, Counter())[k] += 1
    out = {}
    for who, chains in sorted(per.items()):
        k, held = chains.most_common(1)[0]
        total = sum(chains.values())
        others = sum(c for j, c in chains.items() if j != k and any(name_key(titles[j]) in f for w, f in forms.items() if w != who))
        out[who] = {"narration_i": total, "own_share": held / total, "title": titles[k],
                    "titled": name_key(titles[k]) in forms[who], "in_others_chains": others}
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", default="minilm-l6-long-litbank-coref")
    p.add_argument("--books", nargs="*", default=None)
    p.add_argument("--quick", action="store_true", help="the first listed book only")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import torch

    listed = {k: v for k, v in json.loads(SECTIONS.read_text()).items() if not k.startswith("_")}
    folder = common.shared_data_dir() / "litbank" / "original"
    info = common.machine_info(torch.device("cpu"))
    common.print_header(f"Several narrators: {args.model}", info)
    results = {"model": args.model, "machine": info, "books": {}}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for book in args.books or list(listed)[: 1 if args.quick else None]:
            text = (folder / book).read_text(encoding="utf-8")
            out = Path(tmp) / "book.jsonl"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "lfcli.cli", "corefs", str(folder / book), "-m", args.model, "-o",
                            str(out), "--force", "--quiet"], check=True)
            seconds = time.perf_counter() - t0
            (row,) = [json.loads(line) for line in out.read_text().splitlines()]
            figures = narrator_figures(text, row, listed[book])
            results["books"][book] = {"narrators": figures, "seconds": seconds}
            for who, f in figures.items():
                rows.append([book[:24], who, f["narration_i"], f"{f['own_share']:.0%}", f["title"][:28],
                             "yes" if f["titled"] else "no", f["in_others_chains"]])
    common.print_table(["book", "narrator", "narration I", "own share", "chain title", "titled", "in others' chains"],
                       rows)
    common.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
