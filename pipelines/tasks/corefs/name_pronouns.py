"""Which names a book uses alone for a woman, by the pronouns that follow them.

"Mr. Peggotty" makes "Peggotty" a man's name by the honorific rule (entities.NameForms), but
David Copperfield's "Peggotty", said alone 475 times, is his nurse, Mr. Peggotty's sister:
"Peggotty ... she", "Peggotty ... her". So a name the book says alone (no honorific nor other name before it)
and follows, within its sentence, by "she" or "her" at least LEAST times and more than twice
as often as by "he", "his" or "him" is a woman's name alone, whatever honorific it also takes.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

LEAST = 5
_ALONE_THEN_PRONOUN = re.compile(r"\b([A-Z][a-z]{2,})\b[^.!?;:\"\u201c\u201d]{0,40}?\b(she|her|he|his|him)\b")
_WORD_BEFORE = re.compile(r"[A-Z][\w'\u2019]*\.?[ \t]*\n?[ \t]*$")  # "Mr. ", "Clara ": not alone


def women_alone(text: str, names: set[str], quotes: list[tuple[int, int]] = ()) -> set[str]:
    """Of `names` (lower case), those the book says alone in its narration (outside `quotes`,
    the (start, end) of its quotes in order) mostly before "she" and "her". A name said to
    someone in a quote ("'Trotwood,' said my aunt; she...") says nothing of its gender."""
    she, he = Counter(), Counter()
    starts = [a for a, _ in quotes]
    for m in _ALONE_THEN_PRONOUN.finditer(text):
        word = m.group(1).lower()
        if word not in names or _WORD_BEFORE.search(text, max(0, m.start() - 16), m.start()):
            continue
        k = bisect.bisect_right(starts, m.start()) - 1
        if k < 0 or m.start() >= quotes[k][1]:
            (she if m.group(2) in ("she", "her") else he)[word] += 1
    return {w for w, k in she.items() if k >= LEAST and k > 2 * he[w]}
