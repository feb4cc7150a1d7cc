"""A file of several stories: `lfcli corefs` on passages of four LitBank books joined into one
text, two of them told in the first person, and how many mentions sit in chains that cross
from one story to another (always an error: no character is in two of these books).

The stories (from ../shared/data/litbank/original, each a run of whole paragraphs of about
STORY_WORDS words from the middle of the book, so not LitBank's annotated openings):
  The Fall of the House of Usher (Poe; first person), Bartleby, the Scrivener (Melville; first
  person), The Masque of the Red Death (Poe; third person), The Legend of Sleepy Hollow
  (Irving; third person), joined with blank lines in that order.

    python benchmarks/coref_collection.py                       # the bundled model
    python benchmarks/coref_collection.py -m base --json out.json
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

STORIES = ("932_the_fall_of_the_house_of_usher.txt", "11231_bartleby_the_scrivener_a_story_of_wallstreet.txt",
           "1064_the_masque_of_the_red_death.txt", "41_the_legend_of_sleepy_hollow.txt")
STORY_WORDS = 2500


def passage(text: str, words: int) -> str:
    """Whole paragraphs from the middle of `text` (or its start, when short), about `words` long."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    total = sum(len(p.split()) for p in paragraphs)
    skip = max(0, total // 2 - words // 2) if total > 2 * words else 0
    out, seen, taken = [], 0, 0
    for p in paragraphs:
        n = len(p.split())
        seen += n
        if seen <= skip:
            continue
        out.append(" ".join(p.split()))
        taken += n
        if taken >= words:
            break
    return "\n\n".join(out)


def collection(folder: Path, words: int) -> tuple[str, list[tuple[int, int]]]:
    """The joined text and each story's character range in it."""
    text, ranges = "", []
    for name in STORIES:
        part = passage((folder / name).read_text(encoding="utf-8"), words)
        start = len(text) + (2 if text else 0)
        text = f"{text}\n\n{part}" if text else part
        ranges.append((start, start + len(part)))
    return text, ranges


def crossing(row: dict, ranges: list[tuple[int, int]]) -> tuple[int, int, list[str]]:
    """(mentions, mentions in chains that cross stories, the names of those chains)."""
    total = across = 0
    names = []
    for chain in row["chains"]:
        stories = {next(i for i, (a, z) in enumerate(ranges) if a <= m["start"] < z + 2) for m in chain["mentions"]}
        total += len(chain["mentions"])
        if len(stories) > 1:
            across += len(chain["mentions"])
            names.append(f"{chain['name']} ({len(chain['mentions'])})")
    return total, across, names


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", default=None, help="a coreference model, bundled name or tier (default: the bundled one)")
    p.add_argument("--quick", action="store_true", help="passages of 800 words (a few seconds)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    folder = common.shared_data_dir() / "litbank" / "original"
    if not all((folder / name).is_file() for name in STORIES):
        raise SystemExit(f"{folder}: the LitBank originals are missing (the data lives in ../shared/data)")
    started, info = common.start_evaluation(args, f"Coreference on a file of four stories: {args.model or 'bundled'}")
    import lfcli
    from lfcli.pipelines.tasks.corefs.stories import story_breaks

    text, ranges = collection(folder, 800 if args.quick else STORY_WORDS)
    starts = [m.end() for m in re.finditer(r"\n[ \t]*\n", text)]
    breaks = story_breaks(text, starts)
    joins = [a for a, _ in ranges[1:]]
    (row,) = lfcli.corefs([text], model=args.model)
    total, across, names = crossing(row, ranges)
    found = sum(1 for j in joins if j in breaks)
    print(f"{len(STORIES)} stories, {len(text.split()):,} words, {len(starts) + 1} paragraphs: {found} of {len(joins)} "
          f"joins found by story breaks ({len(breaks) - found} breaks elsewhere)")
    print(f"{total:,} mentions in {len(row['chains'])} chains; {across:,} ({100 * across / max(total, 1):.1f}%) in chains "
          f"that cross two stories{': ' + ', '.join(names[:8]) if names else ''}")
    results = {"model": args.model or "bundled", "machine": info, "stories": list(STORIES), "words": len(text.split()),
               "joins_found": found, "joins": len(joins), "other_breaks": len(breaks) - found, "mentions": total,
               "mentions_across": across, "share_across": 100 * across / max(total, 1), "chains_across": names}
    return common.finish_evaluation(args, results, started)


if __name__ == "__main__":
    main()
