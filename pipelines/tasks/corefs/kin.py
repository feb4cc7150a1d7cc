"""Pass `narrated_kin`: a first-person narrator's "my aunt" is one person all through the book.

A narrator who tells a life calls the people closest to them by what they are to them, not by
name: "my aunt" hundreds of times, "my mother", "my husband". Each window's model links such a
mention to whoever is near (the aunt's "my aunt" sat in the chains of four other women in one
novel, a hundred mentions in each), and no name pass can take it back, for it has no name. Yet in
the narration (outside quotes, where "my" is always the narrator) there is one such person a
narrator a story: this pass gathers the narration's mentions of each kin noun, out of whatever
chains hold them, into one chain of its own (titled "my aunt" by chain_titles).

Never moves: a kin noun said in a quote (there "my" is the speaker's); a kin noun the narration
says fewer than LEAST times (a passing mention, as likely wrong as right to gather); "my aunt" or
"my uncle" where the narration names two different aunts or uncles ("my aunt Reed", "my uncle
John"), for a narrator may have several; nouns a person may have several of ("my brother", "my
friend"), or that change hands in a story ("my master"); mentions across a story break (two
stories' narrators are two people). It does not name the chain: that the aunt is "Miss Betsey" is
what the model's windows, not this pass, must say.
"""

from __future__ import annotations

import bisect
import re

from .chains import Entity, Joining

# One of each for a narrator, as the stories lfcli reads tell them.
KIN = ("mother", "father", "aunt", "uncle", "husband", "wife", "grandmother", "grandfather", "guardian")
SEVERAL = ("aunt", "uncle")  # one narrator may have more than one: gathered only where the book names one at most
LEAST = 5  # narration mentions of a kin noun, at least, for its own chain
_KIN_MENTION = re.compile(r"my\s+(%s)(?:['\u2019]s)?" % "|".join(KIN), re.IGNORECASE)


def kin_noun(text: str) -> str | None:
    """The kin noun of a mention that is exactly "my <kin>" ("my aunt", "My Aunt's"), lower case."""
    found = _KIN_MENTION.fullmatch(" ".join(text.split()))
    return found.group(1).lower() if found else None


def named_kin(text: str, noun: str) -> set[str]:
    """The names the book puts right after "my <noun>" ("my aunt Reed", "my uncle John"), those
    that are names: never a sentence's first word after a full stop, read case-sensitively."""
    return set(re.findall(rf"\b[Mm]y {noun}[ \t]+((?:Mrs?\.? |Miss )?[A-Z][a-z]+)", text))


def split_narrated_kin(doc, entities: list[Entity], state: Joining) -> list[Entity]:
    """Pass `narrated_kin` (see the module's notes): returns the entities, the narration's
    mentions of each kin noun (a story at a time) gathered into one entity of their own."""
    reader = doc.reader
    found: dict[tuple[str, int], list[tuple[Entity, tuple[int, int]]]] = {}
    for e in entities:
        for m in e.mentions:
            noun = kin_noun(reader.text_of(*m))
            if noun and reader.quote_of(reader.offsets[m[0]][0]) is None:
                found.setdefault((noun, bisect.bisect_right(doc.stories, m[0])), []).append((e, m))
    taken: dict[int, set] = {}
    gathered = []
    for (noun, _), held in sorted(found.items()):
        if len(held) < LEAST or (noun in SEVERAL and len(named_kin(reader.text, noun)) > 1):
            continue
        for e, m in held:
            taken.setdefault(id(e), set()).add(m)
        mentions = sorted(m for _, m in held)
        gathered.append(Entity(mentions, doc.profile(mentions)))
    if not gathered:
        return entities
    out = []
    for e in entities:
        if id(e) in taken:
            e.mentions = [m for m in e.mentions if m not in taken[id(e)]]
            e.profile = doc.profile(e.mentions)
        if e.mentions:
            out.append(e)
    return out + gathered
