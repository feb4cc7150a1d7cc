"""Narrators who take turns inside the prose, told apart by what the other people call them.

A book of headed parts says who writes each (narrators.py). Some books change narrator inside
the prose instead: a visitor's diary hands over to the housekeeper's story ("she commenced"), a
man's letters copy out a woman's journal. There is no heading to read, but the people in each
part speak to its narrator by name: in one part the narrator answers to "Mr. Lockwood", in
another to "Nelly" and "Mrs. Dean". speakers.give_quotes collects those names, each with the
gender its chain gives it (`votes`: the position of the name said, and "m" or "f"), and this
module gives each chapter the gender most of its votes say (chapter_voices). Where a narrator
is called by a man's names in some chapters and by a woman's in others, at least
LEAST_CHAPTERS chapters each, the two are two narrators, each with the narration "I" of their
chapters (a chapter with no votes keeps the narrator of the chapter before it).

What it cannot do: tell apart two narrators of one gender (two brothers' letters), nor cut
inside a chapter (a frame narrator's few lines at a chapter's head stay with the chapter's
voice); a book without chapter headings is left as one narrator.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

CHAPTER = re.compile(r"^[ \t]*(?:CHAPTER|Chapter)[ \t]+(?:[IVXLC]+|\d+)\b", re.MULTILINE)
LEAST_VOTES = 2  # names said to the narrator in a chapter before it has a voice of its own
LEAST_CHAPTERS = 3  # chapters of each gender, by their own votes, before a narrator is two


def chapter_starts(text: str) -> list[int]:
    """The first character of each chapter ("CHAPTER IV", "Chapter 12" at a line's start), with
    0 for the text before the first."""
    return [0] + [m.start() for m in CHAPTER.finditer(text) if m.start() > 0]


def _counts(starts: list[int], votes: list[tuple[int, str]]) -> list[Counter]:
    counts = [Counter() for _ in starts]
    for at, gender in votes:
        counts[bisect.bisect_right(starts, at) - 1][gender] += 1
    return counts


def own_voices(starts: list[int], votes: list[tuple[int, str]]) -> list[str | None]:
    """Each chapter's narrator gender by its own votes: the one at least LEAST_VOTES of them say
    and more than twice the other; else None."""
    out: list[str | None] = []
    for c in _counts(starts, votes):
        (top, k), *rest = c.most_common(2) or [(None, 0)]
        out.append(top if k >= LEAST_VOTES and (not rest or k > 2 * rest[0][1]) else None)
    return out


def two_voices(starts: list[int], votes: list[tuple[int, str]]) -> list[str | None] | None:
    """Each chapter's voice where the narrator is two (both genders in at least LEAST_CHAPTERS
    chapters by their own votes), else None. A chapter without a voice of its own takes the
    one before it (the first chapters, the first voice), but where the voice changes between two
    chapters with voices, it changes at the first chapter between them whose votes, one or more,
    all say the new voice (a diary handed over at a chapter's head, the new writer's name said
    once there)."""
    own = own_voices(starts, votes)
    seen = Counter(g for g in own if g)
    if len(seen) != 2 or min(seen.values()) < LEAST_CHAPTERS:
        return None
    counts = _counts(starts, votes)
    out, last = [], next(g for g in own if g)
    for c, g in enumerate(own):
        if g is None:
            after = next((x for x in own[c + 1:] if x), None)
            if after is not None and after != last and set(counts[c]) == {after}:
                g = after  # the new voice's names, said too few times to be a voice alone
        last = g or last
        out.append(last)
    return out
