"""Pass `taken_names`: a name a person says is theirs joins that person's chain.

A story links some names to a person only through the person's own words, said in the first
person: a stranger introduces himself, a woman in hiding takes her mother's maiden name. Once
the quotes have their speakers (speakers.give_quotes), a quote's "I" sits in its speaker's
chain and a narration's "I" in its narrator's, so these turns of phrase (`_TURNS`) say which
chain the name is:

  "My name is Umbopa", "my name was Isabella Linton"         a name said of oneself
  "I am Sergeant Cuff", "Call me Cordelia"
  "Mrs. Graham, which appellation I mean henceforth to adopt" a name taken
  "I shall probably be Lady Lowborough some day"              a married name to come

Joins: the chain that holds most mentions of the name (its words and form of address: "Mrs.
Graham", not a "Mr. Graham"), where that name is the chain's own most frequent name and the
book says it at least NAME_LEAST times, into the chain of the "I"; the "I" must be one the
book's speakers or narrators place (a quote's "I" in its speaker's chain, or a narration "I"
in a chain of NARRATOR_LEAST narration "I" at least). A name taken is a second name, so
neither the names nor the forms of address of the two chains are asked.

Never joins: a possessive ("I am Mr. Hale's daughter"), a name the book says only once ("I
am English", "I am Marsyas"), a quote whose speaker is unknown; a name said of oneself to a
chain that bears another name the two cannot share, twice or more ("Sir Charles" beside "I
am Stapleton": a quote given to the wrong speaker is likelier than a second name, so "Call
me Cordelia" said by Anne is not joined either); across genders, pronoun kinds or a story
break.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

from .entities import names_compatible, proper_name

Span = tuple[int, int]

NAME_LEAST = 2  # mentions of the name in the book: a name said once may be no person's ("I am English")
NARRATOR_LEAST = 10  # narration "I" in a chain: a narrator's chain

_NAME = (r"(?P<name>(?:(?:Mrs|Mr|Miss|Lady|Lord|Sir|Dr|Captain|Sergeant|Master)\.?\s+)?"
         r"[A-Z][a-z\u2019']+(?:[ \t]+[A-Z][a-z\u2019']+){0,2})(?![\w'\u2019-])")
# (pattern, what it says of the name: SAID, one's own; TAKEN, a second name taken; TO_COME, a married name to come)
SAID, TAKEN, TO_COME = "said", "taken", "to come"
_TURNS = tuple((re.compile(p), taken) for p, taken in (
    (r"\b(?P<who>[Mm]y)\s+name\s+(?:is|was)\s+" + _NAME, SAID),
    (r"\b(?P<who>I)\s+am\s+" + _NAME, SAID),
    (r"\b[Cc]all\s+(?P<who>me)\s+" + _NAME, SAID),
    # a married name to come: "I shall probably be Lady Lowborough some day", "I am to be Mrs. Elton"
    (r"\b(?P<who>I)\s+(?:shall|will|am\s+to)\s+(?:[a-z]+ly\s+|soon\s+)?be\s+(?=(?:Mrs|Lady)\b)" + _NAME, TO_COME),
    (_NAME + r",\s+which\s+(?:name|appellation)\s+(?P<who>I)\s+(?:[a-z]+\s+){0,3}?(?:adopt|assume|take|bear)", TAKEN),
))
_POSSESSIVE = ("'s", "\u2019s", "'", "\u2019")


def taken_names(text: str) -> list[tuple[int, str, str]]:
    """The (character of the first-person word, the name as written, what the turn says of it:
    SAID, TAKEN or TO_COME) the turns find, in text order, where the name is a person's name
    (entities.proper_name)."""
    found = set()
    for pattern, taken in _TURNS:
        for m in pattern.finditer(text):
            said = " ".join(m.group("name").split())
            if proper_name(said) is not None and not said.endswith(_POSSESSIVE):  # not "I am Mr. Hale's daughter"
                found.add((m.start("who"), said, taken))
    return sorted(found)


def join_taken_names(reader, groups: list[list[Span]], speakers: list[int | None], profile) -> list[int | None]:
    """Pass `taken_names` (see the module's notes) over the chains `groups` after the quotes
    have their `speakers` (indices into `groups`); `profile(spans)`: the entities.Profile of
    mentions. A joined chain is emptied into the other, in place. Returns the speakers, the
    emptied chain's quotes given to the chain it joined."""
    group_of = {span: k for k, group in enumerate(groups) for span in group}
    starts = {reader.offsets[s][0]: (s, e) for s, e in group_of}
    narration = Counter(k for span, k in group_of.items()
                        if (m := reader.mention(*span)).kind == "i" and m.quote is None)
    names = [Counter(n for s in group if (n := reader.mention(*s).name) is not None) for group in groups]
    for at, said, taken in taken_names(reader.text):
        span = starts.get(at)
        if span is None or reader.mention(*span).kind != "i":
            continue
        me = group_of[span]
        quote = reader.quote_of(at)
        if (speakers[quote] != me) if quote is not None else narration[me] < NARRATOR_LEAST:
            continue
        named = reader.forms.apply(proper_name(said), said)
        holder = _holder(names, named)
        if holder is None or holder == me or (taken == SAID and _named_otherwise(names[me], named)):
            continue
        # a married name to come is said in one quote of many, so the quote's speaker is checked
        # against the name's chain: no quote where one of them speaks to the other
        if not profile(groups[me]).compatible(profile(groups[holder]), same_name=True, names=False,
                                                quotes=taken == TO_COME, addresses=False):
            continue
        for s in groups[holder]:
            bisect.insort(groups[me], s)
            group_of[s] = me
        groups[holder] = []
        names[me] += names[holder]
        names[holder] = Counter()
        speakers = [me if k == holder else k for k in speakers]
    return speakers


def _named_otherwise(names: Counter, named) -> bool:
    """Whether a chain whose names are `names` (a Counter) already bears a name `named` cannot
    be one with (entities.names_compatible), NAME_LEAST times or more ("Sir Charles" beside "I
    am Stapleton"): then the "I" is more likely a quote given to the wrong speaker than a
    second name."""
    return any(k >= NAME_LEAST and not names_compatible(n, named) for n, k in names.items())


def _key(name) -> tuple:
    return name.words, name.address


def _holder(names: list[Counter], named) -> int | None:
    """The chain (by its names, a Counter each) holding most mentions of the name (its words and
    form of address), where the book says it NAME_LEAST times and it is that chain's most
    frequent name; else None."""
    held = Counter()
    for k, counts in enumerate(names):
        held[k] = sum(c for n, c in counts.items() if _key(n) == _key(named))
    if sum(held.values()) < NAME_LEAST:
        return None
    holder = held.most_common(1)[0][0]
    keys = Counter()
    for n, c in names[holder].items():
        keys[_key(n)] += c
    return holder if keys.most_common(1)[0][0] == _key(named) else None
