"""Where one story ends and the next begins, in a file of several (an anthology, the excerpts
of a folder joined into one text): no chain crosses such a break, not even by name.

People's names find most such breaks (entities.scene_breaks), but two stories told in the
first person may name nobody for pages, and a story's "I" then took the last story's narrator.
So a story break is read from the words around a paragraph start, whoever the mentions are:

  unlike_words        the content words of the STORY_WIDTH words before and after have a
                      cosine below UNLIKE: the two sides speak of other things
  no_shared_capitals  neither side's capitalised words (names, places, in mid-sentence)
                      appear on the other side; with a cosine below UNLIKE_UNNAMED too, two
                      stories

Chosen on the LitBank dev excerpts joined five to a document (8 joins) and on three whole
novels (Alice, Pride and Prejudice, Treasure Island; 4,502 paragraph starts): at a join the
cosine is 0.03-0.20 (five below 0.10), in the novels never below 0.129, and never below 0.183
where the sides share no capitalised word (three joins lie between 0.10 and 0.17 with none
shared). The two rules find 7 of the 8 joins and no place in the novels; people's names
(scene breaks) find the eighth. Within a run of flagged paragraph starts close together, the
break is the one whose sides are least alike.

The sides are slid along the text once, their counts and dot products kept up to date word
by word, so a book costs one pass over its words.
"""

from __future__ import annotations

import bisect
import math
import re
from array import array
from collections import Counter

STORY_WIDTH = 1000  # words looked at on each side of a paragraph start
UNLIKE = 0.10  # content-word cosine below which the two sides are two stories
UNLIKE_UNNAMED = 0.17  # ... and below which they are when they share no capitalised word
MIN_SIDE = STORY_WIDTH // 4  # words a side needs before it says anything (the ends of a text)

# Words that say nothing of what a passage is about (and the honorifics, which every story has).
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at back be because been before being below
between both but by came can come could did do does doing done down during each even ever every few for from
further get go going got had has have having he her here hers herself him himself his how i if in into is it
its itself just know like little made make man may me might more most much must my myself never no nor not
now of off on once one only or other our ours ourselves out over own said same say see shall she should so
some such than that the their theirs them themselves then there these they thing think this those though
through thought time to too two under until up upon us very was way we well went were what when where which
while who whom why will with without would yes you your yours yourself mr mrs miss sir
""".split())
# Capitalised words every story has: no evidence that two sides are one story.
COMMON_CAPITALS = frozenset("""
i i'm i'll i've i'd mr mrs miss sir madam lady lord god oh o yes no well then the a an and but he she it they
we you what why how who my his her our your their this that there here now dear
""".split())
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\u2019]*|[.!?\"\u201c\u201d]")
_SENTENCE_END = frozenset('.!?"\u201c\u201d')


class Words:
    """A text's words, compactly (a book's million words in a few MB, not as a million
    tuples): each word's character offset, its number in `vocabulary` (lower case), whether it
    is a content word (not a stop word, three letters or more) and whether it is capitalised
    in mid-sentence. `words[k]` is (offset, word, capitalised)."""

    def __init__(self):
        self.starts, self.ids = array("i"), array("i")
        self.content, self.capital = bytearray(), bytearray()
        self.vocabulary: list[str] = []
        self._number: dict[str, int] = {}

    def add(self, start: int, word: str, capital: bool) -> None:
        number = self._number.setdefault(word, len(self.vocabulary))
        if number == len(self.vocabulary):
            self.vocabulary.append(word)
        self.starts.append(start)
        self.ids.append(number)
        self.content.append(word not in STOP_WORDS and len(word) > 2)
        self.capital.append(capital)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        return self.starts[k], self.vocabulary[self.ids[k]], bool(self.capital[k])


def story_words(text: str) -> Words:
    """Every word of `text`: its offset, the word in lower case, whether it is capitalised in
    mid-sentence (see Words)."""
    out = Words()
    sentence_start = True
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token in _SENTENCE_END:
            sentence_start = True
            continue
        lower = token.lower()
        capital = token[0].isupper() and not sentence_start and not token.isupper() and lower not in COMMON_CAPITALS
        out.add(m.start(), lower, capital)
        sentence_start = False
    return out


class _Sides:
    """Two multisets of words, before and after a point, with their dot product, squared
    norms and the number of distinct words both hold, kept up to date as words move."""

    def __init__(self):
        self.side = (Counter(), Counter())
        self.dot = 0
        self.norm2 = [0, 0]
        self.shared = 0

    def move(self, word: int, side: int, step: int) -> None:
        """Add (`step` 1) or remove (-1) one `word` on `side` (0 before, 1 after)."""
        mine, other = self.side[side], self.side[1 - side]
        had = mine[word]
        mine[word] = had + step
        self.dot += step * other[word]
        self.norm2[side] += 2 * had * step + 1
        if other[word] and (had == 0) != (mine[word] == 0):
            self.shared += 1 if had == 0 else -1
        if not mine[word]:
            del mine[word]

    def cosine(self) -> float:
        norm = math.sqrt(self.norm2[0] * self.norm2[1])
        return self.dot / norm if norm else 1.0


def side_likeness(words: Words, at: list[int], width: int = STORY_WIDTH) -> list:
    """For each word index in `at` (ascending): (content-word cosine of the `width` words
    before and after, capitalised words both sides share), or None near an end of the text."""
    content, capitals = _Sides(), _Sides()
    before_lo = before_hi = after_hi = 0  # before: words[before_lo:before_hi], after: [before_hi:after_hi]

    def move(k: int, side: int, step: int) -> None:
        word = words.ids[k]
        if words.content[k]:
            content.move(word, side, step)
        if words.capital[k]:
            capitals.move(word, side, step)

    out = []
    for i in at:
        for k in range(after_hi, min(len(words), i + width)):  # into after
            move(k, 1, 1)
        after_hi = max(after_hi, min(len(words), i + width))
        for k in range(before_hi, i):  # from after to before
            move(k, 1, -1)
            move(k, 0, 1)
        before_hi = max(before_hi, i)
        for k in range(before_lo, max(before_lo, i - width)):  # out of before
            move(k, 0, -1)
        before_lo = max(before_lo, i - width)
        near_end = i < MIN_SIDE or len(words) - i < MIN_SIDE
        out.append(None if near_end else (content.cosine(), capitals.shared))
    return out


def unlike_words(cosine: float) -> bool:
    return cosine < UNLIKE


def no_shared_capitals(cosine: float, shared: int) -> bool:
    return shared == 0 and cosine < UNLIKE_UNNAMED


def story_breaks(text: str, candidates: list[int]) -> list[int]:
    """The candidates (character offsets of paragraph starts, ascending) where one story ends
    and another begins (see the module's notes)."""
    if not candidates:
        return []
    words = story_words(text)
    at = [bisect.bisect_left(words.starts, c) for c in candidates]
    found, run = [], []  # run: (cosine, candidate) of flagged candidates close together
    last = None  # the word index of the run's last candidate
    for candidate, i, seen in zip(candidates, at, side_likeness(words, at)):
        apart = seen is not None and (unlike_words(seen[0]) or no_shared_capitals(*seen))
        if run and (not apart or i - last > MIN_SIDE):  # a run ends at a place alike, or far on
            found.append(min(run)[1])
            run = []
        if apart:
            run.append((seen[0], candidate))
            last = i
    if run:
        found.append(min(run)[1])
    return found
