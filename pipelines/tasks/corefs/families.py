"""A book's families: the people who share a surname, read from the full names it uses.

"Mr. Earnshaw" is a part of "Hindley Earnshaw"; but where the book also says "Hareton
Earnshaw", "Mr. Earnshaw" may be either, or their father, whom the book never calls by a given
name. So a name made of a form of address and a surname ("Mr. Earnshaw", "Miss Bennet") joins a
given-named person of that surname (passes short_names and full_names) only where the book
names one person of that surname who can bear that form: a man for "Mr.", a woman for "Mrs." and
"Miss". Likewise a given name alone ("Charles") that two full names of other surnames hold
("Charles Musgrove", "Charles Hayter") is no one's by the name alone. Full names are parsed with `nameparser` (title, first, middle, last: "Sir Walter Elliot"
-> Walter, Elliot), a maintained parser of English names, rather than by position alone.
"""

from __future__ import annotations

import functools

from .entities import HONORIFICS, TITLES, Name

_MEN_S_FORMS = {"mr", "sir", "lord"}


@functools.lru_cache(maxsize=8192)
def given_and_surname(said: str) -> tuple[str, str] | None:
    """The given name and surname of a full name as written ("Mr. Franklin Blake" -> ("franklin",
    "blake")), lower case; None for a name without both ("Mr. Darcy", "Darcy", "Long John"...)."""
    from nameparser import HumanName  # pure Python; imported on a book's first use

    parsed = HumanName(said)
    first, last = parsed.first.lower().rstrip("."), parsed.last.lower().rstrip(".")
    if not first or not last or first in TITLES or first in HONORIFICS or " " in first:
        return None
    return first, last


class Families:
    """Surname -> the given names the book's full names pair with it, and what is known of each
    one's gender and forms of address (`read` adds a full name)."""

    def __init__(self):
        self.members: dict[str, dict[str, set[str]]] = {}  # surname -> given name -> genders ("m", "f") seen
        self.addressed: dict[tuple[str, str], set[str]] = {}  # (surname, form) -> given names said with it

    def read(self, said: str, name: Name, gender: str | None = None) -> None:
        """A full name as written (`said`), read as `name`; `gender`: its chain's, where known."""
        if len(name.words - TITLES) > 1:
            parsed = given_and_surname(" ".join(said.split()))
            if parsed is not None and parsed[1] in name.words:
                genders = self.members.setdefault(parsed[1], {}).setdefault(parsed[0], set())
                genders.update(g for g in (name.gender, gender) if g)
                if name.address and said.split()[0].lower().rstrip(".") in HONORIFICS:  # "Mr. Franklin Blake": he is "Mr. Blake"
                    self.addressed.setdefault((parsed[1], name.address), set()).add(parsed[0])

    def can_be(self, name: Name, forms) -> int:
        """How many of the family named by `name` (a form of address and a surname alone: "Mr.
        Earnshaw") can bear its form: the ones the book calls so by their full names ("Mr.
        Franklin Blake"), else those whose gender is known to fit the form (from their chains,
        their honorifics, or entities.NameForms `forms`) and whom the book does not call by another
        form only ("Lady Anne Darcy" is no "Miss Darcy"); -1 for a name that is not such a name."""
        if name.address is None or len(name.words) != 1:
            return -1
        (surname,) = name.words
        if (surname, name.address) in self.addressed:
            return len(self.addressed[(surname, name.address)])
        other_forms = {g for (s, f), given in self.addressed.items() if s == surname and f != name.address for g in given}
        wanted = "m" if name.address in _MEN_S_FORMS else "f"
        count = 0
        for given, genders in self.members.get(surname, {}).items():
            genders = genders | ({"m"} if given in forms.men else set()) | ({"f"} if given in forms.women else set())
            count += given not in other_forms and wanted in genders  # of unknown gender: no one to count
        return count

    def full_names(self) -> list[Name]:
        """Each given name and surname the book's full names pair ("Charles Musgrove"), as a Name
        of those two words: a bridge (entities.names_compatible) between "Charles" and "Mr.
        Musgrove" where a chain holds both."""
        return [Name(frozenset((given, surname)), None, None)
                for surname, members in sorted(self.members.items()) for given in sorted(members)]

    def surnames_of(self, given: str) -> set[str]:
        """The surnames the book's full names pair the given name with ("charles": {"musgrove",
        "hayter"} in Persuasion)."""
        return {surname for surname, members in self.members.items() if given in members}


def _gender(entity) -> str | None:
    """An entity's gender as its pronouns and gendered mentions say it, when they say one."""
    said = set(entity.profile.genders) | {k for k in ("he", "she") if k in entity.profile.kinds}
    said = {"m" if g in ("m", "he") else "f" for g in said}
    return next(iter(said)) if len(said) == 1 else None


def book_families(doc, entities) -> Families:
    """The families of the full names a document's entities say (DocumentEntities `doc`)."""
    families = Families()
    for e in entities:
        gender = _gender(e)
        for m in e.mentions:
            name = doc.reader.mention(*m).name
            if name is not None and len(name.words) > 1:
                families.read(doc.reader.text_of(*m), name, gender)
    return families
