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

_OPEN_CLOSE = {"\u201c": "\u201d", "\u2018": "\u2019", '"': '"', "'": "'"}
_QUOTE_MARKS = frozenset(_OPEN_CLOSE) | frozenset(_OPEN_CLOSE.values())
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_CONTRACTION = re.compile(r"(?:s|t|ll|re|ve|d|m)(?![^\W\d_])", re.IGNORECASE)


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
            if single and _CONTRACTION.match(text, i + 1):
                continue  # "there 's", "I 'll" in tokenized text: an apostrophe, not a quote
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


# Verbs that say who speaks a quote ("said Silver", "he answered", "cried her brother").
SPEECH_VERBS = frozenset(
    "said say says saying cried cries replied replies answered answers asked asks exclaimed returned continued added "
    "observed remarked muttered whispered shouted called began rejoined inquired enquired repeated resumed interrupted "
    "declared growled sighed murmured stammered retorted responded told protested urged pursued demanded pleaded "
    "persisted explained suggested admitted agreed insisted roared screamed sobbed laughed went thought cries "
    "groaned grumbled snapped gasped panted whimpered bawled yelled hissed faltered concluded ejaculated".split())
_SPEECH_VERB = re.compile(r"\b(?:%s)\b" % "|".join(sorted(SPEECH_VERBS)), re.IGNORECASE)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
ZONE = 120  # characters looked at before and after a quote for who speaks it
NEAR = 30  # characters at most between a speech verb and its speaker


def attribute(text: str, quotes: list[tuple[int, int]], people: list[tuple[int, int, int]]) -> list[int | None]:
    """Who speaks each quote: an entity of `people` ((start, end, entity) of the mentions that
    can speak: names, "he", "she", "I", nouns of a person, sorted by start), or None.

    In order: the person right beside a speech verb just after the quote ("“...,” said Silver",
    "“...,” he answered") or just before it ("Jane, taking out the letter, said: “...”"); the
    speaker of an earlier quote of the same paragraph (“...,” said he, “...”); the one person a
    paragraph names outside its quotes ("Elizabeth smiled. “...”"); else, in a dialogue, the
    speaker of the quote before last, when the last two differ (speakers take turns)."""
    starts = [p[0] for p in people]
    breaks = [m.start() for m in _PARAGRAPH.finditer(text)]
    found: list[int | None] = []
    paragraph_of: list[int] = []
    for k, (a, b) in enumerate(quotes):
        paragraph = bisect.bisect_right(breaks, a)
        p0 = breaks[paragraph - 1] if paragraph else 0
        p1 = breaks[paragraph] if paragraph < len(breaks) else len(text)
        after = (b, min(quotes[k + 1][0] if k + 1 < len(quotes) else len(text), p1, b + ZONE))
        before = (max(quotes[k - 1][1] if k else 0, p0, a - ZONE), a)
        speaker = _beside_verb(text, after, people, starts, first=True)
        if speaker is None:
            speaker = _beside_verb(text, before, people, starts, first=False)
        if speaker is None and k and paragraph_of[-1] == paragraph:
            speaker = found[-1]  # the same paragraph's speaker goes on
        if speaker is None:
            speaker = _only_person(quotes, k, (p0, p1), people, starts)
        if speaker is None and k >= 2 and paragraph_of[-1] != paragraph and paragraph_of[-2] != paragraph_of[-1]:
            last, before_last = found[-1], found[-2]
            if last is not None and before_last is not None and last != before_last:
                speaker = before_last  # turns in a dialogue
        found.append(speaker)
        paragraph_of.append(paragraph)
    return found


def _beside_verb(text: str, zone: tuple[int, int], people, starts, first: bool) -> int | None:
    """The person right after, else right before, the first (last) speech verb in `zone`."""
    verbs = list(_SPEECH_VERB.finditer(text, *zone))
    if not verbs:
        return None
    verb = verbs[0] if first else verbs[-1]
    inside = people[bisect.bisect_left(starts, zone[0]):bisect.bisect_left(starts, zone[1])]
    after = [p for p in inside if verb.end() <= p[0] <= verb.end() + NEAR and p[1] <= zone[1]]
    if after:
        return after[0][2]
    before = [p for p in inside if verb.start() - NEAR <= p[1] <= verb.start()]
    return before[-1][2] if before else None


def _only_person(quotes, k: int, paragraph: tuple[int, int], people, starts) -> int | None:
    """The one entity the paragraph's words outside quotes name, if exactly one."""
    lo, hi = paragraph
    inside = people[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]
    outside = {p[2] for p in inside if not any(qa <= p[0] < qb for qa, qb in quotes[max(0, k - 3):k + 4])}
    return outside.pop() if len(outside) == 1 else None
