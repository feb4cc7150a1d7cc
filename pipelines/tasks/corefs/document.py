"""A document's entities, joined from its windows' chains (DocumentEntities).

Joining windows is where a long document is won or lost. Joining every two chains that share
a mention lets one wrong link in one window merge two people, and over a novel's hundreds of
windows such links percolate until one chain holds most of the book. So here a window's chain
joins at most one entity of the window before it (the one it shares most mentions with), and
only when the two can be one person (entities.Profile: names, gender, pronouns, who
speaks in which quote); a mention is kept from the window that owns its position (the one
it sits furthest from an edge in). Then entities far apart join by name ("Teodor Varga" in
chapter 1, "Teodor" in chapter 40): the same dominant name, or a shorter name that fits one
such entity only; a name that is part of a full name one entity holds ("Hawkins", "Jim
Hawkins"), titles left out ("King George" is George Merry's "George"); a full name two chains
each say again and again ("John Silver"), whatever a window put in their quotes; and a maiden
name with the married one where the book says whom she married ("Charlotte the wife of Mr.
Collins"). Memory: the previous window's mentions and the entities found so far.

Where the people change (a scene break: the names of the paragraphs before share none with
the names after, entities.scene_breaks), no chain goes on but by name. Without this a
"he" at the top of a new story took the old story's last man, and every "he" after it with
him; so a window holding a break is decoded again with each antecedent in its mention's
scene, and the document's chains are cut at the breaks before they join.

Where one story ends and another begins, in a file of several (stories.py: the words on the
two sides of a paragraph start are unlike), no chain goes on at all, not even by name: two
stories' narrators ("I") and two stories' Johns are four people.
"""

from __future__ import annotations

import bisect
from collections import Counter

from .entities import TITLES, MentionReader, Name, Profile, is_nominal
from .pet_names import join_pet_names
from .title_nouns import join_addressed_titles
from .switches import on

Span = tuple[int, int]  # a mention's first and last token (document positions)


class _Entity:
    __slots__ = ("mentions", "profile", "into")

    def __init__(self, mentions: list[Span] = (), profile: Profile | None = None):
        self.mentions: list[Span] = list(mentions)
        self.profile = profile or Profile()
        self.into: _Entity | None = None  # the entity that absorbed it (_absorb)

    def final(self) -> "_Entity":
        e = self
        while e.into is not None:
            e = e.into
        return e


class DocumentEntities:
    """A document's entities, built window by window (see the module's notes)."""

    def __init__(self, reader: MentionReader, rules: bool = True, breaks: list[int] = (), stories: list[int] = ()):
        self.reader, self.rules = reader, rules
        self.breaks = sorted(breaks)  # scene and story breaks: no chain crosses one but by name
        self.stories = sorted(stories)  # story breaks (stories.py): no chain crosses one, not even by name
        self.entities: list[_Entity] = []
        self.previous: dict[Span, int] = {}  # the previous window's mentions -> entity

    def _profile(self, spans) -> Profile:
        p = Profile()
        if self.rules:
            for s in spans:
                p.add(self.reader.mention(*s))
            if self.stories:  # which stories it is in: a profile of two is compatible with none
                p.scenes.update(bisect.bisect_right(self.stories, s[0]) for s in spans)
        return p

    def add_window(self, clusters: list[list[Span]], owned: tuple[int, int]) -> None:
        """One window's chains; `owned`: the tokens [lo, hi) whose mentions this window keeps."""
        lo, hi = owned
        current: dict[Span, int] = {}
        for cluster in self._by_scene(clusters):
            profile = self._profile(cluster)
            votes = Counter(self.previous[m] for m in cluster if m in self.previous)
            target = next((e for e, _ in votes.most_common() if self.entities[e].profile.compatible(profile)), None)
            own = [m for m in cluster if lo <= m[0] < hi]
            if target is None:
                if not own:
                    continue
                target = len(self.entities)
                self.entities.append(_Entity())
            entity = self.entities[target]
            entity.mentions.extend(own)
            entity.profile.update(self._profile(own))
            for m in cluster:
                current[m] = target
        self.previous = current

    def _by_scene(self, clusters: list[list[Span]]) -> list[list[Span]]:
        """Each chain cut at the scene breaks: its mentions of each scene apart."""
        if not self.breaks:
            return clusters
        pieces = []
        for cluster in clusters:
            scenes: dict[int, list[Span]] = {}
            for m in cluster:
                scenes.setdefault(bisect.bisect_right(self.breaks, m[0]), []).append(m)
            pieces.extend(scenes.values())
        return pieces

    def link_names(self) -> list[list[Span]]:
        """The entities with those far apart joined by name: entities whose most frequent
        name is the same, then (the longer names first) an entity whose name is a part of
        exactly one other's ("Teodor" -> "Teodor Varga"), each only when compatible. Mentions
        in text order."""
        entities = [e for e in self.entities if e.mentions]
        for e in entities:
            e.mentions.sort()
        entities.sort(key=lambda e: e.mentions[0])
        if self.rules:
            entities = self._join_by_name(entities)
        return [sorted(e.mentions) for e in entities]

    def _dominant_name(self, entity: _Entity) -> Name | None:
        names = Counter(n for n in (self.reader.mention(*m).name for m in entity.mentions) if n)
        return names.most_common(1)[0][0] if names else None

    def _join_by_name(self, entities: list[_Entity]) -> list[_Entity]:
        by_name: dict[frozenset, list[_Entity]] = {}  # the words of each entity's dominant name
        for e in entities:
            name = self._dominant_name(e)
            if name:
                by_name.setdefault(name.words, []).append(e)
        lent: set[int] = set()  # gave its mentions of its name away (_lend_name): no longer of that name
        for words, group in by_name.items():  # the same dominant name ("Darcy", "Mr. Darcy"): one entity, where compatible
            kept: list[_Entity] = []
            for e in sorted(group, key=lambda e: (-self._named(e, words), -len(e.mentions))):  # the most named takes the others
                into = next((o for o in kept if self._compatible(o, e)), None)
                if into is not None:
                    _absorb(into, e)
                    continue
                if kept and self._lend_name(e, {words}, lambda m: [o for o in kept if self._fits(o, m)][:1]):
                    continue  # its mentions of the name went to an entity of that name; the rest is unnamed
                kept.append(e)
            group[:] = kept
        # The longer names first ("John Silver" into "Long John Silver"), so that a short one
        # ("Silver") then finds one entity, not one for each longer name it is a part of.
        for words, group in sorted(by_name.items(), key=lambda kv: -len(kv[0])):
            for e in group:  # a short name that fits exactly one longer one: one name, as in the first pass
                if id(e) in lent:
                    continue
                longer = [o for lw, others in by_name.items() if words < lw for o in others if o.into is None and id(o) not in lent]
                fits = [o for o in longer if self._compatible(o, e)]
                if len(fits) == 1:
                    _absorb(fits[0], e)
                elif not fits and longer:  # its mentions of the name to the one longer name its names are within
                    within = [o for o in longer if self._names_within(e, self._dominant_name(o))]
                    if self._lend_name(e, {words}, lambda m: [o for o in within if self._fits(o, m)]):
                        lent.add(id(e))
        alive = [e for e in entities if e.into is None and e.mentions]
        alive = self._join_married(self._join_by_full_name(alive, lent))
        if on("pet_names"):
            alive = join_pet_names(self, alive, _absorb)
        if on("addressed_titles"):
            alive = join_addressed_titles(self, alive, _absorb)
        return sorted(alive, key=lambda e: e.mentions[0])

    def _join_married(self, entities: list[_Entity]) -> list[_Entity]:
        """A woman under her maiden and her married name is one entity where the book says whom
        she married (entities.married_names: "Charlotte the wife of Mr. Collins"): the one entity
        whose most frequent name is hers ("Charlotte", "Miss Lucas") and the one whose is "Mrs."
        and his surname, when their genders and pronouns agree and no story break is between them
        (the book's word outweighs a window's "I" or "you" put in the wrong one of the two)."""
        for maiden, surname in self.reader.forms.married.items():
            named = [(e, self._dominant_name(e)) for e in entities if e.into is None]
            wives = [e for e, n in named if n and n.address == "mrs" and n.words == {surname}]
            maidens = [e for e, n in named if n and maiden in n.words and n.address != "mrs" and n.gender != "m"]
            if len(wives) == 1 and len(maidens) == 1:
                (wife,), (girl,) = wives, maidens
                if wife.profile.compatible(girl.profile, same_name=True, names=False, quotes=False, addresses=False):
                    into, other = (wife, girl) if len(wife.mentions) >= len(girl.mentions) else (girl, wife)
                    _absorb(into, other)
        return [e for e in entities if e.into is None]

    def _join_by_full_name(self, entities: list[_Entity], lent: set[int]) -> list[_Entity]:
        """A name that is a part of a full name another entity holds, though not as its most
        frequent ("Hawkins" and the "Jim Hawkins" of Jim's chain, "Trelawney" and the "Squire
        Trelawney" of the squire's, "Miss Darcy" and the "Georgiana Darcy" of Georgiana's):
        one entity, when exactly one entity holds full names of the kind that can be the same
        person (genders and forms of address agree); and a full name a chain holds, held more
        by another ("Captain Smollett" in the ship's chain). Where one wrong link keeps the two apart,
        the mentions of the name and of the full name go (_lend_name): a window that put the
        ship's "her" in the captain's chain leaves "the captain" and "Captain Smollett" there too.
        The smaller entities first, into the bigger."""
        holder: dict[frozenset, tuple[_Entity, Name]] = {}  # a full name's words -> the entity holding it most, and it
        counts: Counter = Counter()
        people = [e for e in entities if any(self.reader.mention(*m).is_person for m in e.mentions)]
        for e in people:  # not "the Royal George" (a ship) for "George Merry"
            for m in e.mentions:
                name = self.reader.mention(*m).name
                if name is not None and len(name.words) > 1:
                    counts[(name.words, id(e))] += 1
                    best = holder.get(name.words)
                    if best is None or counts[(name.words, id(best[0]))] < counts[(name.words, id(e))]:
                        holder[name.words] = (e, name)
        for e in sorted(people, key=lambda e: len(e.mentions)):
            own = self._dominant_name(e)
            if own is None or id(e) in lent or e.into is not None:
                continue
            found, fulls = {}, {}
            for words, (first, full) in holder.items():
                o = first.final()
                part = own.words < words or (own.words == words and counts[(words, id(e))] < counts[(words, id(first))])
                if (o is not e and part and _same_person(own, self._dominant_name(o), full)
                        and self._names_within(e, full)):
                    found[id(o)] = o
                    fulls.setdefault(id(o), set()).add(words)
            if len(found) > 1:  # two Miss Lucases: the one whose full name this chain itself says,
                says = {n.words for n in e.profile.names}  # else the one whose chain says "Miss Lucas" too
                found = ({k: o for k, o in found.items() if fulls[k] & says}
                         or _only({k: o for k, o in found.items() if own in o.profile.names})
                         or _one_person(found, fulls))
            if len(found) != 1:
                continue
            (o,) = found.values()  # the full name says the names are one person's ("Miss Darcy", "Georgiana")
            if self._compatible(o, e, names=False):
                _absorb(o, e)
            elif self._lend_name(e, {own.words, *fulls[id(o)]}, lambda m: [o] if self._fits(o, m, names=False) else []):
                lent.add(id(e))
        return [e for e in entities if e.into is None and e.mentions]

    def _compatible(self, a: _Entity, b: _Entity, names: bool = True) -> bool:
        """Profile.compatible for two chains of one name; where both say one full name at least
        FULL_NAME_AGAIN times ("John Silver"), a quote's "I" and "you" in the two do not keep
        them apart: a window put the captain's "I" in one of Silver's two chains."""
        return a.profile.compatible(b.profile, same_name=True, names=names) or (
            a.profile.compatible(b.profile, same_name=True, names=names, quotes=False) and self._same_full_name(a, b))

    def _same_full_name(self, a: _Entity, b: _Entity) -> bool:
        def fulls(e: _Entity) -> Counter:
            return Counter(n.words for n in (self.reader.mention(*m).name for m in e.mentions)
                           if n is not None and len(n.words - TITLES) > 1)
        ours, theirs = fulls(a), fulls(b)
        return any(k >= FULL_NAME_AGAIN and theirs[w] >= FULL_NAME_AGAIN for w, k in ours.items())

    def _names_within(self, entity: _Entity, full: Name, stray: float = 0.1) -> bool:
        """Whether the entity's names are parts of `full`, but for a `stray` share at most: "Sir
        William", whose chain also says "William Lucas", is not the "William" of "William Collins"."""
        names = [n for n in (self.reader.mention(*m).name for m in entity.mentions) if n is not None]
        return sum(not _name_within(n, full) for n in names) <= stray * len(names)

    def _named(self, entity: _Entity, words: frozenset) -> int:
        return sum((n := self.reader.mention(*m).name) is not None and n.words == words for m in entity.mentions)

    def _fits(self, entity: _Entity, mention: Span, names: bool = True) -> bool:
        return entity.profile.compatible(self._profile([mention]), same_name=True, names=names)

    def _lend_name(self, entity: _Entity, names: set[frozenset], takers) -> bool:
        """An entity that cannot be one with the entities of its name (a window chain that holds
        "Mr. Darcy" beside a "they", or "Jane" beside another's "I"): each of its mentions of the
        `names` (their words) goes to the one entity `takers(mention)` gives, where it gives
        exactly one, and the rest stays an entity of its own. A proper name is the surest thing a
        chain holds: one wrong pronoun link must not keep a character's name from the character.
        True when any mention went; the entity is then no longer one of that name."""
        moved = []
        for m in entity.mentions:
            name = self.reader.mention(*m).name
            if name is not None and name.words in names:
                found = takers(m)
                if len(found) == 1:
                    found[0].mentions.append(m)
                    found[0].profile.update(self._profile([m]))
                    moved.append(m)
        if not moved:
            return False
        moved = set(moved)
        entity.mentions = [m for m in entity.mentions if m not in moved]
        entity.profile = self._profile(entity.mentions)
        return True

    def name_of(self, mentions: list[Span]) -> str | None:
        """A chain's representative name: its most frequent proper-name mention, else its most
        frequent short noun phrase (entities.is_nominal; possessive 's left out), else None."""
        texts = [(self.reader.mention(*m), self.reader.text_of(*m)) for m in mentions]
        for wanted in (lambda x, t: x.name is not None, lambda x, t: not x.kind and not x.person and is_nominal(t)):
            found = Counter(_without_possessive(t) for x, t in texts if wanted(x, t))
            if found:
                return found.most_common(1)[0][0]
        return None


FULL_NAME_AGAIN = 2  # a full name two chains each say this often: one person, whatever their quotes say


def chain_spans(row: dict) -> list[list[tuple[int, int]]]:
    """An output row's chains as lists of (start, end) character spans (empty for an error row)."""
    return [[(m["start"], m["end"]) for m in chain["mentions"]] for chain in row.get("chains") or []]


def _same_person(a: Name, b: Name | None, full: Name) -> bool:
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


def _one_person(found: dict[int, _Entity], fulls: dict[int, set[frozenset]]) -> dict[int, _Entity]:
    """Of entities holding full names of one person but for titles ("Squire Trelawney" and
    "John Trelawney", "Jim Hawkins" and "Cap'n Hawkins"), the biggest; else none."""
    untitled = [w - TITLES for k in found for w in fulls[k]]
    if not all(a <= b or b <= a for a in untitled for b in untitled):
        return {}
    k = max(found, key=lambda k: len(found[k].mentions))
    return {k: found[k]}


def _name_within(name: Name, full: Name) -> bool:
    """Whether `name` is a part of `full`, a title it adds left out: "King George" is a part of
    "George Merry" as "George" is (a title says what a person is, not who: one man is "George"
    and "King George" in one mutiny), but "King" alone, or "William Lucas", is no part of it."""
    if name.words <= full.words:
        return True
    untitled = name.words - TITLES
    return bool(untitled) and untitled != name.words and untitled <= full.words


def _absorb(into: _Entity, other: _Entity) -> None:
    into.mentions = sorted(into.mentions + other.mentions)
    into.profile.update(other.profile)
    other.into = into


def _without_possessive(text: str) -> str:
    text = " ".join(text.split())
    return text[:-2] if text[-2:] in ("'s", "\u2019s") else text
