"""Quotes and their speakers (pipelines/tasks/corefs/quotes.py), and what the document's
chains take from them (speakers.give_quotes): a quote's "I" is its speaker, a first-person
narration's "I" is one narrator named as the others call them. Each rule on a small text of
its own, with the mentions given by hand (no model): the rules, not a model, are under test."""

from __future__ import annotations

import re

import pytest

from lfcli.pipelines.tasks.corefs.narrator_names import pet_name
from lfcli.pipelines.tasks.corefs.speakers import _narrations, give_quotes
from lfcli.pipelines.tasks.corefs.entities import MentionReader, pronoun_kind, proper_name
from lfcli.pipelines.tasks.corefs.quotes import attribute, quote_spans
from lfcli.pipelines.tasks.corefs.task import confirmed_stories


def people(text: str, who: dict[str, int]) -> list[tuple[int, int, int]]:
    """(start, end, entity) of each whole-word occurrence of the words in `who`, outside quotes."""
    quotes = quote_spans(text)
    out = []
    for word, entity in who.items():
        for m in re.finditer(rf"\b{re.escape(word)}\b", text):
            if not any(a <= m.start() < b for a, b in quotes):
                out.append((m.start(), m.end(), entity))
    return sorted(out)


def speakers(text: str, who: dict[str, int], **kw) -> list[int | None]:
    return attribute(text, quote_spans(text), people(text, who), **kw)


@pytest.mark.parametrize("text, quoted", [
    # a speech over two paragraphs: the first left open, the next opened with the same mark
    ("\u201cI began the letter,\n\n\u201cand I ended it.\u201d\n\nHe slept.", ["\u201cI began the letter,", "\u201cand I ended it.\u201d"]),
    ("'I began,\n\n   'and I ended.'", ["'I began,", "'and I ended.'"]),  # an indented paragraph, straight marks
    ("He said \u201chi.\n\nNo more.", []),  # an unpaired mark: the next paragraph opens no quote
    ("\u201cHi,\u201d she said.\n\n\u201cHo.\u201d", ["\u201cHi,\u201d", "\u201cHo.\u201d"]),
])
def test_speech_that_goes_on_over_paragraphs_is_quoted_in_each(text, quoted):
    assert [text[a:z] for a, z in quote_spans(text)] == quoted


def test_the_person_beside_a_speech_verb_speaks():
    text = ("\u201cCome in,\u201d said Silver. \u201cNo,\u201d Jim answered.\n\n"
            "Jim, taking the letter, said: \u201cIt is yours.\u201d\n\n"
            "The doctor spoke at dinner,\n\n\u201cPoor Miss Taylor!\u201d")
    assert speakers(text, {"Silver": 0, "Jim": 1, "doctor": 2}) == [0, 1, 1, 2]


def test_a_paragraphs_speaker_goes_on_and_a_lone_person_speaks():
    text = ("\u201cI see,\u201d said he, \u201cand I agree.\u201d\n\n"
            "Anna smiled at the window. \u201cIt is late.\u201d\n\n"
            "In the hall the doctor stopped.\n\n\u201cYou sent for him?\u201d")
    assert speakers(text, {"he": 0, "Anna": 1, "doctor": 2}) == [0, 0, 1, 2]


def test_in_a_dialogue_two_speakers_take_turns():
    text = ("\u201cWhere from?\u201d asked Anna.\n\n\u201cGeorgia.\u201d\n\n\u201cWhere is that?\u201d\n\n"
            "\u201cFar,\u201d said Tom.\n\n\u201cHow far?\u201d")
    assert speakers(text, {"Anna": 0, "Tom": 1}) == [0, 1, 0, 1, 0]
    # one side known only: the other is the one its quotes address by name
    text = "\u201cTom, where from?\u201d asked Anna.\n\n\u201cGeorgia.\u201d\n\n\u201cFar?\u201d"
    tom = text.index("Tom")
    assert speakers(text, {"Anna": 0}, addressed=[(tom, tom + 3, 1)]) == [0, 1, 0]
    # a run broken by narration is two dialogues: nothing carries over a lone unknown quote
    text = "\u201cHello,\u201d said Anna.\n\nThe rain fell all night on the roofs of the town.\n\n\u201cWho?\u201d"
    assert speakers(text, {"Anna": 0}) == [0, None]


def test_a_speech_over_paragraphs_is_one_turn_of_one_speaker():
    """Tom's tale goes on over three paragraphs (the mark left open at each end): all three are
    his and one turn, so after Anna's question the untagged answer is his again. A footnote
    between two paragraphs of it does not end it."""
    tale = ("\u201cListen,\u201d said Tom. \u201cIt began long ago.\n\n\u201cThen it went on.\n\n"
            "{note}\u201cAnd it ended.\u201d\n\n\u201cReally?\u201d asked Anna.\n\n\u201cYes.\u201d")
    for note in ("", "     * NOTE: by the editor.--Not so.\n\n"):
        assert speakers(tale.format(note=note), {"Tom": 0, "Anna": 1}) == [0, 0, 0, 0, 1, 0]
    # a mark closed the wrong way round ("\u2018I wish\u2014\u2018 she paused.") leaves no speech open
    slip = ("\u2018Exactly,\u2019 said Tom.\n\nAnn sighed. \u2018I wish\u2014\u2018 she stopped.\n\n\u2018What do you wish?\u2019\n\n"
            "\u2018Nothing.\u2019\n\n\u2018Tell me,\u2019 said Tom.")
    assert speakers(slip, {"Tom": 0, "Ann": 1}) == [0, 1, 0, 1, 0]
    # a dialogue of one-paragraph quotes still takes turns paragraph by paragraph
    talk = "\u201cListen,\u201d said Tom.\n\n\u201cWhat?\u201d\n\n\u201cIt began.\u201d\n\n\u201cReally?\u201d asked Anna."
    assert speakers(talk, {"Tom": 0, "Anna": 1}) == [0, 1, 0, 1]


def test_a_speaker_the_model_missed_is_found_by_name_and_a_noun_beside_the_verb():
    text = "\u201cAre you American?\u201d asked Winterbourne.\n\n\u201cI am,\u201d said the child."
    child = text.index("the child")
    found = attribute(text, quote_spans(text), [], named=lambda name: 4 if name.rstrip(".") == "Winterbourne" else None,
                      others=[(child, child + 9, 5)])
    assert found == [4, 5]


def reader_over_words(text: str) -> tuple[MentionReader, list[tuple[int, int]]]:
    """A MentionReader with one token a word (punctuation its own token) and the words' spans."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
    pronouns = {(i, i): pronoun_kind(text[a:z]) for i, (a, z) in enumerate(spans) if pronoun_kind(text[a:z])}
    return MentionReader(text, spans, pronouns), spans


def token(spans, text: str, word: str, k: int = 0) -> tuple[int, int]:
    at = [i for i, (a, z) in enumerate(spans) if text[a:z] == word][k]
    return (at, at)


def test_a_quotes_i_joins_its_speaker_and_the_narration_i_is_one_narrator_named_by_the_others():
    text = ("I walked to the inn. " * 10 + "\n\n"  # ten narration "I": a first-person narration
            "\u201cJim, sit here,\u201d said Silver.\n\n\u201cI will,\u201d said I.\n\n"
            "\u201cJim, eat,\u201d said Silver.\n\n\u201cGood,\u201d said I. I smiled.\n\n"
            "\u201cJim, go,\u201d said Silver.")
    reader, spans = reader_over_words(text)
    t = lambda w, k=0: token(spans, text, w, k)  # noqa: E731
    narration = [t("I", k) for k in range(10)] + [t("I", 11), t("I", 12), t("I", 13)]
    groups = [narration[:10],  # the windows put the narrator's "I" in three chains
              [t("Silver", 0), t("Silver", 1), t("Silver", 2)],
              [t("Jim", 0), t("Jim", 1), t("Jim", 2)],
              [t("I", 10), narration[10]],  # the quote's "I" with the first "said I"
              narration[11:]]
    speakers = give_quotes(reader, groups, breaks=[], stories=[])
    narrator = next(k for k, g in enumerate(groups) if narration[0] in g)
    assert all(i in groups[narrator] for i in narration)
    assert t("I", 10) in groups[narrator]  # "I will," said I: the narrator's
    assert t("Jim", 0) in groups[narrator]  # what Silver calls the narrator, in quotes next to the narrator's
    assert speakers == [1, narrator, 1, narrator, 1]
    assert groups[2] == [] and groups[3] == [] and groups[4] == []


@pytest.mark.parametrize("calls, named", [(2, False), (3, True)])
def test_the_narrator_takes_the_name_said_to_them_three_times_not_twice(calls, named):
    """Peleg calls Bildad by name twice beside the narrator's answers, in a scene of three:
    two such quotes name nobody; three do ("Jim" said to the narrator beside his answers)."""
    from lfcli.pipelines.tasks.corefs.narrator_names import _narrator_name

    text = "\u201cBildad, look,\u201d said Peleg.\n\n\u201cYes,\u201d said I.\n\n" * calls
    reader, spans = reader_over_words(text)
    narrator, peleg, bildad = 0, 1, 2
    speakers = [peleg, narrator] * calls
    addressed = [(a, z, bildad) for a, z in spans if text[a:z] == "Bildad"]
    assert (_narrator_name(reader.quotes, speakers, addressed, narrator) == bildad) is named


@pytest.mark.parametrize("title, moves", [("Captain", True), ("Mrs.", False)])
def test_the_narrators_name_in_other_chains_goes_to_the_narrator(title, moves):
    """Silver calls the narrator "Hawkins"; another chain is "Captain Hawkins" beside a "she" (a
    window's wrong link): its "Captain Hawkins" goes to the narrator and the "she" stays. A "Mrs.
    Hawkins" is not his name: the book's "Mr. Hawkins" and his chain's "he" make him a man."""
    text = ("I walked to the inn. " * 10 + "Mr. Hawkins was away.\n\n"
            "\u201cHawkins, sit here,\u201d said Silver.\n\n\u201cI will,\u201d said I.\n\n"
            "\u201cHawkins, eat,\u201d said Silver.\n\n\u201cGood,\u201d said I. He smiled.\n\n"
            "\u201cHawkins, go,\u201d said Silver.\n\n"
            f"{title} Hawkins came. {title} Hawkins left. She ran.")
    reader, spans = reader_over_words(text)
    t = lambda w, k=0: token(spans, text, w, k)  # noqa: E731
    narration = [t("I", k) for k in range(10)] + [t("I", 11), t("I", 12)]
    word = title.rstrip(".")
    titled = [(t(word, 0)[0], t("Hawkins", 4)[1]), (t(word, 1)[0], t("Hawkins", 5)[1])]
    groups = [list(narration), [t("Silver", k) for k in range(3)], [t("Hawkins", 1), t("Hawkins", 2), t("Hawkins", 3), t("He")],
              [t("I", 10)], [*titled, t("She")]]
    give_quotes(reader, groups, breaks=[], stories=[])
    narrator = next(k for k, g in enumerate(groups) if narration[0] in g)
    assert t("Hawkins", 1) in groups[narrator]  # the name Silver calls him by
    assert all(span in groups[narrator] for span in titled) is moves
    assert t("She") not in groups[narrator]


@pytest.mark.parametrize("short,full,expected", [
    ("lizzy", "elizabeth", True), ("eliza", "elizabeth", True), ("becky", "rebecca", True),
    ("harry", "henry", False), ("jo", "josephine", False), ("elizabeth", "lizzy", False), ("kitty", "catherine", False),
])
def test_a_pet_name_shows_its_full_names_letters(short, full, expected):
    assert pet_name(short, full) is expected


def dialogue(answerer: str) -> str:
    """Lizzy is spoken to twice by her father, and `answerer` answers each time."""
    return ("\u201cLizzy, come here,\u201d said Mr. Bennet.\n\n"
            f"\u201cYes, papa,\u201d said {answerer}.\n\n"
            "\u201cLizzy, read this,\u201d said Mr. Bennet.\n\n"
            f"\u201cI will,\u201d said {answerer}. She read it.")


@pytest.mark.parametrize("answerer,joins", [("Elizabeth", True), ("Charlotte", False)])
def test_a_pet_name_joins_the_one_who_answers_to_it(answerer, joins):
    """A name said to someone ("Lizzy") whose answer comes from a named person whose name
    it can be a pet form of ("Elizabeth"), twice, is that person; answered by a name that
    shows no such tie ("Charlotte"), it stays a chain of its own."""
    text = dialogue(answerer)
    reader, spans = reader_over_words(text)
    t = lambda w, k=0: token(spans, text, w, k)  # noqa: E731
    groups = [[t("Lizzy", 0), t("Lizzy", 1)], [t("Bennet", 0), t("Bennet", 1)],
              [t(answerer, 0), t(answerer, 1), t("She")]]
    speakers = give_quotes(reader, groups, breaks=[], stories=[])
    assert speakers == [1, 2, 1, 2]
    assert (t("Lizzy", 0) in groups[2]) is joins
    assert (groups[0] == []) is joins


def test_a_narrator_runs_through_every_scene_of_a_story_but_not_across_a_story_break(monkeypatch):
    told = lambda n, k: [((i, i), k) for i in range(n)]  # noqa: E731
    narration = {1: told(30, 0), 2: told(3, 1), 3: told(40, 2), 5: told(30, 3), 6: told(5, 4), 7: told(2, 4)}
    # scene 0 (before any "I") starts no narrator; scene 2 is short and scene 4 long, both
    # saying "I" seldom or never: the narrator goes on through them (Huckleberry Finn's loafers);
    # scenes 6 (long) and 7 (short) come after the last first-person scene: no narrator's
    breaks, n = [1000, 4000, 4500, 8000, 13000, 16000, 19000], 19500
    assert [len(r) for r in _narrations(narration, breaks, [], n)] == [103]
    assert [len(r) for r in _narrations(narration, breaks, [4500], n)] == [33, 70]  # a story break at 4500
    monkeypatch.setenv("LFCLI_COREF_OFF", "narrator_through_scenes")  # as before: the long scene 4 ends it
    assert [len(r) for r in _narrations(narration, breaks, [], n)] == [73, 30]
    assert [len(r) for r in _narrations(narration, breaks, [4500], n)] == [33, 40, 30]


def test_a_story_break_holds_only_where_the_people_change_for_good():
    named = [(p, proper_name(name)) for p, name in ((10, "Roderick"), (50, "Usher"), (300, "Bartleby"), (350, "Turkey"),
                                                    (600, "Ichabod"), (900, "Turkey"), (950, "Bartleby"))]
    assert confirmed_stories([200, 500], [200, 500], named) == [200]  # past 500, Turkey and Bartleby come back...
    assert confirmed_stories([200, 500], [200, 500], named, shared=2) == [200, 500]  # ...two names: allowed here
    assert confirmed_stories([200], [210], named) == []  # no scene break at the same paragraph


def narrator_and_other_names(second: str, monkeypatch, off: str = ""):
    """Silver calls the narrator "Jim" three times and Betsey calls them `second` three times."""
    monkeypatch.setenv("LFCLI_COREF_OFF", off)
    text = ("I walked to the inn. " * 10 + "\n\n"
            + "\u201cJim, sit,\u201d said Silver.\n\n\u201cI will,\u201d said I.\n\n" * 3
            + f"\u201c{second}, come,\u201d said Betsey.\n\n\u201cYes,\u201d said I.\n\n" * 3)
    reader, spans = reader_over_words(text)
    t = lambda w, k=0: token(spans, text, w, k)  # noqa: E731
    first, last = second.split()[0], second.split()[-1]
    every_i = [(i, i) for i, (a, z) in enumerate(spans) if text[a:z] == "I"]
    narration = [span for span in every_i if reader.quote_of(spans[span[0]][0]) is None]  # and "said I"
    named = [(t(first, k)[0], t(last, k)[0]) for k in range(3)]
    groups = [list(narration), [t("Silver", k) for k in range(3)], [t("Jim", k) for k in range(3)],
              [t("Betsey", k) for k in range(3)], list(named)]
    give_quotes(reader, groups, breaks=[], stories=[])
    narrator = next(g for g in groups if narration[0] in g)
    return t("Jim", 0) in narrator, named[0] in narrator


def test_every_name_others_call_the_narrator_by_joins_the_narrator(monkeypatch):
    assert narrator_and_other_names("Trot", monkeypatch) == (True, True)
    assert narrator_and_other_names("Trot", monkeypatch, off="narrator_names") == (True, False)
    assert narrator_and_other_names("Miss Trot", monkeypatch) == (True, False)  # a woman's name: not Jim


@pytest.mark.parametrize("turns, joins", [(3, True), (5, False)])
def test_a_name_said_to_the_narrator_joins_unless_it_talks_with_the_narrator_twice_as_often(turns, joins):
    """Peggotty calls the narrator "Davy" four times beside his answers; the "Davy" chain also
    holds a few quotes of the young narrator (a window linked his "I" to the name), so it seems to
    talk with the narrator `turns` times. Below twice its four calls that is attribution's slip and
    "Davy" is the narrator's name; at twice or more, two people in a dialogue."""
    from lfcli.pipelines.tasks.corefs.narrator_names import _narrator_other_names

    text = ("\u201cDavy, come,\u201d she said.\n\n\u201cYes,\u201d I said.\n\n" * 4
            + "\u201cHere,\u201d he said.\n\n\u201cGood,\u201d I said.\n\n" * turns)
    reader, spans = reader_over_words(text)
    narrator, named, davy, peggotty = 0, 1, 2, 3
    groups = [[], [], [token(spans, text, "Davy", k) for k in range(4)], []]
    speakers = [peggotty, narrator] * 4 + [davy, narrator] * turns
    addressed = [(spans[s][0], spans[s][1], davy) for s, _ in groups[davy]]
    assert (davy in _narrator_other_names(reader, groups, speakers, addressed, narrator, named)) is joins


@pytest.mark.parametrize("fuller, moves", [(["Ellen Dean"], True), (["Ellen Dean", "Ellen Linton"], False)])
def test_the_narrators_name_with_a_surname_goes_to_the_narrator_where_the_book_has_one_such(fuller, moves):
    """Others call the narrator "Ellen"; a chain of "Ellen Dean" is hers too. Where another chain
    is "Ellen Linton", an "Ellen" plus a surname is no longer surely the narrator."""
    text = ("I walked to the inn. " * 10 + "\n\n"
            + "\u201cEllen, sit,\u201d said Silver.\n\n\u201cI will,\u201d said I.\n\n" * 3
            + " ".join(f"{f} came. {f} left." for f in fuller))
    reader, spans = reader_over_words(text)
    t = lambda w, k=0: token(spans, text, w, k)  # noqa: E731
    every_i = [(i, i) for i, (a, z) in enumerate(spans) if text[a:z] == "I"]
    narration = [span for span in every_i if reader.quote_of(spans[span[0]][0]) is None]
    full = [[(t("Ellen", 3 + 2 * j + k)[0], t("Ellen", 3 + 2 * j + k)[0] + 1) for k in range(2)] for j in range(len(fuller))]
    groups = [list(narration), [t("Silver", k) for k in range(3)], [t("Ellen", k) for k in range(3)], *map(list, full)]
    give_quotes(reader, groups, breaks=[], stories=[])
    narrator = next(g for g in groups if narration[0] in g)
    assert t("Ellen", 0) in narrator
    assert (full[0][0] in narrator) is moves


def test_the_longer_of_two_mentions_beside_a_speech_verb_speaks():
    """"said his lady": the lady speaks, not "his" (her husband) that starts with her; "Mr.
    Bennet's wife said": the wife, not Mr. Bennet, whose name ends before hers."""
    text = "\u201cBut it is,\u201d said his lady.\n\n\u201cIs it?\u201d"
    lady, his = text.index("his lady"), text.index("his")
    assert attribute(text, quote_spans(text), [(his, his + 3, 0), (lady, lady + 8, 1)]) == [1, None]
    text = "Mr. Bennet's wife said, \u201cIt is let.\u201d"
    wife = text.index("wife")
    assert attribute(text, quote_spans(text), [(0, 10, 0), (0, wife + 4, 1)]) == [1]


def test_a_dialogue_side_is_the_person_who_speaks_most_of_its_known_quotes():
    """Of a side's three known quotes two are Anna's and one a slip to Tom: Anna's side; one
    each is no side."""
    from lfcli.pipelines.tasks.corefs.quotes import _side

    assert _side([0, 0, 1]) == {0} and _side([0, 1]) == {0, 1} and _side([]) == set()


def test_the_one_spoken_to_after_the_verb_is_not_who_speaks():
    """"My uncle saw me staring and said to me:": the uncle speaks, not "me"."""
    text = "My uncle saw me staring and said to me:\n\n\u201cWell, so he is gone.\u201d"
    assert speakers(text, {"My uncle": 0, "me": 1}) == [0]


def test_a_quote_after_narration_in_its_paragraph_is_spoken_by_whom_the_sentence_before_names():
    """No speech verb: the first person of the sentence just before the quote speaks; narration
    after a quote (often the listener's reaction) names no speaker."""
    text = ("Kronborg coughed behind his hand. He smiled at the doctor. \u201cWell, we should go.\u201d\n\n"
            "\u201cYour mamma is gone.\u201d Philip did not know what Emma meant.")
    assert speakers(text, {"Kronborg": 0, "He": 0, "doctor": 1, "Philip": 2, "Emma": 3}) == [0, None]


def test_a_quote_led_in_by_the_paragraph_before_keeps_its_speaker_s_turn():
    """"...she announced abruptly:" then her quote in the next paragraph: she speaks twice in a
    row, and the dialogue's turns count from there (the unknown quotes before are hers and his)."""
    text = ("\u201cIt is over there,\u201d he answered.\n\n\u201cBehind the sun?\u201d\n\n\u201cOh, no!\u201d\n\n"
            "\u201cThen it is near,\u201d she declared, and looked up and announced:\n\n"
            "\u201cI am hungry.\u201d\n\n\u201cSo am I,\u201d answered the boy.\n\n\u201cYes,\u201d she said.")
    assert speakers(text, {"he": 0, "the boy": 0, "she": 1}) == [0, 1, 0, 1, 1, 0, 1]
