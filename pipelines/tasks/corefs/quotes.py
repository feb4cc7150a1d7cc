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

import bisect
import re
from collections import Counter

_OPEN_CLOSE = {"\u201c": "\u201d", "\u2018": "\u2019", '"': '"', "'": "'"}
_QUOTE_MARKS = frozenset(_OPEN_CLOSE) | frozenset(_OPEN_CLOSE.values())
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_CONTRACTION = re.compile(r"(?:s|t|ll|re|ve|d|m)(?![^\W\d_])", re.IGNORECASE)


def quote_spans(text: str) -> list[tuple[int, int]]:
    """The character ranges of quoted speech, in order: between “ and ”, ‘ and ’, or straight
    quotes; a straight or curly single quote opens only after a space or a paragraph start
    and closes only before one or before punctuation (so "Alice's" and "don't" are not
    quotes); a paragraph break closes any open quote. Speech that goes on over paragraphs
    leaves its quote open at each paragraph's end and opens the next paragraph with the same
    mark (a long speech, a letter read out): each such paragraph's part is a quote; an open
    quote at a paragraph end with no such paragraph after it is an unpaired mark, not speech.
    A footnote between the two ("* NOTE: by the editor.--...") is passed over: the letter it
    annotates goes on after it."""
    spans: list[tuple[int, int]] = []
    breaks = list(_PARAGRAPH_BREAK.finditer(text))
    start = 0
    for k, end in enumerate([m.start() for m in breaks] + [len(text)]):
        opened = _quotes_in(text, start, end, spans)
        if opened is not None and k < len(breaks):
            n = k
            while n + 1 < len(breaks) and _FOOTNOTE.match(text, breaks[n].end()):
                n += 1
            following = text[breaks[n].end():breaks[n].end() + 40].lstrip()[:1]
            if following == text[opened]:  # speech goes on in the next paragraph
                spans.append((opened, end))
        start = end
    return spans


_FOOTNOTE = re.compile(r"[ \t]*(?:\*[ \t]*[A-Za-z]|\[Footnote)")  # "     * NOTE: ...", "[Footnote 3: ...]"


def _quotes_in(text: str, lo: int, hi: int, spans: list) -> int | None:
    """The quotes that open and close in text[lo:hi], added to `spans`; returns where a quote
    still open at `hi` opened, else None."""
    opened: tuple[int, str] | None = None
    for i in range(lo, hi):
        c = text[i]
        if c not in _QUOTE_MARKS:
            continue
        before = text[i - 1] if i > lo else " "
        after = text[i + 1] if i + 1 < hi else " "
        if opened is None:
            single = c in "'\u2018"
            if single and _CONTRACTION.match(text, i + 1):
                continue  # "there 's", "I 'll" in tokenized text: an apostrophe, not a quote
            if c in _OPEN_CLOSE and (not single or (not before.isalnum() and after.isalpha())):
                opened = (i, _OPEN_CLOSE[c])
        elif c == opened[1] or (opened[1] == "'" and c == "\u2019") or (opened[1] == "\u2019" and c == "'"):
            if c in "'\u2019" and after.isalpha():
                continue  # an apostrophe inside the quote ("don't")
            spans.append((opened[0], i + 1))
            opened = None
    return opened[0] if opened is not None else None



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


# Verbs that say who speaks a quote ("said Silver", "he answered", "cried her brother").
SPEECH_VERBS = frozenset(
    "said say says saying cried cries replied replies answered answers asked asks exclaimed returned continued added "
    "observed remarked muttered whispered shouted called began rejoined inquired enquired repeated resumed interrupted "
    "declared growled sighed murmured stammered retorted responded told protested urged pursued demanded pleaded "
    "persisted explained suggested admitted agreed insisted roared screamed sobbed laughed went thought "
    "groaned grumbled snapped gasped panted whimpered bawled yelled hissed faltered concluded ejaculated "
    "announced commented assented objected echoed ventured corrected warned shrieked mumbled drawled blurted "
    "sneered scoffed asserted".split())
_SPEECH_VERB = re.compile(r"\b(?:%s)\b" % "|".join(sorted(SPEECH_VERBS)), re.IGNORECASE)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
ZONE = 120  # characters looked at before and after a quote for who speaks it
NEAR = 30  # characters at most between a speech verb and its speaker
LOOK_BACK = 8  # quotes before a dialogue searched for its other speaker


def attribute(text: str, quotes: list[tuple[int, int]], people: list[tuple[int, int, int]],
              addressed: list[tuple[int, int, int]] = (), named=None, others: list[tuple[int, int, int]] = ()
              ) -> list[int | None]:
    """Who speaks each quote: an entity of `people` ((start, end, entity) of the mentions that
    can speak: names, "he", "she", "I", nouns of a person, outside quotes, sorted by start; a
    negative entity is someone not known, whose quotes the dialogue's turns may give), or
    None. `addressed`: (start, end, entity) of the names spoken to inside quotes (is_vocative).
    `named(text)`: the entity a name ("Winterbourne") belongs to, or None: for a name beside a
    speech verb that the model did not take as a mention. `others`: the other mentions outside
    quotes, sorted ("the child": a speaker when right beside a speech verb).

    In order: the person right beside a speech verb just after the quote ("“...,” said Silver",
    "“...,” he answered") or just before it ("Jane, taking out the letter, said: “...”", also
    at the end of the paragraph before, when it ends in a comma or colon); the speaker of an
    earlier quote of the same paragraph (“...,” said he, “...”); the one person a paragraph
    names outside its quotes ("Elizabeth smiled. “...”"); the person who starts the sentence just
    before the quote in its paragraph ("He smiled at them. “...”"); the person the last sentence of the
    paragraph before names first, for a quote alone in its paragraph after narration ("In the
    hall the doctor stopped.\n\n“You've sent for...”"); and in a dialogue (quotes in
    consecutive paragraphs) the two speakers take turns (_take_turns), a quote led in by the
    paragraph before ("...she announced:") taking that paragraph's turn. Who is spoken to after
    the verb ("said to me") never speaks."""
    starts = [p[0] for p in people]
    other_starts = [p[0] for p in others]
    breaks = [m.start() for m in _PARAGRAPH.finditer(text)]
    found: list[int | None] = []
    paragraph_of: list[int] = []
    turn_of: list[int] = []  # the paragraph whose turn in a dialogue a quote is (_take_turns)
    merged = 0  # paragraphs so far that go on with the speech of the one before: one turn with it
    for k, (a, b) in enumerate(quotes):
        paragraph = bisect.bisect_right(breaks, a)
        p0 = breaks[paragraph - 1] if paragraph else 0
        p1 = breaks[paragraph] if paragraph < len(breaks) else len(text)
        # speech that goes on over paragraphs (a letter read out, a long tale: quote_spans leaves
        # the mark open at a paragraph's end) is one speaker's, one turn of a dialogue
        goes_on = bool(k) and paragraph > paragraph_of[-1] and not text[p0:a].strip() and _left_open(text, quotes[k - 1])
        if goes_on:
            merged += paragraph - paragraph_of[-1]
        led_in = not goes_on and paragraph >= 2 and text[:p0].rstrip()[-1:] in (",", ":")
        if led_in:  # "...as he had said at dinner,\n\n“Poor..."
            p0 = breaks[paragraph - 2]
        after = (b, min(quotes[k + 1][0] if k + 1 < len(quotes) else len(text), p1, b + ZONE))
        before = (max(quotes[k - 1][1] if k else 0, p0, a - ZONE), a)
        speaker = _beside_verb(text, after, people, starts, True, named, others, other_starts)
        if speaker is None:
            speaker = _beside_verb(text, before, people, starts, False, named, others, other_starts)
        if speaker is None and k and (paragraph_of[-1] == paragraph or goes_on):
            speaker = found[-1]  # the same paragraph's speaker goes on, and the same speech's
        if speaker is None:
            speaker = _only_person((p0, p1), people, starts)
        if speaker is None:
            speaker = _beside_narration(text, before[0], a, people, starts)
        if speaker is None and paragraph and not text[p0:a].strip() and not text[b:p1].strip():
            speaker = _after_narration(text, quotes, k, breaks, paragraph, people, starts)
        found.append(speaker)
        paragraph_of.append(paragraph)
        # a quote led in by the paragraph before ("...she announced abruptly:\n\n“I'se hungry.”") is
        # that paragraph's turn, not the next one: its speaker speaks twice in a row
        turn_of.append((paragraph - 1 if led_in and k and paragraph_of[-2] == paragraph - 1 else paragraph) - merged)
    return _take_turns(quotes, found, turn_of, addressed)


def _left_open(text: str, quote: tuple[int, int]) -> bool:
    """Whether a quote is speech left open at its paragraph's end (quote_spans), not a mark
    closed the wrong way round: "‘I wish—‘ she paused." holds its opening mark again, a
    typesetter's slip for a closing one, and is a turn of its own."""
    a, b = quote
    return text[b - 1] not in _QUOTE_MARKS and text[a] not in text[a + 1:b]


def _take_turns(quotes, found: list[int | None], paragraph_of: list[int], addressed) -> list[int | None]:
    """Dialogue: in a run of quotes in consecutive paragraphs, the paragraphs of even and of odd
    turn are two speakers. Where the known speakers of each parity are one person each (or one
    side is known and its quotes address someone by name), the unknown quotes take their
    parity's speaker."""
    to_whom = [set() for _ in quotes]
    starts = [a for a, _ in quotes]
    for a, _, entity in addressed:
        k = bisect.bisect_right(starts, a) - 1
        if k >= 0 and a < quotes[k][1]:
            to_whom[k].add(entity)
    out = list(found)
    run = [0]
    for k in range(1, len(quotes) + 1):
        if k < len(quotes) and paragraph_of[k] - paragraph_of[run[-1]] in (0, 1):
            run.append(k)
            continue
        turns = {k2: (paragraph_of[k2] - paragraph_of[run[0]]) % 2 for k2 in run}
        sides = [_side([found[k2] for k2 in run if turns[k2] == t and _known(found[k2])]) for t in (0, 1)]
        for t in (0, 1):  # one side known: the other is the one its quotes address, else the last other speaker
            spoken_to = set().union(*(to_whom[k2] for k2 in run if turns[k2] == t)) - sides[t]
            if len(sides[t]) == 1 and not sides[1 - t]:
                earlier = [w for w in out[max(0, run[0] - LOOK_BACK):run[0]] if _known(w) and w not in sides[t]]
                if len(spoken_to) == 1:
                    sides[1 - t] = spoken_to
                elif earlier:
                    sides[1 - t] = {earlier[-1]}
        if len(run) > 1 and all(len(side) <= 1 for side in sides) and sides[0] != sides[1]:
            for k2 in run:
                if not _known(out[k2]) and sides[turns[k2]]:
                    out[k2] = next(iter(sides[turns[k2]]))
        run = [k]
    return out


def _known(speaker: int | None) -> bool:
    """Whether a speaker is someone: not None, and not a negative number, which a caller's
    `people` give a mention that is someone not known (speakers._not_the_narrator)."""
    return speaker is not None and speaker >= 0


SIDE_MAJORITY = 2 / 3  # of a side's known speakers, the share one person must have to be that side


def _side(known: list[int]) -> set[int]:
    """The speaker of one side of a dialogue from its quotes' known speakers: the one person who
    speaks at least SIDE_MAJORITY of them (a "he" the windows gave the other man once is a
    slip), else all of them (no one side)."""
    if not known:
        return set()
    (who, k), = Counter(known).most_common(1)
    return {who} if k >= SIDE_MAJORITY * len(known) else set(known)


_OBJECTS = frozenset("me him us them thee himself herself myself themselves".split())  # never who speaks
_NAME_AFTER = re.compile(r"\s+((?:[A-Z][\w'\u2019.-]*\s?){1,3})")
_NAME_BEFORE = re.compile(r"((?:[A-Z][\w'\u2019.-]*\s){1,3})(?:\w+ly\s+)?$")


def _beside_verb(text: str, zone: tuple[int, int], people, starts, first: bool, named=None, others=(),
                 other_starts=()) -> int | None:
    """The person right after, else right before, the first (last) speech verb in `zone`; else
    the entity `named` gives for capitalised words right there ("asked Winterbourne")."""
    verbs = list(_SPEECH_VERB.finditer(text, *zone))
    if not verbs:
        return None
    verb = verbs[0] if first else verbs[-1]
    inside = [p for p in people[bisect.bisect_left(starts, zone[0]):bisect.bisect_left(starts, zone[1])]
              if text[p[0]:p[1]].lower() not in _OBJECTS]  # "said to me": the one spoken to
    after = [p for p in inside if verb.end() <= p[0] <= verb.end() + NEAR and p[1] <= zone[1]]
    if after:  # the nearest; of two that start together the longer: "said his wife", not "his"
        return min(after, key=lambda p: (p[0], -p[1]))[2]
    before = [p for p in inside if verb.start() - NEAR <= p[1] <= verb.start()]
    if before:  # the nearest; of two that end together the longer: "Mr. Bennet's wife said"
        return max(before, key=lambda p: (p[1], -p[0]))[2]
    if others:  # any mention right beside the verb: "said the child", "the child declared"
        inside = others[bisect.bisect_left(other_starts, zone[0] - NEAR):bisect.bisect_left(other_starts, zone[1])]
        after = [p for p in inside if verb.end() < p[0] <= verb.end() + 2 and p[1] <= zone[1]]
        before = [p for p in inside if verb.start() - 2 <= p[1] < verb.start() and p[0] >= zone[0]]
        if after or before:
            return (after or before)[0][2]
    if named is None:
        return None
    for found in (_NAME_AFTER.match(text, verb.end(), zone[1]),
                  _NAME_BEFORE.search(text, max(zone[0], verb.start() - NEAR), verb.start())):
        if found and (who := named(found.group(1).strip())) is not None:
            return who
    return None


def _after_narration(text: str, quotes, k: int, breaks: list[int], paragraph: int, people, starts) -> int | None:
    """For a quote alone in its paragraph: the first person named in the last sentence of the
    paragraph before, when that paragraph is narration (no quote)."""
    lo = breaks[paragraph - 2] if paragraph >= 2 else 0
    hi = breaks[paragraph - 1]
    if k and quotes[k - 1][1] > lo:
        return None
    sentence = max(text.rfind(". ", lo, hi - 2), text.rfind("\n", lo, hi - 2), lo)
    inside = people[bisect.bisect_left(starts, sentence):bisect.bisect_left(starts, hi)]
    return inside[0][2] if inside else None


_SENTENCE_END = re.compile(r"[.!?][\u201d\u2019\"')]*\s+")


def _beside_narration(text: str, lo: int, a: int, people, starts) -> int | None:
    """For a quote (starting at `a`) after narration in its paragraph (from `lo`), no speech
    verb beside it: the person the last sentence before it starts with, its subject ("Mr.
    Kronborg coughed behind his hand. He controlled it only by calling upon his pulpit manner.
    “Well, I think...”"). Not a person further in, nor the narration after a quote: that is
    often the listener's ("“Your mamma's gone away.” Philip did not know what she meant.")."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text, lo, a) if text[m.end():a].strip()]
    lo = ends[-1] if ends else lo  # the start of the last sentence before the quote
    inside = people[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, a)]
    return inside[0][2] if inside and not text[lo:inside[0][0]].strip() else None


def _only_person(paragraph: tuple[int, int], people, starts) -> int | None:
    """The one entity the paragraph's words outside quotes (`people` are) name, if exactly one."""
    lo, hi = paragraph
    named = {p[2] for p in people[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]}
    return named.pop() if len(named) == 1 else None
