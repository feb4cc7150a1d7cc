"""The cast of a corefs run: what `lfcli corefs book.txt` says on a terminal when it is done,
each document's biggest chains, named or not, with their mention counts, each under the title
the page lists it by (view.chain_titles: "I (narrator)" for a narrator the model could not
name). The rows hold every mention (half a megabyte for a novel); a reader at a terminal wants
the characters first."""

from __future__ import annotations

from ...view.chain_titles import biggest_first, chain_name
from ...wording import plural

TOP = 15  # chains shown per document
DOCUMENTS = 3  # documents whose cast is shown; the rest are counted (lfcli show draws them all)


def cast_of(row: dict, top: int = TOP) -> list[tuple[int, str]]:
    """(mentions, title) of the row's `top` biggest chains, named or not, biggest first (ties
    by first mention)."""
    chains = biggest_first(row.get("chains") or [])[:top]
    return [(len(c.get("mentions") or []), chain_name(c, row.get("quotes"))) for c in chains]


class CastReport:
    """Kept while rows stream by (`add`), the closing `lines()` of a run: a header and one line
    per chain for each of the first DOCUMENTS documents with chains."""

    def __init__(self):
        self.casts: list[tuple[str, int, list[tuple[int, str]]]] = []  # (id, chains, top)
        self.more = 0

    def add(self, row: dict) -> None:
        if row.get("error") or not row.get("chains"):
            return
        if len(self.casts) == DOCUMENTS:
            self.more += 1
            return
        self.casts.append((str(row.get("id")), len(row["chains"]), cast_of(row)))

    def lines(self) -> list[str]:
        out = []
        for doc_id, chains, top in self.casts:
            shown = f"the {len(top)} biggest of {chains} chains" if chains > len(top) else plural(chains, "chain")
            out.append(f"the cast of {doc_id} ({shown}, by mentions):")
            out.extend(f"  {count:>6,}  {title}" for count, title in top)
        if self.more:
            out.append(f"and {plural(self.more, 'more document')} with chains "
                       "(`lfcli show OUTPUT` draws every chain of every document)")
        return out
