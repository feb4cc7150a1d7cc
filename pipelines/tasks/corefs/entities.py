"""What a mention says about who it can be, and the rules that keep two people apart.

A chain (an entity) is summed up by a `Profile`: the proper names its mentions use, the
personal pronouns, the grammatical gender its names, honorifics, gendered nouns and pronouns
give it, and which quotes it speaks ("I") or is spoken to ("you") in. Two profiles that
cannot be one person are kept apart everywhere chains are built or joined: by the window decoder
(decode.decode_clusters), the merge of windows into entities and the names linked over a book (document.DocumentEntities).

Each rule is one small function:
  names_compatible     "Teodor Varga", "Mr. Varga" and "Teodor" can be one; "Teodor" and
                       "Ilka" cannot, nor "Mr. Varga" and "Mrs. Varga"
  genders_agree        "Mr. Varga", "the woman" and "she" cannot be one
  pronouns_agree       "he" and "they", "it" and "she", "I" and "he" cannot be one (but
                       speaker_and_narrated_agree: two chains of one name can be her "I" and
                       her "she")
  speakers_differ      in one quote, the speaker's "I" and the "you" addressed are two people
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from ...view.chain_titles import usable_title
from .cleanup import spoken_quotes
from .name_pronouns import women_alone
from .quotes import is_vocative, quote_spans


# Personal pronouns by kind (person, number, gender). The kind of a one-word mention, as written
# in lower case, capitalised or in capitals ("US" the country is not "us").
PRONOUN_KINDS = {
    "he": "he him his himself",
    "she": "she her hers herself",
    "it": "it its itself",
    "they": "they them their theirs themselves",
    "i": "i me my mine myself",
    "we": "we us our ours ourselves",
}
_KIND_OF_WORD = {word: kind for kind, words in PRONOUN_KINDS.items() for word in words.split()}


def pronoun_kind(word: str) -> str | None:
    """The kind of a personal pronoun ("he", "she", "it", "they", "i", "we"), else None."""
    lower = word.lower()
    if word not in (lower, lower.capitalize()) and not (word.isupper() and lower != "us"):
        return None  # "US" the country; but "WE" and "HE" set in capitals for stress are pronouns
    return _KIND_OF_WORD.get(lower)


# A sentence end inside a mention: . ! or ? (a closing quote may follow), a space, then a capital or
# an opening quote; not after an abbreviation or an initial ("Mr. Darcy", "J. Smith", "St. Clare").
_SENTENCE_END = re.compile(r"(?<![A-Z])(?<!\b(?:Mr|Ms|Dr|St|Jr|Sr|Co))(?<!\bMrs)(?<!\bCapt|\bProf|\bRev.)[.!?][\"'\u201d\u2019]?\s+[A-Z\"'\u201c\u2018]")


def crosses_sentence_end(text: str) -> bool:
    """Whether a mention's text runs over a sentence end ("him. I would reconcile him"): no
    mention does, so the decoder's spans that do are dropped before chains are built."""
    return _SENTENCE_END.search(text) is not None


def is_nominal(text: str) -> bool:
    """Whether a mention that is no name or pronoun can title a chain: a short noun phrase ("the
    captain", "my mother"), not a span that opens or ends with a pronoun ("I found I", "some of
    them"), holds a comma ("you, I know you") or runs long (view.chain_titles.usable_title)."""
    return usable_title(text)

# Honorifics: (the form of address, which says married, unmarried or titled, and the gender).
# Two names with different forms ("Mrs. Bennet", "Miss Bennet", "Lady Lucas") are two people.
HONORIFICS = {
    # A knight or a peer is "Sir Walter", "Lord Orville", never "Mr. Elliot": like "Lady" for a
    # woman, a form of address of its own, so a baronet and the heir of his surname stay two men.
    "mr": ("mr", "m"), "mister": ("mr", "m"), "messrs": ("mr", "m"), "sir": ("sir", "m"), "lord": ("lord", "m"),
    "master": (None, "m"),
    "mrs": ("mrs", "f"), "madam": ("mrs", "f"), "madame": ("mrs", "f"), "mme": ("mrs", "f"),
    "miss": ("miss", "f"), "mademoiselle": ("miss", "f"), "mlle": ("miss", "f"),
    "ms": (None, "f"), "lady": ("lady", "f"), "dame": (None, "f"), "aunt": (None, "f"), "uncle": (None, "m"),
}  # "Aunt Shaw" is the book's Mrs. Shaw; "Aunt" alone, like "Mr." alone, names no one
# How a titled person is spoken of without a name ("her ladyship"): the form of address it
# gives, so that "her ladyship" is never "Mrs. Bennet" (Profile.addresses).
_TITLE_NOUNS = {"ladyship": ("lady", "f"), "lordship": ("lord", "m")}
# ... and how a servant or an equal speaks to them: "my lady", "your lord" (two words; "the old
# lady" is nobody's title).
_ADDRESSED_TITLES = {("my", "lady"): ("lady", "f"), ("your", "lady"): ("lady", "f"), ("my", "lord"): ("lord", "m")}
# Nouns that say a person's gender, as a mention's head ("the old woman", "the King").
GENDERED_NOUNS = {
    "m": "man men gentleman boy lad fellow father son brother husband uncle nephew grandfather king prince duke "
         "earl count baron lord sir master mister monk priest widower bridegroom gentlemen sir",
    "f": "woman women lady girl lass maid maiden mother daughter sister wife aunt niece grandmother queen princess "
         "duchess countess baroness madam mistress widow bride nun ladies",
}
_NOUN_GENDER = {word: g for g, words in GENDERED_NOUNS.items() for word in words.split()}
_PRONOUN_GENDER = {"he": "m", "she": "f"}
SECOND_PERSON = frozenset("you your yours yourself yourselves thou thee thy thine thyself ye".split())
# Capitalised words that start a mention without making it a name.
_NOT_NAMES = frozenset(
    "a an the this that these those my your his her its our their one some any every each all both no none nobody "
    "somebody someone everybody everyone anybody anyone nothing something everything who whom whose which what "
    "father mother papa mama mamma ma'am".split()
)
# Words before a name that are not part of it ("the", "poor Alice", "old Teodor").
# And the words a sentence may open with before a name ("Even Silver laughed", "Then Alice
# said"): capitalised there, they are no part of the name, and "Even Silver" and "John
# Silver" would be two names that cannot be one man.
_BEFORE_NAMES = frozenset("the poor old young little dear good even only then now oh well so but and yet "
                          "here there perhaps still just all".split())
# Small words that may sit inside a name ("Queen of Hearts", "Lady Catherine de Bourgh").
_NAME_JOINERS = frozenset("of de du da van von la le the".split())
# Titles a story calls one person by ("the squire", "the doctor", "Why, doctor"): a name; and the
# short forms of titles, read as the title ("Dr. Livesey" and "the doctor" share "doctor").
TITLES = frozenset(
    "doctor captain squire colonel major general admiral lieutenant sergeant professor judge parson vicar rector "
    "reverend governor king queen prince princess duke duchess count countess baron baroness earl marquis".split()
)
# Ranks that the novels lfcli reads give to men only, as a name's first word ("Admiral Croft",
# "Captain Harville", "Colonel Brandon"): the name is a man's.
MEN_S_RANKS = frozenset("admiral captain cap'n capt colonel col general gen major lieutenant lieut sergeant sgt "
                        "commodore corporal ensign bishop".split())
_SHORT_TITLES = {"dr": "doctor", "capt": "captain", "cap'n": "captain", "col": "colonel", "gen": "general",
                 "prof": "professor", "rev": "reverend", "lieut": "lieutenant", "sgt": "sergeant"}
_WORD = re.compile(r"[^\W\d_][\w'\u2019.-]*")
_NOT_IN_NAMES = re.compile(r"[,;:!?()\"\u201c\u201d\u2014]|--")  # "--": a dash in plain-text books ("Jane--from")
# A man's honorific or rank and the one or two capitalised words after it ("Sir William Lucas"); a
# woman's honorific and the word after it ("Miss Elizabeth Bennet": "Elizabeth").
_AFTER_MAN = re.compile(r"\b(?:Mr|Mister|Sir|Lord|Master|Captain|Admiral|Colonel|Major|Lieutenant|Sergeant)\.?\s+([A-Z][\w'\u2019-]*)(?:[ \t]+([A-Z][\w'\u2019-]*))?")
_AFTER_TITLE = re.compile(r"\b(?:%s)\.?\s+([A-Z][\w'\u2019-]*)" % "|".join(sorted(TITLES | {t.capitalize() for t in TITLES}
                                                                                | {t.capitalize() for t in _SHORT_TITLES})))
# A wife called by her husband's full name ("Mrs. Charles Musgrove"): "Charles" is no woman's.
_MRS_HIS_NAME = re.compile(r"\bMrs\.?[ \t]+([A-Z][a-z]+)[ \t\n]+[A-Z][a-z]+")
_AFTER_WOMAN = re.compile(r"\b(Mrs|Miss|Madam|Madame|Mme|Mlle|Ms|Lady)\.?\s+([A-Z][\w'\u2019-]*)")


class Name(NamedTuple):
    """A proper name: its words (lower case, honorifics left out), its form of address
    ("mr", "mrs", "miss" or None) and the gender its honorific or head noun gives."""

    words: frozenset
    address: str | None
    gender: str | None


def proper_name(text: str) -> Name | None:
    """The name a mention's text gives, when it is a name: every word capitalised but small
    joiners, at most five words, not a group ("the King and Queen"), not a pronoun.
    "the Mock Turtle" -> {mock, turtle}; "Mr. Darcy's" -> {darcy}, mr, m; "the squire" -> {squire}
    (a title: see TITLES); "the old man" -> None."""
    if _NOT_IN_NAMES.search(text):  # "Darcy, Caroline" is two names, not one
        return None
    words = _name_words(text)
    if not words or len(words) > 5 or any(w.lower() in ("and", "or") for w in words):
        return None
    if len(words) == 1 and words[0].lower() in TITLES:  # "the squire", or "squire" said to him
        return Name(frozenset([words[0].lower()]), None, _NOUN_GENDER.get(words[0].lower()))
    if words[0].lower() in _NOT_NAMES or pronoun_kind(words[0]) or words[0].lower() in SECOND_PERSON:
        return None
    address = gender = None
    kept = []
    for i, w in enumerate(words):
        lower = w.lower()
        if lower in HONORIFICS:  # alone ("Mr.") it names nobody
            address, gender = HONORIFICS[lower]
            continue
        if not w[0].isupper() and lower not in _NAME_JOINERS:
            return None
        if lower not in _NAME_JOINERS or (len(words) == 1 and w[0].isupper() and lower not in ("of", "the")):
            kept.append(_SHORT_TITLES.get(lower, lower))  # "Van" alone is a name ("Oh, don't croak, Van!")
    if not kept:
        return None
    if gender is None and words[0].lower() in MEN_S_RANKS:  # "Admiral Croft" is not "Mrs. Croft"
        gender = "m"
    lower = [w.lower() for w in words]
    head = lower[lower.index("of") - 1] if "of" in lower[1:] else kept[-1]  # "Queen of Hearts": Queen
    return Name(frozenset(kept), address, gender or _NOUN_GENDER.get(head))


# A royal style and the title it stands for ("His Royal Highness" is the book's "the Prince"); not
# "His Majesty", a king most stories only speak of, whose name a nickname shares ("King George").
_STYLES = {("his", "royal", "highness"): ("prince", "m"), ("her", "royal", "highness"): ("princess", "f")}


def royal_style(text: str) -> Name | None:
    """The title a royal style names, as a name: "His Royal Highness" -> {prince}, a man's; None
    for anything else."""
    found = _STYLES.get(tuple(w.lower() for w in _name_words(text)))
    return Name(frozenset([found[0]]), None, found[1]) if found and text.split()[-1][:1].isupper() else None


def _name_words(text: str) -> list[str]:
    """A name's words as written: no possessive 's, no trailing dot, no "poor" or "Then" before it."""
    words = _WORD.findall(text.replace("\u2019", "'"))
    words = [w[:-2] if w.lower().endswith("'s") else w.rstrip(".") for w in words]
    while words[:-1] and words[0].lower() in _BEFORE_NAMES:
        words = words[1:]
    return words


def given_name(text: str) -> str | None:
    """The first word of a name past its honorific, lower case ("Miss Elizabeth Bennet" ->
    "elizabeth"): the word a book's forms of address are learned for (NameForms)."""
    return next((w.lower() for w in _name_words(text) if w.lower() not in HONORIFICS), None)


class NameForms:
    """How a book addresses the people its names' words belong to, read from the words right
    after an honorific: "Mr. Darcy" makes "Darcy" alone a man's name (a novel calls the man
    "Darcy" and his sister "Miss Darcy", never "Darcy"), and a word only ever after a woman's
    honorific ("Miss Lizzy", "Miss Elizabeth", "Lady Catherine") is a woman's, with the form of
    address ("miss", "mrs") when the book uses one only. So "Lizzy" cannot be "he", and
    "Elizabeth Bennet", a Miss, is not "Mrs. Bennet"."""

    def __init__(self, text: str, quotes: list[tuple[int, int]] | None = None):
        self.men = {_plain(m.group(k)) for m in _AFTER_MAN.finditer(text) for k in (1, 2) if m.group(k)}
        self.men -= women_alone(text, self.men, quote_spans(text) if quotes is None else quotes)  # "Peggotty ... she"
        forms: dict[str, set] = {}
        for m in _AFTER_WOMAN.finditer(text):
            forms.setdefault(_plain(m.group(2)), set()).add(HONORIFICS[m.group(1).lower()][0])
        titled = {_plain(m.group(1)) for m in _AFTER_TITLE.finditer(text)}  # "Colonel Forster", beside "Mrs. Forster"
        husbands = {_plain(m.group(1)) for m in _MRS_HIS_NAME.finditer(text)}  # "Mrs. Charles Musgrove": his "Charles"
        self.women = {w: (next(iter(f)) if len(f) == 1 else None) for w, f in forms.items()
                      if w not in self.men | titled | husbands | TITLES}  # "Mrs. Doctor Strong": no woman's "Doctor"
        self.married = married_names(text)
        self.brothers = brothers(text)

    def apply(self, name: Name, text: str) -> Name:
        """`name` (read from the mention `text`) with the gender and address the book gives its
        words, where the name itself says none; and "Mr. Knightley", in a book of two Mr.
        Knightleys, marked as not the one the book calls "Mr. John Knightley" (`brothers`)."""
        if name.address == "mr" and len(name.words) == 1 and next(iter(name.words)) in self.brothers:
            return name._replace(words=name.words | {NOT + g for g in self.brothers[next(iter(name.words))]})
        if name.address or name.gender:
            return name
        if len(name.words) == 1 and name.words <= self.men:
            return name._replace(gender="m")
        given = given_name(text)
        if given in self.women:
            return name._replace(address=self.women[given], gender="f")
        return name


# A woman's married name, as a book says it: "Charlotte the wife of Mr. Collins", "Jane, now
# Mrs. Bingley", "Lydia became Mrs. Wickham", "Marguerite St. Just married Sir Percy Blakeney".
_HUSBAND = (r"(?:Mr|Mister|Sir|Dr|Doctor|Captain|Colonel|Major|Lord)\.?\s+"  # his title, his other names, his surname
            r"(?:[A-Z]\.\s+|[A-Z][\w'\u2019-]*\s+){0,2}?([A-Z][\w'\u2019-]+)\b(?!\s+[A-Z])")  # not past a full stop
_MARRIED = [
    (re.compile(r"\b([A-Z][a-z]+),?\s+(?:now\s+|then\s+)?(?:the\s+)?wife\s+of\s+" + _HUSBAND), 1, 2),
    (re.compile(r"\b([A-Z][a-z]+),?\s+(?:now|then|became|who\s+became)\s+Mrs\.?\s+([A-Z][\w'\u2019-]*)"), 1, 2),
    (re.compile(r"(?<!Mr\.\s)(?<!Mr\s)(?<!Sir\s)(?<!Lord\s)\b([A-Z][a-z]+)(?:\s+[A-Z][\w.'\u2019-]*){0,2}\s+(?:was\s+|had\s+been\s+|is\s+)?married\s+(?:to\s+)?" + _HUSBAND + r"(?![\w'\u2019])(?<!['\u2019]s)"), 1, 2),
    (re.compile(_HUSBAND + r"\s+(?:had\s+|has\s+)?married\s+(?:Miss\s+)?([A-Z][a-z]+)\b"), 2, 1),
]


NOT = "\u00ac"  # a name's word that says whom it is not: "Mr. Knightley" {knightley, ¬john} (NameForms.apply)
_MR_FULL = re.compile(r"\bMr\.?\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")


def brothers(text: str, least: int = 3) -> dict[str, set[str]]:
    """Two men of one surname, as a book tells them apart: it speaks of "the two Mr.
    Knightleys" and calls one of them "Mr. John Knightley" (at least `least` times), so the "Mr.
    Knightley" it says alone is the other. Surname -> the given names of the ones called by them.
    In LitBank's 90 novels this finds Emma's two pairs only (Mr. Knightley and his brother John,
    Mr. Churchill and his nephew Frank); a book that says "Mr. Franklin Blake" and "Mr. Blake" of
    one man never writes "the Mr. Blakes"."""
    called = Counter((_plain(m.group(2)), _plain(m.group(1))) for m in _MR_FULL.finditer(text))
    out: dict[str, set[str]] = {}
    for (surname, given), k in called.items():
        if k >= least and re.search(rf"\bMr\.?\s+{re.escape(surname.capitalize())}(?:s|es)\b", text):
            out.setdefault(surname, set()).add(given)
    return out


def married_names(text: str) -> dict[str, str]:
    """A book's statements of whom a woman married: her name (given, or maiden surname:
    "Miss Hamilton, now Mrs. Smith") -> her husband's surname, lower case ("charlotte" ->
    "collins"). A word the book also writes in lower case is no name ("But now Mrs. Darcy"), and
    a name said to marry two men is left out. The husband's surname is the last of his names
    ("Sir Minos Smith", "Sir G. Huff")."""
    found: dict[str, set] = {}
    for pattern, wife, husband in _MARRIED:
        for m in pattern.finditer(text):
            found.setdefault(_plain(m.group(wife)), set()).add(_plain(m.group(husband)))
    return {w: next(iter(h)) for w, h in found.items()  # not "Lady Huff, wife of Sir G. Huff": w in h
            if len(h) == 1 and w not in HONORIFICS and w not in h and not re.search(rf"\b{re.escape(w)}\b", text)}


def _plain(word: str) -> str:
    """A word after an honorific as a name's word: lower case, no possessive, nothing past a dash."""
    word = word.split("--")[0].lower().replace("\u2019", "'")
    return word[:-2] if word.endswith("'s") else word


def names_compatible(a: Name, b: Name, bridges=()) -> bool:
    """Whether two names can name one person: the same gender and form of address where both
    say one, and the words of one among the other's ("Mr. Varga" ~ "Teodor Varga" ~ "Teodor";
    not "Teodor" ~ "Ilka", not "Mr. Varga" ~ "Mrs. Varga", not "Captain Flint" ~ "Captain Smollett"),
    or both among the words of a fuller name of the same person (`bridges`: "Jim" and "Hawkins"
    are one beside "Jim Hawkins")."""
    if a.gender and b.gender and a.gender != b.gender:
        return False
    if a.address and b.address and a.address != b.address:
        return False
    if a.words <= b.words or b.words <= a.words:
        return True
    if a.address in ("mrs", "miss") or b.address in ("mrs", "miss"):
        return False  # "Mrs. Bennet" and "Elizabeth" are not one beside "Elizabeth Bennet"
    both = a.words | b.words
    return any(both <= m.words for m in bridges)


def genders_agree(a: set[str], b: set[str]) -> bool:
    """Whether two sets of genders ("m", "f") can be one person's."""
    return len(a | b) <= 1


def pronouns_agree(a: set[str], b: set[str]) -> bool:
    """Whether two sets of personal-pronoun kinds can be one chain's: one kind at most ("he"
    and "she", "it" and "they", "I" and "we" never; see PRONOUN_KINDS)."""
    return len(a | b) <= 1


def speaker_and_narrated_agree(a: set[str], b: set[str]) -> bool:
    """pronouns_agree for two chains of one name: a character is "I" in her own speech and
    "she" in the narration around it, so a first-person chain may join one "he" or "she"
    chain ("I" and "it", "they" or "we" still never)."""
    if pronouns_agree(a, b):
        return True
    third = (a | b) - {"i"}
    return "i" in a | b and len(third) == 1 and third <= {"he", "she"}


def speakers_differ(a: dict[int, set[int]], b: dict[int, set[int]]) -> bool:
    """Whether, in some quote, one side says "I" and the other is the "you" addressed: the
    speaker and the person spoken to are two people. Maps: quote -> persons (1, 2) used there."""
    return any(q in b and ((1 in persons and 2 in b[q]) or (2 in persons and 1 in b[q])) for q, persons in a.items())


@dataclass(slots=True, frozen=True)  # one per mention of a book: kept small, and shared
class Mention:
    """What one mention says about its entity (all optional)."""

    name: Name | None = None
    kind: str | None = None  # personal pronoun kind (PRONOUN_KINDS)
    gender: str | None = None
    quote: int | None = None  # the quote it sits in
    person: int | None = None  # 1: "I", 2: "you"
    address: str | None = None  # the form of address a title noun gives ("her ladyship": "lady")

    @property
    def is_person(self) -> bool:
        """Whether it says it is a person: a gender, or a personal "he", "she", "I" or "you"."""
        return bool(self.gender or self.kind in ("he", "she", "i") or self.person)

    @property
    def says_anything(self) -> bool:
        return bool(self.name or self.kind or self.gender or self.person or self.address)


STRAY_FORM = 0.1  # share of a chain's names at most that a form of address may hold and still be a slip


@dataclass
class Profile:
    """What a chain's mentions say about its entity; see the rules above."""

    names: set = field(default_factory=set)
    kinds: set = field(default_factory=set)
    genders: set = field(default_factory=set)
    quotes: dict = field(default_factory=dict)
    scenes: set = field(default_factory=set)  # the scenes (see scene_breaks) its mentions sit in, where known
    addresses: Counter = field(default_factory=Counter)  # forms of address its names give ("mrs", "lady"), with counts
    named: int = 0  # how many of its mentions are names
    titles: set = field(default_factory=set)  # forms of address its title nouns give ("her ladyship": "lady")

    @classmethod
    def of(cls, mention: Mention) -> "Profile":
        p = cls()
        p.add(mention)
        return p

    def add(self, m: Mention) -> None:
        if m.name:
            self.names.add(m.name)
            self.named += 1
        if m.name and m.name.address:
            self.addresses[m.name.address] += 1
        if m.address:
            self.titles.add(m.address)
        if m.kind:
            self.kinds.add(m.kind)
        if m.gender:
            self.genders.add(m.gender)
        if m.person and m.quote is not None:
            self.quotes.setdefault(m.quote, set()).add(m.person)

    def update(self, other: "Profile") -> None:
        self.names |= other.names
        self.kinds |= other.kinds
        self.genders |= other.genders
        for q, persons in other.quotes.items():
            self.quotes.setdefault(q, set()).update(persons)
        self.scenes |= other.scenes
        self.addresses.update(other.addresses)
        self.named += other.named
        self.titles |= other.titles

    def _names_fit(self, other: "Profile") -> bool:
        if not self.names or not other.names:
            return True
        bridges = [n for n in self.names | other.names if len(n.words) > 1]
        return all(names_compatible(a, b, bridges) for a in self.names for b in other.names)

    def forms(self) -> set:
        """The forms of address its names give, but for a stray one: a form held by at most
        STRAY_FORM of its named mentions is a window's slip (Georgiana's chain in Pride and
        Prejudice holds one "Mrs. Darcy" among seventeen names; it is no Mrs.)."""
        return {a for a, k in self.addresses.items() if k > STRAY_FORM * self.named}

    def _addresses_fit(self, other: "Profile") -> bool:
        """One form of address at most ("Mrs. Bennet" is no Lady), and a title noun ("her
        ladyship") only with the names that carry its form ("Lady Catherine"), or with none, or
        with names of no form where the title's own chain names its holder ("his lordship" and
        "Lord Lowborough" with "Lowborough"; names_compatible says whether the names fit)."""
        if len(self.forms() | other.forms() | self.titles | other.titles) > 1:
            return False
        return all(not a.titles or not b.names or any(n.address in a.titles for n in b.names)
                   or (all(n.address is None for n in b.names) and any(n.address in a.titles for n in a.names))
                   for a, b in ((self, other), (other, self)))

    def compatible(self, other: "Profile", same_name: bool = False, names: bool = True, quotes: bool = True,
                   addresses: bool = True) -> bool:
        """Whether the two can be one entity: every rule above holds between them.
        `same_name`: two chains of one name, where a speaker's "I" may meet the narration's
        "she" (speaker_and_narrated_agree). `names=False`: their names are known to be one
        person's by other evidence (document.DocumentEntities: a full name holds both).
        `quotes=False`: speakers_differ not asked, where a full name both chains say again and
        again outweighs a window's "I" put in the wrong chain. `addresses=False`: forms of address
        not asked, for a married name the book states ("Miss Lucas" is now "Mrs. Collins")."""
        agree = speaker_and_narrated_agree if same_name else pronouns_agree
        return (
            len(self.scenes | other.scenes) <= 1
            and (not addresses or self._addresses_fit(other))
            and agree(self.kinds, other.kinds)
            and genders_agree(self.genders, other.genders)
            and not (quotes and speakers_differ(self.quotes, other.quotes))
            and (not names or self._names_fit(other))
        )


_NOTHING = Mention()  # what most mentions of a book say ("the house"): one object for them all


class MentionReader:
    """Mentions of one document read from its text: `mention(first, last)` for a span of
    token positions (end inclusive), computed once per span."""

    def __init__(self, text: str, offsets: list[tuple[int, int]], pronouns: dict[tuple[int, int], str]):
        self.text, self.offsets, self.pronouns = text, offsets, pronouns
        self.quotes = spoken_quotes(text)  # a licence's "This License" refers to ...: a term, not speech
        self.forms = NameForms(text, self.quotes)  # the gender and address the book gives a name's words
        self._quote_starts = [a for a, _ in self.quotes]
        self._cache: dict[int, Mention] = {}  # keyed first << 32 | last: an int, not a tuple, a mention

    def quote_of(self, char: int) -> int | None:
        k = bisect.bisect_right(self._quote_starts, char) - 1
        return k if k >= 0 and char < self.quotes[k][1] else None

    def mention(self, first: int, last: int) -> Mention:
        key = first << 32 | last
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._read(first, last)
        return found

    def text_of(self, first: int, last: int) -> str:
        return self.text[self.offsets[first][0]:self.offsets[last][1]]

    def _read(self, first: int, last: int) -> Mention:
        text = self.text_of(first, last)
        kind = self.pronouns.get((first, last))
        quote = self.quote_of(self.offsets[first][0])
        if kind:
            return Mention(kind=kind, gender=_PRONOUN_GENDER.get(kind), quote=quote, person=1 if kind == "i" else None)
        if text.lower() in SECOND_PERSON:
            return Mention(quote=quote, person=2)
        name = proper_name(text) or royal_style(text)
        if name:
            name = self.forms.apply(name, text)
        if name:  # the person spoken to, when set off by commas in a quote (quotes.is_vocative)
            vocative = quote is not None and is_vocative(self.text, self.offsets[first][0], self.offsets[last][1],
                                                         self.quotes[quote])
            return Mention(name=name, gender=name.gender, quote=quote if vocative else None, person=2 if vocative else None)
        words = text.lower().split()
        head = words[words.index("of") - 1] if "of" in words[1:] else words[-1] if words else ""
        head = head.strip(".,;:!?'\u2019")
        address, gender = _TITLE_NOUNS.get(head, (None, _NOUN_GENDER.get(head)))
        if len(words) == 2 and (words[0], head) in _ADDRESSED_TITLES:
            address, gender = _ADDRESSED_TITLES[(words[0], head)]
        return Mention(gender=gender, address=address) if gender or address else _NOTHING
