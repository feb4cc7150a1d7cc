"""Pass `pet_names`: a pet name and the given name it is short for are one person.

Joins an entity whose most frequent name is a single given name that lists of English names
know as a diminutive or short form of another ("Lizzy" of Elizabeth, "Jim" of James, "Harry"
of Henry, "Kate" of Katherine; the hand-curated table of the `nicknames` package; a full name
spelled with a letter more or less than the table's counts: "Tony" of Antony as of Anthony; or a
name that dialogue spells with an apostrophe for letters left out: "Em'ly" of Emily) with the
one entity whose most frequent name holds such a full given name ("James Vane", "Henry"), the
smaller into the bigger, when the two can be one person (entities.Profile: genders,
pronouns, forms of address, who speaks to whom).

Where several entities hold such a full name, the biggest takes it if the others are its own
fragments or people spoken of far less (_principal). A pet-name chain that cannot be one with
the holder (a window put "Lord Tony" in a chain with a "they") gives the holder its mentions
of the pet name and keeps the rest, as a chain of a name does in `same_name`; only the smaller
of the two gives (a heroine's big "Lizzy" chain is not emptied into a stray "Elizabeth").

Never joins: where two people of about equal weight hold a full given name the pet name may
stand for (a book with a John and a Jonathan leaves its "Jack" alone); a pet name and a full name the
book says side by side as two people ("Jim and James", "James or Jim" is not looked for);
names the table does not know ("Trot" for David), which only the story links; two short forms
of one name ("Nelly" and "Ellen", both of Eleanor; but "Bessie" and "Eliza", both of Elizabeth,
are two women in one book).
"""

from __future__ import annotations

import functools

from .chains import Entity, Joining, absorb, alive, named_apart
from .entities import TITLES


@functools.lru_cache(maxsize=1)
def _table():
    from nicknames import NickNamer  # a small pure-Python table; imported on a book's first use

    return NickNamer()


@functools.lru_cache(maxsize=4096)
def full_forms(word: str) -> frozenset:
    """The given names `word` (lower case) is a pet name or short form of: "lizzy" ->
    {"elizabeth"}; empty for a word the table does not know as one."""
    return frozenset(_table().canonicals_of(word)) - {word}


def _holders(named, e, word: str, fulls: frozenset) -> list:
    """The entities but `e` whose most frequent name holds one of the given names `fulls` the pet
    name `word` is short for (and not the pet name itself), each with that given name."""
    found = []
    for o, other in named:
        if o is e or o.into is not None or other is None or word in other.words:
            continue
        given = sorted(w for w in other.words - TITLES if w in fulls or any(spelled_apart(w, f) for f in fulls))
        if given:
            found.append((o, given[0]))
    return found


def spelled_apart(a: str, b: str) -> bool:
    """Whether two given names of five letters or more are one name spelled two ways, one letter
    left out ("Antony", "Anthony"; "Philip", "Phillip"): the table lists one spelling only."""
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) != 1:
        return False
    short, long = sorted((a, b), key=len)
    return any(long[:k] + long[k + 1:] == short for k in range(len(long)))


def elided(short: str, full: str) -> bool:
    """Whether `short` is `full` written with letters left out where an apostrophe stands, as
    dialogue spells a name ("Em'ly" of Emily, "Sam'l" of Samuel): what comes before and after the
    apostrophe begins and ends the full name, which has letters more between them."""
    before, mark, after = short.partition("'")
    return (bool(mark and before and after) and "'" not in after and len(full) > len(before) + len(after)
            and full.startswith(before) and full.endswith(after))


def _compatible(doc, o, e) -> bool:
    """Whether the two can be one person, a quote's "I" and "you" not asked: the table's word
    that the names are one person's outweighs a window's "I" put in the wrong chain, as a full
    name said again does (DocumentEntities.compatible)."""
    return o.profile.compatible(e.profile, same_name=True, names=False, quotes=False)


def _compatible_mention(doc, o, mention) -> bool:
    """Whether one mention of the pet name can be the holder's (as _compatible, one mention)."""
    return o.profile.compatible(doc.profile([mention]), same_name=True, names=False, quotes=False)


def _own_surname(doc, e: Entity, word: str, holder: Entity) -> bool:
    """Whether the pet-name chain says its name with a surname of its own, one the holder's
    names never say ("EMMA MICAWBER" and "Mrs. Micawber" beside "Emily" and "little Em"): then
    it is a given name in its own right (the table knows "Emma" as a form of Emily), and two
    people. "Tony Dewhurst" beside "Lord Antony Dewhurst" shares its surname and is one."""
    theirs = {w for m in holder.mentions if (n := doc.reader.mention(*m).name) is not None for w in n.words}
    for m in e.mentions:
        name = doc.reader.mention(*m).name
        if name is not None and word in name.words and name.words - TITLES - {word} - theirs:
            return True
    return False


MINOR = 0.1  # other people holding the full name, in mentions, at most this share of the principal holder


def _principal(holders: list, doc) -> list:
    """The holders, or the biggest alone where the others are its own fragments (their names
    within its name: "Henry" beside "Henry Wotton") or other people far less spoken of (Sir
    Henry Ashton's 10 mentions beside Lord Henry's 1,266): at most MINOR of its mentions."""
    if len(holders) < 2:
        return holders
    size = {id(o): len(o.final().mentions) for o, _ in holders}
    big = max(holders, key=lambda h: size[id(h[0])])
    words = doc.dominant_name(big[0]).words
    others = sum(size[id(o)] for o, _ in holders if o is not big[0] and not doc.dominant_name(o).words <= words)
    return [big] if others <= MINOR * size[id(big[0])] else holders


def join_pet_names(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `pet_names` over a document's alive `entities` (document.DocumentEntities `doc`):
    see the module's notes. Returns the entities left."""
    named = [(e, doc.dominant_name(e)) for e in entities if e.into is None]
    gave = set()  # id() of the entities that gave their pet name away: no longer of that name
    for e, name in sorted(named, key=lambda en: len(en[0].mentions)):
        if e.into is not None or id(e) in gave or name is None or len(name.words - TITLES) != 1:
            continue
        (word,) = name.words - TITLES
        fulls = full_forms(word)
        if not fulls and "'" in word:  # "Em'ly": the book's own names it is written short for
            fulls = frozenset(w for _, n in named if n is not None for w in n.words if elided(word, w))
        if not fulls:
            continue
        holders = _principal(_holders([(o, n) for o, n in named if id(o) not in gave], e, word, fulls), doc)
        if len(holders) != 1:
            continue
        (o, full), = holders
        o = o.final()
        if o is e or named_apart(doc.reader.text, word, full) or _own_surname(doc, e, word, o):
            continue
        if not _compatible(doc, o, e):  # a window put "Lord Tony" beside a "they": the name goes, the rest stays
            if len(e.mentions) < len(o.mentions):  # not a heroine's big "Lizzy" chain into a stray "Elizabeth"
                if doc.lend_name(e, {name.words}, lambda m: [o] if _compatible_mention(doc, o, m) else []):
                    gave.add(id(e))
            continue
        into, other = (o, e) if len(o.mentions) >= len(e.mentions) else (e, o)
        absorb(into, other)
    return alive(entities)
