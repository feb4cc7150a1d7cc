"""Narrators who take turns inside the prose (voices.py): each chapter's voice by the gender of
the names others call the narrator by, and a narrator split only where both genders hold
several chapters of their own."""

from __future__ import annotations

from lfcli.pipelines.tasks.corefs.voices import LEAST_CHAPTERS, chapter_starts, own_voices, two_voices

TEXT = "".join(f"CHAPTER {r}\n\n{'I walked on. ' * 20}\n\n" for r in "I II III IV V VI VII VIII".split())


def votes_in(starts: list[int], genders: list[str | None], each: int = 2) -> list[tuple[int, str]]:
    """`each` votes of each chapter's gender (None: none) just after the chapter's start."""
    return [(start + 20 + k, g) for start, g in zip(starts, genders) if g for k in range(each)]


def test_chapters_are_found_at_their_headings_only():
    starts = chapter_starts(TEXT)
    assert len(starts) == 8 and starts[0] == 0 and all(TEXT.startswith("CHAPTER", s) for s in starts)
    text = "He read chapter 4 of the book.\n\nCHAPTER II\n\nOn."  # "chapter 4" in a sentence is no heading
    assert chapter_starts(text) == [0, text.index("CHAPTER")]


def test_a_chapter_s_voice_needs_its_own_votes_and_a_clear_majority():
    starts = chapter_starts(TEXT)
    votes = votes_in(starts, ["m", "m", None, "f", "f", "f", "m", "m"])
    assert own_voices(starts, votes) == ["m", "m", None, "f", "f", "f", "m", "m"]
    mixed = votes + [(starts[0] + 30, "f")]  # 2 m and 1 f: not more than twice
    assert own_voices(starts, mixed)[0] is None
    assert own_voices(starts, votes_in(starts, ["m"] * 8, each=1)) == [None] * 8  # one vote is no voice


def test_a_narrator_is_two_only_where_both_voices_hold_several_chapters():
    starts = chapter_starts(TEXT)
    split = two_voices(starts, votes_in(starts, ["m", "m", None, "f", "f", "f", "m", None]))
    assert split == ["m", "m", "m", "f", "f", "f", "m", "m"]  # a chapter without votes keeps the voice before it
    few = ["m", "m", "m", "m", "m", "f", "f", "m"][:8]  # a woman's names in fewer than LEAST_CHAPTERS chapters
    assert sum(g == "f" for g in few) < LEAST_CHAPTERS and two_voices(starts, votes_in(starts, few)) is None
    assert two_voices(starts, votes_in(starts, ["f"] * 8)) is None  # one narrator


def narrators_by_chapter(monkeypatch, off: str = "") -> list[int]:
    """Six chapters told in the first person: in the first three Silver calls the narrator "Master Jim",
    in the last three Betsey calls them "Miss Helen". Each chapter's narrator group."""
    from test_coref_quotes import reader_over_words

    from lfcli.pipelines.tasks.corefs.speakers import give_quotes

    monkeypatch.setenv("LFCLI_COREF_OFF", off)
    man = "\u201cMaster Jim, sit,\u201d said Silver.\n\n\u201cI will,\u201d said I.\n\n" * 2
    woman = "\u201cMiss Helen, come,\u201d said Betsey.\n\n\u201cYes,\u201d said I.\n\n" * 2
    text = "".join(f"CHAPTER {r}\n\n{'I walked to the inn. ' * 10}\n\n{man if k < 3 else woman}"
                   for k, r in enumerate("I II III IV V VI".split()))
    reader, spans = reader_over_words(text)
    words = [text[a:z] for a, z in spans]
    every = lambda w: [(i, i) for i, x in enumerate(words) if x == w]  # noqa: E731
    narration = [s for s in every("I") if reader.quote_of(spans[s[0]][0]) is None]
    helen = [(i - 1, i) for i, _ in every("Helen")]
    jim = [(i - 1, i) for i, _ in every("Jim")]
    groups = [list(narration), every("Silver"), jim, every("Betsey"), helen]
    give_quotes(reader, groups, breaks=[], stories=[])
    starts = chapter_starts(text)
    first = [next(s for s in narration if spans[s[0]][0] > start) for start in starts]
    return [next(k for k, g in enumerate(groups) if s in g) for s in first]


def test_a_narrator_called_by_a_man_s_name_then_a_woman_s_is_two(monkeypatch):
    by_chapter = narrators_by_chapter(monkeypatch)
    assert len(by_chapter) == 6
    assert len(set(by_chapter[:3])) == 1 and len(set(by_chapter[3:])) == 1 and by_chapter[0] != by_chapter[3]
    assert len(set(narrators_by_chapter(monkeypatch, off="narrator_voices"))) == 1


def test_the_voice_changes_at_the_first_chapter_whose_few_votes_all_say_the_new_voice():
    """A diary handed over at the fifth chapter's head: the diarist's name is said once there (too
    few for a voice), then often. The fifth chapter is hers; a lone vote of hers in a chapter
    before his voice returns is not a change (the second chapter's, between two of his)."""
    starts = chapter_starts(TEXT)
    votes = votes_in(starts, ["m", None, "m", "m", None, "f", "f", "f"])
    votes += [(starts[k] + 40, "f") for k in (1, 4)]
    assert two_voices(starts, votes) == ["m", "m", "m", "m", "f", "f", "f", "f"]
