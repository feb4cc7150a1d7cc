"""Quoted speech in a text: where each quote is (quote_spans), and which names in a quote are
the person spoken to (is_vocative).

A quote's "I" is its speaker and its "you" the person addressed; a name set off by commas
inside a quote ("Upon my word, Caroline, I should think...") is the person addressed as well,
never the speaker. A window model often links such a name to the speaker's "I" (both sit in
the speaker's sentence), and one link of the kind puts a brother and sister in one chain: so
the profile of a vocative name says "you" in its quote (entities.Mention.person), and
entities.speakers_differ keeps it from the speaker's chain.
"""

from __future__ import annotations

import re

_OPEN_CLOSE = {"\u201c": "\u201d", "\u2018": "\u2019", '"': '"', "'": "'"}
_QUOTE_MARKS = frozenset(_OPEN_CLOSE) | frozenset(_OPEN_CLOSE.values())
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def quote_spans(text: str) -> list[tuple[int, int]]:
    """The character ranges of quoted speech, in order: between “ and ”, ‘ and ’, or straight
    quotes; a straight or curly single quote opens only after a space or a paragraph start
    and closes only before one or before punctuation (so "Alice's" and "don't" are not
    quotes); a paragraph break closes any open quote (speech that goes on in the next
    paragraph reopens there)."""
    spans: list[tuple[int, int]] = []
    breaks = [m.start() for m in _PARAGRAPH_BREAK.finditer(text)] + [len(text)]
    start = 0
    for end in breaks:
        _quotes_in(text, start, end, spans)
        start = end
    return spans


def _quotes_in(text: str, lo: int, hi: int, spans: list) -> None:
    opened: tuple[int, str] | None = None
    for i in range(lo, hi):
        c = text[i]
        if c not in _QUOTE_MARKS:
            continue
        before = text[i - 1] if i > lo else " "
        after = text[i + 1] if i + 1 < hi else " "
        if opened is None:
            single = c in "'\u2018"
            if c in _OPEN_CLOSE and (not single or (not before.isalnum() and after.isalpha())):
                opened = (i, _OPEN_CLOSE[c])
        elif c == opened[1] or (opened[1] == "'" and c == "\u2019") or (opened[1] == "\u2019" and c == "'"):
            if c in "'\u2019" and after.isalpha():
                continue  # an apostrophe inside the quote ("don't")
            spans.append((opened[0], i + 1))
            opened = None



# Words a vocative may follow inside a quote ("my dear Lizzy", "Oh, Jane").
_BEFORE_VOCATIVE = frozenset("my dear dearest oh o ah poor".split())
# After a comma, the words that make the name the subject of a clause, not the person spoken to
# ("Jane, who is ill, ..."; "Jane, and Lizzy").
_NOT_VOCATIVE_AFTER = re.compile(r",\s*(?:who|whom|whose|which|that|and|or|nor|&)\b", re.IGNORECASE)


def is_vocative(text: str, start: int, end: int, quote: tuple[int, int]) -> bool:
    """Whether the mention text[start:end], inside the quote text[quote[0]:quote[1]], is set off
    as the person spoken to: at the quote's opening or after a comma or dash (past "my dear",
    "oh"), and before a comma, "!", "?", "." or the quote's close. "“Lizzy, you must...”",
    "“...for Darcy, Caroline,” cried her brother", "“Much more rational, my dear Caroline, I
    dare say”"; not "“Jane is ill”", not "“Jane, who...”"."""
    q0, q1 = quote
    before = text[q0 + 1:start].split()
    while before and before[-1].lower().strip(",!") in _BEFORE_VOCATIVE:
        before = before[:-1]
    opened = not before
    if not opened and not before[-1].endswith((",", "\u2014", "--")):
        return False
    after = text[end:q1 - 1]
    stripped = after.lstrip()
    if stripped and stripped[0] not in ",!?.;":
        return False
    return not _NOT_VOCATIVE_AFTER.match(stripped)
