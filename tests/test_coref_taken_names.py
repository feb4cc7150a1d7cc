"""Pass `taken_names` (taken_names.py): a name a speaker or narrator says is theirs joins their
chain, once the quotes have their speakers."""

from __future__ import annotations

from test_coref_quotes import reader_over_words

from lfcli.pipelines.tasks.corefs.entities import Profile
from lfcli.pipelines.tasks.corefs.taken_names import NARRATOR_LEAST, SAID, TAKEN, TO_COME, join_taken_names, taken_names


def test_the_turns_that_say_a_name_is_ones_own_are_found_and_no_others():
    text = ("\u201cMy name is Umbopa,\u201d he said. \u201cI am Sergeant Cuff.\u201d "
            "\u201cCall me Cordelia.\u201d The name upon the cards was Mrs. Graham, which "
            "appellation I mean henceforth to adopt. "
            "\u201cI am Mr. Hale's daughter. I am not Jane. I am sorry.\u201d "
            "\u201cI shall probably be Lady Lowborough some day.\u201d \u201cI shall be Lady Catherine's guest. "
            "I will be Mary.\u201d")
    found = [(text[at:at + 2], said, taken) for at, said, taken in taken_names(text)]
    assert found == [("My", "Umbopa", SAID), ("I ", "Sergeant Cuff", SAID), ("me", "Cordelia", SAID),
                     ("I ", "Mrs. Graham", TAKEN), ("I ", "Lady Lowborough", TO_COME)]


def profile_of(reader):
    def profile(spans) -> Profile:
        p = Profile()
        for s in spans:
            p.add(reader.mention(*s))
        return p
    return profile


def spoken(name: str = "Umbopa", speaker_known: bool = True, speaker_word: str = "he"):
    """A quote in which its speaker says "My name is X", and X named twice in narration
    beforehand, in chains of their own. Returns (groups, speakers after the pass, the speaker's
    chain, X's chain)."""
    text = (f"{name} waited. {name} smiled. The stranger spoke.\n\n"
            f"\u201cMy name is {name},\u201d said {speaker_word}.")
    reader, spans = reader_over_words(text)
    words = [text[a:z] for a, z in spans]
    every = lambda w: [(i, i) for i, x in enumerate(words) if x == w]  # noqa: E731
    size = len(reader_over_words(name)[1])  # "Mrs. Graham": three tokens
    named = [(i - size + 1, i) for i, _ in every(name.split()[-1])][:2]  # the two in narration
    man = every("stranger")[0]
    said_by = every(speaker_word)[-1]
    groups = [[man, every("My")[0], said_by], named]
    speakers = [0 if speaker_known else None]
    return groups, join_taken_names(reader, groups, speakers, profile_of(reader))


def test_a_speaker_who_says_my_name_is_x_takes_the_chain_of_x_and_its_quotes():
    groups, speakers = spoken()
    assert len(groups[0]) == 5 and groups[1] == [] and speakers == [0]
    groups, speakers = spoken(name="Mrs. Graham", speaker_word="she")
    assert len(groups[0]) == 5 and groups[1] == []


def test_an_unknown_speaker_a_name_said_once_or_another_gender_joins_nothing():
    groups, _ = spoken(speaker_known=False)  # the quote's "my" is nobody's for sure
    assert groups[1] != []
    groups, _ = spoken(name="Mrs. Graham", speaker_word="he")  # a "he" says he is Mrs. Graham: a wrong speaker
    assert groups[1] != []


def test_a_narrator_who_takes_a_name_joins_its_chain_and_a_narration_i_of_no_narrator_does_not():
    prose = "I walked to the inn. " * NARRATOR_LEAST
    text = (prose + "Mrs. Graham was a stranger there. Mrs. Graham sat down.\n\n"
            "The name upon the cards was Mrs. Graham, which appellation I mean henceforth to adopt.")
    reader, spans = reader_over_words(text)
    words = [text[a:z] for a, z in spans]
    every = lambda w: [(i, i) for i, x in enumerate(words) if x == w]  # noqa: E731
    graham = [(i - 2, i) for i, _ in every("Graham")]
    for narration in (every("I"), every("I")[-3:]):  # a narrator's chain; three "I" of no narrator
        groups = [list(narration), graham[:2], [graham[2]]]
        join_taken_names(reader, groups, [], profile_of(reader))
        assert (groups[1] == []) == (len(narration) > NARRATOR_LEAST)


def test_a_married_name_does_not_join_a_chain_that_bears_another_but_a_taken_one_does():
    text = ("Mrs. Huntingdon came. Mrs. Huntingdon sat. Lady Lowborough came. Lady Lowborough sat.\n\n"
            "\u201cI am Lady Lowborough,\u201d said she.")
    reader, spans = reader_over_words(text)
    words = [text[a:z] for a, z in spans]
    every = lambda w: [(i, i) for i, x in enumerate(words) if x == w]  # noqa: E731
    wife = [(i - 2, i) for i, _ in every("Huntingdon")]
    lady = [(i - 1, i) for i, _ in every("Lowborough")]
    groups = [wife + [every("I")[0], every("she")[0]], lady[:2], [lady[2]]]
    join_taken_names(reader, groups, [0], profile_of(reader))
    assert groups[1] == lady[:2]  # the speaker is Mrs. Huntingdon: a quote likely given to the wrong one
    groups = [[every("I")[0], every("she")[0]], lady[:2], [lady[2]]]
    join_taken_names(reader, groups, [0], profile_of(reader))
    assert groups[1] == []


def test_a_married_name_to_come_joins_its_speaker_unless_the_two_speak_to_each_other():
    """"I shall probably be Lady Lowborough some day" gives the speaker the chain of that name; a
    speaker who, in another quote, says "you" to Lady Lowborough's chain is not her (the quote
    was given to the wrong woman)."""
    def run(talk: bool):
        text = ("Annabella came. Annabella sat. Lady Lowborough came. Lady Lowborough sat.\n\n"
                "\u201cI shall probably be Lady Lowborough some day,\u201d said she.\n\n"
                + ("\u201cI thank you,\u201d said Annabella to Lady Lowborough." if talk else "They left."))
        reader, spans = reader_over_words(text)
        words = [text[a:z] for a, z in spans]
        every = lambda w: [(i, i) for i, x in enumerate(words) if x == w]  # noqa: E731
        lady = [(i - 1, i) for i, _ in every("Lowborough")]  # the third is the one said in the quote
        speaker = every("Annabella") + [every("I")[0], every("she")[0]]
        held = lady[:2]
        if talk:  # that quote's "I" is Annabella's, its "you" Lady Lowborough's
            speaker.append(every("I")[1])
            held = sorted(held + [every("you")[0], lady[3]])
        groups = [sorted(speaker), held, [lady[2]]]
        join_taken_names(reader, groups, [0, 0] if talk else [0], profile_of(reader))
        return groups
    assert run(talk=False)[1] == []
    assert run(talk=True)[1] != []
