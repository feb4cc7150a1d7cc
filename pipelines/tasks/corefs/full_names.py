"""Pass `full_names`: a name joins the one entity holding a full name it is a part of.

"Hawkins" and the "Jim Hawkins" of Jim's chain, "Trelawney" and the "Squire Trelawney" of the
squire's, "Miss Darcy" and the "Georgiana Darcy" of Georgiana's: the full name says the two
names are one person's, though neither entity's most frequent name is the other's. Also a full
name a chain holds that another holds more ("Captain Smollett" in the ship's chain). The smaller
entities first, into the bigger. Where one wrong link keeps the two apart, the mentions of the
name and of the full name go (DocumentEntities.lend_name): a window that put the ship's "her"
in the captain's chain leaves "the captain" and "Captain Smollett" there too; never to an entity
LEND_SIZE times smaller (St. John's 1,700 mentions do not go to a chain of two that says his
full name).

Never joins: a form of address and a surname that two of the book's family can bear ("Mr.
Earnshaw" beside "Hindley Earnshaw" and "Hareton Earnshaw": families.py), but where its own
chain says the full name or the full name's chain says it; where two entities hold full names the name may be a part of, unless the chain
says one of those full names itself, or says its own name the way only one of them does ("Miss
Lucas"), or the full names are one person's but for titles ("Squire Trelawney", "John
Trelawney"); names of two genders or forms of address ("Mr. Bennet" is no part of "Jane
Bennet"); an entity whose names are not nearly all parts of that full name ("Sir William", whose
chain also says "William Lucas", is not the "William" of "William Collins"); entities that say
nothing of a person ("the Royal George", a ship, is no "George Merry"); entities whose names
the book writes side by side as two ("Mr. Peggotty and Ham", though it once says "Ham
Peggotty" of his nephew: chains.named_apart).
"""

from __future__ import annotations

from collections import Counter

from .chains import Entity, Joining, absorb, alive, named_apart, said_as
from .entities import TITLES, Name
from .families import given_and_surname


LEND_SIZE = 10  # an entity lends its names to one at most this many times smaller


def _holders(doc, people: list[Entity]) -> tuple[dict, Counter]:
    """Each full name's words -> (the entity saying it most, the name); and the counts of
    (words, id(entity))."""
    holder: dict[frozenset, tuple[Entity, Name]] = {}
    counts: Counter = Counter()
    for e in people:
        for m in e.mentions:
            name = doc.reader.mention(*m).name
            if name is not None and len(name.words) > 1:
                counts[(name.words, id(e))] += 1
                best = holder.get(name.words)
                if best is None or counts[(name.words, id(best[0]))] < counts[(name.words, id(e))]:
                    holder[name.words] = (e, name)
    return holder, counts


def join_full_names(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `full_names` (see the module's notes). Returns the entities left."""
    people = [e for e in entities if any(doc.reader.mention(*m).is_person for m in e.mentions)]
    holder, counts = _holders(doc, people)
    for e in sorted(people, key=lambda e: len(e.mentions)):
        own = doc.dominant_name(e)
        if own is None or id(e) in state.lent or e.into is not None or state.shared_given_name(own):
            continue  # "Charles", of "Charles Musgrove" and "Charles Hayter", is a part of neither by its name
        found, fulls = {}, {}
        for words, (first, full) in holder.items():
            o = first.final()
            part = own.words < words or (own.words == words and counts[(words, id(e))] < counts[(words, id(first))])
            theirs = doc.dominant_name(o)
            if (o is not e and part and same_person(own, theirs, full) and doc.names_within(e, full)
                    and not other_surname(doc, e, own, first, full)
                    and not (own.words <= TITLES and not own.words <= theirs.words)):  # "the Doctor" is not Mr. Mell's,
                found[id(o)] = o  # whom the book once calls "Doctor Mell": a rank joins a chain mostly called by it
                fulls.setdefault(id(o), set()).add(words)
        if len(found) > 1:  # two Miss Lucases: the one whose full name this chain itself says,
            says = {n.words for n in e.profile.names}  # else the one whose chain says "Miss Lucas" too
            found = ({k: o for k, o in found.items() if fulls[k] & says}
                     or _only({k: o for k, o in found.items() if own in o.profile.names})
                     or one_person(found, fulls))
        if len(found) != 1:
            continue
        (o,) = found.values()
        if (state.shared_surname(own, doc.reader.forms) and not fulls[id(o)] & {n.words for n in e.profile.names}
                and own not in o.profile.names):
            continue  # "Mr. Earnshaw" in a book of several: only where one of the two chains says it is that one
        if named_apart(doc.reader.text, said_as(doc, e, own), said_as(doc, o, doc.dominant_name(o) or own)):
            continue  # "Mr. Peggotty and Ham": two people, though the book once says "Ham Peggotty"
        if doc.compatible(o, e, names=False):  # the full name says the names are one person's ("Miss Darcy", "Georgiana")
            absorb(o, e)
        elif LEND_SIZE * len(o.mentions) >= len(e.mentions) and doc.lend_name(
                e, {own.words, *fulls[id(o)]}, lambda m: [o] if doc.fits(o, m, names=False) else []):
            state.lent.add(id(e))
    return alive(entities)


def other_surname(doc, e: Entity, own: Name, holder: Entity, full: Name) -> bool:
    """Whether the entity's own name has another surname than `full`, though `full`'s words hold
    it: "John Eyre" and "Mr. Eyre" are no part of "St. John Eyre Rivers", whose middle name is
    Eyre (a form of address goes with a given name or a surname, never a middle name; nameparser
    reads a full name's given name and surname)."""
    def parsed(entity: Entity, name: Name):
        said = next((doc.reader.text_of(*m) for m in entity.mentions if doc.reader.mention(*m).name == name), None)
        return given_and_surname(" ".join(said.split())) if said else None
    theirs = parsed(holder, full)
    if theirs is None:
        return False
    if len(own.words) == 1 and own.address in ("mr", "mrs", "miss"):
        return next(iter(own.words)) not in theirs  # "Miss Rachel", "Mr. Franklin": a given name is fine too
    ours = parsed(e, own) if len(own.words) > 1 else None
    return ours is not None and ours[1] != theirs[1]


def same_person(a: Name, b: Name | None, full: Name) -> bool:
    """Whether names `a` and `b` can both be parts of one person's `full` name: their words
    within it, their genders and forms of address the same where both say one."""
    if b is None:
        return True
    if not a.words | b.words <= full.words:
        return False
    genders = {n.gender for n in (a, b, full) if n.gender}
    addresses = {n.address for n in (a, b, full) if n.address}
    return len(genders) <= 1 and len(addresses) <= 1


def _only(found: dict) -> dict:
    return found if len(found) == 1 else {}


def one_person(found: dict[int, Entity], fulls: dict[int, set[frozenset]]) -> dict[int, Entity]:
    """Of entities holding full names of one person but for titles ("Squire Trelawney" and
    "John Trelawney", "Jim Hawkins" and "Cap'n Hawkins"), the biggest; else none."""
    untitled = [w - TITLES for k in found for w in fulls[k]]
    if not all(a <= b or b <= a for a in untitled for b in untitled):
        return {}
    k = max(found, key=lambda k: len(found[k].mentions))
    return {k: found[k]}


def name_within(name: Name, full: Name) -> bool:
    """Whether `name` is a part of `full`, a title it adds left out: "King George" is a part of
    "George Merry" as "George" is (a title says what a person is, not who: one man is "George"
    and "King George" in one mutiny), but "King" alone, or "William Lucas", is no part of it."""
    if name.words <= full.words:
        return True
    untitled = name.words - TITLES
    return bool(untitled) and untitled != name.words and untitled <= full.words
