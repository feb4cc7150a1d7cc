"""The name passes: a document's entities far apart joined by what their names say.

After the windows' chains are joined window to window (document.DocumentEntities), one
person is still many entities: chapter 1's "Teodor Varga", chapter 40's "Teodor", a "Jim" for
"James". The passes below join them, one at a time and the surest first, as in the multi-pass
sieve of Raghunathan et al. (2010) and Lee et al. (2013): each pass sees what the passes before
it joined. Every pass joins two entities only when their profiles can be one person
(entities.Profile.compatible: no two genders, no two forms of address such as "Mr." and "Mrs."
or "Sir" and "Mr.", no two kinds of personal pronoun, no speaker joined to the one spoken to,
no two stories), and each has a switch (`LFCLI_COREF_OFF=name,...`, switches.py).

  stray_names       a chain's names that cannot be its person's leave it    stray_names.py
                    ("Charles Hayter" in Charles Musgrove's chain)
  narrated_kin      a narrator's "my aunt" one chain, out of the chains      kin.py
                    the windows put it in
  same_name         the same most frequent name ("Mr. Darcy", "Darcy")      same_names.py
  short_names       a name a part of exactly one longer name ("Silver")     same_names.py
  full_names        a name a part of a full name one entity holds           full_names.py
                    ("Hawkins" and the "Jim Hawkins" of Jim's chain)
  married_names     maiden and married name, where the book says so         married.py
  pet_names         a diminutive and its full given name ("Lizzy")          pet_names.py
  addressed_titles  "my lady", "her ladyship" and the book's one Lady       title_nouns.py
  aliases           a name the book says a person is called by              aliases.py
                    ("called himself X", "whom they called X")
  book_evidence     two entities many windows far apart each put in one     book_evidence.py
                    chain ("Annie" and "Mrs. Strong"; "the stranger")

A newcomer adding a pass writes a function `(doc, entities, state) -> entities` in a module of
its own (its docstring: what it joins and what it never joins), tests it on a short text, and
puts it in PASSES where its precision places it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .aliases import join_aliases
from .book_evidence import join_by_evidence
from .chains import Entity, Joining
from .families import book_families
from .full_names import join_full_names
from .kin import split_narrated_kin
from .married import join_married_names
from .pet_names import join_pet_names
from .same_names import group_by_name, join_same_name, join_short_names
from .stray_names import split_stray_names
from .switches import on
from .title_nouns import join_addressed_titles


class Pass(NamedTuple):
    name: str  # its switch (switches.py)
    run: Callable  # (doc: DocumentEntities, entities: list[Entity], state: Joining) -> list[Entity]


# Passes that take mentions out of chains: they run first, before the chains are grouped by name.
SPLITS = (
    Pass("stray_names", split_stray_names),
    Pass("narrated_kin", split_narrated_kin),
)
PASSES = (
    Pass("same_name", join_same_name),
    Pass("short_names", join_short_names),
    Pass("full_names", join_full_names),
    Pass("married_names", join_married_names),
    Pass("pet_names", join_pet_names),
    Pass("addressed_titles", join_addressed_titles),
    Pass("aliases", join_aliases),
    Pass("book_evidence", join_by_evidence),
)


def run_passes(doc, entities: list[Entity]) -> list[Entity]:
    """Every pass that is on, in order, over the document's entities (in text order); returns
    the entities left, in text order."""
    state = Joining(families=book_families(doc, entities))
    for p in SPLITS:
        if on(p.name):
            entities = p.run(doc, entities, state)
    group_by_name(doc, entities, state)
    for p in PASSES:
        if on(p.name):
            entities = p.run(doc, entities, state)
    if on("stray_names"):  # and once more: a join through a chain of two genders brought a stray in
        entities = split_stray_names(doc, entities, state, again=True)
    return sorted(entities, key=lambda e: e.mentions[0])
