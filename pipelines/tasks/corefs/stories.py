"""Where one story ends and the next begins, in a file of several (an anthology, the excerpts
of a folder joined into one text): no chain crosses such a break, not even by name.

People's names find most such breaks (entities.scene_breaks), but two stories told in the
first person may name nobody for pages, and a story's "I" then took the last story's narrator.
So a story break is read from the text around a paragraph start, whoever the mentions are.
The signals, each measured on the STORY_WIDTH words before and after the paragraph start:

  cosine      of the two sides' content-word counts (no stop words, three letters or more):
              two stories speak of other things
  names back  the share of the after side's names (capitalised words in mid-sentence, not
              COMMON_CAPITALS: places and days every story may have) whose word the text used
              ANYWHERE before: a novel's new chapter mostly names people met before, a new
              story nobody
  names on    the share of the before side's names that the text uses ANYWHERE after: a
              novel's people come back, a finished story's never do
  heading     the paragraph opens, under a line or two at most, with a first division
              ("CHAPTER I", "Chapter 1", "BOOK ONE", "PART I", "VOLUME I", "PROLOGUE")
  narrator    the change of the narrator's share of the words (I, me, my outside quotes;
              |sqrt(before) - sqrt(after)|): a story told in the first person next to one
              that is not

Each name share is smoothed ((known + 1) / (names + 2)), so that a side naming nobody says
nothing either way; the signals are added into one score (`story_score`: WEIGHTS on
ln(cosine + 0.01), the two shares, the heading and the narrator change, plus a constant), a
break where it is positive; a run of such paragraph starts close together gives one break,
the one of highest score. The names carry most of it: two first-person stories about like
things (cosine 0.2-0.3) break since nobody is met again, and a novel's chapter in a new place
(cosine 0.15) does not, since its people come back.

Chosen on the TRAIN split only (python benchmarks/story_breaks.py --fit): the weights are a
balanced logistic regression of the signals at the joins of 300 files of five LitBank train
excerpts (1,200 joins; in random orders, every other file with a chapter heading and/or a title
line before each excerpt; joined as benchmarks/eval_coref.py does) against every paragraph
start of the 63 train-split novels that are not among benchmarks/coref_characters*.json's
fifteen (119,112 places, none a story break); the constant is the lowest at which none of those
novels has more than one break: 99.3% of the train joins found, 4 breaks in the 63 novels. On
held-out data (benchmarks/story_breaks.py): 96.8% of the 800 joins of 200 random files of five
dev excerpts found, no break elsewhere; one break in the fifteen novels (the old rules, a
content-word cosine at 1,000 words chosen on the 8 dev joins: 88.2%, and 85 breaks, 34 of them
in David Copperfield).

The sides are slid along the text once, their counts, dot products and known names kept up
to date word by word, so a book costs one pass over its words (David Copperfield: 1 s).
"""

from __future__ import annotations

import bisect
import math
import re
from array import array
from collections import Counter
from typing import NamedTuple

STORY_WIDTH = 2000  # words looked at on each side of a paragraph start
MIN_SIDE = 500  # words a side needs before it says anything (the ends of a text)
# The old rules (a cosine at 1,000 words; unlike_words, no_shared_capitals), which story_breaks
# no longer uses: at STORY_WIDTH they find no join the score misses, and break David Copperfield
# 8 times.
UNLIKE = 0.10
UNLIKE_UNNAMED = 0.17
# The score's weights (see the module's notes; benchmarks/story_breaks.py --fit).
WEIGHTS = {"constant": -10.585, "cosine": -10.052, "names_back": -17.008, "names_on": -15.507, "heading": 3.102,
           "narrator": 3.381}

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
chapter book volume part
""".split())
# Capitalised words every story may have: no evidence that two sides are one story (with the
# stop words: a capitalised "Of" in a title line is nobody's name).
COMMON_CAPITALS = frozenset("""
i i'm i'll i've i'd mr mrs miss sir madam lady lord god oh o yes no well then the a an and but he she it they
we you what why how who my his her our your their this that there here now dear
dr mister master madame monsieur heaven christ christian bible church
chapter book volume part letter contents preface prologue epilogue introduction end finis
monday tuesday wednesday thursday friday saturday sunday christmas easter
january february march april june july august september october november december
north south east west street road lane square hall house park court river bridge new old
england english london britain british france french paris europe america american
german germany italy italian spain spanish scotland scotch scottish ireland irish india indian
""".split())
FIRST_PERSON = frozenset("i me my myself mine i'm i'll i've i'd".split())
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\u2019]*|[.!?\"\u201c\u201d]|\n[ \t\r\f\v]*\n")
_QUOTE_MARKS = {'"': None, "\u201c": True, "\u201d": False}  # what each makes `quoted` (" turns it over)
# A first division: a text (or a volume of it) begins here.
_FIRST_HEADING = re.compile(r"\s*(?:[^\n.!?]{1,60}\n\s*){0,2}"  # a title line or two
                            r"(?:(?:chapter|book|part|volume|letter|phase)\s+(?:i|1|one|the\s+first|first)\b|"
                            r"(?:book|part|chapter)\s+first\b|prologue\b)", re.IGNORECASE)


class Words:
    """A text's words, compactly (a book's million words in a few MB, not as a million
    tuples): each word's character offset, its number in `vocabulary` (lower case), whether it
    is a content word (not a stop word, three letters or more), whether it is capitalised in
    mid-sentence (a name) and whether it is the narrator's (I, me, my outside quotes).
    `words[k]` is (offset, word, capitalised)."""

    def __init__(self):
        self.starts, self.ids = array("i"), array("i")
        self.content, self.capital, self.person = bytearray(), bytearray(), bytearray()
        self.vocabulary: list[str] = []
        self._number: dict[str, int] = {}

    def add(self, start: int, word: str, capital: bool, narrator: bool = False) -> None:
        number = self._number.setdefault(word, len(self.vocabulary))
        if number == len(self.vocabulary):
            self.vocabulary.append(word)
        self.starts.append(start)
        self.ids.append(number)
        self.content.append(word not in STOP_WORDS and len(word) > 2)
        self.capital.append(capital)
        self.person.append(narrator)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        return self.starts[k], self.vocabulary[self.ids[k]], bool(self.capital[k])


def story_words(text: str) -> Words:
    """Every word of `text`: its offset, the word in lower case, whether it is capitalised in
    mid-sentence and whether it is the narrator's (see Words). A paragraph starts a sentence
    and ends a quote; a straight quote mark opens a quote or closes the open one."""
    out = Words()
    sentence_start, quoted = True, False
    for m in _TOKEN.finditer(text):
        token = m.group()
        if not token[0].isalpha():
            sentence_start = True
            if token in _QUOTE_MARKS:
                quoted = _QUOTE_MARKS[token] if token != '"' else not quoted
            elif token[0] == "\n":
                quoted = False
            continue
        lower = token.lower()
        capital = (token[0].isupper() and not sentence_start and not token.isupper()
                   and lower not in COMMON_CAPITALS and lower not in STOP_WORDS)
        out.add(m.start(), lower, capital, lower in FIRST_PERSON and not quoted)
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


class _Known:
    """The names of the two sides (a _Sides of capitalised words) that the text uses elsewhere:
    `back` counts the after side's names whose word came anywhere before the point, `on` the
    before side's names whose word comes anywhere after it. `total`: each name's count in the
    whole text; `seen`: its count before the point."""

    def __init__(self, names: _Sides, total: Counter):
        self.names, self.total, self.seen = names, total, Counter()
        self.back = self.on = 0

    def enter(self, word: int) -> None:
        """A name comes into the after side (at its far end)."""
        self.names.move(word, 1, 1)
        self.back += self.seen[word] > 0

    def cross(self, word: int) -> None:
        """A name passes the point, from the after side to the before side."""
        before, after = self.names.side
        self.names.move(word, 1, -1)
        self.back -= self.seen[word] > 0
        self.seen[word] += 1
        if self.seen[word] == 1:  # met for the first time: the after side's others are known now
            self.back += after[word]
        later = self.total[word] - self.seen[word]
        if later:
            self.on += 1
        else:  # its last use: the before side's others come back no more
            self.on -= before[word]
        self.names.move(word, 0, 1)

    def leave(self, word: int) -> None:
        """A name leaves the before side (at its far end)."""
        self.names.move(word, 0, -1)
        self.on -= self.total[word] - self.seen[word] > 0


class Likeness(NamedTuple):
    """What the two sides of a paragraph start have in common (see the module's notes)."""
    cosine: float  # of the content-word counts
    shared: int  # distinct names on both sides
    names_back: float  # smoothed share of the after side's names used before
    names_on: float  # smoothed share of the before side's names used after
    narrator: float  # |sqrt(the narrator's share of the words before) - sqrt(... after)|


def side_likeness(words: Words, at: list[int], width: int = STORY_WIDTH) -> list[Likeness | None]:
    """For each word index in `at` (ascending): the Likeness of the `width` words before and
    after it, or None where the text has fewer than MIN_SIDE words on a side (near an end)."""
    content, names = _Sides(), _Sides()
    known = _Known(names, Counter(w for w, cap in zip(words.ids, words.capital) if cap))
    person = [0, 0]  # first-person words before, after
    before_lo = before_hi = after_hi = 0  # before: words[before_lo:before_hi], after: [before_hi:after_hi]
    out = []
    for i in at:
        for k in range(after_hi, min(len(words), i + width)):  # into after
            if words.content[k]:
                content.move(words.ids[k], 1, 1)
            if words.capital[k]:
                known.enter(words.ids[k])
            person[1] += words.person[k]
        after_hi = max(after_hi, min(len(words), i + width))
        for k in range(before_hi, i):  # from after to before
            if words.content[k]:
                content.move(words.ids[k], 1, -1)
                content.move(words.ids[k], 0, 1)
            if words.capital[k]:
                known.cross(words.ids[k])
            person[0] += words.person[k]
            person[1] -= words.person[k]
        before_hi = max(before_hi, i)
        for k in range(before_lo, max(before_lo, i - width)):  # out of before
            if words.content[k]:
                content.move(words.ids[k], 0, -1)
            if words.capital[k]:
                known.leave(words.ids[k])
            person[0] -= words.person[k]
        before_lo = max(before_lo, i - width)
        if i < MIN_SIDE or len(words) - i < MIN_SIDE:
            out.append(None)
            continue
        sizes = (before_hi - before_lo, after_hi - before_hi)
        before, after = (sum(side.values()) for side in names.side)
        narrator = abs(math.sqrt(person[0] / sizes[0]) - math.sqrt(person[1] / sizes[1]))
        out.append(Likeness(content.cosine(), names.shared, (known.back + 1) / (after + 2),
                            (known.on + 1) / (before + 2), narrator))
    return out


def first_heading(text: str, at: int) -> bool:
    """Whether the paragraph at character `at` opens with a first division ("CHAPTER I",
    "Book One", "PART 1", "PROLOGUE", ...), maybe under a line or two (a title): where a
    text, or a volume of one, begins."""
    return _FIRST_HEADING.match(text, at, at + 200) is not None


def story_score(seen: Likeness, heading: bool, weights: dict = WEIGHTS) -> float:
    """How much a paragraph start looks like a story's beginning: positive where it is one."""
    return (weights["constant"] + weights["cosine"] * math.log(seen.cosine + 0.01)
            + weights["names_back"] * seen.names_back + weights["names_on"] * seen.names_on
            + weights["heading"] * heading + weights["narrator"] * seen.narrator)


def unlike_words(cosine: float) -> bool:
    return cosine < UNLIKE


def no_shared_capitals(cosine: float, shared: int) -> bool:
    return shared == 0 and cosine < UNLIKE_UNNAMED


def story_signals(text: str, candidates: list[int]) -> tuple[list[int], list[tuple[Likeness, bool] | None]]:
    """For the candidates (character offsets of paragraph starts, ascending): their word
    indices, and for each its sides' Likeness and whether it opens with a first heading (None
    near an end of the text)."""
    words = story_words(text)
    at = [bisect.bisect_left(words.starts, c) for c in candidates]
    return at, [None if seen is None else (seen, first_heading(text, c))
                for c, seen in zip(candidates, side_likeness(words, at))]


def pick_breaks(candidates: list[int], at: list[int], scores: list[float]) -> list[int]:
    """The candidates that score above 0, one of a run close together (at most MIN_SIDE words
    apart, nothing between scoring 0 or less): the run's highest. `at`: their word indices."""
    found, run = [], []  # run: (score, candidate) of flagged candidates close together
    last = None  # the word index of the run's last candidate
    for candidate, i, score in zip(candidates, at, scores):
        apart = score > 0
        if run and (not apart or i - last > MIN_SIDE):  # a run ends at a place alike, or far on
            found.append(max(run)[1])
            run = []
        if apart:
            run.append((score, candidate))
            last = i
    if run:
        found.append(max(run)[1])
    return found


def story_breaks(text: str, candidates: list[int], weights: dict = WEIGHTS) -> list[int]:
    """The candidates (character offsets of paragraph starts, ascending) where one story ends
    and another begins (see the module's notes)."""
    if not candidates:
        return []
    at, signals = story_signals(text, candidates)
    return pick_breaks(candidates, at, [-math.inf if s is None else story_score(*s, weights) for s in signals])
