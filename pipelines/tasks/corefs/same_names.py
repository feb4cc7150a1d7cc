"""Passes `same_name` and `short_names`: entities far apart joined by the name they are mostly called.

`same_name` joins entities whose most frequent name has the same words ("Darcy" and "Mr.
Darcy" in chapter 40 with "Mr. Darcy" in chapter 3), the entity that says the name most taking
the others, one by one, where their profiles can be one person. An entity that cannot join
any of them (a window's chain that holds "Mr. Darcy" beside a "they") gives its mentions of the
name to the one entity of that name each fits, and keeps the rest (DocumentEntities.lend_name):
a proper name is the surest thing a chain holds. Two chains of one name whose other names clash
("Charles" alone, and "Charles" beside "Mr. Musgrove") are one where a full name the book says
("Charles Musgrove") holds the clashing names (families.Families.full_names).

`short_names` joins an entity whose name is a part of exactly one longer name ("Silver" and
"Long John Silver", "Teodor" and "Teodor Varga"), the longer names first, so that "John Silver"
joins "Long John Silver" before "Silver" looks for its one longer name. Where no longer name can
take the whole entity, its mentions of the name go to the longer-named entity they fit.

Never joins: a short name to one of the book's people who share it unless that one's chain
says it too (and, for a given name, unless the short name's own chain says that one's full
name: "John" with "John Silver", not a "Charles" chain that never says "Charles Hayter"): a
given name alone that two full names of different surnames hold ("Charles" beside "Charles
Musgrove" and "Charles Hayter"), a form of address and a surname that two of a
family can bear ("Mr. Earnshaw" beside "Hindley Earnshaw" and "Hareton Earnshaw";
families.py); a short name that is a part of two longer ones that fit ("Miss Bennet" beside
"Jane Bennet" and "Elizabeth Bennet"); two names of two genders or forms of address ("Mr.
Bennet", "Mrs. Bennet"); profiles that cannot be one person (entities.Profile.compatible).
"""

from __future__ import annotations

from .chains import Entity, Joining, absorb, alive
from .entities import names_compatible


def group_by_name(doc, entities: list[Entity], state: Joining) -> None:
    """`state.by_name`: the words of each entity's most frequent name -> the entities of it."""
    state.by_name.clear()
    for e in entities:
        name = doc.dominant_name(e)
        if name:
            state.by_name.setdefault(name.words, []).append(e)


def join_same_name(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `same_name` (see the module's notes). Returns the entities left."""
    full_names = state.families.full_names() if state.families is not None else []  # the book's, read once
    for words, group in state.by_name.items():
        kept: list[Entity] = []
        for e in sorted(group, key=lambda e: (-doc.named(e, words), -len(e.mentions))):  # the most named takes the others
            into = next((o for o in kept if doc.compatible(o, e) or _bridged_by_book(doc, o, e, full_names)), None)
            if into is not None:
                absorb(into, e)
                continue
            if kept and doc.lend_name(e, {words}, lambda m: [o for o in kept if doc.fits(o, m)][:1]):
                continue  # its mentions of the name went to an entity of that name; the rest is unnamed
            kept.append(e)
        group[:] = kept
    return alive(entities)


def _bridged_by_book(doc, a: Entity, b: Entity, full_names: list) -> bool:
    """Whether two chains of one name fit as one person once the book's full names bridge their
    other names: a "Charles" chain and a chain of "Charles" and "Mr. Musgrove" in a book that says
    "Charles Musgrove" (the second chain already holds the two together; neither chain says the
    full name, so Profile.compatible alone keeps them apart). Only where `b`, the chain that joins,
    says no name `a` lacks: the join gives `a` no new name ("Lady Blakeney" in Marguerite's chain
    would keep out her maiden "Marguerite St. Just"). `full_names`: Families.full_names."""
    if not full_names or not {n.words for n in b.profile.names} <= {n.words for n in a.profile.names}:
        return False
    if not doc.compatible(a, b, names=False):
        return False
    bridges = [n for n in a.profile.names | b.profile.names if len(n.words) > 1] + full_names
    return all(names_compatible(x, y, bridges) for x in a.profile.names for y in b.profile.names)


def join_short_names(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `short_names` (see the module's notes). Returns the entities left."""
    by_name, lent = state.by_name, state.lent
    for words, group in sorted(by_name.items(), key=lambda kv: -len(kv[0])):
        for e in group:
            if id(e) in lent or e.into is not None:
                continue
            longer = [o for lw, others in by_name.items() if words < lw for o in others
                      if o.into is None and id(o) not in lent]
            own = doc.dominant_name(e)
            if state.shared_surname(own, doc.reader.forms) or state.shared_given_name(own):
                longer = [o for o in longer if own in o.profile.names]  # "Mr. Earnshaw", "Charles": only a chain that says it too
            if state.shared_given_name(own):  # ... and whose full name this chain says too ("John" and "John Silver")
                said = {n.words for n in e.profile.names if own.words < n.words}
                longer = [o for o in longer if said & {n.words for n in o.profile.names}]
            fits = [o for o in longer if doc.compatible(o, e)]
            if len(fits) == 1:
                absorb(fits[0], e)
            elif not fits and longer:  # its mentions of the name to the one longer name its names are within
                within = [o for o in longer if doc.names_within(e, doc.dominant_name(o))]
                if doc.lend_name(e, {words}, lambda m: [o for o in within if doc.fits(o, m)]):
                    lent.add(id(e))
    return alive(entities)
