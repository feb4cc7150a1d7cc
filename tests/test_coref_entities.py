"""The rules that keep two people apart (pipelines/tasks/corefs/entities.py) and the document
merge that uses them (document.DocumentEntities): each rule on its own, then windows of a
made-up story joined with and without them."""

from __future__ import annotations

import pytest

from lfcli.pipelines.tasks.corefs.entities import (
    Mention, MentionReader, Name, NameForms, Profile, genders_agree, names_compatible, pronouns_agree, proper_name,
    speaker_and_narrated_agree, speakers_differ,
)
from lfcli.pipelines.tasks.corefs.scenes import scene_breaks
from lfcli.pipelines.tasks.corefs.quotes import is_vocative, quote_spans
from lfcli.pipelines.tasks.corefs.document import DocumentEntities


def name(text: str) -> Name:
    found = proper_name(text)
    assert found is not None, text
    return found


@pytest.mark.parametrize("text, words, address, gender", [
    ("Teodor Varga", {"teodor", "varga"}, None, None),
    ("Mr. Varga", {"varga"}, "mr", "m"),
    ("Mrs. Varga's", {"varga"}, "mrs", "f"),
    ("the Mock Turtle", {"mock", "turtle"}, None, None),
    ("the Queen of Hearts", {"queen", "hearts"}, None, "f"),
    ("old Teodor", {"teodor"}, None, None),
    ("Lady Catherine de Bourgh", {"catherine", "bourgh"}, "lady", "f"),
])
def test_proper_names_are_read_from_a_mentions_text(text, words, address, gender):
    assert name(text) == Name(frozenset(words), address, gender)


@pytest.mark.parametrize("text", ["the old man", "She", "You", "the King and Queen of Hearts", "my Father", "Nobody",
                                  "a man called Ruben who played the cello", "Mr."])
def test_what_is_no_proper_name(text):
    assert proper_name(text) is None


@pytest.mark.parametrize("a, b, same", [
    ("Teodor Varga", "Mr. Varga", True),
    ("Teodor Varga", "Teodor", True),
    ("Mr. Varga", "Teodor", False),  # no word in common
    ("Teodor", "Ilka", False),
    ("Mr. Varga", "Mrs. Varga", False),  # gender
    ("Mrs. Varga", "Miss Varga", False),  # form of address
    ("Captain Flint", "Captain Smollett", False),
    ("the Rabbit", "the White Rabbit", True),
    ("the King", "the Queen", False),
])
def test_names_compatible(a, b, same):
    assert names_compatible(name(a), name(b)) is same
    assert names_compatible(name(b), name(a)) is same


def test_genders_and_pronouns_agree():
    assert genders_agree({"m"}, {"m"}) and genders_agree(set(), {"f"})
    assert not genders_agree({"m"}, {"f"})
    assert pronouns_agree({"he"}, {"he"}) and pronouns_agree(set(), {"it"})
    assert not pronouns_agree({"he"}, {"they"}) and not pronouns_agree({"i"}, {"she"})


def test_a_speaker_and_the_person_addressed_in_one_quote_differ():
    assert speakers_differ({3: {1}}, {3: {2}})
    assert speakers_differ({3: {2}}, {3: {1, 2}})
    assert not speakers_differ({3: {1}}, {4: {2}})  # another quote: the next speaker may be the one addressed
    assert not speakers_differ({3: {1}}, {3: {1}})


def test_quotes_are_found_and_apostrophes_are_not_quotes():
    text = "\u201cI am,\u201d said Ilka. 'Don't you see?' Alice's cat said 'yes'.\n\n\"New\" paragraph \u201copen"
    spans = [text[a:z] for a, z in quote_spans(text)]
    assert spans == ["\u201cI am,\u201d", "'Don't you see?'", "'yes'", '"New"']


def profile(*mentions: Mention) -> Profile:
    p = Profile()
    for m in mentions:
        p.add(m)
    return p


def test_profiles_refuse_what_cannot_be_one_person():
    varga = profile(Mention(name=name("Mr. Varga"), gender="m"))
    assert varga.compatible(profile(Mention(name=name("Teodor Varga"))))
    assert varga.compatible(profile(Mention(kind="he", gender="m")))
    assert not varga.compatible(profile(Mention(kind="she", gender="f")))
    assert not varga.compatible(profile(Mention(name=name("Ilka"))))
    assert not profile(Mention(kind="i", quote=0, person=1)).compatible(profile(Mention(quote=0, person=2)))


def test_a_stray_form_of_address_does_not_keep_two_chains_apart():
    """One "Mrs. Darcy" among a chain's names is a window's slip (STRAY_FORM), so the chain
    can still be "Miss Darcy"; a form held by more of its names is the chain's, and a Mrs. and
    a Miss stay two people."""
    georgiana = [Mention(name=name("Georgiana"))] * 15 + [Mention(name=name("Georgiana Darcy")),
                                                          Mention(name=name("Mrs. Darcy"), gender="f")]
    miss = profile(Mention(name=name("Miss Darcy"), gender="f"))
    assert profile(*georgiana).forms() == set()
    assert profile(*georgiana).compatible(miss, names=False)
    married = georgiana[:3] + [Mention(name=name("Mrs. Darcy"), gender="f")] * 2
    assert profile(*married).forms() == {"mrs"}
    assert not profile(*married).compatible(miss, names=False)
    assert not profile(Mention(name=name("Mrs. Darcy"), gender="f")).compatible(miss, names=False)


STORY = (
    "Teodor Varga climbed the tower. He lit the lamp. Ilka wrote to him. She lived in the city.\n\n"
    "Mr. Varga read her letter. \u201cI will not retire,\u201d he told you. Mrs. Varga laughed."
)


def reader_and_spans(text: str):
    """A MentionReader over whitespace words (one token a word, punctuation kept with it) and
    each word's token span by its text."""
    import re

    words = [(m.start(), m.end()) for m in re.finditer(r"[\w.]+", text)]
    offsets = [(a, z - 1) if text[z - 1] == "." and text[a:z] not in ("Mr.", "Mrs.") else (a, z) for a, z in words]
    from lfcli.pipelines.tasks.corefs.entities import pronoun_kind

    pronouns = {(i, i): pronoun_kind(text[a:z]) for i, (a, z) in enumerate(offsets) if pronoun_kind(text[a:z])}
    index = {}
    for i, (a, z) in enumerate(offsets):
        index.setdefault(text[a:z], []).append(i)
    return MentionReader(text, offsets, pronouns), index


def test_one_wrong_link_does_not_merge_two_people_across_windows():
    reader, at = reader_and_spans(STORY)
    teodor, ilka, he, she = (at["Teodor"][0], at["Varga"][0]), (at["Ilka"][0],) * 2, (at["He"][0],) * 2, (at["She"][0],) * 2
    him, mr = (at["him"][0],) * 2, (at["Mr."][0], at["Varga"][1])
    her = (at["her"][0],) * 2
    everything = at["Mrs."][0] + 2
    # window 1 links well; window 2 (overlapping it) wrongly puts Ilka with Teodor's "him"
    window1 = [[teodor, he, him], [ilka, she]]
    window2 = [[him, ilka, her], [mr]]
    merged = DocumentEntities(reader)
    merged.add_window(window1, (0, at["Mr."][0]))
    merged.add_window(window2, (at["Mr."][0] - 3, everything))
    chains = merged.link_names()
    texts = [{reader.text_of(*m) for m in c} for c in chains]
    assert {"Teodor Varga", "He", "him", "Mr. Varga"} <= next(t for t in texts if "Teodor Varga" in t)
    assert not any("Ilka" in t and "Teodor Varga" in t for t in texts)
    assert "her" not in next(t for t in texts if "Teodor Varga" in t)
    # without the rules, the shared "him" takes Ilka's "her" into Teodor's chain
    plain = DocumentEntities(reader, rules=False)
    plain.add_window(window1, (0, at["Mr."][0]))
    plain.add_window(window2, (at["Mr."][0] - 3, everything))
    assert any({"Teodor Varga", "her"} <= {reader.text_of(*m) for m in c} for c in plain.link_names())


def test_far_apart_chains_join_by_name_and_get_a_representative_name():
    reader, at = reader_and_spans(STORY)
    teodor, he, mr = (at["Teodor"][0], at["Varga"][0]), (at["He"][0],) * 2, (at["Mr."][0], at["Varga"][1])
    mrs = (at["Mrs."][0], at["Varga"][2])
    merged = DocumentEntities(reader)
    merged.add_window([[teodor, he], [mr], [mrs]], (0, at["Mrs."][0] + 2))
    chains = merged.link_names()
    assert [[reader.text_of(*m) for m in c] for c in chains] == [["Teodor Varga", "He", "Mr. Varga"], ["Mrs. Varga"]]
    assert merged.name_of(chains[0]) in ("Teodor Varga", "Mr. Varga")
    assert merged.name_of(chains[1]) == "Mrs. Varga"
    assert merged.name_of([he]) is None


def test_a_short_name_joins_through_the_longer_names_it_is_part_of():
    """"Silver" is a part of "John Silver" and of "Long John Silver": the longer two join first,
    so "Silver" then fits one entity, and the three are one chain."""
    text = "Long John Silver came in. He sat.\n\nJohn Silver laughed.\n\nSilver left. He waved."
    reader, at = reader_and_spans(text)
    full = (at["Long"][0], at["Silver"][0])
    middle = (at["John"][1], at["Silver"][1])
    short = (at["Silver"][2],) * 2
    he1, he2 = (at["He"][0],) * 2, (at["He"][1],) * 2
    merged = DocumentEntities(reader)
    merged.add_window([[full, he1], [middle], [short, he2]], (0, len(reader.offsets)))
    chains = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
    assert chains == [["Long John Silver", "He", "John Silver", "Silver", "He"]]


def test_a_name_of_two_people_goes_with_the_one_its_chain_names():
    """"Miss Lucas" can be Charlotte Lucas or Maria Lucas. A window chain says "Miss Lucas" eleven
    times, "Charlotte Lucas" once (too few to rule Maria out by its names alone) and a wrong
    "He" (so it cannot join anyone whole): its "Miss Lucas" go to Charlotte, the person its own
    names point to. Without its one "Charlotte Lucas" they stay where they are."""
    text = ("Charlotte Lucas smiled. Charlotte Lucas sat. She nodded.\n\nMaria Lucas ran. Maria Lucas laughed. "
            "She hid.\n\n" + "Miss Lucas spoke. " * 11 + "She waved to Charlotte Lucas. He left.")
    reader, at = reader_and_spans(text)
    lucas = iter(at["Lucas"])
    charlotte = [(at["Charlotte"][k], next(lucas)) for k in range(2)] + [(at["She"][0],) * 2]
    maria = [(at["Maria"][k], next(lucas)) for k in range(2)] + [(at["She"][1],) * 2]
    miss = [(at["Miss"][k], next(lucas)) for k in range(11)]
    third, he = (at["Charlotte"][2], next(lucas)), (at["He"][0],) * 2
    for says_charlotte in (True, False):
        merged = DocumentEntities(reader)
        window = miss + ([third] if says_charlotte else []) + [he]
        merged.add_window([charlotte, maria, window], (0, len(reader.offsets)))
        chains = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
        hers = next(c for c in chains if c[0] == "Charlotte Lucas")
        assert (hers.count("Miss Lucas") == 11) is says_charlotte
        assert ["Maria Lucas", "Maria Lucas", "She"] in chains


def test_titles_with_the_are_names_and_short_titles_read_as_titles():
    assert name("the squire") == Name(frozenset({"squire"}), None, None)
    assert name("Dr. Livesey").words == {"doctor", "livesey"}
    assert names_compatible(name("the doctor"), name("Dr. Livesey"))
    assert not names_compatible(name("the doctor"), name("the squire"))
    assert proper_name("a doctor") is None and proper_name("the old man") is None


def test_a_fuller_name_bridges_its_parts():
    jim, hawkins, full = name("Jim"), name("Hawkins"), name("Jim Hawkins")
    assert not names_compatible(jim, hawkins)
    assert names_compatible(jim, hawkins, bridges=[full])
    assert profile(Mention(name=jim)).compatible(profile(Mention(name=hawkins), Mention(name=full)))
    assert not profile(Mention(name=jim)).compatible(profile(Mention(name=hawkins)))
    assert not profile(Mention(name=name("Ilka"))).compatible(profile(Mention(name=hawkins), Mention(name=full)))


def test_no_bridge_across_a_married_or_unmarried_womans_surname_and_no_name_with_a_comma():
    assert proper_name("Darcy, Caroline") is None
    assert name("Sir William").words == {"william"} and name("Sir William").gender == "m"
    assert not names_compatible(name("Mrs. Bennet"), name("Elizabeth"), bridges=[name("Elizabeth Bennet")])


def test_a_title_said_to_someone_is_their_name():
    assert name("doctor") == name("the doctor") == Name(frozenset({"doctor"}), None, None)
    assert not profile(Mention(name=name("squire"))).compatible(profile(Mention(name=name("Dr. Livesey"))))


def test_a_scene_break_is_where_the_names_change():
    teodor, varga, ilka, anna, ruben = (name(t) for t in ("Teodor Varga", "Mr. Varga", "Ilka", "Anna", "Ruben"))
    # Teodor and Ilka until 100; Anna and Ruben from 130; paragraphs start at 50, 110, 120, 125, 200
    named = [(10, teodor), (40, ilka), (90, varga), (130, anna), (160, ruben), (210, anna)]
    starts = [50, 110, 120, 125, 200]
    assert scene_breaks(named, starts, width=100, least=1) == [120]  # the middle of the unnamed run 110..125
    assert scene_breaks(named, starts, width=100, least=3) == []  # too few names on a side to tell
    # the same people on both sides (Mr. Varga is Teodor Varga): no break
    assert scene_breaks([(10, teodor), (60, ilka), (130, varga), (160, ilka)], starts, width=100, least=1) == []
    # two casts, then the first again: two breaks, one in each unnamed stretch
    named2 = named + [(300, teodor), (330, ilka)]
    assert scene_breaks(named2, [50, 110, 120, 125, 260], width=60, least=1) == [120, 260]


def test_no_chain_crosses_a_scene_break_and_names_still_join_across_one():
    text = ("Teodor Varga climbed the tower. He lit the lamp.\n\n"
            "Ilka opened the shop. She sold bread. Later Teodor came in.")
    reader, at = reader_and_spans(text)
    teodor, he = (at["Teodor"][0], at["Varga"][0]), (at["He"][0],) * 2
    ilka, she, teodor2 = (at["Ilka"][0],) * 2, (at["She"][0],) * 2, (at["Teodor"][1],) * 2
    brk = at["Ilka"][0]
    # the window wrongly carries "He" across the break into Ilka's scene
    window = [[teodor, he, she], [ilka], [teodor2]]
    merged = DocumentEntities(reader, breaks=[brk])
    merged.add_window(window, (0, len(reader.offsets)))
    texts = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
    assert ["Teodor Varga", "He", "Teodor"] in texts  # joined across the break by name
    assert not any("She" in t and "He" in t for t in texts)
    plain = DocumentEntities(reader)
    plain.add_window(window, (0, len(reader.offsets)))
    assert any({"He", "She"} <= set(t) for t in ([reader.text_of(*m) for m in c] for c in plain.link_names()))
    # in the decoder's profiles, two scenes are two people
    a, b = Profile(scenes={0}), Profile(scenes={1})
    assert not a.compatible(b) and a.compatible(Profile()) and a.compatible(Profile(scenes={0}))


TWO_STORIES = (
    "Teodor Varga climbed the stairs of the lighthouse every evening. He carried the oil can in his left hand "
    "and the logbook in his right.\n\n"
    "At the top he lit the lamp and wrote the hour in the book. His brother Miklos had kept the light before him, "
    "and Teodor still used his brother's pen.\n\n"
    "\u201cYou are late tonight,\u201d Miklos said from the doorway. Teodor did not answer him. He watched the ships.",
    "He had never seen the sea before that spring. Ruben Kalman grew up among the goats of the mountains, and "
    "Ruben knew nothing of ships.\n\n"
    "His mother Sara sold cheese at the market. Ruben carried the baskets for her, and he counted the coins.\n\n"
    "\u201cWe will go to the coast,\u201d Sara told him one morning. He packed his bag that night.",
)


def test_two_stories_in_one_window_keep_their_people_apart_with_the_bundled_model():
    """The second story opens with a "He" before it names Ruben: without the scene break the
    bundled model gives that "He" (and Ruben's every "he" after it) to Teodor."""
    import lfcli
    from lfcli.models.bundled import BundledUnavailable, locate_minilm

    try:
        locate_minilm()
    except BundledUnavailable as exc:
        pytest.skip(str(exc))
    text = "\n\n".join(TWO_STORIES)
    cut = len(TWO_STORIES[0])
    row = lfcli.corefs([text])[0]
    crossing = [c for c in row["chains"] if len({m["start"] > cut for m in c["mentions"]}) > 1]
    assert crossing == []
    ruben = next(c for c in row["chains"] if c["name"] and "Ruben" in c["name"])
    assert ruben["mentions"][0]["start"] == cut + 2  # the story's first "He"


def test_a_speakers_i_and_the_narrations_she_of_one_name_are_one_person():
    assert speaker_and_narrated_agree({"i"}, {"she"}) and speaker_and_narrated_agree({"i", "he"}, {"he"})
    assert not speaker_and_narrated_agree({"i"}, {"it"}) and not speaker_and_narrated_agree({"we"}, {"she"})
    assert not speaker_and_narrated_agree({"i", "she"}, {"he"})
    speaker, narrated = Profile(names={name("Alice")}, kinds={"i"}), Profile(names={name("Alice")}, kinds={"she"})
    assert not speaker.compatible(narrated) and speaker.compatible(narrated, same_name=True)


def test_chains_of_one_name_join_as_speaker_and_narrated():
    text = ("Alice sat by the river. \u201cI am tired,\u201d said Alice.\n\n"
            "Alice ran after the Rabbit. She fell.")
    reader, at = reader_and_spans(text)
    alice1, i, alice2 = (at["Alice"][0],) * 2, (at["I"][0],) * 2, (at["Alice"][1],) * 2
    alice3, she = (at["Alice"][2],) * 2, (at["She"][0],) * 2
    for breaks in ([], [at["Alice"][2]]):  # far apart too: across a scene break, by name
        merged = DocumentEntities(reader, breaks=breaks)
        merged.add_window([[alice1, i, alice2], [alice3, she]], (0, len(reader.offsets)))
        assert [[reader.text_of(*m) for m in c] for c in merged.link_names()] == [["Alice", "I", "Alice", "Alice", "She"]]
    plain = DocumentEntities(reader, rules=False)
    plain.add_window([[alice1, i, alice2], [alice3, she]], (0, len(reader.offsets)))
    assert len(plain.link_names()) == 2


def test_only_peoples_names_tell_the_cast():
    from lfcli.pipelines.tasks.corefs.task import named_people

    text = "England was far. Teodor left England. He sailed."
    reader, at = reader_and_spans(text)
    england = [(at["England"][0],) * 2, (at["England"][1],) * 2]
    teodor = [(at["Teodor"][0],) * 2, (at["He"][0],) * 2]
    named = named_people(reader, [england, teodor])
    assert {k: sorted(v.words) for k, v in named.items()} == {at["Teodor"][0]: ["teodor"]}
    assert named_people(reader, [england, teodor], owned=(at["He"][0], 99)) == {}


@pytest.mark.parametrize("text, who, vocative", [
    ("\u201cLizzy, you must go.\u201d", "Lizzy", True),
    ("\u201cThat will not do for Darcy, Caroline,\u201d cried her brother.", "Caroline", True),
    ("\u201cMuch more rational, my dear Caroline, I dare say.\u201d", "Caroline", True),
    ("\u201cOh, Jane!\u201d", "Jane", True),
    ("\u201cCome here, Jim.\u201d", "Jim", True),
    ("\u201cJane is ill.\u201d", "Jane", False),
    ("\u201cJane, who is ill, stays.\u201d", "Jane", False),
    ("\u201cI saw Jim.\u201d", "Jim", False),
    ("\u201cI will buy it if Darcy will sell it.\u201d", "Darcy", False),
])
def test_a_name_set_off_by_commas_in_a_quote_is_the_person_addressed(text, who, vocative):
    (quote,) = quote_spans(text)
    start = text.index(who)
    assert is_vocative(text, start, start + len(who), quote) is vocative


def test_a_vocative_name_never_joins_the_speakers_i():
    """Charles says "I" and names his sister in one quote: "Caroline" is the person addressed
    (person 2), so she and his "I" cannot be one chain."""
    text = "\u201cUpon my word, Caroline, I should think it possible,\u201d said Charles."
    reader, at = reader_and_spans(text)
    caroline, i = reader.mention(at["Caroline"][0], at["Caroline"][0]), reader.mention(at["I"][0], at["I"][0])
    assert caroline.person == 2 and caroline.quote == i.quote == 0
    assert not Profile.of(caroline).compatible(Profile.of(i))
    said = reader.mention(at["Charles"][0], at["Charles"][0])
    assert said.person is None  # outside the quote: a name like any other


def test_a_book_gives_its_names_gender_and_form_of_address():
    text = ("Mr. Bennet and Mrs. Bennet had daughters: Miss Elizabeth and Miss Lizzy were one. Sir William Lucas "
            "called; Miss Lucas came. Colonel Forster and Mrs. Forster came. Lady Catherine wrote.")
    forms = NameForms(text)
    assert forms.apply(name("Lizzy"), "Lizzy") == Name(frozenset({"lizzy"}), "miss", "f")
    assert forms.apply(name("Elizabeth Bennet"), "Elizabeth Bennet").address == "miss"
    assert forms.apply(name("Catherine"), "Catherine") == Name(frozenset({"catherine"}), "lady", "f")
    for man in ("Bennet", "Lucas", "Forster"):  # after Mr., Sir William or a man's rank: alone, a man's surname
        assert forms.apply(name(man), man).gender == "m"
    for unknown in ("Teodor",):  # never after an honorific
        assert forms.apply(name(unknown), unknown) == name(unknown)
    assert forms.apply(name("Mrs. Bennet"), "Mrs. Bennet") == name("Mrs. Bennet")  # its own honorific rules
    # "Elizabeth Bennet", a Miss, is not "Mrs. Bennet", though her surname is
    reader, at = reader_and_spans(text + " Elizabeth Bennet smiled.")
    eb = reader.mention(at["Elizabeth"][1], at["Bennet"][2])
    assert reader.text_of(at["Elizabeth"][1], at["Bennet"][2]) == "Elizabeth Bennet"
    assert not names_compatible(eb.name, name("Mrs. Bennet"))


def test_a_chain_that_cannot_join_its_names_entity_gives_it_the_name():
    """A window chain holds "Mr. Darcy" beside a "they" (a wrong link): it cannot be one with
    Darcy's entity, but its "Mr. Darcy" goes there; the "they" stays apart."""
    text = "Mr. Darcy came. He sat. Darcy left.\n\nMr. Darcy and they left. They waved."
    reader, at = reader_and_spans(text)
    darcy1, darcy2 = (at["Mr."][0], at["Darcy"][0]), (at["Darcy"][1],) * 2
    darcy3 = (at["Mr."][1], at["Darcy"][2])
    he, they1, they2 = (at["He"][0],) * 2, (at["they"][0],) * 2, (at["They"][0],) * 2
    merged = DocumentEntities(reader)
    merged.add_window([[darcy1, he, darcy2], [darcy3, they1, they2]], (0, len(reader.offsets)))
    chains = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
    assert chains == [["Mr. Darcy", "He", "Darcy", "Mr. Darcy"], ["they", "They"]]
    plain = DocumentEntities(reader, rules=False)
    plain.add_window([[darcy1, he, darcy2], [darcy3, they1, they2]], (0, len(reader.offsets)))
    assert len(plain.link_names()) == 2 and ["Mr. Darcy", "they", "They"] in [
        [reader.text_of(*m) for m in c] for c in plain.link_names()]


def test_her_ladyship_is_a_titled_lady_not_a_mrs():
    text = "Mrs. Bennet spoke. Lady Catherine came. Mr. Collins feared her ladyship."
    reader, at = reader_and_spans(text)
    ladyship = reader.mention(at["her"][0], at["ladyship"][0])
    assert (ladyship.address, ladyship.gender, ladyship.name) == ("lady", "f", None)
    mrs = Profile.of(reader.mention(at["Mrs."][0], at["Bennet"][0]))
    lady = Profile.of(reader.mention(at["Lady"][0], at["Catherine"][0]))
    assert not mrs.compatible(Profile.of(ladyship)) and lady.compatible(Profile.of(ladyship))
    kitty = Profile.of(Mention(name=name("Kitty")))
    assert not kitty.compatible(Profile.of(ladyship))  # a title noun goes with the names of its title only
    assert Profile.of(Mention(kind="she", gender="f")).compatible(Profile.of(ladyship))


def test_a_name_joins_the_one_entity_holding_a_full_name_it_is_part_of():
    """Jim's chain says "Jim" and once "Jim Hawkins"; another chain says "Hawkins": one person.
    "Sir William" is not the "William" of "William Collins": his own chain says "William Lucas"."""
    text = ("Jim Hawkins ran. Jim hid. He waited.\n\nHawkins came back. He smiled.\n\n"
            "William Collins bowed. Mr. Collins spoke. He sat.\n\nSir William Lucas came. Sir William laughed. "
            "Sir William left.")
    reader, at = reader_and_spans(text)
    one = lambda word, k=0: (at[word][k],) * 2  # noqa: E731
    jim = [(at["Jim"][0], at["Hawkins"][0]), one("Jim", 1), one("He")]
    hawkins = [one("Hawkins", 1), one("He", 1)]
    collins = [(at["William"][0], at["Collins"][0]), (at["Mr."][0], at["Collins"][1]), one("He", 2)]
    lucas = [(at["William"][1], at["Lucas"][0]), (at["Sir"][1], at["William"][2]), (at["Sir"][2], at["William"][3])]
    merged = DocumentEntities(reader)
    merged.add_window([jim, hawkins, collins, lucas], (0, len(reader.offsets)))
    chains = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
    assert ["Jim Hawkins", "Jim", "He", "Hawkins", "He"] in chains
    assert ["William Lucas", "Sir William", "Sir William"] in chains  # its names are mostly not "William Collins"
    assert len(chains) == 3


@pytest.mark.parametrize("alexander", [False, True])
def test_a_full_name_goes_to_the_chain_that_holds_it_most(alexander):
    """The captain's chain says "the captain" most and "Captain Smollett" twice; a window put
    one "Captain Smollett" in the ship's chain ("her"). That one goes to the captain; the
    ship's "her" and "She" stay apart from him. With "Alexander Smollett" in the captain's
    chain, its names are not all within "Captain Smollett", and the ship's chain is the one
    that gives (its own full name, held more by the captain's chain)."""
    alex = "Alexander Smollett rose. " if alexander else ""
    text = (f"{alex}Captain Smollett came. The captain sat. The captain spoke. The captain rose. Captain Smollett "
            "left. He waved.\n\nThe ship sailed. Captain Smollett praised her. She was fast.")
    reader, at = reader_and_spans(text)
    one = lambda word, k=0: (at[word][k],) * 2  # noqa: E731
    captain = [*([(at["Alexander"][0], at["Smollett"][0])] if alexander else []),
               (at["Captain"][0], at["Smollett"][-3]), *((at["The"][j], at["captain"][j]) for j in range(3)),
               (at["Captain"][1], at["Smollett"][-2]), one("He")]
    ship = [(at["The"][3], at["ship"][0]), (at["Captain"][2], at["Smollett"][-1]), one("her"), one("She")]
    merged = DocumentEntities(reader)
    merged.add_window([captain, ship], (0, len(reader.offsets)))
    chains = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
    assert chains == [[*(["Alexander Smollett"] if alexander else []), "Captain Smollett", "The captain", "The captain",
                       "The captain", "Captain Smollett", "He", "Captain Smollett"], ["The ship", "her", "She"]]


def test_a_title_is_no_part_of_whose_name_it_is():
    """George's chain says "George" and once "King George": a title says what he is, so he is
    the "George Merry" of another chain. Without the title rule that one name in six would
    keep them apart, as "William Lucas" keeps Sir William from "William Collins"."""
    text = ("George Merry drank. Merry laughed. Merry sat. He slept.\n\nGeorge rose. George spoke. "
            "King George, he said. George smiled. George left. George ran. He hid.")
    reader, at = reader_and_spans(text)
    one = lambda word, k=0: (at[word][k],) * 2  # noqa: E731
    merry = [(at["George"][0], at["Merry"][0]), one("Merry", 1), one("Merry", 2), one("He")]
    george = [one("George", 1), one("George", 2), (at["King"][0], at["George"][3]),
              *(one("George", k) for k in (4, 5, 6)), one("He", 1)]
    merged = DocumentEntities(reader)
    merged.add_window([merry, george], (0, len(reader.offsets)))
    assert len(merged.link_names()) == 1


@pytest.mark.parametrize("part, full, within", [
    ("King George", "George Merry", True),
    ("George", "George Merry", True),
    ("King", "George Merry", False),
    ("William Lucas", "William Collins", False),
    ("Squire Trelawney", "John Trelawney", True),
    ("Captain Flint", "Captain Smollett", False),
])
def test_a_name_within_a_full_name_leaves_its_titles_out(part, full, within):
    from lfcli.pipelines.tasks.corefs.full_names import name_within
    assert name_within(name(part), name(full)) is within


def test_full_names_of_one_person_but_for_titles_pick_the_biggest_holder():
    """"Trelawney" fits the squire's "Squire Trelawney" and a small chain's "John Trelawney":
    one man, so the name goes to the bigger. "Charlotte Lucas" and "Maria Lucas" are two."""
    from lfcli.pipelines.tasks.corefs.chains import Entity
    from lfcli.pipelines.tasks.corefs.full_names import one_person
    squire, john = Entity([(k, k) for k in range(30)]), Entity([(40, 40), (41, 41)])
    found = {1: squire, 2: john}
    assert one_person(found, {1: {name("Squire Trelawney").words}, 2: {name("John Trelawney").words}}) == {1: squire}
    assert one_person(found, {1: {name("Charlotte Lucas").words}, 2: {name("Maria Lucas").words}}) == {}


@pytest.mark.parametrize("again, chains", [(2, 1), (1, 2)])
def test_a_full_name_said_again_in_two_chains_outweighs_their_quotes(again, chains):
    """Two chains each say "John Silver" twice; a window put the "I" of one quote in the first
    and the "you" of that quote in the second, which alone would keep them apart (a speaker and
    the one addressed are two people). Said once in the second chain, the quote wins."""
    text = ("John Silver came. John Silver sat. \u201cI know you,\u201d said he.\n\n"
            "John Silver left. John Silver ran. He hid.")
    reader, at = reader_and_spans(text)
    one = lambda word, k=0: (at[word][k],) * 2  # noqa: E731
    silver = [(at["John"][k], at["Silver"][k]) for k in range(4)]
    first = [silver[0], silver[1], one("I")]
    second = [*silver[2: 2 + again], one("you"), one("He")]
    merged = DocumentEntities(reader)
    merged.add_window([first, second], (0, len(reader.offsets)))
    found = merged.link_names()
    assert len([c for c in found if c]) == chains
    if chains == 2:  # the name still goes to the first chain (_lend_name); the "you" stays apart
        assert [reader.text_of(*m) for m in found[-1]] == ["you", "He"]


@pytest.mark.parametrize("maria_says_it", [False, True])
def test_a_name_of_two_people_goes_to_the_one_whose_chain_says_it(maria_says_it):
    """A chain says only "Miss Lucas", beside a wrong "He": of Charlotte Lucas and Maria Lucas,
    it goes to the one whose own chain says "Miss Lucas" too; when both do, to neither."""
    text = ("Charlotte Lucas smiled. Charlotte Lucas sat. Miss Lucas nodded.\n\nMaria Lucas ran. Maria Lucas "
            "laughed. Miss Lucas hid. She ran.\n\n" + "Miss Lucas spoke. " * 4 + "He left.")
    reader, at = reader_and_spans(text)
    lucas = iter(at["Lucas"])
    charlotte = [(at["Charlotte"][k], next(lucas)) for k in range(2)] + [(at["Miss"][0], next(lucas))]
    maria = [(at["Maria"][k], next(lucas)) for k in range(2)]
    maria_miss = (at["Miss"][1], next(lucas))
    maria += [maria_miss, (at["She"][0],) * 2] if maria_says_it else [(at["She"][0],) * 2]
    miss = [(at["Miss"][k], next(lucas)) for k in range(2, 6)] + [(at["He"][0],) * 2]
    clusters = [charlotte, maria, miss] if maria_says_it else [charlotte, maria, [maria_miss], miss]
    merged = DocumentEntities(reader)
    merged.add_window(clusters, (0, len(reader.offsets)))
    chains = [[reader.text_of(*m) for m in c] for c in merged.link_names()]
    hers = next(c for c in chains if c[0] == "Charlotte Lucas")
    assert hers.count("Miss Lucas") == (1 if maria_says_it else 6)  # her own, the chain's four, the one alone


@pytest.mark.parametrize("stated", [True, False])
def test_a_married_name_joins_the_maiden_name_where_the_book_says_whom_she_married(stated):
    """"Charlotte" and "Mrs. Collins" are one woman where the book says "Charlotte the wife of
    Mr. Collins"; without it, a "Mrs." is never a "Miss" (Mrs. Bennet and her daughters)."""
    said = "Charlotte the wife of Mr. Collins was content. " if stated else "Charlotte was content. "
    text = ("Charlotte Lucas smiled. Charlotte sat. She nodded. " + said +
            "\n\nMrs. Collins came. Mrs. Collins sat. She smiled.")
    reader, at = reader_and_spans(text)
    one = lambda word, k=0: (at[word][k],) * 2  # noqa: E731
    charlotte = [(at["Charlotte"][0], at["Lucas"][0]), one("Charlotte", 1), one("She"), one("Charlotte", 2)]
    wife = [(at["Mrs."][k], at["Collins"][-2 + k]) for k in range(2)] + [one("She", 1)]
    merged = DocumentEntities(reader)
    merged.add_window([charlotte, wife], (0, len(reader.offsets)))
    assert len(merged.link_names()) == (1 if stated else 2)


@pytest.mark.parametrize("text, married", [
    ("Charlotte the wife of Mr. Collins was a sad sight.", {"charlotte": "collins"}),
    ("Jane, now Mrs. Bingley, smiled.", {"jane": "bingley"}),
    ("Miss Hamilton, now Mrs. Smith, wrote.", {"hamilton": "smith"}),
    ("Mr. Wickham married Lydia in town.", {"lydia": "wickham"}),
    ("Jane, Elizabeth, Mrs. Bennet and Lydia sat.", {}),  # a list of names, no marriage
    ("But now Mrs. Darcy came; but she was late.", {}),  # "But" is no name: the book writes it in lower case
    ("Ann, wife of Mr. John Knightley, sat. Lady Huff, wife of Sir G.  Huff, came.", {"ann": "knightley"}),
    ("Lady Huff, wife of Sir G. Huff. Charlotte came.", {}),  # his names end at the full stop
    ("Marguerite St. Just married Sir Percy Blakeney one fine day.", {"marguerite": "blakeney"}),
    ("Heathcliff married Mr. Linton's sister.", {}),  # Mr. Linton is her brother, not her husband
    ("Mr. Heathcliff married Mr. Linton at last.", {}),  # a man's name before "married"
])
def test_a_book_says_whom_a_woman_married(text, married):
    from lfcli.pipelines.tasks.corefs.entities import married_names
    assert married_names(text) == married


@pytest.mark.parametrize("two_said", [True, False])
def test_two_mr_knightleys_are_two_men_where_the_book_says_so(two_said):
    """A book that speaks of "the two Mr. Knightleys" and calls one "Mr. John Knightley" keeps
    the "Mr. Knightley" it says alone apart from him; without "Mr. Knightleys", "Mr. Knightley"
    is a part of "John Knightley" and the chains join, as "Mr. Darcy" and "Fitzwilliam Darcy"."""
    plural = "The two Mr. Knightleys came. " if two_said else "The two men came. "
    text = (plural + "Mr. Knightley spoke. Mr. Knightley sat. Mr. Knightley rose. He smiled.\n\n"
            "Mr. John Knightley came. Mr. John Knightley sat. Mr. John Knightley left. He ran.")
    reader, at = reader_and_spans(text)
    mr, knightley = at["Mr."], at["Knightley"]
    k0 = 1 if two_said else 0  # the plural's "Knightleys" is no "Knightley" token
    elder = [(mr[k0 + k], knightley[k]) for k in range(3)] + [(at["He"][0],) * 2]
    younger = [(mr[k0 + 3 + k], knightley[3 + k]) for k in range(3)] + [(at["He"][1],) * 2]
    merged = DocumentEntities(reader)
    merged.add_window([elder, younger], (0, len(reader.offsets)))
    assert len(merged.link_names()) == (2 if two_said else 1)


def test_a_book_tells_two_men_of_one_surname_apart():
    from lfcli.pipelines.tasks.corefs.entities import brothers
    text = "Mr. John Knightley came; Mr. John Knightley sat; Mr. John Knightley left. The Mr. Knightleys dined."
    assert brothers(text) == {"knightley": {"john"}}
    assert brothers(text.replace("Mr. Knightleys", "brothers")) == {}  # one man, called two ways
    assert brothers(text.replace("Mr. John Knightley left", "he left")) == {}  # said twice: too few
