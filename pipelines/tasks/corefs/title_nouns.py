"""Pass `addressed_titles`: a chain of "my lady" and "her ladyship" is the book's one Lady.

A servant's "my lady", "her ladyship", "his lordship" name no one by name, so no name rule
joins their chains to the person; but they carry a form of address (entities.MentionReader:
"lady", "lord"), and where the book names exactly one person with it ("Lady Verinder"), that is
whom they mean. Joins: a chain with no name whose only form of address is that one, into the
entity (or the biggest of the entities) of that one name, when their profiles can be one
person. Never joins: where two people are named with the form ("Lady Russell" and "Lady
Dalrymple"), a chain that holds a name, or across genders and pronouns.
"""

from __future__ import annotations

from .chains import Entity, Joining, absorb, alive


def join_addressed_titles(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `addressed_titles` over a document's alive `entities` (document.DocumentEntities
    `doc`). Returns the entities left."""
    holders: dict[str, dict[frozenset, list]] = {}  # address -> the names carrying it -> their entities
    for e in entities:
        name = doc.dominant_name(e)
        if name is not None and name.address in ("lady", "lord"):
            holders.setdefault(name.address, {}).setdefault(name.words, []).append(e)
    for e in entities:
        if e.into is not None or e.profile.names or len(e.profile.titles) != 1:
            continue
        (address,) = e.profile.titles
        named = holders.get(address, {})
        if len(named) != 1:
            continue
        (group,) = named.values()
        finals = [o.final() for o in group]
        into = max(finals, key=lambda o: len(o.mentions))
        if into is not e and into.profile.compatible(e.profile, same_name=True, names=False):
            absorb(into, e)
    return alive(entities)
