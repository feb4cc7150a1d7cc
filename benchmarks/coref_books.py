"""Quality at book scale: `lfcli corefs` on whole novels, judged by their characters' names.

For each novel in benchmarks/coref_characters.json (a hand-made list of its main characters
and the names the text calls each by), `lfcli corefs` runs on the whole book as one
document, and again on the book cut into pieces of about 3,000 characters (at paragraph
breaks), so that errors of the window decoder (pieces) and of the document merge (whole
book) show apart. Per novel:

  mentions, chains       all mentions output; chains of two or more mentions
  biggest                the biggest chain's share of all mentions
  conflated              of the mentions naming a main character (their text is one of its
                         names), the share that sit in a chain holding a name of another
                         main character: always an error
  cohesion               for each character named 10 or more times, the share of its named
                         mentions in its own biggest chain; the mean over those characters
                         (macro) and over their mentions (micro), and the lowest (min; the
                         JSON has each character's)
  misplaced              of the mentions naming a main character, the share that sit in a chain
                         whose named mentions are mostly another main character's
  min (20+)              the lowest cohesion among characters named 20 or more times
  bad titles             chain titles that are a bare pronoun, longer than five words or end
                         in a pronoun (a clause)
  seconds                the whole `lfcli corefs` process

    python benchmarks/coref_books.py                      # the bundled model, three novels
    python benchmarks/coref_books.py --no-pieces --json out.json
    python benchmarks/coref_books.py -m DIR --books 11_alices_adventures_in_wonderland.txt
    python benchmarks/coref_books.py --characters benchmarks/coref_characters_more.json --no-pieces
    python benchmarks/coref_books.py --no-pieces --characters benchmarks/coref_characters*.json   # all fifteen
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

CHARACTERS = Path(__file__).resolve().parent / "coref_characters.json"
PIECE_CHARS = 3000


def name_key(text: str) -> str:
    """A mention's text as the character list writes names: no leading 'the', no possessive."""
    key = " ".join(text.split()).lower()
    key = re.sub(r"^the\s+", "", key)
    return re.sub(r"['\u2019]s$", "", key)


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """The text cut at paragraph breaks into pieces of about `size` characters."""
    out, current = [], ""
    for paragraph in re.split(r"\n\s*\n", text):
        if current and len(current) + len(paragraph) > size:
            out.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    return out + ([current] if current.strip() else [])


def book_figures(chains_per_doc: list[list[list[dict]]], characters: dict[str, list[str]],
                 titles: list[str] | None = None) -> dict:
    """The figures above for one novel, its chains given per document (one, or its pieces);
    titles: the chains' titles (whole book), checked for pronouns and clauses."""
    who = {name_key(n): character for character, names in characters.items() for n in names}
    mentions = biggest = named = conflated = misplaced = 0
    chains = 0
    per_character: dict[str, Counter] = {}
    for doc, clusters in enumerate(chains_per_doc):
        total = sum(len(c) for c in clusters)
        mentions += total
        chains += sum(len(c) > 1 for c in clusters)
        biggest = max(biggest, max((len(c) for c in clusters), default=0) / max(total, 1)) if len(chains_per_doc) == 1 else biggest
        for k, cluster in enumerate(clusters):
            names = [who.get(name_key(m["text"])) for m in cluster]
            counts = Counter(n for n in names if n)
            owner = max(sorted(counts), key=counts.__getitem__) if counts else None  # ties: the first by name
            for n in names:
                if n:
                    named += 1
                    conflated += len(set(counts) - {n}) > 0
                    misplaced += n != owner
                    per_character.setdefault(n, Counter())[(doc, k)] += 1
    if len(chains_per_doc) > 1:  # pieces: the mean over pieces of each piece's biggest share
        shares = [max((len(c) for c in cl), default=0) / max(sum(len(c) for c in cl), 1) for cl in chains_per_doc]
        biggest = sum(shares) / max(len(shares), 1)
    frequent = {n: c for n, c in per_character.items() if sum(c.values()) >= 10}
    cohesions = [max(c.values()) / sum(c.values()) for c in frequent.values()]
    often = [max(c.values()) / sum(c.values()) for c in per_character.values() if sum(c.values()) >= 20]
    bad_titles = [t for t in titles or [] if bad_title(t)]
    return {
        "mentions": mentions, "chains": chains, "biggest": biggest, "named": named,
        "conflated": conflated / max(named, 1), "misplaced": misplaced / max(named, 1),
        "cohesion_min_20": min(often, default=1.0), "bad_titles": bad_titles[:20], "bad_title_count": len(bad_titles),
        "characters_named_10": len(frequent),
        "cohesion_macro": sum(cohesions) / max(len(cohesions), 1),
        "cohesion_min": min(cohesions, default=0.0),
        "cohesion_each": {n: round(max(c.values()) / sum(c.values()), 3) for n, c in sorted(frequent.items())},
        "cohesion_micro": sum(max(c.values()) for c in frequent.values()) / max(sum(sum(c.values()) for c in frequent.values()), 1),
    }


PRONOUNS = frozenset("i me my mine myself you your yours he him his himself she her hers herself it its itself "
                     "we us our ours ourselves they them their theirs themselves".split())


def bad_title(title: str) -> bool:
    """A title no reader can use: a bare pronoun, more than five words, or one ending in a
    pronoun (a clause: "him. I would reconcile him"). The chain-title forms for pronoun-only
    chains ("I (narrator)", "she (unnamed)") and a group's "we" are fine."""
    words = title.replace("(", " ").replace(")", " ").split()
    if not words or "(" in title or title.strip().lower() == "we":
        return not words
    last = words[-1].strip(".,;:!?'\"\u2019\u201c\u201d").lower()
    return len(words) > 5 or last in PRONOUNS


def run_corefs(model: str, path: Path, out: Path, extra: list[str]) -> float:
    command = [sys.executable, "-m", "lfcli.cli", "corefs", str(path), "-m", model, "-o", str(out), "--force", "--quiet", *extra]
    t0 = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - t0


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", default="minilm-l6-long-litbank-coref")
    p.add_argument("--books", nargs="*", default=None, help="file names under litbank/original (default: every listed novel)")
    p.add_argument("--no-pieces", action="store_true", help="whole books only")
    p.add_argument("--quick", action="store_true", help="the first listed novel, whole, only (a few minutes)")
    p.add_argument("--characters", metavar="FILE", nargs="+", default=[str(CHARACTERS)],
                   help="character lists (default: coref_characters.json; coref_characters_more.json has two more "
                        "novels, coref_characters_ten.json ten more; several files: all their novels)")
    p.add_argument("--json", metavar="FILE", default=None)
    p.add_argument("lfcli_options", nargs="*", help="passed to lfcli corefs after --, e.g. -- --max-length 1024")
    args = p.parse_args(argv)

    import torch

    listed = {k: v for f in args.characters for k, v in json.loads(Path(f).read_text()).items() if not k.startswith("_")}
    books = args.books or list(listed)[: 1 if args.quick else None]
    args.no_pieces = args.no_pieces or args.quick
    folder = common.shared_data_dir() / "litbank" / "original"
    if not folder.is_dir():
        raise SystemExit(f"{folder}: missing (the data lives in ../shared/data)")
    info = common.machine_info(torch.device("cpu"))
    common.print_header(f"Coreference on whole novels: {args.model}", info)
    results = {"model": args.model, "options": args.lfcli_options, "machine": info, "books": {}}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for book in books:
            text = (folder / book).read_text(encoding="utf-8")
            out = Path(tmp) / "book.jsonl"
            seconds = run_corefs(args.model, folder / book, out, args.lfcli_options)
            (row,) = [json.loads(line) for line in out.read_text().splitlines()]
            whole = book_figures([[c["mentions"] for c in row["chains"]]], listed[book],
                                 [c.get("name") or "" for c in row["chains"] if c.get("name")])
            whole.update(seconds=seconds, kb=len(text.encode()) / 1000)
            entry = results["books"][book] = {"whole": whole}
            rows.append([book[:28], "whole", f"{whole['kb']:.0f}", whole["mentions"], whole["chains"], f"{whole['biggest']:.0%}",
                         f"{whole['conflated']:.1%}", f"{whole['misplaced']:.1%}",
                         f"{whole['cohesion_macro']:.0%} / {whole['cohesion_micro']:.0%} / {whole['cohesion_min']:.0%}",
                         f"{whole['cohesion_min_20']:.0%}", whole["bad_title_count"], f"{seconds:.0f}"])
            if args.no_pieces:
                continue
            cut = Path(tmp) / "pieces.jsonl"
            cut.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(pieces(text))))
            seconds = run_corefs(args.model, cut, out, args.lfcli_options)
            piece_rows = [json.loads(line) for line in out.read_text().splitlines()]
            part = entry["pieces"] = book_figures([[c["mentions"] for c in r.get("chains") or []] for r in piece_rows], listed[book])
            part["seconds"] = seconds
            rows.append(["", f"{len(piece_rows)} pieces", "", part["mentions"], part["chains"], f"{part['biggest']:.0%}",
                         f"{part['conflated']:.1%}", f"{part['misplaced']:.1%}",
                         f"{part['cohesion_macro']:.0%} / {part['cohesion_micro']:.0%} / {part['cohesion_min']:.0%}",
                         f"{part['cohesion_min_20']:.0%}", "", f"{seconds:.0f}"])
    common.print_table(["novel", "as", "KB", "mentions", "chains", "biggest", "conflated", "misplaced",
                        "cohesion macro / micro / min", "min (20+)", "bad titles", "s"], rows)
    common.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
