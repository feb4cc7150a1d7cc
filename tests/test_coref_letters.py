"""Letters copied into the prose (letters.py): found by their salutation and signature, and
their narration "I" given to the signer (speakers.by_writer), the narrator's "I" after them
given back."""

from __future__ import annotations

from test_coref_quotes import reader_over_words

from lfcli.pipelines.tasks.corefs.letters import signed_letters
from lfcli.pipelines.tasks.corefs.speakers import give_quotes

NAMED = "Isabella came. Isabella went. Isabella wept. Isabella sang.\n\n"  # the book names the signer


def test_a_letter_runs_from_its_salutation_to_its_signature_and_postscripts():
    letter = ("DEAR ELLEN, it begins,--I came last night. I am tired and I am sad.\n\n"
              "I do hate him--I am wretched!--ISABELLA.")
    text = NAMED + "I read it to you.\n\n" + letter + "\n\nI folded the letter."
    (found,) = signed_letters(text)
    assert (found.signer, text[found.start:found.end]) == ("ISABELLA", letter)
    on_a_line = ("Dear Livesey--As I do not know when I shall see you, I write.\n\n"
                 "I am well and I am ready to sail.\n     Isabella\n\n"
                 "Postscript--I forgot to say that I sail soon.\n\n"
                 "I have a boatswain who pipes.\n     J. T.")
    (found,) = signed_letters(NAMED + on_a_line + "\n\nYou can fancy my glee.")
    assert found.signer == "Isabella" and (NAMED + on_a_line)[found.end - 5:found.end] == "J. T."


def test_no_signature_a_quote_a_name_the_book_never_says_or_a_wrapped_last_word_is_no_letter():
    body = "DEAR ELLEN,--I came last night. I am tired and I am sad, I think.\n\n"
    assert signed_letters(NAMED + body + "I do hate him.\n\nThe end.") == []  # never signed
    assert signed_letters(NAMED + "\u201c" + body + "I do hate him--ISABELLA.\u201d") == []  # read out in quotes
    assert signed_letters(body + "I do hate him--ROWENA.") == []  # the book never names a Rowena
    wrapped = body + "Write to me, I pray, care of the Blackstone,\nIsabella."
    assert signed_letters(NAMED + wrapped) == []  # a sentence's last word on a line of its own
    few = "DEAR ELLEN,--The weather held all week and the roads were dry and the corn was in.--ISABELLA."
    assert signed_letters(NAMED + few) == []  # not told in the first person


PROSE = "I walked to the inn. " * 10 + "\n\n"  # ten narration "I": a first-person narration


def words_of(text: str):
    """A reader over `text`, its token spans, and a function: a word -> its one-token spans."""
    reader, spans = reader_over_words(text)
    words = [text[a:z] for a, z in spans]
    return reader, spans, words, lambda w: [(i, i) for i, x in enumerate(words) if x == w]


def holder(groups, span) -> int:
    return next(k for k, g in enumerate(groups) if span in g)


def test_a_letter_s_i_goes_to_its_signer_and_the_narrator_keeps_the_rest(monkeypatch):
    text = (PROSE + NAMED + "DEAR ELLEN,--I came last night. I am tired and I am sad.--ISABELLA.\n\n"
            + "I folded the letter. I slept.")
    reader, spans, _, every = words_of(text)
    narration, isabella = every("I"), every("Isabella")
    groups = [list(narration), list(isabella)]
    give_quotes(reader, groups)
    letter_i = [s for s in narration if text.index("DEAR") < spans[s[0]][0] < text.index("ISABELLA.")]
    assert len(letter_i) == 3 and {holder(groups, s) for s in letter_i} == {holder(groups, isabella[0])}
    rest = {holder(groups, s) for s in narration if s not in letter_i}
    assert len(rest) == 1 and rest != {holder(groups, isabella[0])}
    monkeypatch.setenv("LFCLI_COREF_OFF", "signed_letters")
    groups = [list(narration), list(isabella)]
    give_quotes(reader, groups)
    assert len({holder(groups, s) for s in narration}) == 1


def test_a_letter_signed_with_a_given_name_another_man_shares_goes_to_the_signer():
    """Signed "John Trelawney": the chain that says "John" most is John Silver's, which says
    another full name with "John" in it; the letter goes to Trelawney's."""
    book = ("John Silver came. John Silver went. John ran. John sat. John ate. John hid. "
            "Trelawney came. Trelawney sat. Trelawney ran.\n\n")
    text = (PROSE + book + "Dear Livesey--I came last night. I am tired and I am sad.\n     John Trelawney\n\n"
            + "I folded the letter. I slept.")
    reader, spans, words, every = words_of(text)
    silver = [(i, i + 1) if words[i + 1] == "Silver" else (i, i) for i, _ in every("John") if words[i + 1] != "Trelawney"]
    squire = every("Trelawney")[:2]  # the third, in no chain, is the book's naming him
    groups = [every("I"), list(silver), list(squire)]
    give_quotes(reader, groups)
    in_letter = [s for s in every("I") if text.index("Dear") < spans[s[0]][0] < text.index("John Trelawney")]
    assert len(in_letter) == 3 and {holder(groups, s) for s in in_letter} == {holder(groups, squire[0])}


def test_a_letter_under_a_heading_that_names_its_writer_is_left_to_the_heading():
    from lfcli.pipelines.tasks.corefs.letters import Letter, with_letters
    from lfcli.pipelines.tasks.corefs.narrators import Section

    letter = Letter(100, 200, "Anna", (190, 194))
    headed = [Section(0, "ANNA BELL", (0, 9)), Section(300, "OTTO HAHN", (300, 309))]
    assert with_letters(headed, [letter]) == headed
    untitled = [Section(0, "", (0, 0))]  # a chapter title: no writer
    assert [s.writer for s in with_letters(untitled, [letter])] == ["", "Anna", ""]
    assert [(s.start, s.writer) for s in with_letters([], [letter])] == [(100, "Anna"), (200, "")]
