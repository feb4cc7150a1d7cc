"""A document's entity while its windows' chains are joined (Entity), and what the name passes
share as they run (Joining).

An entity is a growing list of mentions and the Profile of what they say (entities.Profile).
Joining two moves the mentions of one into the other and leaves a pointer behind (`into`), so
that a pass holding an old reference finds the entity it now lives in (`final`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .entities import Profile

Span = tuple[int, int]  # a mention's first and last token (document positions)


class Entity:
    __slots__ = ("mentions", "profile", "into")

    def __init__(self, mentions: list[Span] = (), profile: Profile | None = None):
        self.mentions: list[Span] = list(mentions)
        self.profile = profile or Profile()
        self.into: Entity | None = None  # the entity that absorbed it (absorb)

    def final(self) -> "Entity":
        e = self
        while e.into is not None:
            e = e.into
        return e


def defines(mention) -> bool:
    """Whether a mention says who its entity is: a name or a noun phrase, not a pronoun or "you"
    (a pronoun put in the wrong chain is the window model's commonest slip)."""
    return not mention.kind and not mention.person


def absorb(into: Entity, other: Entity) -> None:
    """`other`'s mentions and profile into `into`; `other` then points at it."""
    into.mentions = sorted(into.mentions + other.mentions)
    into.profile.update(other.profile)
    other.into = into


def alive(entities: list[Entity]) -> list[Entity]:
    """The entities not absorbed into another and not emptied by a lent name."""
    return [e for e in entities if e.into is None and e.mentions]


def named_apart(text: str, a: str, b: str) -> bool:
    """Whether the book says the two names side by side as two people: "A and B" or "B and A"
    within one sentence ("Jim and his brother James"). A name in lower case is looked for
    capitalised ("jim": "Jim"); one as the book writes it ("Mr. Rivers") as it is."""
    if not a.strip() or not b.strip():
        return False
    a, b = (re.escape(n.capitalize() if n.islower() else n) for n in (a, b))
    between = r"\s+(?:[a-z]+\s+){0,2}"  # "and his brother James"; not "and Isabella Linton", another name's part
    return re.search(rf"\b{a}\b[^.!?\n]{{0,30}}\band{between}{b}\b|\b{b}\b[^.!?\n]{{0,30}}\band{between}{a}\b",
                     text) is not None


def said_as(doc, entity: Entity, name) -> str:
    """The text of the entity's commonest mention of `name` (an entities.Name), as the book
    writes it ("Mr. Peggotty"); "" if none."""
    texts = Counter(doc.reader.text_of(*m) for m in entity.mentions if doc.reader.mention(*m).name == name)
    return texts.most_common(1)[0][0] if texts else ""


@dataclass
class Joining:
    """What the name passes share: `by_name`, the entities grouped by the words of their most
    frequent name when the passes begin (same_names.py fills it), and `lent`, the entities that
    gave their mentions of their name to another (DocumentEntities.lend_name): they are no
    longer of that name, so no later pass joins them by it."""

    by_name: dict[frozenset, list[Entity]] = field(default_factory=dict)
    lent: set[int] = field(default_factory=set)  # id() of the entities
    families: object = None  # families.Families of the book's full names

    def shared_surname(self, name, forms) -> bool:
        """Whether `name` ("Mr. Earnshaw") is a form of address and a surname that two or more
        of a book's family can bear (families.py): no pass joins it to one of them by the name."""
        return self.families is not None and self.families.can_be(name, forms) >= 2

    def shared_given_name(self, name) -> bool:
        """Whether `name` is a given name alone ("Charles", no form of address) that the book's
        full names give two people of different surnames ("Charles Musgrove", "Charles Hayter")."""
        if self.families is None or name is None or name.address or len(name.words) != 1:
            return False
        (given,) = name.words
        return len(self.families.surnames_of(given)) >= 2
