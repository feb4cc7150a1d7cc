"""The name passes of whole-document coreference (name_passes.py), each on a short text: what it
joins, what it never joins, and its switch (LFCLI_COREF_OFF) keeping the two apart."""

from __future__ import annotations

import importlib

import pytest
from test_coref_entities import reader_and_spans

from lfcli.pipelines.tasks.corefs.aliases import book_aliases
from lfcli.pipelines.tasks.corefs.document import DocumentEntities
from lfcli.pipelines.tasks.corefs.entities import NameForms
from lfcli.pipelines.tasks.corefs.name_passes import PASSES, SPLITS
from lfcli.pipelines.tasks.corefs.switches import NAME_PASSES


def chains(text: str, groups: list[list[str]], windows: list[tuple[int, int]] | None = None) -> list[set[str]]:
    """`groups`: each window chain as phrases of the text, "phrase#k" for its k-th occurrence
    (0 when left out); one window over the whole text. With `windows` (each a range of the
    text's paragraphs, [first, last]), `groups` is one list of chains per window, and each window
    keeps the mentions of its first paragraph. The chains after the passes, as texts."""
    reader, at = reader_and_spans(text)
    words = [text[a:z] for a, z in reader.offsets]

    def span(phrase: str) -> tuple[int, int]:
        said, _, k = phrase.partition("#")
        parts = said.split()
        starts = [i for i in range(len(words)) if words[i:i + len(parts)] == parts]
        first = starts[int(k or 0)]
        return first, first + len(parts) - 1

    doc = DocumentEntities(reader)
    if windows is None:
        doc.add_window([[span(p) for p in group] for group in groups], (0, len(reader.offsets)))
    else:
        import re
        starts = [0] + [m.end() for m in re.finditer(r"\n\n", text)]
        first = [next(i for i, (a, _) in enumerate(reader.offsets) if a >= c) for c in starts] + [len(reader.offsets)]
        for window, (lo, _) in zip(groups, windows):
            doc.add_window([[span(p) for p in group] for group in window], (first[lo], first[lo + 1]))
    return [{reader.text_of(*m) for m in c} for c in doc.link_names()]


def together(found: list[set[str]], *texts: str) -> bool:
    return any(set(texts) <= c for c in found)


def evidence_case(paragraphs: int = 6, alone: str = "") -> tuple[str, list, list]:
    """Paragraphs that call one woman "Mrs. Strong" and "Annie" by turns, each window two
    paragraphs whose one chain holds both names: the window keeps its first paragraph's
    mentions, so each name stays in the entity of its own paragraph's window. (text, each
    window's chains, the windows' paragraphs); `alone`: a last paragraph no window links."""
    said = ["Mrs. Strong came in. She sat.", "Annie smiled. She sang."]
    text = "\n\n".join(said[p % 2] for p in range(paragraphs)) + (f"\n\n{alone}" if alone else "")
    mention = [lambda k: [f"Mrs. Strong#{k}", f"She#{2 * k}"], lambda k: [f"Annie#{k}", f"She#{2 * k + 1}"]]
    parts = [mention[p % 2](p // 2) for p in range(paragraphs)]
    windows = [[parts[p] + (parts[p + 1] if p + 1 < paragraphs else [])] for p in range(paragraphs)]
    return text, windows, [(p, p + 1) for p in range(paragraphs)]


# Each pass: a text, its window chains, two mentions the pass alone joins (and, for a pass that
# reads many windows, the windows' paragraphs: chains()).
CASES = {
    "same_name": ("Mr. Darcy came. He sat.\n\nElizabeth walked. She smiled.\n\nMr. Darcy bowed. He left.",
                  [["Mr. Darcy#0", "He#0"], ["Elizabeth", "She"], ["Mr. Darcy#1", "He#1"]],
                  ("He#0", "He#1")),
    "short_names": ("Long John Silver came in. He sat.\n\nJohn Silver laughed.\n\nSilver left. He waved.",
                    [["Long John Silver", "He#0"], ["John Silver#1"], ["Silver#2", "He#1"]],
                    ("Long John Silver", "John Silver")),
    "full_names": ("Jim came. Jim Hawkins ran. Jim hid. He ate.\n\nHawkins sat. He slept.",
                   [["Jim#0", "Jim Hawkins", "Jim#2", "He#0"], ["Hawkins#1", "He#1"]],
                   ("Jim", "Hawkins")),
    "married_names": ("Charlotte smiled. She sat. Charlotte became Mrs. Collins that spring.\n\n"
                      "Mrs. Collins laughed. She ate.",
                      [["Charlotte#0", "She#0", "Charlotte#1"], ["Mrs. Collins#1", "She#1"]],
                      ("Charlotte", "Mrs. Collins")),
    "pet_names": ("James Vane sailed at dawn. He wrote often. Years later Jim came home. He laughed.",
                  [["James Vane", "He#0"], ["Jim", "He#1"]], ("James Vane", "Jim")),
    "addressed_titles": ("Lady Verinder came. She sat. Rachel stood.\n\nYes, my lady, said Betteredge to her.",
                         [["Lady Verinder", "She"], ["Rachel"], ["my lady", "her"]], ("Lady Verinder", "my lady")),
    "aliases": ("Dunstan, commonly called Dunsey Cass, rode off. Dunstan drank. He sang.\n\nDunsey came. He fell.",
                [["Dunstan#1", "He#0"], ["Dunsey#1", "He#1"]], ("Dunstan", "Dunsey")),
    "book_evidence": (*(EVIDENCE := evidence_case()), ("Annie", "Mrs. Strong")),
}


# Each pass that takes mentions out of chains: a text, its window chains, two mentions it parts.
SPLIT_CASES = {
    "stray_names": ("Charles Musgrove came. He sat. Charles laughed. Charles smiled. Charles Hayter ran. He hid. "
                    "Charles left. Charles sang.",
                    [["Charles Musgrove", "He#0", "Charles#1", "Charles#2", "Charles Hayter", "He#1", "Charles#4",
                      "Charles#5"]],
                    ("Charles Musgrove", "Charles Hayter")),
    "narrated_kin": ("My aunt came. Agnes sat. " + "Then my aunt spoke. " * 4 + "\n\nDora ran. Then my aunt left.",
                     [["My aunt", "Agnes", "my aunt#0", "my aunt#1"], ["my aunt#2", "my aunt#3"], ["Dora", "my aunt#4"]],
                     ("My aunt", "my aunt#4")),
}


def test_every_pass_is_listed_with_a_switch_and_says_what_it_never_joins():
    assert tuple(p.name for p in SPLITS + PASSES) == NAME_PASSES == tuple(SPLIT_CASES) + tuple(CASES)
    for p in PASSES:
        notes = importlib.import_module(p.run.__module__).__doc__
        assert f"`{p.name}`" in notes and "Never joins" in notes, p.name
    for p in SPLITS:
        notes = importlib.import_module(p.run.__module__).__doc__
        assert f"`{p.name}`" in notes and "Never moves" in notes, p.name


def apart(found: list[set[str]], a: str, b: str) -> bool:
    return not together(found, a, b) and any(a in c for c in found) and any(b in c for c in found)


@pytest.mark.parametrize("name", list(SPLIT_CASES))
def test_each_split_parts_its_case_and_its_switch_turns_it_off(name, monkeypatch):
    text, groups, (a, b) = SPLIT_CASES[name]
    if name == "narrated_kin":  # the kin chain gathers the narration's five "my aunt": out of Agnes's and Dora's
        found = chains(text, groups)
        assert together(found, "My aunt", "my aunt") and not together(found, "my aunt", "Agnes")
        assert not together(found, "my aunt", "Dora")
        monkeypatch.setenv("LFCLI_COREF_OFF", name)
        assert together(chains(text, groups), "my aunt", "Dora")
        return
    assert apart(chains(text, groups), a, b)
    monkeypatch.setenv("LFCLI_COREF_OFF", name)
    assert together(chains(text, groups), a, b)


def test_a_stray_of_the_other_gender_leaves_and_a_woman_s_two_surnames_stay():
    """"Mrs. Strong" in a chain of "he" and "the Doctor" leaves it; a woman's maiden and married
    full names in one chain ("Catherine Earnshaw", "Catherine Linton") stay together."""
    text = "The Doctor came. He sat. He smiled. The Doctor nodded. Mrs. Strong spoke. He laughed. He left. The Doctor ran."
    found = chains(text, [["The Doctor#0", "He#0", "He#1", "The Doctor#1", "Mrs. Strong", "He#2", "He#3", "The Doctor#2"]])
    assert apart(found, "The Doctor", "Mrs. Strong")
    text = "Catherine Earnshaw came. She sat. She wept. Catherine Linton ran. She hid. Catherine Earnshaw sang."
    found = chains(text, [["Catherine Earnshaw#0", "She#0", "She#1", "Catherine Linton", "She#2", "Catherine Earnshaw#1"]])
    assert together(found, "Catherine Earnshaw", "Catherine Linton")


def test_kin_said_in_a_quote_or_of_two_named_aunts_stays_where_the_model_put_it():
    from lfcli.pipelines.tasks.corefs.kin import kin_noun, named_kin

    assert kin_noun("My Aunt's") == "aunt" and kin_noun("my\nmother") == "mother" and kin_noun("my brother") is None
    assert named_kin("I saw my aunt Reed, then my aunt Gibson.", "aunt") == {"Reed", "Gibson"}
    text = "Agnes came. " + "\u201cMy aunt is ill,\u201d said Agnes. " * 5 + "Dora sat."
    quoted = [f"My aunt#{k}" for k in range(5)]
    found = chains(text, [["Agnes#0", *quoted[:3]], [*quoted[3:], "Dora"]])
    assert together(found, "Agnes", "My aunt") and together(found, "Dora", "My aunt")  # the speaker's aunt: untouched
    two = "I saw my aunt Reed. " + "Then my aunt spoke. " * 5 + "Later my aunt Gibson came."
    groups = [["my aunt#0", "my aunt#1", "my aunt#2"], ["my aunt#3", "my aunt#4", "my aunt#5"]]
    assert len([c for c in chains(two, groups) if "my aunt" in c]) == 2  # two aunts named: not gathered


def test_mrs_and_her_husband_s_full_name_makes_his_given_name_no_woman_s():
    """"Mrs. Charles Musgrove" is Charles's wife: "Charles" stays a man's name, while "Miss Anne
    Elliot" still makes "Anne" a woman's."""
    text = "Mrs. Charles Musgrove came. Mrs. Charles sat. Charles laughed. Miss Anne Elliot ran."
    forms = NameForms(text)
    assert "charles" not in forms.women and forms.women.get("anne") == "miss"


@pytest.mark.parametrize("name", list(CASES))
def test_each_pass_joins_its_case_and_its_switch_turns_it_off(name, monkeypatch):
    text, groups, *windows, (a, b) = CASES[name]
    windows = windows[0] if windows else None
    a, b = a.split("#")[0], b.split("#")[0]
    if a == b:  # two mentions of one text: the pass joins the two chains holding them
        assert len(chains(text, groups)) == len(groups) - 1
        monkeypatch.setenv("LFCLI_COREF_OFF", name)
        assert len(chains(text, groups)) == len(groups)
        return
    assert together(chains(text, groups, windows), a, b)
    monkeypatch.setenv("LFCLI_COREF_OFF", name)
    assert not together(chains(text, groups, windows), a, b)


def test_the_passes_never_join_across_genders(monkeypatch):
    """The aliases pass on "Maggie, alias Celestine" where the book's Celestine is a "he"."""
    text = "Maggie, alias Celestine, came. Maggie sat. She wept.\n\nCelestine ran. He fell."
    assert not together(chains(text, [["Maggie#1", "She"], ["Celestine#1", "He"]]), "Maggie", "Celestine")


@pytest.mark.parametrize("text, pairs", [
    ("Dunstan, commonly called Dunsey Cass, rode.", [("Dunstan", "Dunsey Cass")]),
    ("It was Umbopa, alias Ignosi, who spoke.", [("Umbopa", "Ignosi")]),
    ("He bowed to the Major, whom he called Mr. Dobbin, and left.", [("Major", "Mr. Dobbin")]),
    ("Then Jack Harper called himself Jones for a year.", [("Jack Harper", "Jones")]),
    ("Lizzy, as Elizabeth was called, laughed.", [("Elizabeth", "Lizzy")]),
    ("Mrs. Markleham; but our boys used to call her the Old Soldier.", [("Mrs. Markleham", "Soldier")]),
    ("Coggan called Gabriel, who came at once.", []),  # one person summoning another
    ("The man who called himself Jones left.", []),  # no name to join it to
    ("\u201cOtherwise called Peggy,\u201d said the Major.", []),
])
def test_the_book_s_own_words_for_an_alias(text, pairs):
    found = [(a, b) for _, a, _, b in book_aliases(text, NameForms(text))]
    assert found == pairs


def test_an_alias_goes_to_the_one_entity_its_first_word_names():
    """"Dunsey Cass": the chain called "Dunsey", not the father's "Mr. Cass"."""
    text = ("Dunstan, commonly called Dunsey Cass, rode off. Dunstan drank. He sang.\n\n"
            "Dunsey came. He fell.\n\nMr. Cass frowned. He spoke.")
    found = chains(text, [["Dunstan#1", "He#0"], ["Dunsey#1", "He#1"], ["Mr. Cass", "He#2"]])
    assert together(found, "Dunstan", "Dunsey") and not together(found, "Dunstan", "Mr. Cass")


def test_an_alias_chain_that_holds_another_s_pronoun_gives_its_name_and_keeps_the_pronoun():
    """A window put the Doctor's "he" in the chain of "the Old Soldier": the two chains cannot be
    one person, so the alias's own mentions go to Mrs. Markleham and the "he" stays behind."""
    text = ("She was Mrs. Markleham; but our boys used to call her the Old Soldier. She sat.\n\n"
            "The Old Soldier laughed. He ran. The Old Soldier sang.")
    groups = [["Mrs. Markleham", "She#1"], ["The Old Soldier#0", "He", "The Old Soldier#1"]]
    found = chains(text, groups)
    assert together(found, "Mrs. Markleham", "The Old Soldier") and not together(found, "Mrs. Markleham", "He")


def test_two_chains_of_a_given_name_join_where_a_full_name_of_the_book_bridges_their_other_names():
    """"Charles" beside "Mr. Musgrove" in one chain and "Charles" alone in another: one person, as
    the book says "Charles Musgrove" (neither chain does). Without that full name they stay apart."""
    def joined(full: str) -> bool:
        text = (f"{full} came. Charles Hayter ran.\n\nCharles sat. Anne looked at him.\n\n"
                "Charles laughed. Mr. Musgrove nodded. He left.")
        k = full.split().count("Charles")
        groups = [[full], ["Charles Hayter"], [f"Charles#{1 + k}", "him"], [f"Charles#{2 + k}", "Mr. Musgrove", "He"]]
        return together(chains(text, groups), "him", "Mr. Musgrove")

    assert joined("Charles Musgrove") and not joined("Walter Musgrove")


@pytest.mark.parametrize("second, joins", [("Hareton Earnshaw", False), ("Catherine Earnshaw", True)])
def test_mr_surname_in_a_family_joins_no_one_of_it(second, joins):
    """"Mr. Earnshaw" beside "Hindley Earnshaw": one man, unless the book names another man of the
    family ("Hareton Earnshaw"); a woman of it ("Catherine Earnshaw", a Miss) leaves one man."""
    text = (f"Hindley Earnshaw came. He sat.\n\nMiss Catherine laughed. {second} ran. He hid.\n\n"
            "Mr. Earnshaw spoke. He left.")
    found = chains(text, [["Hindley Earnshaw", "He#0"], [second, "He#1"], ["Mr. Earnshaw", "He#2"]])
    assert together(found, "Hindley Earnshaw", "Mr. Earnshaw") is joins


def test_a_family_is_read_from_parsed_full_names():
    from lfcli.pipelines.tasks.corefs.entities import proper_name
    from lfcli.pipelines.tasks.corefs.families import Families, given_and_surname

    assert given_and_surname("Sir Walter Elliot") == ("walter", "elliot")
    assert given_and_surname("Mr. Darcy") is None and given_and_surname("Darcy") is None
    text = "Miss Anne came. Sir Walter Elliot and Anne Elliot and Elizabeth Elliot. Mr. Elliot bowed."
    families, forms = Families(), NameForms(text)
    for said in ("Sir Walter Elliot", "Anne Elliot", "Mr. William Elliot"):
        families.read(said, forms.apply(proper_name(said), said))
    assert set(families.members["elliot"]) == {"walter", "anne", "william"}
    assert families.can_be(proper_name("Mr. Elliot"), forms) == 1  # the one the book calls "Mr. ... Elliot"
    assert families.can_be(proper_name("Miss Elliot"), forms) == 1  # Anne: Walter is "Sir", William "Mr."
    families.read("Elizabeth Elliot", proper_name("Elizabeth Elliot"), gender="f")  # her chain's "she"
    assert families.can_be(proper_name("Miss Elliot"), forms) == 2  # Anne or Elizabeth
    assert families.can_be(proper_name("Anne Elliot"), forms) == -1  # a full name is no family's name
    families.read("Lady Mary Elliot", proper_name("Lady Mary Elliot"))
    assert families.can_be(proper_name("Miss Elliot"), forms) == 2  # Lady Mary is no Miss
    families.read("Bill Elliot", proper_name("Bill Elliot"), gender="m")  # his chain's "he"
    assert families.can_be(proper_name("Miss Elliot"), forms) == 2


def test_two_short_forms_of_one_name_stay_apart():
    """"Bessie" and "Eliza" are both short for Elizabeth, and in one book two women."""
    text = "Eliza came in. She sat.\n\nBessie laughed. She ran."
    assert not together(chains(text, [["Eliza", "She#0"], ["Bessie", "She#1"]]), "Eliza", "Bessie")


# -- titles a reader can use -------------------------------------------------------------------


@pytest.mark.parametrize("title, usable", [
    ("the captain", True), ("my mother", True), ("her ladyship", True), ("Mr. Darcy", True),
    ("Some of them", False), ("you, I know you", False), ("the officers themselves", False),
    ("a great friend of hers", False), ("I found I", False), ("Agnes, looking to me", False),
    ("US", False), ("the old man in the corner of the room", False),
])
def test_a_chain_title_is_never_a_clause_nor_ends_in_a_pronoun(title, usable):
    from lfcli.pipelines.view.chain_titles import chain_name, usable_title

    assert usable_title(title) is usable
    chain = {"mentions": [{"text": title, "start": 0, "end": 1}, {"text": "them", "start": 5, "end": 9}] * 2}
    assert (chain_name(chain) == title) is usable  # else the chain's pronouns title it: "they (unnamed)"


def test_a_pronoun_set_in_capitals_titles_no_chain():
    text = "US, he cried. We went. US again."
    reader, at = reader_and_spans(text)
    doc = DocumentEntities(reader)
    assert doc.name_of([(at["US"][0],) * 2, (at["US"][1],) * 2]) is None


@pytest.mark.parametrize("ashton, joins", [(1, True), (5, False)])
def test_a_pet_name_goes_to_the_principal_holder_of_its_full_name(ashton, joins):
    """"Harry" beside Henry Wotton (11 mentions) and Sir Henry Ashton: Henry Wotton's when Ashton
    is spoken of once; nobody's when Ashton is spoken of about half as often."""
    text = ("Henry Wotton spoke. " * 6 + "He nodded. " * 5 + "\n\n" + "Henry Ashton rode. " * ashton
            + "\n\nLater Harry laughed. He left.")
    wotton = [f"Henry Wotton#{k}" for k in range(6)] + [f"He#{k}" for k in range(5)]
    found = chains(text, [wotton, [f"Henry Ashton#{k}" for k in range(ashton)], ["Harry", "He#5"]])
    assert together(found, "Henry Wotton", "Harry") is joins


def test_a_name_said_alone_of_a_woman_is_no_man_s_for_the_honorific_of_her_brother():
    """"Mr. Peggotty" is a man; "Peggotty" said alone, with "she" after it, is his sister."""
    from lfcli.pipelines.tasks.corefs.name_pronouns import women_alone

    text = "Mr. Peggotty came in. " + "Peggotty said that she was glad. " * 5 + "Mr. Darcy left. Darcy said he was tired."
    forms = NameForms(text)
    assert "peggotty" not in forms.men and "darcy" in forms.men
    assert women_alone(text, {"peggotty", "darcy"}) == {"peggotty"}
    assert women_alone(text.replace("she was", "he was"), {"peggotty"}) == set()
    assert women_alone("Clara Peggotty said that she was glad. " * 5, {"peggotty"}) == set()  # a full name


def test_a_given_name_two_people_bear_joins_neither_by_itself():
    """"Charles" beside "Charles Musgrove" and "Charles Hayter": neither's by the name alone, even
    where a window's wrong "she" leaves only Charles Hayter's chain fitting."""
    text = "Charles Musgrove came. He sat. And she nodded.\n\nCharles Hayter ran. He hid.\n\nCharles laughed. He left."
    found = chains(text, [["Charles Musgrove", "He#0", "she"], ["Charles Hayter", "He#1"], ["Charles#2", "He#2"]])
    assert not together(found, "Charles Hayter", "Charles")
    one = text.replace("Charles Musgrove", "Henry Musgrove")  # one Charles in the book: "Charles" is his
    found = chains(one, [["Henry Musgrove", "He#0", "she"], ["Charles Hayter", "He#1"], ["Charles#1", "He#2"]])
    assert together(found, "Charles Hayter", "Charles")


def test_a_pet_name_joins_a_full_name_spelled_a_letter_apart_from_the_table_s():
    """"Tony" is short for Anthony in the table; the book's "Antony" is the same name."""
    from lfcli.pipelines.tasks.corefs.pet_names import spelled_apart

    assert spelled_apart("antony", "anthony") and spelled_apart("phillip", "philip")
    assert not spelled_apart("john", "joan") and not spelled_apart("maria", "marie") and not spelled_apart("ann", "anne")
    text = "Antony Dewhurst came in. He sat.\n\nLater Tony laughed. He left."
    assert together(chains(text, [["Antony Dewhurst", "He#0"], ["Tony", "He#1"]]), "Antony Dewhurst", "Tony")


def test_a_name_dialogue_spells_with_an_apostrophe_joins_its_full_form():
    """"Em'ly" is Emily with a letter left out: a pet name no table lists, which the spelling shows."""
    from lfcli.pipelines.tasks.corefs.pet_names import elided

    assert elided("em'ly", "emily") and elided("sam'l", "samuel")
    assert not elided("em'ly", "emly") and not elided("o'brien", "obrien") and not elided("em'ly", "emma")
    text = "Emily Peggotty came in. She sat.\n\nLater Em\u2019ly laughed. She left."
    found = chains(text, [["Emily Peggotty", "She#0"], ["Em ly", "She#1"]])  # "Em ly": the two words of "Em\u2019ly"
    assert together(found, "Emily Peggotty", "Em\u2019ly")


def test_a_lady_is_one_with_her_maiden_name_where_the_book_says_whom_she_married():
    """"Marguerite St. Just married Sir Percy Blakeney": her "Lady Blakeney" chain and her
    "Marguerite" chain are one, though a window left a few mentions of her maiden name apart."""
    text = ("Marguerite St. Just married Sir Percy Blakeney one fine day.\n\nMarguerite smiled. She sat. "
            "Marguerite sang. She laughed.\n\nLady Blakeney rose. She left.\n\nMarguerite St. Just wept.")
    groups = [["Marguerite#1", "She#0", "Marguerite#2", "She#1"], ["Lady Blakeney", "She#2"], ["Marguerite St Just#1"]]
    assert together(chains(text, groups), "Marguerite", "Lady Blakeney")


def test_mrs_before_a_title_makes_the_title_no_woman_s_name():
    """"Mrs. Doctor Strong" is the Doctor's wife: "the Doctor" stays no woman's."""
    forms = NameForms("I saw Mrs.\nDoctor Strong come. The Doctor sat. Miss Annie ran.")
    assert "doctor" not in forms.women and forms.women.get("annie") == "miss"


def test_a_rank_joins_the_full_name_of_a_chain_mostly_called_by_it():
    """"The Doctor" joins the chain of "Doctor Strong"; not Mr. Mell's, whom the book once calls
    "Doctor Mell"."""
    def joined(dominant: str) -> bool:
        text = f"{dominant} came. {dominant} sat. Doctor Smith nodded. He left.\n\nThe Doctor laughed. He ran."
        groups = [[f"{dominant}#0", f"{dominant}#1", "Doctor Smith", "He#0"], ["The Doctor", "He#1"]]
        return together(chains(text, groups), "Doctor Smith", "The Doctor")

    assert joined("Doctor Smith") and not joined("Mr. Smith")


def test_his_royal_highness_is_the_book_s_prince():
    from lfcli.pipelines.tasks.corefs.entities import proper_name, royal_style

    assert royal_style("His Royal Highness") == proper_name("the Prince")._replace(gender="m")
    assert royal_style("his majesty") is None and royal_style("the highness") is None
    text = "The Prince came. He sat.\n\nHis Royal Highness laughed. He left."
    assert together(chains(text, [["The Prince", "He#0"], ["His Royal Highness", "He#1"]]), "The Prince", "His Royal Highness")


def test_a_bare_surname_joins_the_chain_of_its_lord_that_says_his_lordship():
    """"Lowborough" and the chain of "Lord Lowborough" and "his lordship" are one man; "Mr. Lowborough"
    is not the lord's (another form of address)."""
    text = "Lord Lowborough came. He sat. Then his lordship smiled.\n\nLowborough laughed. He left.\n\nMr. Smith ran."
    found = chains(text, [["Lord Lowborough", "He#0", "his lordship"], ["Lowborough#1", "He#1"]])
    assert together(found, "Lord Lowborough", "Lowborough")
    other = text.replace("Lowborough laughed", "Mr. Lowborough laughed")
    found = chains(other, [["Lord Lowborough", "He#0", "his lordship"], ["Mr. Lowborough", "He#1"]])
    assert not together(found, "Lord Lowborough", "Mr. Lowborough")


def test_a_shared_given_name_joins_only_the_full_name_its_own_chain_says():
    """"John", of John Silver and John Trelawney: the "John" chain that says "John Silver" joins
    Silver's; a "Charles" chain that never says "Charles Hayter" stays apart from Hayter's chain,
    though a window put one "Charles" there."""
    text = ("John Silver came. He sat.\n\nJohn Trelawney rode. He ran.\n\nJohn laughed. John Silver ate. He left.\n\n"
            "Charles Hayter came. Charles smiled. He sat.\n\nCharles Musgrove rode.\n\nCharles laughed. He left.")
    found = chains(text, [["John Silver#0", "He#0"], ["John Trelawney", "He#1"], ["John#2", "John Silver#1", "He#2"],
                          ["Charles Hayter", "Charles#1", "He#3"], ["Charles Musgrove"], ["Charles#3", "He#4"]])
    assert together(found, "John Silver", "John")
    assert sum("Charles" in c for c in found) == 2  # Hayter's chain with its own "Charles", and the last one apart


def test_a_middle_name_is_no_one_s_surname(monkeypatch):
    """Pass `full_names`: "Mr. Eyre" (Jane's uncle) is no part of "St. John Eyre Rivers"; "Mr.
    Rivers" is. (`short_names` off: it still reads a name's words only.)"""
    monkeypatch.setenv("LFCLI_COREF_OFF", "short_names")
    from lfcli.pipelines.tasks.corefs.entities import proper_name
    from lfcli.pipelines.tasks.corefs.full_names import same_person

    full = proper_name("Paul Eyre Rivers")
    assert same_person(proper_name("Mr. Eyre"), None, full)  # the words alone would say yes
    for other, joins in (("Mr. Eyre", False), ("Mr. Rivers", True)):
        text = f"Paul Eyre Rivers came. He sat. He spoke.\n\n{other} wrote. He died."
        found = chains(text, [["Paul Eyre Rivers", "He#0", "He#1"], [other, "He#2"]])
        assert together(found, "Paul Eyre Rivers", other) is joins


def test_a_pet_name_chain_a_window_gave_a_they_gives_its_pet_names_to_the_holder():
    """"Lord Tony" put in a chain with a plural "they" cannot be one with Lord Antony's chain;
    its mentions of "Lord Tony" go to him and the "they" stays out; a "Tony" that is nobody's
    full name's pet name stays where it was, and so does the pet name of a chain bigger than
    the holder's."""
    text = ("Lord Antony Dewhurst came in. He sat. He smiled. He ate.\n\nLater Lord Tony laughed and Sir Andrew "
            "smiled. They left. Lord Tony ran.")
    antony = ["Lord Antony Dewhurst", "He#0", "He#1", "He#2"]
    found = chains(text, [antony, ["Lord Tony#0", "They", "Lord Tony#1"], ["Sir Andrew"]])
    assert together(found, "Lord Antony Dewhurst", "Lord Tony")
    assert not together(found, "Lord Antony Dewhurst", "They")
    plain = text.replace("Antony", "Arthur")
    found = chains(plain, [["Lord Arthur Dewhurst", "He#0", "He#1", "He#2"], ["Lord Tony#0", "They", "Lord Tony#1"], ["Sir Andrew"]])
    assert together(found, "Lord Tony", "They") and not together(found, "Lord Arthur Dewhurst", "Lord Tony")
    few = chains(text, [["Lord Antony Dewhurst"], ["Lord Tony#0", "They", "Lord Tony#1"], ["Sir Andrew"]])
    assert together(few, "Lord Tony", "They")  # the pet name's chain is the bigger: it keeps its name


def test_book_evidence_never_joins_two_the_book_names_as_two_nor_two_genders_nor_one_scene():
    """The windows of evidence_case put "Annie" and "Mrs. Strong" in one chain, five windows
    running: joined (the case above). Not where the book writes "Annie and Mrs. Strong", nor
    where Annie is a "he", nor on two windows' word (one scene)."""
    text, windows, paragraphs = evidence_case(alone="Annie and Mrs. Strong walked.")
    assert not together(chains(text, windows, paragraphs), "Annie", "Mrs. Strong")
    text, windows, paragraphs = evidence_case()
    he = text.replace("Annie smiled. She sang.", "Annie smiled. He sang.")

    def renamed(m: str) -> str:  # Annie's "She#(2k+1)" is now her paragraph's "He#k"; Mrs. Strong's "She#k"
        if not m.startswith("She#"):
            return m
        k = int(m[4:])
        return f"He#{k // 2}" if k % 2 else f"She#{k // 2}"
    he_windows = [[[renamed(m) for m in chain] for chain in window] for window in windows]
    assert not together(chains(he, he_windows, paragraphs), "Annie", "Mrs. Strong")
    text, windows, paragraphs = evidence_case(paragraphs=3)
    assert not together(chains(text, windows, paragraphs), "Annie", "Mrs. Strong")


@pytest.mark.parametrize("talks, joins", [(1, True), (2, False)])
def test_book_evidence_outweighs_one_quote_of_the_two_talking_but_not_two(talks, joins):
    """A quote where Annie's "I" speaks to "Mrs. Strong" says two people; one such quote is a
    window's slip against five windows that say one, two are a talk (EVIDENCE_OVER_QUOTES)."""
    from lfcli.pipelines.tasks.corefs.book_evidence import EVIDENCE_OVER_QUOTES

    assert EVIDENCE_OVER_QUOTES * 1 <= 5 < EVIDENCE_OVER_QUOTES * 2
    said = " ".join(["\u201cMrs. Strong, I am here,\u201d said Annie."] * talks)
    text, windows, paragraphs = evidence_case(alone=said)
    last = len(paragraphs)
    windows = windows + [[[f"Mrs. Strong#{3 + k}" for k in range(talks)], [f"I#{k}" for k in range(talks)] + [f"Annie#{3 + k}" for k in range(talks)]]]
    found = chains(text, windows, paragraphs + [(last, last)])
    assert together(found, "Annie", "Mrs. Strong") is joins


def test_book_evidence_leaves_a_chain_known_by_what_it_is_to_someone():
    """"my aunt", which the narration says five times (so pass narrated_kin makes it a chain of
    its own), linked to Mrs. Strong in every window, is still the narrator's aunt."""
    text, windows, paragraphs = evidence_case(paragraphs=10)
    aunt = text.replace("Annie smiled.", "My aunt smiled.")
    windows = [[[m.replace("Annie#", "My aunt#") for m in chain] for chain in window] for window in windows]
    assert not together(chains(aunt, windows, paragraphs), "My aunt", "Mrs. Strong")


def test_a_pet_name_chain_that_gave_its_name_away_is_no_holder_of_it_for_the_next():
    """"Ellen" (beside a "they") gives its mentions to Helena Graham; then "Nell", a pet name of
    Ellen and of Helena, finds one holder, Helena, not the chain left nameless (a whole novel
    once stopped here)."""
    text = ("Helena Graham came in. She sat. She smiled. She ate. She slept.\n\nEllen laughed and Tom smiled. "
            "They left. Ellen ran.\n\nNell sang. She left. She ran. She hid.")
    found = chains(text, [["Helena Graham", "She#0", "She#1", "She#2", "She#3"], ["Ellen#0", "They", "Ellen#1"], ["Tom"],
                          ["Nell", "She#4", "She#5", "She#6"]])
    assert together(found, "Helena Graham", "Ellen", "Nell") and not together(found, "Helena Graham", "They")


@pytest.mark.parametrize("surname, joins", [("Dewhurst", True), ("Micawber", False)])
def test_a_pet_name_said_with_a_surname_the_holder_never_says_is_a_name_of_its_own(surname, joins):
    """The table knows "Emma" as a form of Emily; a chain that says "Emma Micawber" is Mrs.
    Micawber, not little Em'ly, whose chain never says Micawber. "Emma Dewhurst" beside "Emily
    Dewhurst" shares its surname and stays the pet name's case."""
    text = f"Emily Dewhurst came in. She sat.\n\nLater Emma {surname} laughed. She left. Emma ran. Emma sat."
    found = chains(text, [["Emily Dewhurst", "She#0"], [f"Emma {surname}", "She#1", "Emma#1", "Emma#2"]])
    assert together(found, "Emily Dewhurst", "Emma") is joins


@pytest.mark.parametrize("apart, joins", [(False, True), (True, False)])
def test_a_full_name_joins_no_two_the_book_writes_as_two(apart, joins):
    """Pass `full_names`: "Ham Peggotty" said once makes "Mr. Peggotty" a part of Ham's name,
    but the book that says "Mr. Peggotty and Ham" has two people."""
    both = " Mr. Peggotty and Ham went out." if apart else " Then they went out."
    text = (f"Ham Peggotty came. He sat. Ham spoke. Ham ate.\n\nMr. Peggotty wrote. He smiled. Mr. Peggotty sang.{both}")
    found = chains(text, [["Ham Peggotty", "He#0", "Ham#1", "Ham#2"], ["Mr. Peggotty#0", "He#1", "Mr. Peggotty#1"]])
    assert together(found, "Ham", "Mr. Peggotty") is joins
