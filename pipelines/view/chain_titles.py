"""What a corefs chain is listed as, and in what order: the page's side list and the cast a run
says on a terminal both list a document's chains biggest first (most mentions; ties by first
mention), named or not, each under a title a reader can use.

A chain's title is its `name`; else its first mention that looks like a proper name; else its
commonest noun phrase ("the old captain"; never a clause nor a phrase ending in a pronoun, see
usable_title); else, a chain of pronouns only, what they say of it:
"I (narrator)" for a first person told mostly outside quotes (a narrator the model could not
name), "I (unnamed speaker)" for one heard only in speech, "we" for a first person plural, and
"she (unnamed)", "they (unnamed)", ... for the rest, each pronoun counted as its subject form
(her and hers count as she).
"""

from __future__ import annotations

import bisect
from collections import Counter

# Words that start a mention without making it a name ("He", "The captain").
NOT_NAME_WORDS = frozenset(
    "i me my mine myself you your yours he him his himself she her hers herself it its itself we us our ours "
    "they them their theirs themselves the a an this that these those who whom whose which what one someone "
    "somebody everyone nobody all both each some any no".split())
_NAME_JOINERS = frozenset("of de la le van von der du da di and the y".split())
# A pronoun -> its subject form, the form a chain of pronouns is titled by.
_SUBJECT = {w: subject for subject, forms in {
    "I": "i me my mine myself", "we": "we us our ours ourselves", "you": "you your yours yourself yourselves",
    "he": "he him his himself", "she": "she her hers herself", "it": "it its itself",
    "they": "they them their theirs themselves"}.items() for w in forms.split()}
_STRIP = ".,;:!?'\"()\u2019\u201c\u201d"
_ARCHAIC = frozenset("thou thee thy thine thyself ye".split())
_DETERMINERS = frozenset("my your his her its our their".split())  # may open a title: "my mother", "her ladyship"


_CLAUSE_MARKS = frozenset(",;:!?\u2014\"\u201c\u201d")


def usable_title(text: str) -> bool:
    """Whether a noun phrase can title a chain: at most five words, no comma, colon or dash
    (a clause or a list: "you, I know you", "Agnes, looking to me"), its first word no pronoun but
    a possessive ("I found I"; "my mother" is a title) and its last no pronoun ("some of them",
    "a friend of hers")."""
    words = [w.strip(_STRIP).lower() for w in text.split()]
    words = [w for w in words if w]
    if not words or len(words) > 5 or any(c in _CLAUSE_MARKS for c in text) or "--" in text:
        return False
    opens = words[0] in _SUBJECT and words[0] not in _DETERMINERS  # "my mother" is a title; "I found" is not
    return not opens and words[-1] not in _SUBJECT and words[-1] not in _ARCHAIC


def _mentions(chain: dict) -> list[dict]:
    return [m for m in chain.get("mentions") or [] if isinstance(m, dict)]


def _said(mention: dict) -> str:
    return " ".join(str(mention.get("text") or "").split())


def _proper(text: str) -> bool:
    words = [w for w in (w.strip(_STRIP) for w in text.split()) if w]
    return (bool(words) and words[0][:1].isupper() and words[0].lower() not in NOT_NAME_WORDS
            and all(w[:1].isupper() or w.lower() in _NAME_JOINERS for w in words))


def _phrase(text: str) -> str:
    """A noun phrase as a title: its first word lower-cased when a determiner or pronoun
    ("The captain" and "the captain" are one phrase)."""
    first, _, rest = text.partition(" ")
    return f"{first.lower()} {rest}".strip() if first.lower() in NOT_NAME_WORDS else text


def _commonest(items: list[str]) -> str:
    """The most frequent of `items`, the first of equals."""
    counts = Counter(items)
    return max(counts, key=lambda t: (counts[t], -items.index(t)))


def _told(mentions: list[dict], quotes: list[dict] | None) -> bool:
    """Whether most of these mentions stand outside every quote (with no quotes known, all do)."""
    spans = sorted((q["start"], q["end"]) for q in quotes or []
                   if isinstance(q, dict) and isinstance(q.get("start"), int) and isinstance(q.get("end"), int))
    starts = [s for s, _ in spans]
    inside = 0
    for m in mentions:
        k = bisect.bisect_right(starts, m.get("start", -1)) - 1
        inside += k >= 0 and isinstance(m.get("end"), int) and m["end"] <= spans[k][1]
    return inside * 2 < len(mentions)


def chain_name(chain: dict, quotes: list[dict] | None = None) -> str:
    """The title chain `chain` is listed under (see the module's help); `quotes`: the
    document's quotes ({start, end}), which tell a narrator's "I" from a speaker's."""
    if chain.get("name"):
        return str(chain["name"])
    mentions = [m for m in _mentions(chain) if _said(m)]
    texts = [_said(m) for m in mentions]
    for text in texts:
        if _proper(text):
            return text
    phrases = [_phrase(t) for t in texts if t.lower() not in NOT_NAME_WORDS and usable_title(t)]
    if phrases:
        return _commonest(phrases)
    if not texts:
        return "(no text)"
    subject = _commonest([_SUBJECT.get(t.lower(), t.lower()) for t in texts])
    if subject == "I":
        first = [m for m in mentions if _SUBJECT.get(_said(m).lower()) == "I"]
        return "I (narrator)" if _told(first, quotes) else "I (unnamed speaker)"
    return "we" if subject == "we" else f"{subject} (unnamed)"


def first_mention(chain: dict) -> tuple[int, int]:
    """(start, end) of the chain's first mention in the text ((inf, inf) with none)."""
    spans = [(m["start"], m["end"]) for m in _mentions(chain)
             if isinstance(m.get("start"), int) and isinstance(m.get("end"), int)]
    return min(spans) if spans else (float("inf"), float("inf"))  # type: ignore[return-value]


def biggest_first(chains: list[dict]) -> list[dict]:
    """`chains` as they are listed: most mentions first, named or not; ties by first mention,
    so that a listing never depends on anything but the chains."""
    return sorted(chains, key=lambda c: (-len(c.get("mentions") or []), first_mention(c)))
