"""What each narrator is called, and who answers to a pet name, once the quotes have speakers.

speakers.give_quotes puts a first-person narration's "I" in a narrator group of its own; this
module finds the chains that name that narrator: a headed writer's heading (_writer_entity),
the name the others call the narrator by beside the narrator's answers (_narrator_name, and
every other such name: _narrator_other_names), for a narrator no chain names the name said to
them in two-person exchanges (said_to_narrator), and the names of the joined chains, wherever
the windows put them (narrator_name_mentions). The helpers at the end (name_answers,
first_names, pet_name, group_gender) also serve speakers._names_by_address.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

from .entities import NOT, TITLES, MentionReader, names_compatible, proper_name
from .switches import on

Span = tuple[int, int]  # a mention's first and last token (document positions)


def name_narrators(reader: MentionReader, groups, owner: dict[Span, int], narrators: list[int], writers: dict[str, int],
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


def narrator_name_mentions(reader: MentionReader, groups, joined: dict[int, int], narrators, owner) -> dict[Span, int]:
    """The narrator's name where other chains hold it: a group whose most frequent name is
    the one the narrator is called by, titles left out ("Dr. Watson", or "Watson" in a chain of
    someone's "you"), or that given name and a surname where the book's groups say one such full
    name only ("Ellen Dean" for a narrator called "Ellen"), gives its mentions of that name to the
    narrator (the rest of it, a window's links to other people, stays). Not a name of the other
    gender ("Mrs. Hawkins" is not Jim). span -> narrator group."""
    moved = {}
    names = [first_names(reader, group) - TITLES for group in groups]
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
    votes = Counter(entity for entity, by, beside, _ in name_answers(quotes, speakers, addressed)
                    if by != narrator and narrator in beside)
    (entity, count), = votes.most_common(1) or [(None, 0)]
    return entity if count >= least else None


def said_to_narrator(reader: MentionReader, groups, speakers: list[int | None], narrator: int, joined: dict[int, int],
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
        if k not in joined and k != narrator and group and first_names(reader, group) - TITLES == key:
            joined[k] = narrator


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
    answers = list(name_answers(reader.quotes, speakers, addressed))
    votes = Counter(entity for entity, by, beside, _ in answers
                    if by != narrator and narrator in beside and entity not in (named, narrator))
    said = Counter(entity for entity, *_ in answers)
    partners = Counter(frozenset(speakers[q: q + 2]) for q in range(len(reader.quotes) - 1))
    gender = group_gender(reader, groups[named])
    out = []
    for k, count in votes.items():
        agrees = group_gender(reader, groups[k]) in (None, gender)  # where `named`'s is unknown: no gender either
        enough = count > least or (count == least and 2 * count > said[k] and agrees)
        if enough and partners[frozenset((k, narrator))] < 2 * count and (gender is None or agrees):
            out.append(k)
    return out


def name_answers(quotes, speakers: list[int | None], addressed):
    """For each name said to someone in a quote whose speaker is known and is not the one
    addressed: (the entity addressed, the speaker, the speakers of the quotes just before
    and after it, the name's first character)."""
    starts = [a for a, _ in quotes]
    for a, _, entity in addressed:
        q = bisect.bisect_right(starts, a) - 1
        if q < 0 or speakers[q] is None or speakers[q] == entity:
            continue
        yield entity, speakers[q], [speakers[q + d] for d in (-1, 1) if 0 <= q + d < len(quotes)], a


def first_names(reader: MentionReader, group: list[Span]) -> frozenset:
    """The words of a group's most frequent proper name (not the marks of whom it is not, NOT)."""
    found = Counter(n.words for n in (reader.mention(*m).name for m in group) if n is not None)
    return frozenset(w for w in found.most_common(1)[0][0] if not w.startswith(NOT)) if found else frozenset()


def pet_name(short: str, full: str) -> bool:
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


def group_gender(reader: MentionReader, group: list[Span]) -> str | None:
    """The gender most of a group's names give (an honorific, a head noun), or None."""
    found = Counter(n.gender for n in (reader.mention(*m).name for m in group) if n is not None and n.gender)
    return found.most_common(1)[0][0] if found else None
