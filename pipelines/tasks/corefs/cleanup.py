"""What is no mention, and what is no speech, in any text: the passes that keep non-fiction
(licences, papers, manuals) from filling chains with punctuation and fragments.

Tried on the GNU GPL-3 (small tier), the window model's chains held 31 mentions that were
only punctuation (".", ","), URL fragments ("://", "/fsf."), list markers ("c", "b"), verbs
("is") and nested partial copies of one name ("The GNU General", "The GNU General Public",
"The GNU General Public License") in one chain; and its quoted defined terms ("This License"
refers to ...) were read as speech. So, each pass with its switch (switches.py):

  mention_words   a mention holds a word: one with no letter or digit, a single letter other
                  than "I", a lone function word or auxiliary ("is", "the", "of"), or a part
                  of a URL or e-mail address leaves its chain
  nested_mentions a mention that cuts a name another mention of its chain holds whole ("The
                  GNU General" beside "The GNU General Public License") leaves: the model's
                  partial spans of one name are one mention
  addressed_reader  in a text without speech (under SPEECH_QUOTES quotes once defined terms are out), every
                  chain of "you", "your", "yourself" and every lone one of them in another
                  chain is the one reader the text addresses: one chain (a licence's "you"
                  was spread over 16 chains)
  defined_terms   a short quote (at most DEFINED_WORDS words, no sentence punctuation inside)
                  that a definition follows within its sentence ("means", "refers to", "is
                  defined as", "includes") or that the text calls a term ("(the", "the term",
                  "called", "hereinafter") is a defined term, not speech; in a text whose
                  quotes are mostly short and plain (TERMS_SHARE) with a few so defined, every
                  short plain quote is a term (a licence's "recipients", "AS IS")
"""

from __future__ import annotations

import re

from .quotes import quote_spans
from .switches import on

_WORDY = re.compile(r"[^\W_]")  # a letter or a digit
_URL = re.compile(r"(?:https?://|ftp://|www\.)[^\s<>\"')\]]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
# Closed classes: alone, never a mention of anything (the pronouns are mentions: not here).
# ("this", "that", "there", "here" stay mentions: a demonstrative or a place can be one.)
FUNCTION_WORDS = frozenset("""
a an the of and or nor but if then than to in on at by for from with without into onto upon as so
is are was were be been being am has have had do does did can could may might must shall should
will would not no yes also very just only such thus hence
""".split())


AUXILIARIES = frozenset("is are was were am be been being has have had do does did".split())
SENTENCE_WORDS = 8  # a "mention" this long that ends a sentence is a sentence


def is_word_mention(text: str) -> bool:
    """Whether a mention's text can be a mention at all (mention_words): it holds a word; it
    does not start with an auxiliary ("is a free, copyleft license": a predicate, no noun
    phrase); it is no whole sentence; alone, it is no single letter but "I" and no function word."""
    words = text.split()
    if not words or not _WORDY.search(text):
        return False
    if len(words) > 1 and (words[0].lower() in AUXILIARIES or words[-1].lower() in AUXILIARIES):
        return False  # "is a free license", "the License is": a clause's piece, no noun phrase
    if len(words) > SENTENCE_WORDS and text.rstrip()[-1:] in ".!?":
        return False
    if len(words) == 1:
        word = words[0].strip(".,;:!?()[]{}\"'\u2018\u2019\u201c\u201d")
        if len(word) == 1 and word != "I":
            return False
        if word.lower() in FUNCTION_WORDS:
            return False
    return True


SECOND_PERSON = frozenset("you your yours yourself yourselves".split())


ADDRESSED_SHARE = 0.8  # a chain this much "you", "your" (the words alone) is the reader's
SPEECH_QUOTES = 3  # a text with fewer quotes (defined terms apart) has no speech: its "you" is the reader


def one_reader(groups: list[list], text_of) -> list[list]:
    """`groups` (chains of mentions) with the one reader a text without speech addresses
    (addressed_reader): every chain mostly (ADDRESSED_SHARE) of "you", "your" alone joined into
    the first of them, and every lone "you", "your" of the other chains moved there (nobody
    speaks, so each is the reader); `text_of(mention)`: its text."""
    def alone(m) -> bool:
        return text_of(m).strip().lower() in SECOND_PERSON

    def addressed(mentions) -> bool:
        return bool(mentions) and sum(map(alone, mentions)) >= ADDRESSED_SHARE * len(mentions)

    firsts = [k for k, g in enumerate(groups) if addressed(g)]
    if not firsts:
        return groups
    reader = [m for k in firsts for m in groups[k]]
    out = []
    for k, g in enumerate(groups):
        if k == firsts[0]:
            out.append(reader)
        elif k not in firsts:
            reader += [m for m in g if alone(m)]
            rest = [m for m in g if not alone(m)]
            if rest:
                out.append(rest)
    return out


def url_spans(text: str) -> list[tuple[int, int]]:
    """The character spans of the URLs and e-mail addresses in `text`."""
    return [m.span() for m in _URL.finditer(text)]


def in_any(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """Whether `span` overlaps one of `spans` (sorted or not; few of them)."""
    return any(s < span[1] and span[0] < e for s, e in spans)


def cut_names(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans less those that cut a name held whole by another of `spans` (nested_mentions):
    a span inside a longer one that ends on a capitalised word the longer one's name goes on
    after, or starts on one that name began before ("The GNU General", "GNU General Public"
    beside "the GNU General Public License"; "Darcy" in "Mr. Darcy"). A nested span that
    stops at a word boundary of another kind stays: "Anna" in "Anna, the keeper" is a mention
    of its own in LitBank, one of the same person."""
    ordered = sorted(set(spans))
    kept = []
    for s, e in ordered:
        cut = False
        for a, b in ordered:
            if (a, b) == (s, e) or not (a <= s and e <= b):
                continue
            after, before = text[e:b], text[a:s]
            if e < b and re.search(r"[A-Z][\w.'-]*$", text[s:e]) and re.match(r"\s+[A-Z]", after):
                cut = True  # it ends on a capitalised word and the name goes on after it
            elif a < s and re.match(r"[A-Z]", text[s:e]) and re.search(r"[A-Z][\w.'-]*\s+$", before):
                cut = True  # it starts on a capitalised word and the name began before it
            if cut:
                break
        if not cut:
            kept.append((s, e))
    return kept


DEFINED_WORDS = 5  # a defined term in quotes has at most this many words
# a definition within a few words after the term, before the sentence ends ("To "modify" a work means")
_DEFINITION_AFTER = re.compile(r"^[^.;:!?\"\u201c\u201d]{0,40}?\b(?:means?|refers?\s+to|is\s+defined|are\s+defined|"
                               r"includes?|has\s+the\s+meaning)\b", re.IGNORECASE)
_TERM_BEFORE = re.compile(r"(?:\(\s*(?:the\s+)?|\bthe\s+terms?\s+|\bcalled\s+|\btermed\s+|\bknown\s+as\s+|"
                          r"\bhereinafter\s+(?:called\s+|referred\s+to\s+as\s+)?|\breferred\s+to\s+as\s+)$",
                          re.IGNORECASE)
_SENTENCE_MARK = re.compile(r"[.,;:!?]")
TERMS_SHARE = 0.8  # a text whose quotes are mostly short and plain, some of them defined: its short quotes are terms
LEAST_DEFINED = 3


def _short_plain(text: str, span: tuple[int, int]) -> bool:
    inner = text[span[0] + 1:span[1] - 1]
    return 0 < len(inner.split()) <= DEFINED_WORDS and not _SENTENCE_MARK.search(inner)


def _defined(text: str, span: tuple[int, int]) -> bool:
    after, before = text[span[1]:span[1] + 40], text[max(0, span[0] - 30):span[0]]
    return bool(_DEFINITION_AFTER.search(after) or _TERM_BEFORE.search(before))


def speech_quotes(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` (quote_spans') less the defined terms (defined_terms): short plain quotes that a
    definition follows or that the text calls a term; and, where most short plain quotes of the
    text are so defined, every short plain quote (a licence's "recipients", "modify")."""
    short = [s for s in spans if _short_plain(text, s)]
    defined = {s for s in short if _defined(text, s)}
    if len(short) >= TERMS_SHARE * len(spans) and len(defined) >= LEAST_DEFINED:
        defined = set(short)
    return [s for s in spans if s not in defined]


def spoken_quotes(text: str) -> list[tuple[int, int]]:
    """The text's quotes (quotes.quote_spans) that are speech: less its defined terms, unless
    the defined_terms pass is off."""
    spans = quote_spans(text)
    return speech_quotes(text, spans) if on("defined_terms") else spans
