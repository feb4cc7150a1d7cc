"""Who speaks each quote, and who the narrator is, over a document's joined entities (give_quotes).

After document.DocumentEntities has joined the windows' chains into entities, each quote gets
its speaker (quotes.attribute), and the first person goes with the person it is: a quote's "I"
to its speaker, the narration's "I" (outside quotes) of a story's first-person scenes to one
narrator, named as the others call the narrator ("Jim"). A pet name ("Lizzy") joins the
person who answers to it in dialogue.
"""

from __future__ import annotations

import bisect
from collections import Counter

from .entities import MentionReader, proper_name
from .letters import signed_letters, with_letters
from .narrator_names import (first_names, group_gender, name_answers, name_narrators, narrator_name_mentions,
                             pet_name, said_to_narrator)
from .narrators import headed_sections, writer_key
from .switches import on
from .quotes import attribute
from .voices import chapter_starts, two_voices

Span = tuple[int, int]  # a mention's first and last token (document positions)


# A first-person narration: at least this many "I", "me", "my" outside quotes in one story make
# them one narrator, whatever chains the windows put them in.
NARRATOR_LEAST = 10
NARRATOR_DENSITY = 0.005  # ... and in at least this share of a scene's tokens (Treasure Island: 0.019)
NARRATOR_SCENE = 2000  # tokens: a shorter scene told otherwise goes with the narrator whatever follows


def _narrations(narration: dict[int, list], breaks: list[int], stories: list[int], n: int) -> list[list]:
    """The narration "I" of each narrator: a scene told in the first person (NARRATOR_LEAST "I"
    at least, and NARRATOR_DENSITY of its tokens) starts one, and the narrator goes on through
    the scenes after it until a story break (two stories' narrators are two people). Scenes of
    NARRATOR_SCENE tokens or more that say "I" seldom (the whaling chapters of Moby-Dick, the
    town's loafers that Huckleberry Finn describes) are the narrator's where the first person
    comes back after them in the same story; after the story's last first-person scene they are
    no narrator's: a story may follow whose break the text does not show. Switched off, any
    such scene ends the narrator (Moby-Dick's "I" fell in 11 narrators). Narrators taking turns
    in one story are told apart by headings (by_writer) and voices (_split_by_voice)."""
    bounds = [0, *breaks, n]
    through = on("narrator_through_scenes")
    out: list[list] = []
    going = False  # whether the last first-person scene's narrator goes on
    pending: list = []  # the "I" of the long scenes told otherwise since that scene
    for scene in range(len(bounds) - 1):
        told = narration.get(scene, [])
        size = bounds[scene + 1] - bounds[scene]
        if scene and bounds[scene] in stories:
            going, pending = False, []
        first_person = len(told) >= NARRATOR_LEAST and len(told) >= NARRATOR_DENSITY * size
        if not first_person and through and going and (size >= NARRATOR_SCENE or pending):
            pending.extend(told)  # the narrator's if the first person comes back
            continue
        if not first_person and not through and size >= NARRATOR_SCENE:
            going = False
            continue
        if going:
            out[-1].extend(pending)
            out[-1].extend(told)
        elif first_person:
            out.append(list(told))
            going = True
        pending = []
    return out


def _name_finder(reader: MentionReader, groups: list[list[Span]]):
    """name text -> the group that holds most mentions of that name (its words), or None."""
    holders: dict[frozenset, Counter] = {}
    for k, group in enumerate(groups):
        for span in group:
            name = reader.mention(*span).name
            if name is not None:
                holders.setdefault(name.words, Counter())[k] += 1

    def named(text: str) -> int | None:
        name = proper_name(text)
        held = holders.get(name.words) if name else None
        return held.most_common(1)[0][0] if held else None
    return named


def give_quotes(reader: MentionReader, groups: list[list[Span]], breaks: list[int] = (),
                stories: list[int] = (), titles: dict | None = None) -> list[int | None]:
    """Each quote's speaker (quotes.attribute) as an index into `groups` (entities' mentions),
    and the first person put with the person it is. Outside quotes, one narrator's "I"
    (_narrations: the first-person scenes of a story, between `breaks`) go to one group of their
    own, and the entity others call the narrator by in speech to them joins it (narrator_names._narrator_name:
    "Jim"); each narrator is a new group at the end of `groups`. Inside a quote whose speaker is
    known, its "I", "me", "my" go to the speaker's group. `groups` is changed in place (text
    order kept); `titles`, where given, gets each headed writer's group -> the heading's name."""
    offsets = reader.offsets
    owner: dict[Span, int] = {}  # a first-person mention -> the group it goes to
    headed = headed_sections(reader.text, reader.quotes) if on("headed_sections") else []
    sections = with_letters(headed, signed_letters(reader.text, reader.quotes)) if on("signed_letters") else headed
    # a heading starts a scene: the first-person chapters before a writer's first heading are
    # one scene of their own, not one with the writer's part, whose "I" by_writer takes
    starts = [a for a, _ in offsets]
    breaks = sorted({*breaks, *(bisect.bisect_left(starts, s.start) for s in headed)})
    narration: dict[int, list[tuple[Span, int]]] = {}  # scene -> its narration "I" and their groups
    for k, group in enumerate(groups):
        for span in group:
            m = reader.mention(*span)
            if m.kind == "i" and m.quote is None:
                narration.setdefault(bisect.bisect_right(breaks, span[0]), []).append((span, k))
    narrators = []
    writers = by_writer(reader, sections, narration, groups, owner)  # each writer's "I" a narrator of its own
    if titles is not None:
        titles.update((k, name) for name, k in writers.items())
    narrators.extend(writers.values())
    for told in _narrations(narration, breaks, stories, len(offsets)):
        # a group of its own: the chain that held most of the narrator's "I" may also hold a
        # name the window model linked to it ("Hands" beside the narrator's "I"), which stays there
        narrator = len(groups)
        groups.append([])
        owner.update((span, narrator) for span, _ in told)
        narrators.append(narrator)
    people, others, addressed, spans = _who_can_speak(reader, groups, owner)
    named = _name_finder(reader, groups)  # built once: the second attribution below reads it too
    speakers = attribute(reader.text, reader.quotes, people, addressed, named, others)
    if on("narrator_voices"):  # narrators who take turns inside the prose (voices.py)
        narrators += [new for n in narrators if n not in writers.values()
                      and (new := _split_by_voice(reader, groups, owner, n, speakers, addressed)) is not None]
    joined = name_narrators(reader, groups, owner, narrators, writers, speakers, addressed)
    if on("narrator_not_she"):
        given = _not_the_narrator(reader, owner, breaks, joined, people, spans)
        if given != people:
            speakers = [k if k is None or k >= 0 else None for k in
                        attribute(reader.text, reader.quotes, given, addressed, named, others)]
    owner.update(narrator_name_mentions(reader, groups, joined, narrators, owner))
    if on("narrator_vocatives"):
        for narrator in narrators:
            if narrator not in joined.values():
                said_to_narrator(reader, groups, speakers, narrator, joined, owner)
    for k, into in _names_by_address(reader, groups, reader.quotes, speakers, addressed, narrators).items():
        if k not in joined and into not in joined:
            joined[k] = into
    speakers = [joined.get(k, k) for k in speakers]
    for k, group in enumerate(groups):
        for span in group:
            m = reader.mention(*span)
            if m.kind == "i" and m.quote is not None and speakers[m.quote] not in (None, joined.get(k, k)):
                owner[span] = speakers[m.quote]
    for k, narrator in joined.items():
        owner.update((span, narrator) for span in groups[k] if span not in owner)
    if owner:
        for k, group in enumerate(groups):
            group[:] = [span for span in group if owner.get(span, k) == k]
        for span, k in owner.items():
            bisect.insort(groups[k], span)
    return speakers


def _who_can_speak(reader: MentionReader, groups: list[list[Span]], owner: dict[Span, int]):
    """What quotes.attribute reads, each (start character, end character, group), sorted: the
    mentions outside quotes that can speak (names, "he", "she", "I", nouns of a person; a
    narration "I" as its narrator's, `owner`), the other mentions outside quotes, and the
    names addressed inside quotes; and a dict: a person's characters -> its mention."""
    offsets = reader.offsets
    people, others, addressed, spans = [], [], [], {}
    for k, group in enumerate(groups):
        for s, e in group:
            m = reader.mention(s, e)
            if m.quote is not None and m.person == 2 and m.name:
                addressed.append((offsets[s][0], offsets[e][1], k))
            elif reader.quote_of(offsets[s][0]) is not None:
                continue  # in a quote, and not the one addressed (a Mention keeps its quote only when it says who speaks)
            elif m.name or m.is_person:
                people.append((offsets[s][0], offsets[e][1], owner.get((s, e), k)))  # "said I": the narrator
                spans[offsets[s][0], offsets[e][1]] = (s, e)
            elif not m.kind:
                others.append((offsets[s][0], offsets[e][1], k))
    return sorted(people), sorted(others), sorted(addressed), spans


def _not_the_narrator(reader: MentionReader, owner: dict[Span, int], breaks: list[int], joined: dict[int, int],
                      people: list[tuple[int, int, int]], spans: dict[Span, Span]) -> list[tuple[int, int, int]]:
    """`people` with each "he" and "she" that the window chains put in the chain of the scene's
    first-person narrator made someone else: a narrator says "I", so "“Oh, dear, no!” she
    exclaimed" in a diary is said by the other person there, not by the diarist (the window
    model, seeing "she" beside the diarist's name, often links them). Who that is, the pronoun
    does not say: it becomes a person of its own (a negative number, which quotes.attribute
    takes for "not known, and not the narrator"), so the quote's speaker is the one the turns of
    the dialogue give it, or none. The scene's narrator at a pronoun is the owner of the last
    narration "I" before it in its scene (between `breaks`). A narrator merged into a writer
    since `people` was made (narrator_names._merge_narrator) speaks as the writer."""
    told = sorted((span[0], k) for span, k in owner.items() if reader.mention(*span).kind == "i")
    at = [t for t, _ in told]
    out = []
    for person in people:
        span = spans[person[:2]]
        person = (person[0], person[1], owner.get(span, person[2]))
        if reader.mention(*span).kind in ("he", "she"):
            s = span[0]
            i = bisect.bisect_right(at, s) - 1
            narrator = told[i][1] if i >= 0 and bisect.bisect_right(breaks, at[i]) == bisect.bisect_right(breaks, s) else None
            if narrator is not None and joined.get(person[2], person[2]) == narrator:
                person = (person[0], person[1], -1 - len(out))
        out.append(person)
    return out


def by_writer(reader: MentionReader, sections: list, narration: dict[int, list], groups: list[list[Span]],
              owner: dict[Span, int]) -> dict[str, int]:
    """The narration "I" of the book's parts by writer (`sections`: its headed sections,
    narrators.headed_sections, and the letters copied into its prose, letters.py), each writer's
    in a new group of its own with the heading's name as a mention (so the chain is titled by
    it); those "I" are taken out of `narration`, which keeps the rest for the one-narrator rule.
    Returns writer's name (as its first heading writes it) -> group."""
    if not sections:
        return {}
    starts = [s.start for s in sections]
    first_heading: dict[str, str] = {}
    out: dict[str, int] = {}
    for section in sections:
        if section.writer:
            first_heading.setdefault(section.key or writer_key(section.writer), section.writer)
    for scene, told in narration.items():
        rest = []
        for span, k in told:
            at = bisect.bisect_right(starts, reader.offsets[span[0]][0]) - 1
            writer = sections[at].writer if at >= 0 else ""
            if not writer:
                rest.append((span, k))
                continue
            name = first_heading[sections[at].key or writer_key(writer)]
            if name not in out:
                out[name] = len(groups)
                groups.append([])
            owner[span] = out[name]
        told[:] = rest
    starts, ends = [s for s, _ in reader.offsets], [e for _, e in reader.offsets]
    taken = {span for g in groups for span in g}
    for section in sections:  # the heading's name, a mention the model may have left out
        name = first_heading.get(section.key or writer_key(section.writer)) if section.writer else None
        if name in out:
            span = _token_span(starts, ends, *section.name_span)
            if span is not None and span not in taken:
                bisect.insort(groups[out[name]], span)
    return out


def _token_span(starts: list[int], ends: list[int], a: int, z: int) -> Span | None:
    """The tokens covering characters [a, z) (their start and end characters given), or None."""
    first = bisect.bisect_left(ends, a + 1)
    last = bisect.bisect_left(starts, z) - 1
    return (first, last) if 0 <= first <= last < len(starts) else None


def _split_by_voice(reader: MentionReader, groups, owner: dict[Span, int], narrator: int, speakers: list[int | None],
                    addressed) -> int | None:
    """Where the name others call `narrator` by most of a man's names is said in some chapters and
    the one most of a woman's in others (voices.two_voices), the narration "I" and the quotes of the chapters of the voice
    that has fewer of them go to a new narrator group, whose index is returned; else None."""
    starts = chapter_starts(reader.text)
    said = [(at, entity, _voice_gender(reader, groups[entity]))
            for entity, by, beside, at in name_answers(reader.quotes, speakers, addressed) if by != narrator and narrator in beside]
    # the name of each gender said most beside the narrator: a chapter's other names ("Hareton", said to
    # the boy while the narrator stands by) say nothing of who narrates it
    top = {g: Counter(k for _, k, gk in said if gk == g).most_common(1)[0][0] for g in {g for *_, g in said if g}}
    votes = [(at, g) for at, k, g in said if g and top[g] == k]
    voices = two_voices(starts, votes) if len(starts) > 1 else None
    if voices is None:
        return None

    def voice(char: int) -> str | None:
        return voices[bisect.bisect_right(starts, char) - 1]

    told = [span for span, k in owner.items() if k == narrator]
    kept = Counter(voice(reader.offsets[s[0]][0]) for s in told).most_common(1)[0][0]
    new = len(groups)
    groups.append([])
    for span in told:
        if voice(reader.offsets[span[0]][0]) != kept:
            owner[span] = new
    for q, (a, _) in enumerate(reader.quotes):
        if speakers[q] == narrator and voice(a) != kept:
            speakers[q] = new
    return new


def _voice_gender(reader: MentionReader, group: list[Span]) -> str | None:
    """A group's gender by its names (gender), else by its pronouns: "he" or "she", at least
    twice and more than twice the other."""
    named = group_gender(reader, group)
    if named:
        return named
    kinds = Counter(reader.mention(*m).kind for m in group)
    he, she = kinds["he"], kinds["she"]
    return "m" if he >= 2 and he > 2 * she else "f" if she >= 2 and she > 2 * he else None


def _names_by_address(reader: MentionReader, groups, quotes, speakers: list[int | None], addressed, narrators,
                      least: int = 2) -> dict[int, int]:
    """A pet name people call someone by ("Lizzy", "Eliza" for Elizabeth): group -> the group
    it is one person with. The evidence is the text's own: the group is addressed by name in a
    quote ("“Lizzy,” said her father") and the quote just before or after it is spoken by
    another named group, not the one who spoke to it ("..., said Elizabeth"), at least `least`
    times and twice as often as any other group; and the names look like a pet name and its
    full form (`pet_name`), so that "Miss de Bourgh", whom Elizabeth answers for, stays
    herself. Two groups that speak to each other as often as the one answers to the other's
    name are two people (fewer adjacent quotes are attribution's slips: a pet name's chain
    holds a "she" that turn-taking gives a quote); so are names of two genders. Narrators are narrator_names._narrator_name's."""
    votes: dict[int, Counter] = {}
    for entity, by, beside, _ in name_answers(quotes, speakers, addressed):
        for other in beside:
            if other not in (None, entity, by):
                votes.setdefault(entity, Counter())[other] += 1
    partners = Counter(frozenset(speakers[q : q + 2]) for q in range(len(quotes) - 1))
    out = {}
    for entity, counts in votes.items():
        (into, count), *rest = counts.most_common(2)
        if (count < least or (rest and count < 2 * rest[0][1]) or into in narrators or entity in narrators
                or partners[frozenset((entity, into))] >= count):
            continue
        pet, full = first_names(reader, groups[entity]), first_names(reader, groups[into])
        if not any(pet_name(a, b) for a in pet for b in full):
            continue
        genders = {g for g in (group_gender(reader, groups[entity]), group_gender(reader, groups[into])) if g}
        if len(genders) <= 1:
            out[entity] = into
    return out


