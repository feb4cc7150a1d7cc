"""Pass `aliases`: a name the book says a person is called by joins that person.

No table knows that "Dunstan" is "Dunsey Cass" or that "Umbopa" is "Ignosi": only the story
says so, in a few fixed turns of phrase, which `book_aliases` reads from the text:

  "Dunstan, commonly called Dunsey Cass"      (commonly, usually, generally, familiarly,
  "Auralia Margaretta, otherwise called Peggy" better, also, otherwise) called / known as
  "Umbopa, alias Ignosi", "Fitz, nicknamed Skin", "X, also known as Y"
  "the Major, whom he called Mr. Dobbin"       (whom ... called: the name is the Major's)
  "Jack Harper called himself Jones"           (the name right before "called himself")
  "Lizzy, as Elizabeth was called"
  "Mrs. Markleham; but our boys used to call her the Old Soldier"   (the name just before)

Joins: the one entity each side's name stands for (its most frequent name is within that name
and holds the name's first word: "Dunsey" for "Dunsey Cass", not "Cass", the father), the
smaller into the bigger, where their profiles can be one person; where they cannot but the book
gives both names one gender ("Mrs. Markleham; but our boys used to call her the Old Soldier",
and a window put another's "he" in the chain of "the Old Soldier"), one side's mentions of its
name go to the other, each where it fits there (the smaller side's first), and the rest stays.

Never joins: a plain "X called Y" (one person summoning another: "Coggan called Gabriel"),
"the man who called himself X" (no name to join it to), a name either side that two entities
could stand for, across genders, forms of address or pronoun kinds.
"""

from __future__ import annotations

import re

from .chains import Entity, Joining, absorb, alive
from .entities import HONORIFICS, Name, proper_name

_NAME = r"((?:[A-Z][a-z]+\.?\s+)?[A-Z][\w'\u2019-]+(?:[ \t]+[A-Z][\w'\u2019-]+){0,2})"
_SAID = r"(?:commonly|usually|generally|familiarly|better|also|otherwise|sometimes)"
_TURNS = (  # (pattern, group of the person's name, group of the alias)
    (re.compile(_NAME + r",\s+(?:who\s+(?:was|is)\s+)?" + _SAID + r"\s+(?:called|known\s+as|named)\s+" + _NAME), 1, 2),
    (re.compile(_NAME + r",\s+(?:alias|nicknamed|known\s+as)\s+" + _NAME), 1, 2),
    (re.compile(_NAME + r",\s+whom\s+(?:\w+\s+){1,2}?(?:called|call|nicknamed)\s+" + _NAME), 1, 2),
    (re.compile(_NAME + r"\s+(?:who\s+)?(?:had\s+)?(?:called|calls|styled|styles)\s+(?:himself|herself)\s+" + _NAME), 1, 2),
    (re.compile(_NAME + r",\s+as\s+" + _NAME + r"\s+(?:was|is)\s+(?:then\s+|always\s+|usually\s+)?called\b"), 2, 1),
    # "Mrs. Markleham; but our boys used to call her the Old Soldier": the name just before is the her
    (re.compile(_NAME + r"[,;]\s+(?:but\s+|and\s+)?(?:[a-z]+\s+){0,5}?(?:call|called|calls|nicknamed)\s+(?P<pronoun>her|him)\s+"
                r"(?:the\s+)?" + _NAME), 1, 3),
)


def book_aliases(text: str, forms=None) -> list[tuple[Name, str, Name, str]]:
    """The (name, as written, alias, as written) the book states, in text order, each name read
    as entities.proper_name reads a mention (and given the book's forms of address, `forms`:
    entities.NameForms); a side that is no person's name ("Otherwise", "Who") is left out."""
    found = []
    for pattern, person, alias in _TURNS:
        for m in pattern.finditer(text):
            sides = []
            for k in (person, alias):
                said = " ".join(m.group(k).split())
                name = proper_name(said)
                while name is not None and " " in said and said.split()[0].lower().rstrip(".") not in name.words | HONORIFICS.keys():
                    said = said.split(maxsplit=1)[1]  # "Then Jack Harper": "Jack Harper"
                sides += [forms.apply(name, said) if name is not None and forms is not None else name, said]
            pronoun = m.groupdict().get("pronoun")
            if pronoun and sides[2] is not None:  # "call her the Old Soldier": the book says the alias's gender
                sides[2] = sides[2]._replace(gender="f" if pronoun == "her" else "m")
            if sides[0] is not None and sides[2] is not None and sides[0].words != sides[2].words:
                found.append((m.start(), tuple(sides)))
    return [sides for _, sides in sorted(found, key=lambda f: f[0])]


def _stands_for(doc, entities: list[Entity], name: Name, said: str, other: Name) -> Entity | None:
    """The one alive entity `name` (written `said`) stands for: its most frequent name within
    `name` and holding the first word of `said` that `other` lacks ("Dunsey" of "Dunsey Cass"
    beside "Dunstan", never "Cass", the father's)."""
    written = [w.lower() for w in re.findall(r"[\w'\u2019-]+", said)]
    key = next((w for w in written if w in name.words and w not in other.words), None)
    if key is None:
        return None
    found = {}
    for e in entities:
        e = e.final()
        n = doc.dominant_name(e)
        if e.mentions and n is not None and key in n.words and n.words <= name.words:
            found[id(e)] = e
    return next(iter(found.values())) if len(found) == 1 else None


def join_aliases(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `aliases` (see the module's notes). Returns the entities left."""
    pairs = book_aliases(doc.reader.text, doc.reader.forms)
    for name, name_said, alias, alias_said in pairs:
        a = _stands_for(doc, entities, name, name_said, alias)
        b = _stands_for(doc, entities, alias, alias_said, name)
        if a is None or b is None or a is b:
            continue
        if not any(doc.reader.mention(*m).is_person for m in a.mentions + b.mentions):
            continue  # "Cherry Creek, as Denver was then called": places
        sides = sorted(((a, name), (b, alias)), key=lambda p: -len(p[0].mentions))
        if a.profile.compatible(b.profile, same_name=True, names=False, quotes=False):  # the book's word: as a full name said again
            absorb(sides[0][0], sides[1][0])
            continue
        if not (name.gender and alias.gender == name.gender):
            continue  # "Maggie, alias Celestine" beside a "he": maybe two people
        # the book gives both names one gender ("Mrs. Markleham; ... call her the Old Soldier"), so a
        # chain of the alias beside a "he" is a window's slip: one side's mentions of its name go to
        # the other side, each where it fits there (the smaller side's first)
        for (into, _), (other, its) in (sides, sides[::-1]):
            if doc.lend_name(other, {n.words for n in doc.profile(other.mentions).names if n.words <= its.words},
                             lambda m, into=into: [into] if doc.fits(into, m, names=False) else []):
                break
    return alive(entities)
