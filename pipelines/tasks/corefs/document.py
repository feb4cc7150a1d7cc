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

from .chains import Entity, Span
from .entities import TITLES, MentionReader, Name, Profile, is_nominal
from .full_names import name_within
from .name_passes import run_passes
from .switches import on


class DocumentEntities:
    """A document's entities, built window by window (see the module's notes)."""

    def __init__(self, reader: MentionReader, rules: bool = True, breaks: list[int] = (), stories: list[int] = ()):
        self.reader, self.rules = reader, rules
        self.breaks = sorted(breaks)  # scene and story breaks: no chain crosses one but by name
        self.stories = sorted(stories)  # story breaks (stories.py): no chain crosses one, not even by name
        self.entities: list[Entity] = []
        self.previous: dict[Span, int] = {}  # the previous window's mentions -> entity
        self.window_chains: list[list[list[Span]]] = []  # each window's chains, as decoded (book_evidence.py)

    def profile(self, spans) -> Profile:
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
        clusters = self._by_scene(clusters)
        self.window_chains.append(clusters)
        for cluster in clusters:
            profile = self.profile(cluster)
            votes = Counter(self.previous[m] for m in cluster if m in self.previous)
            target = next((e for e, _ in votes.most_common() if self.entities[e].profile.compatible(profile)), None)
            own = [m for m in cluster if lo <= m[0] < hi]
            if target is None:
                if not own:
                    continue
                target = len(self.entities)
                self.entities.append(Entity())
            entity = self.entities[target]
            entity.mentions.extend(own)
            entity.profile.update(self.profile(own))
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
        """The entities, with those far apart joined by name (name_passes.py: the passes, in
        order). Mentions in text order, entities by their first mention."""
        entities = [e for e in self.entities if e.mentions]
        for e in entities:
            e.mentions.sort()
        entities.sort(key=lambda e: e.mentions[0])
        if self.rules:
            entities = run_passes(self, entities)
        return [sorted(e.mentions) for e in entities]

    # What the name passes ask of the document's entities.

    def dominant_name(self, entity: Entity) -> Name | None:
        """The entity's most frequent proper name."""
        names = Counter(n for n in (self.reader.mention(*m).name for m in entity.mentions) if n)
        return names.most_common(1)[0][0] if names else None

    def compatible(self, a: Entity, b: Entity, names: bool = True) -> bool:
        """Profile.compatible for two chains of one name; where both say one full name at least
        FULL_NAME_AGAIN times ("John Silver"), a quote's "I" and "you" in the two do not keep
        them apart: a window put the captain's "I" in one of Silver's two chains."""
        return a.profile.compatible(b.profile, same_name=True, names=names) or (
            a.profile.compatible(b.profile, same_name=True, names=names, quotes=False) and self.same_full_name(a, b))

    def same_full_name(self, a: Entity, b: Entity) -> bool:
        def fulls(e: Entity) -> Counter:
            return Counter(n.words for n in (self.reader.mention(*m).name for m in e.mentions)
                           if n is not None and len(n.words - TITLES) > 1)
        ours, theirs = fulls(a), fulls(b)
        return any(k >= FULL_NAME_AGAIN and theirs[w] >= FULL_NAME_AGAIN for w, k in ours.items())

    def names_within(self, entity: Entity, full: Name, stray: float = 0.1) -> bool:
        """Whether the entity's names are parts of `full`, but for a `stray` share at most: "Sir
        William", whose chain also says "William Lucas", is not the "William" of "William Collins"."""
        names = [n for n in (self.reader.mention(*m).name for m in entity.mentions) if n is not None]
        return sum(not name_within(n, full) for n in names) <= stray * len(names)

    def named(self, entity: Entity, words: frozenset) -> int:
        return sum((n := self.reader.mention(*m).name) is not None and n.words == words for m in entity.mentions)

    def fits(self, entity: Entity, mention: Span, names: bool = True) -> bool:
        return entity.profile.compatible(self.profile([mention]), same_name=True, names=names)

    def lend_name(self, entity: Entity, names: set[frozenset], takers) -> bool:
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
                    found[0].profile.update(self.profile([m]))
                    moved.append(m)
        if not moved:
            return False
        moved = set(moved)
        entity.mentions = [m for m in entity.mentions if m not in moved]
        entity.profile = self.profile(entity.mentions)
        return True

    def name_of(self, mentions: list[Span]) -> str | None:
        """A chain's representative name: its most frequent proper-name mention, else its most
        frequent short noun phrase (entities.is_nominal; possessive 's left out), else None."""
        texts = [(self.reader.mention(*m), self.reader.text_of(*m)) for m in mentions]
        names, phrases = (Counter(_without_possessive(t) for x, t in texts if wanted(x, t))
                          for wanted in (lambda x, t: x.name is not None and is_nominal(t),  # not "US" for "us"
                                         lambda x, t: not x.kind and not x.person and is_nominal(t)))
        return title_of(names, phrases, rare_names=self.rules and on("rare_names"))


RARE_NAME = 3  # a name said fewer times than this ...
PHRASE_OVER_NAME = 5  # ... titles no chain whose commonest noun phrase is said this many times as often
FULL_NAME_AGAIN = 2  # a full name two chains each say this often: one person, whatever their quotes say


def title_of(names: Counter, phrases: Counter, rare_names: bool = True) -> str | None:
    """A chain's name from the counts of its proper names and its noun phrases: the commonest
    name, else the commonest phrase; but (rare_names) a name said fewer than RARE_NAME times
    gives way to a phrase said PHRASE_OVER_NAME times as often ("GNU" twice beside "this
    License" fifty times)."""
    if names and phrases and rare_names:
        (_, said), (phrase, called) = names.most_common(1)[0], phrases.most_common(1)[0]
        if said < RARE_NAME and called >= PHRASE_OVER_NAME * said:
            return phrase
    for found in (names, phrases):
        if found:
            return found.most_common(1)[0][0]
    return None


def chain_spans(row: dict) -> list[list[tuple[int, int]]]:
    """An output row's chains as lists of (start, end) character spans (empty for an error row)."""
    return [[(m["start"], m["end"]) for m in chain["mentions"]] for chain in row.get("chains") or []]


def _without_possessive(text: str) -> str:
    text = " ".join(text.split())
    return text[:-2] if text[-2:] in ("'s", "\u2019s") else text
