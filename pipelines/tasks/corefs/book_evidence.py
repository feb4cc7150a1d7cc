"""Pass `book_evidence`: two entities that many windows, far apart, each say are one person.

The window model sees a few pages at a time. Where it links "the stranger" to "Mr. Hyde", or
"Annie" to "Mrs. Strong", it does so in one window; joining window to window
(document.DocumentEntities) keeps each mention where the window that owns it put it, so a link
the model makes in the overlap of two windows, again and again through a book, can still leave
two entities. This pass sums that evidence over the book.

For each window, each of its chains (as decoded, before any joining) is read as a set of the
book's present entities, through its mentions that define a person: names and noun phrases,
not pronouns (a pronoun put in the wrong chain is the commonest slip of the window model, and
would tie every two people who talk). A window votes for two entities when one of its chains
holds a defining mention of each; it sees an entity when any of its chains does.

Joins two entities, the smaller into the bigger, where all of these hold:
  - at least EVIDENCE_WINDOWS windows vote for them, and the first and the last are at least
    EVIDENCE_SPREAD windows apart (more than one scene says so);
  - the votes are at least EVIDENCE_SHARE of the windows that see the one seen less: where
    both are about, the windows mostly say one person;
  - for the one seen less, the other is the one clear partner: its votes are at least
    EVIDENCE_RIVAL times those of any other entity ("my aunt" linked to the daughter in nine
    windows and to her mother in seven is neither's by this pass);
  - nothing says two people: their profiles can be one (entities.Profile.compatible: no two
    genders, forms of address or pronoun kinds, one story), their
    names aside, since two names is what the pass is for; the book never writes their most
    frequent names as two in one phrase ("Annie and Mrs. Strong"); and their given names, where
    both have one, are not two names of two people ("Dick Musgrove" and "Charles Musgrove", a
    dead son and his brother; a pet name and its full name, "Dick" and "Richard", are one name);
  - the quotes where one speaks to the other ("I" in one, "you" in the other) are few against
    the windows: at most one to every EVIDENCE_OVER_QUOTES windows voting. A window that put a
    quote's "I" in the wrong chain makes one such quote; a real talk between two makes many.

The strongest evidence is taken first; each join is checked again against the entities as
they are by then. Never joins: an entity known by what it is to someone ("my mother": _relative); two entities
of one window's chain only, or of one scene;
entities seen together in many windows but put in one chain by a few (two friends who talk).
"""

from __future__ import annotations

import itertools
from collections import Counter

from .chains import Entity, Joining, absorb, alive, defines, named_apart, said_as
from .entities import TITLES
from .families import given_and_surname
from .pet_names import full_forms, spelled_apart
EVIDENCE_WINDOWS = 3  # windows that vote for the two, at least
EVIDENCE_SPREAD = 3  # windows between the first vote and the last, at least
EVIDENCE_SHARE = 0.5  # votes over the windows that see the entity seen less, at least
EVIDENCE_RIVAL = 2  # votes over those of the less-seen entity's next partner, at least
EVIDENCE_OVER_QUOTES = 4  # windows voting for the two, per quote where one speaks to the other, at least


def window_votes(doc, entities: list[Entity]) -> tuple[Counter, Counter, dict]:
    """(votes per pair of entity indices, windows seeing each entity, the windows voting for each
    pair) over the document's windows (DocumentEntities.window_chains)."""
    owner = {m: k for k, e in enumerate(entities) for m in e.mentions}
    votes, seen, where = Counter(), Counter(), {}
    for w, chains in enumerate(doc.window_chains):
        here, together = set(), set()
        for chain in chains:
            found = sorted({owner[m] for m in chain if m in owner and defines(doc.reader.mention(*m))})
            here.update(found)
            together.update(itertools.combinations(found, 2))
        seen.update(here)
        votes.update(together)
        for pair in together:
            where.setdefault(pair, []).append(w)
    return votes, seen, where


def join_by_evidence(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `book_evidence` over the document's alive `entities` (see the module's notes).
    Returns the entities left."""
    entities = alive(entities)
    votes, seen, where = window_votes(doc, entities)
    partners: dict[int, Counter] = {}  # entity -> votes with each other entity
    for (a, b), k in votes.items():
        partners.setdefault(a, Counter())[b] = k
        partners.setdefault(b, Counter())[a] = k
    for (a, b), k in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
        if k < EVIDENCE_WINDOWS or k < EVIDENCE_SHARE * min(seen[a], seen[b]):
            continue
        less, more = (a, b) if (seen[a], a) < (seen[b], b) else (b, a)
        if k < EVIDENCE_RIVAL * max((v for o, v in partners[less].items() if o != more), default=0):
            continue
        if where[(a, b)][-1] - where[(a, b)][0] < EVIDENCE_SPREAD:
            continue
        x, y = entities[a].final(), entities[b].final()
        if x is y or _relative(doc, x) or _relative(doc, y):
            continue
        if not x.profile.compatible(y.profile, same_name=True, names=False, quotes=False):
            continue
        if EVIDENCE_OVER_QUOTES * _spoken_to(x.profile.quotes, y.profile.quotes) > k:
            continue
        names = doc.dominant_name(x), doc.dominant_name(y)
        if all(names) and named_apart(doc.reader.text, *(said_as(doc, e, n) for e, n in zip((x, y), names))):
            continue
        if _two_given_names(_given_names(doc, x, state.families), _given_names(doc, y, state.families)):
            continue
        into, other = (x, y) if len(x.mentions) >= len(y.mentions) else (y, x)
        absorb(into, other)
    return alive(entities)



_POSSESSIVES = ("my", "his", "her", "our", "their", "your", "thy")


def _relative(doc, entity: Entity) -> bool:
    """Whether the entity is known by what it is to someone ("my mother", "her aunt": its
    commonest defining mention begins with a possessive). Windows link such a chain to whoever
    is talked of beside it (the narrator's mother to the neighbour she gossips about), so the
    pass leaves it (kin.py gathers a narrator's kin)."""
    said = Counter(" ".join(doc.reader.text_of(*m).lower().split()) for m in entity.mentions
                   if defines(doc.reader.mention(*m)))
    return bool(said) and said.most_common(1)[0][0].split()[0] in _POSSESSIVES


def _spoken_to(a: dict[int, set[int]], b: dict[int, set[int]]) -> int:
    """How many quotes have "I" in one side and "you" in the other (entities.speakers_differ,
    counted); maps: quote -> the persons (1, 2) each side holds there."""
    return sum(q in b and ((1 in persons and 2 in b[q]) or (2 in persons and 1 in b[q])) for q, persons in a.items())


def _given_names(doc, entity: Entity, families) -> set[str]:
    """The given names the entity's names hold: of its full names ("Charles Musgrove": charles),
    and its names of one word without a form of address that a full name of the book begins
    with ("Charles"; families.Families)."""
    found = set()
    for m in entity.mentions:
        name = doc.reader.mention(*m).name
        if name is None:
            continue
        full = given_and_surname(doc.reader.text_of(*m))
        if full is not None and full[0] in name.words:  # not "poor" of "poor Mr. Rochester"
            found.add(full[0])
        elif families is not None and name.address is None and len(words := name.words - TITLES) == 1:
            (word,) = words
            if families.surnames_of(word):
                found.add(word)
    return found


def _two_given_names(a: set[str], b: set[str]) -> bool:
    """Whether two entities' given names say two people: both have some, and none of one is a
    name of the other (the same, a pet name of it or of one name with it, or spelled a letter
    apart: "Dick" and "Richard", "Tony" and "Antony")."""
    def one_name(x: str, y: str) -> bool:
        fx, fy = full_forms(x) | {x}, full_forms(y) | {y}
        return bool(fx & fy) or spelled_apart(x, y)
    return bool(a and b) and not any(one_name(x, y) for x in a for y in b)
