"""Who speaks each quote, and who the narrator is, over a document's joined entities (give_quotes).

After document.DocumentEntities has joined the windows' chains into entities, each quote gets
its speaker (quotes.attribute), and the first person goes with the person it is: a quote's "I"
to its speaker, the narration's "I" (outside quotes) of a story's first-person scenes to one
narrator, named as the others call the narrator ("Jim"). A pet name ("Lizzy") joins the
person who answers to it in dialogue.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

from .entities import NOT, TITLES, MentionReader, names_compatible, proper_name
from .letters import signed_letters, with_letters
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
    own, and the entity others call the narrator by in speech to them joins it (_narrator_name:
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
    people, others, addressed = [], [], []
    for k, group in enumerate(groups):
        for s, e in group:
            m = reader.mention(s, e)
            if m.quote is not None and m.person == 2 and m.name:
                addressed.append((offsets[s][0], offsets[e][1], k))
            elif reader.quote_of(offsets[s][0]) is not None:
                continue  # in a quote, and not the one addressed (a Mention keeps its quote only when it says who speaks)
            elif m.name or m.is_person:
                people.append((offsets[s][0], offsets[e][1], owner.get((s, e), k)))  # "said I": the narrator
            elif not m.kind:
                others.append((offsets[s][0], offsets[e][1], k))
    people.sort()
    others.sort()
    addressed.sort()
    speakers = attribute(reader.text, reader.quotes, people, addressed, _name_finder(reader, groups), others)
    if on("narrator_voices"):  # narrators who take turns inside the prose (voices.py)
        narrators += [new for n in narrators if n not in writers.values()
                      and (new := _split_by_voice(reader, groups, owner, n, speakers, addressed)) is not None]
    joined = _name_narrators(reader, groups, owner, narrators, writers, speakers, addressed)
    owner.update(_narrator_names(reader, groups, joined, narrators, owner))
    if on("narrator_vocatives"):
        for narrator in narrators:
            if narrator not in joined.values():
                _said_to_narrator(reader, groups, speakers, narrator, joined, owner)
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


def _name_narrators(reader: MentionReader, groups, owner: dict[Span, int], narrators: list[int], writers: dict[str, int],
                    speakers: list[int | None], addressed) -> dict[int, int]:
    """The chains that name each narrator: a headed writer's, the one its heading names, where
    the book's chains name them (_writer_entity); another narrator's, the one the others call
    the narrator by (_narrator_name), and every other name they call it by (narrator_names). A
    narrator called by a writer's name is that writer (_merge_narrator). Returns a chain -> the
    narrator group it joins."""
    joined = {}
    for writer, narrator in writers.items():
        named = _writer_entity(reader, groups, narrators, writer)
        if named is not None and named not in joined:
            joined[named] = narrator
    for narrator in narrators:
        if narrator in writers.values():
            continue
        named = _narrator_name(reader.quotes, speakers, addressed, narrator)
        if named is not None and joined.get(named) in writers.values():
            _merge_narrator(owner, speakers, narrator, joined[named])  # the unheaded chapters of a writer
            continue
        if named is not None and named not in joined and named not in narrators:
            joined[named] = narrator
            if on("narrator_names"):
                for other in _narrator_other_names(reader, groups, speakers, addressed, narrator, named):
                    joined.setdefault(other, narrator)
    return joined


def _merge_narrator(owner: dict[Span, int], speakers: list[int | None], narrator: int, into: int) -> None:
    """A narrator known by the name of a headed section's writer is that writer: the chapters
    before the first heading ("Narrative Resumed by Jim Hawkins" comes after fifteen chapters
    of Jim's) go to the writer's group, its quotes too."""
    for span, k in owner.items():
        if k == narrator:
            owner[span] = into
    speakers[:] = [into if k == narrator else k for k in speakers]


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


def _writer_entity(reader: MentionReader, groups: list[list[Span]], narrators: list[int], writer: str) -> int | None:
    """The group the book's chains name a heading's writer by: the one holding most mentions
    of the writer's name or of a part of it ("Miss Clack", "Betteredge" for GABRIEL
    BETTEREDGE), titles aside; not a narrator group, nor one that says twice or more another
    full name with a word of the writer's ("John Silver" beside the "John" of a letter signed
    "John Trelawney").
    None when no chain names them."""
    full = proper_name(writer)
    if full is None:
        return None
    words = full.words - TITLES
    rank = full.words if not words else None  # "the Doctor": the chain its rank names most ("Dr. Livesey", "the Doctor")
    counts: Counter = Counter()
    for k, group in enumerate(groups):
        if k in narrators:
            continue
        others: Counter = Counter()
        for span in group:
            name = reader.mention(*span).name
            if rank is not None:
                if name is not None and rank <= name.words:
                    counts[k] += 1
            elif name is not None and name.words - TITLES and name.words - TITLES <= words:
                # of the writer's gender and form of address: "Miss Belmont" is not LADY BELMONT
                if (full.gender is None or name.gender in (None, full.gender)) and (
                        full.address is None or name.address in (None, full.address)):
                    counts[k] += 1
            elif name is not None and name.words & words and not names_compatible(name, full):
                others[name.words] += 1  # another full name with a word of the writer's: another person
        if counts[k] and any(n >= 2 for n in others.values()):
            del counts[k]
    return counts.most_common(1)[0][0] if counts else None


def _narrator_names(reader: MentionReader, groups, joined: dict[int, int], narrators, owner) -> dict[Span, int]:
    """The narrator's name where other chains hold it: a group whose most frequent name is
    the one the narrator is called by, titles left out ("Dr. Watson", or "Watson" in a chain of
    someone's "you"), or that given name and a surname where the book's groups say one such full
    name only ("Ellen Dean" for a narrator called "Ellen"), gives its mentions of that name to the
    narrator (the rest of it, a window's links to other people, stays). Not a name of the other
    gender ("Mrs. Hawkins" is not Jim). span -> narrator group."""
    moved = {}
    names = [_first_names(reader, group) - TITLES for group in groups]
    for k, narrator in joined.items():
        if narrator not in narrators:
            continue
        called = names[k]
        genders = {g for g in (reader.mention(*m).gender for m in groups[k]) if g}
        if not called or len(genders) > 1:
            continue
        fuller = {n for n in names if called < n and len(n) == len(called) + 1}
        given = len(called) == 1 and not called & reader.forms.men  # "Ellen"; not "Markham", Mr. Markham's family name
        forms = {called} | (fuller if given and len(fuller) == 1 else set())
        for g, group in enumerate(groups):
            if g == k or g in narrators or g in joined or names[g] not in forms:
                continue
            for span in group:
                name = reader.mention(*span).name
                if (name is not None and name.words - TITLES in forms and span not in owner
                        and (name.gender is None or not genders or name.gender in genders)):
                    moved[span] = narrator
    return moved


def _narrator_name(quotes, speakers: list[int | None], addressed, narrator: int, least: int = 3) -> int | None:
    """The entity other people call the narrator by: the one most often addressed by name
    (`addressed`: (start, end, entity) of vocatives, sorted) in a quote next to one the
    narrator speaks, by someone else ("“Jim,” said he"); None below `least` such quotes. Two
    can be one scene of three, where one man calls the other by name beside the narrator's
    answer (Peleg's "Bildad" beside Ishmael's); the narrators of nine first-person novels are
    called by their name 3 to 91 times."""
    votes = Counter(entity for entity, by, beside, _ in _answers(quotes, speakers, addressed)
                    if by != narrator and narrator in beside)
    (entity, count), = votes.most_common(1) or [(None, 0)]
    return entity if count >= least else None


def _said_to_narrator(reader: MentionReader, groups, speakers: list[int | None], narrator: int, joined: dict[int, int],
                      owner: dict[Span, int], least: int = 2, narrated: int = 3) -> None:
    """A narrator no chain names (no `joined` entry) takes the name others say to them: a
    name addressed in a quote by someone else, next to a quote of the narrator's, at least
    `least` times ("What does he say, Van?" beside "said I"). The names are counted as words,
    not by the chain the windows put them in: a window often links a name said to someone
    with the one who says it. Every mention of that name said in someone else's quote goes to
    the narrator, and so does a chain of that name alone. Not a name the narration says
    `narrated` times or more: that is someone the narrator tells of, not the narrator."""
    quotes = reader.quotes
    votes: Counter = Counter()
    said: dict[frozenset, list[Span]] = {}
    told: Counter = Counter()
    for group in groups:
        for span in group:
            m = reader.mention(*span)
            key = m.name.words - TITLES if m.name else None
            if not key:
                continue
            if m.quote is None:
                told[key] += reader.quote_of(reader.offsets[span[0]][0]) is None
                continue
            q = m.quote
            if m.person != 2 or speakers[q] in (None, narrator):
                continue
            said.setdefault(key, []).append(span)
            votes[key] += narrator in [speakers[q + d] for d in (-1, 1) if 0 <= q + d < len(quotes)]
    (key, count), = votes.most_common(1) or [(None, 0)]
    if key is None or count < least or told[key] >= narrated:
        return
    for span in said[key]:
        owner.setdefault(span, narrator)
    for k, group in enumerate(groups):
        if k not in joined and k != narrator and group and _first_names(reader, group) - TITLES == key:
            joined[k] = narrator


def _split_by_voice(reader: MentionReader, groups, owner: dict[Span, int], narrator: int, speakers: list[int | None],
                    addressed) -> int | None:
    """Where the name others call `narrator` by most of a man's names is said in some chapters and
    the one most of a woman's in others (voices.two_voices), the narration "I" and the quotes of the chapters of the voice
    that has fewer of them go to a new narrator group, whose index is returned; else None."""
    starts = chapter_starts(reader.text)
    said = [(at, entity, _voice_gender(reader, groups[entity]))
            for entity, by, beside, at in _answers(reader.quotes, speakers, addressed) if by != narrator and narrator in beside]
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
    """A group's gender by its names (_gender), else by its pronouns: "he" or "she", at least
    twice and more than twice the other."""
    named = _gender(reader, group)
    if named:
        return named
    kinds = Counter(reader.mention(*m).kind for m in group)
    he, she = kinds["he"], kinds["she"]
    return "m" if he >= 2 and he > 2 * she else "f" if she >= 2 and she > 2 * he else None


def _narrator_other_names(reader: MentionReader, groups, speakers: list[int | None], addressed, narrator: int,
                          named: int, least: int = 3) -> list[int]:
    """The narrator's other names: besides `named` (the one _narrator_name found), each group
    others address by name in a quote next to the narrator's own more than `least` times ("Davy",
    "Trotwood" and "Daisy" beside "Mr. Copperfield"; "Miss Eyre" and "Janet" beside "Jane"), or
    `least` times when that is most of the times anyone says it: "Bill", said to the old captain
    by his shipmates three times beside the narrator's quotes and four times elsewhere, is not
    the narrator. Never one that talks with the narrator twice as often as it is so addressed
    (two people in a dialogue: Peggotty, addressed beside the narrator's quotes 19 times, talks
    with him 125 times); fewer is attribution's slips, the young narrator's "I" in a quote linked
    by a window to the name he is called by ("Davy" 18 and 22, "Nelly" 18 and 22). Nor one whose
    names' gender is not `named`'s; where `named`'s is unknown ("Ellen", never "she" in a chain
    of the narrator's "I"), a name of a known gender joins on more than `least` calls only."""
    answers = list(_answers(reader.quotes, speakers, addressed))
    votes = Counter(entity for entity, by, beside, _ in answers
                    if by != narrator and narrator in beside and entity not in (named, narrator))
    said = Counter(entity for entity, *_ in answers)
    partners = Counter(frozenset(speakers[q: q + 2]) for q in range(len(reader.quotes) - 1))
    gender = _gender(reader, groups[named])
    out = []
    for k, count in votes.items():
        agrees = _gender(reader, groups[k]) in (None, gender)  # where `named`'s is unknown: no gender either
        enough = count > least or (count == least and 2 * count > said[k] and agrees)
        if enough and partners[frozenset((k, narrator))] < 2 * count and (gender is None or agrees):
            out.append(k)
    return out


def _answers(quotes, speakers: list[int | None], addressed):
    """For each name said to someone in a quote whose speaker is known and is not the one
    addressed: (the entity addressed, the speaker, the speakers of the quotes just before
    and after it, the name's first character)."""
    starts = [a for a, _ in quotes]
    for a, _, entity in addressed:
        q = bisect.bisect_right(starts, a) - 1
        if q < 0 or speakers[q] is None or speakers[q] == entity:
            continue
        yield entity, speakers[q], [speakers[q + d] for d in (-1, 1) if 0 <= q + d < len(quotes)], a


def _names_by_address(reader: MentionReader, groups, quotes, speakers: list[int | None], addressed, narrators,
                      least: int = 2) -> dict[int, int]:
    """A pet name people call someone by ("Lizzy", "Eliza" for Elizabeth): group -> the group
    it is one person with. The evidence is the text's own: the group is addressed by name in a
    quote ("“Lizzy,” said her father") and the quote just before or after it is spoken by
    another named group, not the one who spoke to it ("..., said Elizabeth"), at least `least`
    times and twice as often as any other group; and the names look like a pet name and its
    full form (`_pet_name`), so that "Miss de Bourgh", whom Elizabeth answers for, stays
    herself. Two groups that speak to each other as often as the one answers to the other's
    name are two people (fewer adjacent quotes are attribution's slips: a pet name's chain
    holds a "she" that turn-taking gives a quote); so are names of two genders. Narrators are _narrator_name's."""
    votes: dict[int, Counter] = {}
    for entity, by, beside, _ in _answers(quotes, speakers, addressed):
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
        pet, full = _first_names(reader, groups[entity]), _first_names(reader, groups[into])
        if not any(_pet_name(a, b) for a in pet for b in full):
            continue
        genders = {g for g in (_gender(reader, groups[entity]), _gender(reader, groups[into])) if g}
        if len(genders) <= 1:
            out[entity] = into
    return out


def _first_names(reader: MentionReader, group: list[Span]) -> frozenset:
    """The words of a group's most frequent proper name (not the marks of whom it is not, NOT)."""
    found = Counter(n.words for n in (reader.mention(*m).name for m in group) if n is not None)
    return frozenset(w for w in found.most_common(1)[0][0] if not w.startswith(NOT)) if found else frozenset()


def _pet_name(short: str, full: str) -> bool:
    """Whether `short` can be a pet name of `full`: its stem, of three letters or more, is
    inside the longer name. The stem drops a final -y, -ie or -ey, then makes a doubled last
    letter or a "ck" one: "lizzy" -> "liz" (elizabeth), "becky" -> "bec" (rebecca); "eliza"
    is in "elizabeth" as it is. "harry" and "henry" share too little: a pet name whose letters
    do not show it needs more evidence than the text gives here."""
    if len(short) >= len(full):
        return False
    stem = re.sub(r"(ie|ey|y)$", "", short)
    stem = re.sub(r"(.)\1$|ck$", lambda m: m.group(0)[0], stem)  # "lizz" -> "liz", "beck" -> "bec"
    return len(stem) >= 3 and stem in full


def _gender(reader: MentionReader, group: list[Span]) -> str | None:
    """The gender most of a group's names give (an honorific, a head noun), or None."""
    found = Counter(n.gender for n in (reader.mention(*m).name for m in group) if n is not None and n.gender)
    return found.most_common(1)[0][0] if found else None
