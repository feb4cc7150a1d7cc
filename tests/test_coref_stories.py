"""Story breaks (pipelines/tasks/corefs/stories.py): the sliding sides against a direct count,
each rule on its own, made-up stories in one file, a story break that names cannot cross, and
the real data the thresholds were chosen on (LitBank dev excerpts joined; three novels)."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from shared_data import DATA, need

from lfcli.pipelines.tasks.corefs import stories
from lfcli.pipelines.tasks.corefs.entities import MentionReader
from lfcli.pipelines.tasks.corefs.task import DocumentEntities
from lfcli.pipelines.tasks.corefs.stories import (
    no_shared_capitals, side_likeness, story_breaks, unlike_words, story_words,
)


def _direct(words, i: int, width: int):
    """side_likeness' slow twin: both sides counted afresh."""
    def side(ws):
        return (Counter(w for _, w, _ in ws if w not in stories.STOP_WORDS and len(w) > 2),
                {w for _, w, cap in ws if cap})
    (b, bcaps), (a, acaps) = side(words[max(0, i - width):i]), side(words[i:i + width])
    dot = sum(v * a[k] for k, v in b.items())
    norm = math.sqrt(sum(v * v for v in b.values()) * sum(v * v for v in a.values()))
    return (dot / norm if norm else 1.0), len(bcaps & acaps)


def _story(seed: int, people: tuple[str, str], words: tuple[list[str], list[str]], paragraphs: int) -> str:
    """A made-up story: its people, its own verbs and things (and stop words between), in
    paragraphs of a few sentences."""
    verbs, things = words
    out = []
    for p in range(paragraphs):
        sentences = []
        for s in range(6):
            k = seed * 7 + p * 6 + s
            sentences.append(f"{people[(p + s) % 2]} {verbs[k % len(verbs)]} the {things[k % len(things)]} and the "
                             f"{things[(k + 3) % len(things)]} by the {things[(k + 5) % len(things)]}.")
        out.append(" ".join(sentences))
    return "\n\n".join(out)


SEA = ("lit climbed tied mended watched rowed".split(),
       "lamp tower ship harbour wave rope anchor gull lantern sail storm tide cliff oil logbook keeper".split())
HILLS = ("milked sold baked carried counted herded".split(),
         "goat cheese market basket coin mountain meadow barn milk shepherd fence apple cart bread oven mill".split())


def _two_stories() -> tuple[str, int]:
    first = _story(1, ("Teodor", "Miklos"), SEA, 30)
    second = _story(2, ("Ruben", "Sara"), HILLS, 30)
    return f"{first}\n\n{second}", len(first) + 2


def _paragraph_starts(text: str) -> list[int]:
    return [m.end() for m in re.finditer(r"\n[ \t]*\n", text)]


def test_the_sliding_sides_equal_a_fresh_count():
    text, _ = _two_stories()
    words = story_words(text)
    at = sorted({0, 3, 250, 251, 400, 900, 901, 1500, len(words) - 300, len(words) - 1})
    width = 300
    for i, got in zip(at, side_likeness(words, at, width)):
        if got is None:
            assert i < stories.MIN_SIDE or len(words) - i < stories.MIN_SIDE
            continue
        cosine, shared = _direct(words, i, width)
        assert got[0] == pytest.approx(cosine, abs=1e-12) and got[1] == shared, i


def test_words_know_capitals_in_mid_sentence_only():
    words = story_words('The ship came. "Teodor," said Miklos to the Keeper. I saw Ilka and MR BROWN.')
    assert [w for _, w, cap in words if cap] == ["miklos", "keeper", "ilka"]


def test_each_rule_on_its_own():
    assert unlike_words(0.05) and not unlike_words(stories.UNLIKE)
    assert no_shared_capitals(0.15, 0) and not no_shared_capitals(0.15, 1) and not no_shared_capitals(0.18, 0)


def test_two_stories_in_one_file_break_where_the_second_begins_and_one_story_never_does():
    text, cut = _two_stories()
    assert story_breaks(text, _paragraph_starts(text)) == [cut]
    one = _story(1, ("Teodor", "Miklos"), SEA, 60)
    assert story_breaks(one, _paragraph_starts(one)) == []
    assert story_breaks(text, []) == []


def test_a_story_break_is_crossed_by_no_chain_not_even_by_name():
    """A scene break lets "Teodor" of chapter 1 and "Teodor" of chapter 9 join by name; a
    story break keeps two stories' Teodors apart."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    text = "Teodor lit the lamp. He slept.\n\nTeodor sold bread. He counted coins."
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(sorted(set(re.findall(r"\w+|[^\w\s]", text))))},
                                     unk_token="Teodor"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    offsets = tok.encode(text).offsets
    reader = MentionReader(text, offsets, {})
    words = [text[a:z] for a, z in offsets]
    first, second = words.index("Teodor"), len(words) - 1 - words[::-1].index("Teodor")
    window = [[(first, first)], [(second, second)]]
    for breaks, stories_at, chains in (([second], [], 1), ([second], [second], 2)):
        entities = DocumentEntities(reader, breaks=breaks, stories=stories_at)
        entities.add_window(window, (0, len(offsets)))
        assert len(entities.link_names()) == chains


def _litbank_dev():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from eval_coref import joined

    from lfcli.pipelines.tasks.corefs.train import read_coref_documents

    need(DATA / "litbank" / "coref" / "conll")
    docs, _ = read_coref_documents([str(DATA / "litbank" / "coref" / "conll")], ids=DATA / "litbank" / "dev.ids")
    return joined(docs, 5)


def test_on_the_data_they_were_chosen_on_seven_of_eight_joins_and_nothing_in_three_novels():
    long_docs, parts = _litbank_dev()
    found = 0
    for doc, ranges in zip(long_docs, parts):
        joins = {a for a, _ in ranges[1:]}
        breaks = story_breaks(doc.text, _paragraph_starts(doc.text))
        assert all(min(abs(b - j) for j in joins) <= 2 for b in breaks), breaks  # no break inside an excerpt
        found += sum(1 for j in joins if any(abs(b - j) <= 2 for b in breaks))
    assert found >= 7
    for book in ("11_alices_adventures_in_wonderland.txt", "1342_pride_and_prejudice.txt", "120_treasure_island.txt"):
        text = need(DATA / "litbank" / "original" / book).read_text(encoding="utf-8")
        assert story_breaks(text, _paragraph_starts(text)) == [], book
