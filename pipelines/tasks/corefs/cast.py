"""The cast of a corefs run: what `lfcli corefs book.txt` says on a terminal when it is done,
the named chains of each document biggest first with their mention counts. The rows hold every
mention (half a megabyte for a novel); a reader at a terminal wants the characters first."""

from __future__ import annotations

from ...wording import plural

TOP = 15  # named chains shown per document
DOCUMENTS = 3  # documents whose cast is shown; the rest are counted (lfcli show draws them all)


def cast_of(row: dict, top: int = TOP) -> list[tuple[int, str]]:
    """(mentions, name) of the row's named chains, biggest first (ties by name), at most `top`."""
    named = [(len(c.get("mentions") or []), c["name"]) for c in row.get("chains") or [] if c.get("name")]
    return sorted(named, key=lambda t: (-t[0], t[1]))[:top]


class CastReport:
    """Kept while rows stream by (`add`), the closing `lines()` of a run: a header and one line
    per character for each of the first DOCUMENTS documents with chains."""

    def __init__(self):
        self.casts: list[tuple[str, int, list[tuple[int, str]]]] = []  # (id, named chains, top)
        self.more = 0

    def add(self, row: dict) -> None:
        if row.get("error") or not row.get("chains"):
            return
        if len(self.casts) == DOCUMENTS:
            self.more += 1
            return
        named = sum(1 for c in row["chains"] if c.get("name"))
        self.casts.append((str(row.get("id")), named, cast_of(row)))

    def lines(self) -> list[str]:
        out = []
        for doc_id, named, top in self.casts:
            if not top:
                out.append(f"the cast of {doc_id}: no named chains")
                continue
            shown = f"the {len(top)} biggest of {named} named chains" if named > len(top) else plural(named, "named chain")
            out.append(f"the cast of {doc_id} ({shown}, by mentions):")
            out.extend(f"  {count:>6,}  {name}" for count, name in top)
        if self.more:
            out.append(f"and {plural(self.more, 'more document')} with chains "
                       "(`lfcli show OUTPUT` draws every chain of every document)")
        return out
