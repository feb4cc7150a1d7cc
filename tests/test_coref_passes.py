"""The name and narrator passes of whole-document coreference, each on its own: the pet-name
pass (pet_names.py) and narrators by headed section (narrators.py, speakers.by_writer); and
their switches (switches.py)."""

from __future__ import annotations

import pytest
from test_coref_entities import reader_and_spans

from lfcli.pipelines.tasks.corefs.document import DocumentEntities
from lfcli.pipelines.tasks.corefs.narrators import headed_sections, writer_key
from lfcli.pipelines.tasks.corefs.chains import named_apart
from lfcli.pipelines.tasks.corefs.pet_names import full_forms
from lfcli.pipelines.tasks.corefs.speakers import NARRATOR_DENSITY, give_quotes


# -- pet names -----------------------------------------------------------------------------------


def test_the_table_knows_pet_names_and_not_other_words():
    assert "elizabeth" in full_forms("lizzy") and "james" in full_forms("jim") and "henry" in full_forms("harry")
    assert full_forms("trot") == frozenset() and full_forms("house") == frozenset()
    assert named_apart("Then Jim and James went out.", "jim", "james")
    assert not named_apart("Jim went out. James stayed.", "jim", "james")
    assert named_apart("Mr. Rivers and Miss Oliver came in.", "Mr. Rivers", "Miss Oliver")  # as the book writes them


PET = ("James Vane sailed at dawn. He wrote often. "
       "Years later Jim came home. He laughed. Sibyl wept. She sang.")


def pet_chains(text: str, off: str = "", monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setenv("LFCLI_COREF_OFF", off)
    reader, at = reader_and_spans(text)
    james = (at["James"][0], at["Vane"][0])
    he1, jim, he2 = (at["He"][0],) * 2, (at["Jim"][0],) * 2, (at["He"][1],) * 2
    sibyl, she = (at["Sibyl"][0],) * 2, (at["She"][0],) * 2
    doc = DocumentEntities(reader)
    doc.add_window([[james, he1]], (0, at["Jim"][0]))
    doc.add_window([[jim, he2], [sibyl, she]], (at["Jim"][0], len(reader.offsets)))
    return [{reader.text_of(*m) for m in c} for c in doc.link_names()]


def test_a_pet_name_joins_the_one_person_holding_its_full_name(monkeypatch):
    chains = pet_chains(PET, monkeypatch=monkeypatch)
    assert {"James Vane", "Jim"} <= next(c for c in chains if "Jim" in c)
    assert not any("Sibyl" in c and "Jim" in c for c in chains)
    off = pet_chains(PET, "pet_names", monkeypatch)  # the switch: without the pass they stay apart
    assert not any({"James Vane", "Jim"} <= c for c in off)


def test_no_pet_name_join_where_the_book_names_the_two_apart_or_two_could_be_meant(monkeypatch):
    apart = PET + " Jim and James are brothers."
    assert not any({"James Vane", "Jim"} <= c for c in pet_chains(apart, monkeypatch=monkeypatch))


def test_no_pet_name_join_across_genders(monkeypatch):
    text = PET.replace("He laughed", "She laughed")  # this "Jim" is a she: not James Vane
    reader, at = reader_and_spans(text)
    james = (at["James"][0], at["Vane"][0])
    jim, she = (at["Jim"][0],) * 2, (at["She"][0],) * 2
    doc = DocumentEntities(reader)
    doc.add_window([[james, (at["He"][0],) * 2]], (0, at["Jim"][0]))
    doc.add_window([[jim, she]], (at["Jim"][0], len(reader.offsets)))
    chains = [{reader.text_of(*m) for m in c} for c in doc.link_names()]
    assert not any({"James Vane", "Jim"} <= c for c in chains)


# -- narrators by headed section ------------------------------------------------------------


def letters(headings: list[str], body: str = "I wrote to you of my day, and I think of my home. ") -> str:
    parts = []
    for h in headings:
        parts.append(f"{h}\n\n{body * 6}\n\n")
    return "A book.\n\n" + "".join(parts)


HEADED = ["Contributed by MISS CLACK", "Extracted from the Journal of EZRA JENNINGS",
          "Jonathan Harker\u2019s Journal", "Letter, Miss Mina Murray to Miss Lucy Westenra",
          "The Statement of MR. MURTHWAITE (1849)"]


@pytest.mark.parametrize("heading, writer", [
    ("Contributed by MISS CLACK; niece of the late SIR JOHN VERINDER", "MISS CLACK"),
    ("Extracted from the Journal of EZRA JENNINGS", "EZRA JENNINGS"),
    ("DR. SEWARD'S DIARY", "DR. SEWARD"),
    ("Jonathan Harker\u2019s Journal", "Jonathan Harker"),
    ("Letter, Miss Mina Murray to Miss Lucy Westenra", "Miss Mina Murray"),
    ("MR. VILLARS TO LADY HOWARD Berry Hill, March 12.", "MR. VILLARS"),
    ("The Statement of MR. MURTHWAITE (1849)", "MR. MURTHWAITE"),
    ("In a Letter from MR. CANDY", "MR. CANDY"),
    # every common form (#69): diaries and journals either way round, letters and telegrams,
    # memoranda, notes and postscripts, a narrative or statement, a diary spoken by another
    ("Diary of Anne Marsh", "Anne Marsh"),
    ("Journal of Captain Price", "Captain Price"),
    ("Letter from Anne Marsh to her sister", "Anne Marsh"),
    ("Telegram, Arthur Holm to Mrs. Price", "Arthur Holm"),
    ("Memorandum by Dr. Kemp", "Dr. Kemp"),
    ("Note left by Arthur Holm", "Arthur Holm"),
    ("Postscript by Anne Marsh", "Anne Marsh"),
    ("Narrative of Walter Hart", "Walter Hart"),
    ("Dr. Kemp's phonograph diary, spoken by Walter Hart", "Walter Hart"),
    ("Dr. Smith's Diary", "Dr. Smith"),
    ("PROFESSOR KEMP'S MEMORANDUM", "PROFESSOR KEMP"),
    ("ANNE MARSH IN CONTINUATION.  Holborn, June 13th.", "ANNE MARSH"),
])
def test_a_heading_names_its_writer(heading, writer):
    others = ["Contributed by ANNA BELL", "Contributed by OTTO HAHN", "Contributed by RUTH ROE"]
    text = letters([heading] + others)
    text += " ".join(f"{w.split()[-1].title()} came." for w in [writer] * 5 + ["Bell", "Hahn", "Roe"] * 5)
    sections = headed_sections(text)
    assert sections and sections[0].writer == writer
    assert text[slice(*sections[0].name_span)] == writer


def test_a_letter_that_seldom_says_i_is_still_its_writers_where_their_other_letters_say_it():
    """A letter that mostly tells what others said says "I" in under 2.5% of its words: it is
    still the writer's where the same writer's other letters are told in the first person."""
    report = "The lady spoke to the captain of the ball, and he answered her with a bow. " * 8 + "I saw it. "
    text = letters(["ANNA BELL TO OTTO HAHN", "OTTO HAHN TO ANNA BELL", "ANNA BELL IN CONTINUATION"])
    text += "\n\nOTTO HAHN IN CONTINUATION\n\n" + report + "\n\nRUTH ROE TO OTTO HAHN\n\n" + report
    text += " ".join(["Bell came. Hahn came. Roe came."] * 6)
    assert [s.writer for s in headed_sections(text)] == ["ANNA BELL", "OTTO HAHN", "ANNA BELL", "OTTO HAHN", ""]


def test_a_short_sentence_naming_a_letters_writer_is_no_heading():
    text = letters(["Contributed by ANNA BELL", "Contributed by OTTO HAHN", "Contributed by RUTH ROE"])
    text += "\n\nTHIS morning, early, I received the following letter from Otto\nHahn:\n\n" + "I wrote it. " * 9
    text += " ".join(["Bell came. Hahn came. Roe came."] * 6)
    assert [s.writer for s in headed_sections(text)] == ["ANNA BELL", "OTTO HAHN", "RUTH ROE"]


def test_a_part_by_another_hand_is_no_writers_and_ends_the_part_before_it():
    others = ["Contributed by ANNA BELL", "Contributed by OTTO HAHN", "Contributed by RUTH ROE"]
    text = letters(others + ["By Another Hand", "Contributed by ANNA BELL"])
    text += " ".join(["Bell came. Hahn came. Roe came."] * 6)
    assert [s.writer for s in headed_sections(text)] == ["ANNA BELL", "OTTO HAHN", "RUTH ROE", "", "ANNA BELL"]


def test_chapter_titles_of_a_third_person_novel_are_no_writers():
    body = "She walked to the town, and he followed her there. They spoke of the weather. "
    text = letters(["Miss Sharp Begins to Make Friends", "Mrs. Bute Crawley to the Rescue", "How Dobbin Went to Town",
                    "Miss Sharp Begins Again"], body)
    text += " Sharp came. Crawley came. Dobbin came." * 5
    assert headed_sections(text) == []


@pytest.mark.parametrize("heading, writer", [("Contributed by SERGEANT CUFF", "SERGEANT CUFF"),
                                             ("The Statement of SERGEANT CUFF", "")])
def test_a_contributed_by_heading_heads_a_report_that_seldom_says_i(heading, writer):
    """A detective's report says "I" in under 1% of its words: under "Contributed by" that is its
    writer's narration; under a weaker heading it is no one's (a third-person chapter's title)."""
    report = "The man was seen at the station at noon, and the clerk took his name. " * 6 + "I saw him. "
    others = ["Contributed by ANNA BELL", "Contributed by OTTO HAHN", "Contributed by RUTH ROE"]
    text = letters(others) + "\n\n" + heading + "\n\n" + report
    text += " ".join(f"{w} came." for w in ["Cuff", "Bell", "Hahn", "Roe"] * 5)
    assert [s.writer for s in headed_sections(text)] == ["ANNA BELL", "OTTO HAHN", "RUTH ROE", writer]


def test_a_writer_called_by_a_rank_heads_a_part_and_a_chapter_title_with_a_rank_does_not():
    """ "Narrative Continued by the Doctor" heads the Doctor's part, and counts as a "by" heading
    whatever shape matched it first; "The Captain's Papers", a chapter title, heads no one's."""
    report = "The ship lay at anchor and the men went ashore at noon with the boats. " * 6 + "I saw them. "
    text = ("A book.\n\nThe Captain's Papers\n\n" + "I found the papers and I read them. " * 6
            + "".join(f"\n\nNarrative Continued by the Doctor: Part {k}\n\n{report}" for k in (1, 2, 3))
            + "\n\nNarrative Resumed by Jim Hawkins: The Stockade\n\n" + "I ran to the fort and I hid. " * 6
            + " ".join(["The doctor came. Hawkins came. The captain came."] * 5))
    sections = headed_sections(text)
    assert [(s.writer, s.by) for s in sections] == [("the Doctor", True)] * 3 + [("Jim Hawkins", True)]


def test_the_chapters_before_a_writers_first_heading_are_that_writer_s_when_the_narrator_is_called_so():
    """Jim narrates fifteen chapters with no heading, then "Narrative Continued by the Doctor"
    twice and "Narrative Resumed by Jim Hawkins": Jim's "I" before and after the Doctor's part
    is one chain, and the Doctor's "I" goes to the chain that calls him "Dr. Livesey"."""
    jim = "I walked to the inn and I sat down. "
    text = ("A book.\n\n" + jim * 5 + "\n\n" + "\u201cJim, sit,\u201d said Silver.\n\n\u201cI will,\u201d said I.\n\n" * 3
            + "".join(f"Narrative Continued by the Doctor: Part {k}\n\nThe men went ashore. I saw them go and I followed.\n\n"
                      for k in (1, 2))
            + "Narrative Resumed by Jim Hawkins: The Stockade\n\n" + jim * 5
            + "\n\nDr. Livesey came. Dr. Livesey left. Hawkins ran. Hawkins sat. Silver came. Livesey sat. Hawkins hid."
            + " The doctor ran. The doctor sat. The doctor hid. The doctor ate. Hawkins ate.")
    reader, at = reader_and_spans(text)
    narration = [(i, i) for i in at["I"] if reader.quote_of(reader.offsets[i][0]) is None]
    livesey = [(i - 1, i) for i in at["Livesey"][:2]]  # "Dr. Livesey"
    jim_hawkins = sorted((i, i) for i in at["Jim"] + at["Hawkins"])  # "Jim" and "Hawkins": one chain, as in the book
    groups = [list(narration), jim_hawkins, [(i, i) for i in at["Silver"]], list(livesey)]
    assert [s.writer for s in headed_sections(text)] == ["the Doctor", "the Doctor", "Jim Hawkins"]
    give_quotes(reader, groups)

    def holder(span):
        return next(k for k, g in enumerate(groups) if span in g)
    doctor = [s for s in narration if text.index("Part 1") < reader.offsets[s[0]][0] < text.index("Narrative Resumed")]
    jims = [s for s in narration if s not in doctor]
    assert len(doctor) == 4 and {holder(s) for s in doctor} == {holder(livesey[0])}
    assert len({holder(s) for s in jims}) == 1 and holder(jims[0]) == holder((at["Jim"][0], at["Jim"][0]))


def test_a_first_person_opening_before_long_headed_parts_is_still_its_narrator_s():
    """Twelve "I" of Jim's, then three long parts "Continued by the Doctor": counted over the
    whole text as one scene, Jim's "I" would be too thin a share to be a narration; a heading
    starts a scene, so his opening is one of its own and his "I" one chain."""
    report = "The men rowed the boat to the shore and the tide ran hard against them all day. " * 60 + "I saw it. " * 10
    text = ("A book.\n\n" + "I walked and I ran. " * 6 + "\n\n"
            + "".join(f"Narrative Continued by the Doctor: Part {k}\n\n{report}\n\n" for k in (1, 2, 3))
            + "Narrative Resumed by Jim Hawkins: The End\n\n" + "I slept. " * 10
            + "\n\n" + " ".join(["The doctor came. Hawkins came."] * 6))
    reader, at = reader_and_spans(text)
    jim = [(i, i) for i in at["I"] if reader.offsets[i][0] < text.index("Part 1")]
    others = [(i, i) for i in at["I"] if (i, i) not in jim]
    groups = [[s] for s in jim] + [others]  # the windows put each of Jim's "I" in a chain of its own
    assert len(jim) == 12 and len(reader.offsets) > 12 / NARRATOR_DENSITY
    give_quotes(reader, groups)
    assert len({next(k for k, g in enumerate(groups) if s in g) for s in jim}) == 1


def test_one_heading_is_a_letter_quoted_not_a_book_of_narrators():
    text = letters(["Letter from Mr. Collins"]) + " Collins came." * 5
    assert headed_sections(text) == []


def test_a_husband_and_wife_who_each_head_a_letter_are_two_writers():
    text = letters(["SIR JOHN BELMONT TO LADY HOWARD", "LADY HOWARD TO MR. VILLARS", "LADY BELMONT TO SIR JOHN BELMONT",
                    "JOHN BELMONT TO MR. VILLARS", "MR. VILLARS TO LADY HOWARD"])
    text += " ".join(["Belmont came. Howard came. Villars came."] * 8)
    keys = [s.key for s in headed_sections(text)]
    assert keys == ["belmont (m)", "howard", "belmont (f)", "belmont (m)", "villars"]


def test_writer_keys_join_the_headings_of_one_writer():
    assert writer_key("MR. VILLARS") == writer_key("Mr Villars") == writer_key("THE REV. MR. VILLARS") == "villars"


def test_each_writers_narration_is_their_own_chain_titled_with_their_name(monkeypatch):
    body = "I walked to the shore and I watched the sea. "
    text = ("Contributed by ANNA BELL\n\n" + body * 3 + "Bell came.\n\n"
            "Contributed by OTTO HAHN\n\n" + body * 3 + "Hahn came.\n\n"
            "Contributed by ANNA BELL\n\n" + body * 3 + "Bell came. Bell left. Hahn left. Bell ran. Hahn ran. Hahn sat.")
    reader, at = reader_and_spans(text)
    every_i = [(i, i) for i in at["I"]]
    groups = [sorted(every_i)]  # the windows put every writer's "I" in one chain
    for k in ("Bell", "Hahn"):
        groups.append([(i, i) for i in at[k][1:]])  # the names the narration says (the headings' are caps)
    give_quotes(reader, groups)
    by_name = {}
    for g in groups:
        texts = [reader.text_of(*m) for m in g]
        if "I" in texts:
            by_name.setdefault(next((t for t in texts if t != "I"), None), []).append(texts.count("I"))
    assert set(by_name) == {"ANNA BELL", "OTTO HAHN"}
    assert by_name["ANNA BELL"] == [12] and by_name["OTTO HAHN"] == [6]
    monkeypatch.setenv("LFCLI_COREF_OFF", "headed_sections")
    groups = [sorted(every_i)]
    give_quotes(reader, groups)
    assert max(sum(reader.text_of(*m) == "I" for m in g) for g in groups) == 18  # one narrator: the old rule


def test_a_writers_chain_joins_no_chain_of_another_form_of_address_of_her_surname():
    """LADY HOLT's letters are hers; the book's "Miss Holt" (her daughter) is another woman."""
    body = "I walked to the shore and I watched the sea. "
    text = ("LADY HOLT TO ANNA BELL\n\n" + body * 3 + "Miss Holt came.\n\n"
            "ANNA BELL TO LADY HOLT\n\n" + body * 3 + "Bell came.\n\n"
            "LADY HOLT TO ANNA BELL\n\n" + body * 3 + "Miss Holt left. Bell left. Miss Holt ran. Bell ran. Bell sat.")
    reader, at = reader_and_spans(text)
    misses = [(i, i + 1) for i in at["Miss"]]
    groups = [sorted((i, i) for i in at["I"]), misses, [(i, i) for i in at["Bell"][2:]]]
    give_quotes(reader, groups)
    holt = next(g for g in groups if any(reader.text_of(*m) == "LADY HOLT" for m in g))
    assert sum(reader.text_of(*m) == "I" for m in holt) == 12
    assert not any(reader.text_of(*m) == "Miss Holt" for m in holt)


NAMED_IN_SPEECH = ("Terry came in and sat down by the fire.\n\n\u201cWhat does he say, Van?\u201d asked Terry.\n\n"
                   "\u201cNothing at all,\u201d I said.\n\n\u201cOh, do not croak, Van!\u201d said Terry.\n\n"
                   "\u201cI will not,\u201d I said.\n\n" + "I walked home and I slept. " * 4)


def test_a_narrator_named_only_in_speech_to_them_takes_that_name_wherever_the_windows_put_it(monkeypatch):
    """The windows put "Van", said to the narrator, in Terry's chain (the one who says it):
    the narrator's chain takes every "Van" said to them, and Terry's keeps its own name."""
    reader, at = reader_and_spans(NAMED_IN_SPEECH)

    def run():
        groups = [sorted([(i, i) for i in at["Terry"]] + [(i, i) for i in at["Van"]]), sorted((i, i) for i in at["I"])]
        give_quotes(reader, groups)
        return [[reader.text_of(*m) for m in g] for g in groups]

    chains = run()
    narrator = next(c for c in chains if c.count("I") >= 8)
    assert narrator.count("Van") == 2
    assert all("Van" not in c for c in chains if "Terry" in c)
    monkeypatch.setenv("LFCLI_COREF_OFF", "narrator_vocatives")
    assert not any("Van" in c and c.count("I") >= 8 for c in run())


A_DIARY_TALK = ("Annabella came in and sat down.\n\n\u201cAnd so, Helen, you are to be married?\u201d said Annabella.\n\n"
                "\u201cYes,\u201d I said.\n\n\u201cAre you happy, Helen?\u201d asked Annabella.\n\n\u201cI am,\u201d I said.\n\n"
                "\u201cWell, Helen, I wish you joy,\u201d said Annabella.\n\n\u201cThank you,\u201d I said.\n\n"
                "\u201cOh, dear, no!\u201d she exclaimed.\n\n" + "I walked home and I slept. " * 4)


def test_a_she_the_windows_put_with_the_first_person_narrator_speaks_for_the_other_one(monkeypatch):
    """In a diary, "“Oh, dear, no!” she exclaimed" is not the diarist's, even where the windows put
    that "she" in the chain of "Helen", the name the diarist is called by: the quote is the
    other speaker's, Annabella's."""
    reader, at = reader_and_spans(A_DIARY_TALK)

    def last_speaker():
        groups = [[(i, i) for i in at["Annabella"]], sorted([(i, i) for i in at["Helen"]] + [(at["she"][0],) * 2]),
                  sorted((i, i) for i in at["I"])]
        speakers = give_quotes(reader, groups)
        return [reader.text_of(*m) for m in groups[speakers[-1]]] if speakers[-1] is not None else None

    assert "Annabella" in last_speaker()
    monkeypatch.setenv("LFCLI_COREF_OFF", "narrator_not_she")
    assert "I" in last_speaker()  # the old rule: the "she" beside the verb, in the narrator's chain


# -- mentions a reader trusts ------------------------------------------------------------------


@pytest.mark.parametrize("text, crosses", [
    ("him. I would reconcile him", True), ("the man. He", True), ("her! \u201cGo", True), ("the house? She", True),
    ("Heathcliff.  'Hareton", True),  # a plain-text book's single quote opens the next sentence's speech
    ("Mr. Darcy", False), ("Mrs. Bennet", False), ("J. Smith", False), ("St. Clare", False), ("Dr. Watson", False),
    ("Capt. Flint", False), ("Mr. and Mrs. Bennet", False), ("the U.S. Army", False), ("wean us", False),
])
def test_a_mention_never_runs_over_a_sentence_end(text, crosses):
    from lfcli.pipelines.tasks.corefs.entities import crosses_sentence_end

    assert crosses_sentence_end(text) is crosses


# -- a knight, a peer and a rank are forms of address of their own -----------------------------


@pytest.mark.parametrize("a, b, same", [
    ("Mr Elliot", "Sir Walter Elliot", False),  # the heir and the baronet of one surname
    ("Mrs Croft", "Admiral Croft", False),  # an admiral is a man
    ("Mrs. Harville", "Captain Harville", False),
    ("Sir William", "Sir William Lucas", True),
    ("William Lucas", "Sir William", True),
    ("Lord Orville", "Mr. Orville", False),
    ("Captain Wentworth", "Mr. Wentworth", True),  # a rank is no form of address: the same man
])
def test_titles_and_ranks_keep_a_familys_men_and_women_apart(a, b, same):
    from lfcli.pipelines.tasks.corefs.entities import names_compatible, proper_name

    assert names_compatible(proper_name(a), proper_name(b)) is same


# -- "my lady" is the book's one Lady -------------------------------------------------------------


def lady_chains(text: str):
    reader, at = reader_and_spans(text)
    lady = (at["Lady"][0], at["Verinder"][0])
    she, my_lady, her = (at["She"][0],) * 2, (at["my"][0], at["my"][0] + 1), (at["her"][0],) * 2
    rachel = (at["Rachel"][0],) * 2
    doc = DocumentEntities(reader)
    doc.add_window([[lady, she], [rachel]], (0, at["my"][0]))
    russell = [[(at["Lady"][k], at["Russell"][k - 1]) for k in range(1, len(at["Lady"]))]]  # a second Lady, if any
    doc.add_window([[my_lady, her]] + (russell if russell[0] else []), (at["my"][0], len(reader.offsets)))
    return [{reader.text_of(*m) for m in c} for c in doc.link_names()]


def test_my_lady_joins_the_one_lady_the_book_names(monkeypatch):
    text = "Lady Verinder came. She sat. Rachel stood.\n\nYes, my lady, said Betteredge to her."
    assert any({"Lady Verinder", "my lady"} <= c for c in lady_chains(text))
    two = text + " Lady Julia Russell came. Lady Julia Russell sat."  # two Ladies: nobody can tell which
    assert not any({"Lady Verinder", "my lady"} <= c for c in lady_chains(two))
    monkeypatch.setenv("LFCLI_COREF_OFF", "addressed_titles")
    assert not any({"Lady Verinder", "my lady"} <= c for c in lady_chains(text))


def test_a_headed_writer_s_chain_is_titled_by_the_heading_when_its_commonest_name_cannot_be_theirs():
    """Lady Belmont's one letter: a window filled her chain with her daughter's "Miss Belmont"."""
    from lfcli.pipelines.tasks.corefs.task import writer_title

    assert writer_title("Miss Belmont", "LADY BELMONT") == "Lady Belmont"
    assert writer_title("Mr. Franklin", "FRANKLIN BLAKE") == "Mr. Franklin"  # a form of the writer's name
    assert writer_title(None, "Miss Clack") == "Miss Clack"
    assert writer_title("Jim", None) == "Jim"  # no heading: the commonest name
