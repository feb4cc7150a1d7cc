"""Letters copied into the prose: each letter's "I" is its signer's, not the narrator's.

A narrator often hands the page to someone else by copying out a letter: "I got a long
letter ... I'll read it", then "DEAR ELLEN, ... I came last night to Wuthering Heights ...
--ISABELLA."; "the following important news: Dear Livesey--As I do not know ... John
Trelawney". No heading says whose it is, but the letter itself does, at both ends: it opens
with a salutation ("Dear X," "MY DEAR X,--") at a paragraph's start, outside quotes, and
closes with a signature (a paragraph that ends in "--NAME." or whose last line is a name
alone), postscripts ("P.S.", "Postscript") after it still the signer's. signed_letters finds
them; speakers.by_writer gives each letter's narration "I" to its signer, as it does a headed
section's, and the "I" after the letter to the narrator again (a letter inside a section whose
heading names its writer is the heading's to say: with_letters).

A letter counts where it is told in the first person (narrators.FIRST_PERSON of its words: a
note of three lines that says "I" once is not a narrator's part), its signature comes before
the next chapter and within LETTER_PARAGRAPHS paragraphs, and the book names the signer
(the signature's last word, capitalised as a name, at least narrators.MIN_SECTIONS times
outside the letter, and mostly not after another capitalised word, as "Street" is): a date or
a place under the letter ("Thursday.", "Baker Street.") is no signer.

What it cannot do: a letter read out in quotes (its "I" is a quote's: quotes.py), one cut by
the narrator's comments into parts of which only the last is signed, one signed by initials
only ("J. T.").
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .narrators import FIRST_PERSON, MIN_SECTIONS, Section, says_i
from .quotes import quote_spans
from .voices import CHAPTER

LETTER_PARAGRAPHS = 80  # a letter longer than this, or one whose signature is missing, is not read as one

_SALUTATION = re.compile(r"(?:MY|My)?\s*(?:DEAR(?:EST)?|Dear(?:est)?)\s+(?:(?:Mr|Mrs|Miss|Dr)\.?\s+)?[A-Z][A-Za-z]+"
                         r"\s*(?:,|--|\u2014|:)")
_NAME = r"([A-Z][A-Za-z]*(?:[ \t]+[A-Z][A-Za-z]*){0,2})"
_SIGNED = (re.compile(r"(?:--|\u2014)\s*" + _NAME + r"\.?\s*$"),  # "... don't disappoint me!--ISABELLA."
           # a last line of its own, under a sentence's end or a "Yours truly,": "John Trelawney"
           # (not the last word of a sentence wrapped onto a line: "... the Blackstone,\nChicago.")
           re.compile(r"(?:[.!?][\"'\u201d\u2019]?|(?i:yours|your)[^\n]*,)[ \t]*\n[ \t]*" + _NAME + r"\.?[ \t]*$"))
_INITIALS = re.compile(r"\n[ \t]*(?:[A-Z]\.[ \t]*){1,3}[ \t]*$")  # "J. T.", under a postscript
_POSTSCRIPT = re.compile(r"[ \t]*(?:P\.\s*P\.\s*S\.|P\.\s*S\.|Postscript)")
POSTSCRIPT_PARAGRAPHS = 6  # a postscript runs on to the paragraph it is signed in, within this many
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


class Letter(NamedTuple):
    start: int  # the salutation's first character
    end: int  # the end of its last paragraph (the signature's, or a postscript's)
    signer: str  # the signature as written ("ISABELLA", "John Trelawney")
    name_span: tuple[int, int]  # the signature's characters


def _paragraphs(text: str, start: int):
    """(start, end) of each paragraph from `start` on."""
    while start < len(text):
        gap = _PARAGRAPH.search(text, start)
        end = gap.start() if gap else len(text)
        yield start, end
        if gap is None:
            return
        start = gap.end()


def _letter_from(text: str, start: int) -> Letter | None:
    """The letter whose salutation starts at `start`, up to its signature and postscripts."""
    found = None
    for k, (a, z) in enumerate(_paragraphs(text, start)):
        if found is not None:  # after the signature: postscripts are the signer's too
            if a < found.end:
                continue  # a paragraph of the postscript before
            if not _POSTSCRIPT.match(text, a):
                return found
            found = found._replace(end=_postscript_end(text, a, z))
            continue
        if k >= LETTER_PARAGRAPHS or (k and CHAPTER.search(text, a, z)):
            return None
        for signed in _SIGNED:
            m = signed.search(text[a:z])
            if m is not None and m.start(1) > 0:
                found = Letter(start, z, m.group(1), (a + m.start(1), a + m.end(1)))
                break
    return found


def _postscript_end(text: str, start: int, end: int) -> int:
    """The end of a postscript that starts the paragraph [start, end): the paragraph signed
    with a name or initials ("J. T.") within POSTSCRIPT_PARAGRAPHS, else this one's."""
    for k, (a, z) in enumerate(_paragraphs(text, start)):
        if k >= POSTSCRIPT_PARAGRAPHS or (k and CHAPTER.search(text, a, z)):
            break
        if _INITIALS.search(text[a:z]) or any(s.search(text[a:z]) for s in _SIGNED):
            return z
    return end


def _named_in_book(text: str, letter: Letter) -> bool:
    """Whether the book names the signer outside the letter (see the module's notes)."""
    key = letter.signer.split()[-1].capitalize()
    outside = text[:letter.start] + text[letter.end:]
    said = [m.start() for m in re.finditer(rf"\b{re.escape(key)}\b", outside)]
    after_name = sum(bool(re.search(r"[A-Z][\w'\u2019]+\s+$", outside[max(0, s - 30):s])) for s in said)
    return len(said) >= MIN_SECTIONS and after_name * 2 < len(said)


def signed_letters(text: str, quotes: list[tuple[int, int]] | None = None) -> list[Letter]:
    """The letters copied into the prose (see the module's notes), in text order. `quotes`:
    the text's quote_spans, where the caller has them."""
    quoted = bytearray(len(text))
    for a, z in quote_spans(text) if quotes is None else quotes:
        quoted[a:z] = b"\x01" * (z - a)
    out: list[Letter] = []
    for a, _ in _paragraphs(text, 0):
        a += len(text[a:a + 40]) - len(text[a:a + 40].lstrip())
        if a >= len(text) or quoted[a] or (out and a < out[-1].end) or not _SALUTATION.match(text, a):
            continue
        letter = _letter_from(text, a)
        if letter is not None and says_i(text, letter.start, letter.end, FIRST_PERSON) and _named_in_book(text, letter):
            out.append(letter)
    return out


def with_letters(sections: list[Section], letters: list[Letter]) -> list[Section]:
    """The headed sections with each letter a section of its signer's, and the text after it
    a section of no writer (the narrator's again). A letter inside a section whose heading
    names a writer is left to the heading: a book of headed letters signs them too, and
    "Anna" under "Letter, Anna Bell to ..." is one writer, not two."""
    out = list(sections)
    for letter in letters:
        around = [s for s in sections if s.start <= letter.start]
        if around and around[-1].writer:
            continue
        out.append(Section(letter.start, letter.signer, letter.name_span))
        out.append(around[-1]._replace(start=letter.end) if around else Section(letter.end, "", (letter.end, letter.end)))
    return sorted(out, key=lambda s: s.start)
