"""Who writes each part of a book told by several people: its headed sections.

Novels of letters, journals and collected statements say at the head of each part whose it
is: "Jonathan Harker's Journal", "Letter, Miss Mina Murray to Miss Lucy Westenra",
"Contributed by Miss Clack", "Extracted from the Journal of Ezra Jennings", "The Statement of
Mr. Murthwaite". Each such heading starts a section whose narration ("I" outside quotes) is
that writer's, until the next heading; two sections of one writer are one narrator
(speakers.give_quotes gives each writer one chain, titled with the heading's name).

A heading is a line of its own (a blank line or the text's edge above and below, at most
HEADING_WORDS words) of one of these shapes, the writer's name in any case (GABRIEL
BETTEREDGE, Miss Clack), with or without a title ("Dr. Smith's Diary" is Dr. Smith's):
  Contributed | Written | Related | Told | Resumed | Continued | Spoken | Dictated | Kept |
      Left ... by NAME  (first: "X's phonograph diary, spoken by Y" is Y's part)
  NAME's Journal | Diary | Narrative | Statement | Account | Story | Memorandum | Letter |
      Papers | Notes | Log | Note | Postscript | Telegram | Report | Confession | Testimony
  (a) Letter | Journal | Diary | ... (as above) | Extract(ed) ... of | by | from NAME
      ("Diary of X", "Memorandum by X", "Note left by X", "Postscript by X")
  (NAME may be a rank the book calls the writer by: "Narrative Continued by the Doctor")
  Letter | Telegram | Note (from) NAME to NAME   and   NAME to NAME   (the first name writes)
  NAME in continuation | NAME, continued   (a letter-novel's next letter by the same writer)
  By another hand | In another hand | Editor's note: a part of no writer the book names (its
      "I" is no narrator's), ending the part before it
A book must have at least MIN_SECTIONS such headings, by at least two writers, before they
are read as its narrators: one "Letter from Mr. Collins" in a third-person novel is a letter
quoted, not a change of narrator. Books whose narrators change inside the prose ("she
commenced") are not cut here: their frame narrator keeps the "I".
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .entities import HONORIFICS
from .quotes import quote_spans

HEADING_WORDS = 14
MIN_SECTIONS = 3
# "I", "me", "my" in a writer's narration, as a share of its words outside quotes: 0.035-0.10 in
# The Moonstone's narratives and Evelina's letters; 0.002-0.018 in the chapters of Vanity Fair
# and North and South, third-person novels whose titles or quoted letters look like headings.
FIRST_PERSON = 0.025
# A heading that says the part is someone's ("Contributed by SERGEANT CUFF", "The Story Resumed by
# FRANKLIN BLAKE") needs less: a detective's report says "I" in 0.008 of its words. Such headings
# head a narrator's part in every LitBank novel that has them (The Moonstone, Treasure Island).
FIRST_PERSON_BY = 0.005
_WORDS = re.compile(r"[A-Za-z]+")
_FIRST_PERSON_WORDS = frozenset("i me my mine myself".split())

_DOCS = (r"(?i:Journal|Diary|Narrative|Statement|Account|Story|Memorandum|Memoranda|Letter|Papers|Notes|Log|"
         r"Note|Postscript|Telegram|Report|Confession|Testimony)")
_TITLE = r"(?:(?i:Mr|Mrs|Miss|Dr|Doctor|Sergeant|Captain|Colonel|Lady|Lord|Sir|Professor|Madam|Mme)\.?\s+)"
# A name: capitalised words (a title first, or not), in Title Case or in capitals.
_NAME = rf"({_TITLE}?(?:[A-Z][\w\u2019'-]*\.?\s+){{0,3}}[A-Z][\w\u2019'-]*)"
_WORD_NAME = r"[A-Z][\w\u2019'-]*"
# A writer the book calls by a rank: "Narrative Continued by the Doctor", "The Statement of THE CAPTAIN"
_RANK = r"(?P<rank>(?i:the)\s+(?i:Doctor|Captain|Squire|Sergeant|Colonel|Major|Professor|Vicar|Rector|Parson|Admiral|General))"
_WRITER = rf"(?:{_RANK}|{_NAME})"
_AFTER = r"(?=\s*(?:[,;(.:\])]|$))"  # what may follow a writer's name: a description, a date, a place
# "Contributed by MISS CLACK; niece of ...", "The Story Resumed by FRANKLIN BLAKE", "The events related by ..."
_BY_HEADING = re.compile(rf"\b(?i:Contributed|Written|Related|Told|Resumed|Continued|Narrated|Recorded|Spoken|Dictated|Kept|"
                         rf"Left)\s+(?i:by)\s+{_WRITER}{_AFTER}")
# A part the book gives no writer's name: it ends the part before it and is no narrator's
_NO_WRITER = re.compile(r"^(?i:(?:written\s+)?(?:by|in)\s+(?:another|a\s+different|a\s+second)\s+hand|editor['\u2019]s\s+note)\b")
_HEADINGS = [
    # "Contributed by MISS CLACK", "Dr. Seward's phonograph diary, spoken by Van Helsing" (the speaker's)
    _BY_HEADING,
    # "Jonathan Harker's Journal", "DR. SEWARD'S DIARY", "Mina Murray's Journal (continued)"
    re.compile(rf"^{_NAME}['\u2019][sS]\s+(?:[A-Za-z-]+\s+){{0,2}}?{_DOCS}\b"),
    # "Extracted from the Journal of Ezra Jennings", "In a Letter from MR. CANDY", "The Statement of X (1849)"
    re.compile(rf"\b{_DOCS}\s+(?:[A-Za-z-]+\s+){{0,2}}?(?i:of|by|from)\s+{_WRITER}{_AFTER}"),
    # "Letter, Miss Mina Murray to Miss Lucy Westenra", "MR. VILLARS TO LADY HOWARD Berry Hill, March 12."
    re.compile(rf"^(?:(?i:Letter|Telegram|Note)[,.]?\s+(?:(?i:from)\s+)?)?{_NAME}\s*,?\s+(?:to|TO)\s+{_TITLE}?[A-Z]"),
    # "EVELINA IN CONTINUATION. Queen Ann Street, April 13.", "Mary Ross, continued": the writer goes on
    re.compile(rf"^{_NAME}\s*,?\s+(?i:in\s+continuation|continued|continues)\b"),
    # "Letter from Anne Marsh to her sister": "from" says who writes, whoever it goes to
    re.compile(rf"^(?i:Letter|Telegram|Note)[,.]?\s+(?i:from)\s+{_NAME}\s*,?\s+(?i:to)\s"),
]
_SAYS_I = re.compile(r"\bI\s+[a-z]")  # "I received": a sentence ("LETTER I", "Part I. Narrative of X" are headings)
_NOT_WRITERS = frozenset("the a an this that his her my our their your chapter book part volume letter journal "
                         "diary narrative statement story i we he she it they in on at of".split())


class Section(NamedTuple):
    start: int  # the heading's first character
    writer: str  # the writer's name as the heading writes it
    name_span: tuple[int, int]  # the characters of that name in the text
    by: bool = False  # a "Contributed by NAME" heading (FIRST_PERSON_BY)
    key: str = ""  # the writer as one key for all their headings in this book (writer_keys)


def _lines(text: str):
    """(start, block) of each block of one or two lines between blank lines (or the text's
    edges) of at most HEADING_WORDS words: where a heading can stand."""
    pos = 0
    block: list[str] = []
    start = 0
    for line in text.split("\n") + [""]:
        if line.strip():
            if not block:
                start = pos + len(line) - len(line.lstrip())
            block.append(line.strip())
        else:
            if block and len(block) <= 2 and len(" ".join(block).split()) <= HEADING_WORDS:
                yield start, " ".join(block)
            block = []
        pos += len(line) + 1


def _writer(match: re.Match) -> tuple[str, int] | None:
    """The first name group of a heading match that is a name: (text, offset in the line)."""
    for g in range(1, (match.lastindex or 0) + 1):
        name = match.group(g)
        if not name:
            continue
        words = name.split()
        if match.groupdict().get("rank") == name:  # "the Doctor": a writer the book calls by a rank
            return " ".join(words), match.start(g)
        if all(re.fullmatch(_TITLE, w + " ") for w in words):  # "report of Mr. Luker's application": a title alone
            continue
        if (words and words[0].lower().strip(".") not in _NOT_WRITERS and words[-1].lower().strip(".") not in _NOT_WRITERS
                and all(re.fullmatch(_WORD_NAME + r"\.?", w) for w in words)
                and not re.search(r"['\u2019][sS]\b", name)):  # "SERGEANT CUFF'S MAN" names no one
            return name.strip(), match.start(g)
    return None


def headed_sections(text: str, quotes: list[tuple[int, int]] | None = None) -> list[Section]:
    """The book's sections by heading (see the module's notes), in text order; [] when the
    book has fewer than MIN_SECTIONS headings or one writer only. `quotes`: the text's
    quote_spans, where the caller has them."""
    found = []
    for start, line in _lines(text):
        if line[0] in "\"'\u201c\u2018" or _SAYS_I.search(line):  # speech, or a sentence ("I received the
            continue  # following letter from Sir Clement Willoughby:"), not a heading
        if _NO_WRITER.search(line):
            found.append(Section(start, "", (start, start)))
            continue
        for pattern in _HEADINGS:
            m = pattern.search(line)
            if m is None:
                continue
            writer = _writer(m)
            if writer is not None:
                name, at = writer
                by = _BY_HEADING.search(line) is not None  # "Narrative Continued by ...", whichever shape matched
                found.append(Section(start, name, (start + at, start + at + len(name)), by))
                break
    # a writer is someone the book names (not a heading's place or thing): the surname said
    # outside the headings at least MIN_SECTIONS times
    found = [s for s in found if not s.writer or len(re.findall(rf"\b{re.escape(writer_key(s.writer))}\b", text, re.IGNORECASE))
             > MIN_SECTIONS + sum(writer_key(o.writer) == writer_key(s.writer) for o in found)]
    found = writer_keys(found)
    found = _told_in_the_first_person(text, found, quote_spans(text) if quotes is None else quotes)
    writers = [s.key for s in found if s.writer]
    return found if len(writers) >= MIN_SECTIONS and len(set(writers)) >= 2 else []


def _told_in_the_first_person(text: str, found: list[Section], quotes: list[tuple[int, int]]) -> list[Section]:
    """The sections, each with its writer where its narration (outside quotes) says "I", "me",
    "my" in at least FIRST_PERSON of its words (FIRST_PERSON_BY under a "Contributed by"
    heading, or where another of the writer's sections reaches FIRST_PERSON: a letter that
    mostly tells what others said is still its writer's), else with no writer (writer ""): a
    chapter title of a novel told in the third person ("Miss Sharp Begins to Make Friends")
    heads no writer's part, but still ends the part before it."""
    inside = bytearray(len(text))
    for a, z in quotes:
        inside[a:z] = b"\x01" * (z - a)
    ends = [s.start for s in found[1:]] + [len(text)]
    told = [bool(s.writer) and says_i(text, s.start, end, FIRST_PERSON, inside) for s, end in zip(found, ends)]
    first_person = {s.key for s, t in zip(found, told) if t}
    kept = []
    for section, end, t in zip(found, ends, told):
        if not t and section.writer and (section.by or section.key in first_person):
            t = says_i(text, section.start, end, FIRST_PERSON_BY, inside)
        kept.append(section if t else section._replace(writer=""))
    return kept


def says_i(text: str, start: int, end: int, share: float, quoted: bytearray | None = None) -> bool:
    """Whether "I", "me", "my", "mine", "myself" are at least `share` of the words of
    text[start:end], those inside quotes (`quoted`: 1 at each quoted character) left out."""
    words = [m for m in _WORDS.finditer(text, start, end) if quoted is None or not quoted[m.start()]]
    first = sum(m.group().lower() in _FIRST_PERSON_WORDS for m in words)
    return bool(words) and first >= share * len(words)


def writer_key(name: str) -> str:
    """A writer's name as one key for all the headings that name them: lower case, no dots, no
    honorific ("MISS CLACK", "Miss Clack"); the last word, the surname, when the book heads
    one writer's parts with and without a given name ("Dr. Seward", "John Seward")."""
    words = [w for w in name.lower().replace(".", " ").replace("\u2019", "'").split()]
    return words[-1] if words else ""


def _gender(name: str) -> str | None:
    """The gender a writer's honorific gives ("LADY BELMONT": f, "SIR JOHN BELMONT": m), or None."""
    words = name.lower().replace(".", " ").split()
    return next((HONORIFICS[w][1] for w in words[:2] if w in HONORIFICS), None)


def writer_keys(sections: list[Section]) -> list[Section]:
    """The sections, each with its writer's key: the surname (writer_key), and the honorific's
    gender with it where the book heads parts by a man and a woman of one surname ("SIR JOHN
    BELMONT", "LADY BELMONT": husband and wife, two writers); a heading of that surname with no
    honorific goes with the one of its given name, else stays the surname's."""
    named = [(s, writer_key(s.writer), _gender(s.writer), s.writer.lower().replace(".", " ").split())
             for s in sections if s.writer]
    genders: dict[str, set] = {}
    given = {}  # (surname, given name) -> gender, for the headings without an honorific
    for _, key, gender, words in named:
        genders.setdefault(key, set()).add(gender)
        if gender and len(words) > 2:
            given[(key, words[-2])] = gender
    keys = {}
    for s, key, gender, words in named:
        if {"m", "f"} <= genders[key]:
            gender = gender or given.get((key, words[-2] if len(words) > 1 else ""))
            key = f"{key} ({gender})" if gender else key
        keys[s.start] = key
    return [s._replace(key=keys.get(s.start, "")) for s in sections]
