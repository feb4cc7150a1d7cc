"""Pass `married_names`: a woman under her maiden and her married name is one entity.

Where the book says whom she married (entities.married_names: "Charlotte the wife of Mr.
Collins", "Jane, now Mrs. Bingley"), the one entity whose most frequent name is hers
("Charlotte", "Miss Lucas") and the one whose is "Mrs." (or "Lady", a knight's or a lord's
wife: "Lady Blakeney") and his surname are one, the smaller into the bigger. The book's word
outweighs a window's "I" or "you" put in the wrong one of the two, and the change of form of
address ("Miss" to "Mrs.") is what marriage does, so neither is asked.

Never joins: where two entities could be the wife ("Mrs. Collins" and the elder "Mrs.
Collins") or two the maiden (one of her name's chains holding less than twice the mentions of
the others together); across genders or pronoun kinds, or a story break; a woman the
book does not say married ("Mrs." + a surname alone is not enough).
"""

from __future__ import annotations

from .chains import Entity, Joining, absorb, alive

_WIVES = ("mrs", "lady")  # the forms of address a married woman takes her husband's surname with


def join_married_names(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `married_names` (see the module's notes). Returns the entities left."""
    for maiden, surname in doc.reader.forms.married.items():
        named = [(e, doc.dominant_name(e)) for e in entities if e.into is None]
        wives = [e for e, n in named if n and n.address in _WIVES and n.words == {surname}]
        maidens = [e for e, n in named if n and maiden in n.words and n.address not in _WIVES and n.gender != "m"]
        maidens.sort(key=lambda e: -len(e.mentions))  # her chain, and the few a window left of her maiden name
        if len(wives) == 1 and maidens and len(maidens[0].mentions) >= 2 * sum(len(e.mentions) for e in maidens[1:]):
            (wife,), girl = wives, maidens[0]
            if wife.profile.compatible(girl.profile, same_name=True, names=False, quotes=False, addresses=False):
                into, other = (wife, girl) if len(wife.mentions) >= len(girl.mentions) else (girl, wife)
                absorb(into, other)
    return alive(entities)
