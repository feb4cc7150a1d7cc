"""Pass `stray_names`: the names in a chain that cannot be its person's leave it.

A window's model sometimes links two people who share a word of their names, or a man and
the woman spoken of beside him: "Charles Hayter" in the chain of Charles Musgrove (the two men
share "Charles"), "Mrs. Strong" in a chain of "he" and "the Doctor". Joining windows and the
name passes only ever add to a chain, so such a slip would stay for the whole book. This pass
runs before the joins and once more after them (a join through a chain of two genders brings
strays in): each chain's named mentions that cannot be its person go into a chain of their
own, one per name, which the passes after it join to the person so named.

A name is a stray of its chain when
  - its gender (its honorific, or the book's forms of address for its words: entities.NameForms)
    is not the chain's, where the chain's mentions say one gender at least GENDER_SHARE of the
    time ("Mrs. Strong" in a chain of "he" and "the Doctor"); or
  - it is a man's (or an unknown gender's) full name of one given name and another surname, or
    one surname and another given name, than the chain's own most frequent full name
    (two_people: "Charles Hayter" in a chain of "Charles Musgrove"; a pet name counts as its
    full name; "Long John" and "John Silver" share no part, a nickname); or
  - a Miss of the surname of a chain mostly called "Mrs." and that surname, or a Mrs. in a Miss's
    chain ("Miss Hale" in the chain of "Mrs. Hale": her daughter), or "Mrs." and the given name
    a chain is mostly called by ("Mrs Charles" in the chain of "Charles": his wife); or
  - before the joins only: a full name holding the given name a chain is mostly called by, where
    the book's full names give that given name to two families ("Charles Hayter" in a chain
    mostly of "Charles", in a book of Charles Musgrove and Charles Hayter): which Charles the
    chain is, its names do not say. After the joins such a chain is the person the passes chose.

Never moves: a woman's full names apart (a married woman has two surnames: "Catherine
Earnshaw", "Catherine Linton"), the names of a chain whose strays by gender or full name would
be more than MOST_STRAYS of its named mentions (then the chain's own name is in doubt), the
chain's most frequent name, pronouns and other unnamed mentions (they stay with the chain's
person).
"""

from __future__ import annotations

from collections import Counter

from .chains import Entity, Joining
from .families import given_and_surname
from .pet_names import full_forms

GENDER_SHARE = 0.8  # the share of a chain's gendered mentions that must say one gender for it to be the chain's
GENDER_LEAST = 3  # and at least this many of them
MOST_STRAYS = 1 / 3  # a chain whose strays would be more of its named mentions keeps them all


def chain_gender(doc, entity: Entity) -> str | None:
    """The gender ("m" or "f") most of a chain's gendered mentions (pronouns, honorifics, gendered
    nouns) say, where at least GENDER_SHARE of them say it."""
    said = Counter(g for g in (doc.reader.mention(*m).gender for m in entity.mentions) if g)
    if not said:
        return None
    gender, k = said.most_common(1)[0]
    return gender if k >= GENDER_LEAST and k >= GENDER_SHARE * sum(said.values()) else None


def _full_name(doc, mention) -> tuple[frozenset, tuple[str, str]] | None:
    """A named mention's words and (given name, surname), for a full name; else None."""
    name = doc.reader.mention(*mention).name
    if name is None or len(name.words) < 2:
        return None
    parsed = given_and_surname(" ".join(doc.reader.text_of(*mention).split()))
    return (name.words, parsed) if parsed is not None else None


def two_people(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether two (given name, surname) are two people of one given name or one family: one
    part the same, the other not ("Charles Hayter", "Charles Musgrove"; "Hindley Earnshaw",
    "Hareton Earnshaw"), a pet name the same as its full name ("Jim", "James": pet_names.py).
    "Long John" and "John Silver" share no part: a nickname, not two people."""
    given = a[0] == b[0] or a[0] in full_forms(b[0]) or b[0] in full_forms(a[0])
    return (given and a[1] != b[1]) or (a[1] == b[1] and not given)


def wife_of(name, dominant, state: Joining) -> bool:
    """Whether `name` is "Mrs." and the given name the chain is mostly called by, alone: a wife
    called by her husband's name ("Mrs Charles" beside "Charles", a given name of the book's
    full names)."""
    if (dominant is None or name.address != "mrs" or dominant.address or name.words != dominant.words
            or len(name.words) != 1 or state.families is None):
        return False
    (word,) = name.words
    return bool(state.families.surnames_of(word))


def strays(doc, entity: Entity, state: Joining, shared_given: bool = True) -> list:
    """The chain's named mentions that cannot be its person (see the module's notes);
    `shared_given`: also the full names holding a given name two families share."""
    gender = chain_gender(doc, entity)
    dominant = doc.dominant_name(entity)
    shared = shared_given and dominant is not None and state.shared_given_name(dominant)  # "Charles", of two families
    full_of = {m: _full_name(doc, m) for m in entity.mentions}  # each parsed once
    fulls = Counter(f for f in full_of.values() if f)
    own = max(sorted(fulls, key=lambda f: (sorted(f[0]), f[1])), key=fulls.__getitem__) if fulls else None  # ties: the first in order
    found, sure = [], []  # sure: by the form of address against the chain's own name, whatever their number
    named = 0
    for m in entity.mentions:
        name = doc.reader.mention(*m).name
        if name is None:
            continue
        named += 1
        if gender and name.gender and name.gender != gender:
            found.append(m)
            continue
        if (dominant is not None and {name.address, dominant.address} == {"mrs", "miss"} and name.words == dominant.words):
            sure.append(m)  # "Miss Hale" in the chain of "Mrs. Hale": a mother and her daughter
            continue
        if wife_of(name, dominant, state):
            sure.append(m)  # "Mrs Charles" in the chain of "Charles": his wife
            continue
        full = full_of[m]
        if shared and full is not None and dominant.words < full[0]:
            found.append(m)  # "Charles Hayter" in a chain mostly called "Charles": which Charles it is, is not known
            continue
        if (own is not None and full is not None and fulls[full] < fulls[own] and name.gender != "f" and gender != "f"
                and two_people(full[1], own[1])):
            found.append(m)
    return sure + (found if len(found) <= MOST_STRAYS * named else [])


def split_stray_names(doc, entities: list[Entity], state: Joining, again: bool = False) -> list[Entity]:
    """Pass `stray_names` (see the module's notes): returns the entities, each stray name's
    mentions taken out of its chain into an entity of their own (one per name). `again`: after
    the joins, where a chain mostly called by a shared given name is a person the passes chose
    ("John", of John Silver and John Trelawney, joined by the chains that say "John Silver"), so
    its full names stay."""
    out = []
    for e in entities:
        moved = strays(doc, e, state, shared_given=not again)
        if not moved:
            out.append(e)
            continue
        gone = set(moved)
        e.mentions = [m for m in e.mentions if m not in gone]
        e.profile = doc.profile(e.mentions)
        by_name: dict = {}
        for m in moved:
            by_name.setdefault(doc.reader.mention(*m).name, []).append(m)
        out.extend([e] * bool(e.mentions) + [Entity(ms, doc.profile(ms)) for ms in by_name.values()])
    return out
