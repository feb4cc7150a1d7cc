"""What is no mention and no speech in any text (pipelines/tasks/corefs/cleanup.py), and the
title a rare name no longer gives (document.title_of): each pass of the non-fiction clean-up,
on the spans and quotes of licence text, and a whole licence through `lfcli corefs`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lfcli.pipelines.tasks.corefs.cleanup import (cut_names, in_any, is_word_mention, one_reader, speech_quotes,
                                                  url_spans)
from lfcli.pipelines.tasks.corefs.document import title_of
from lfcli.pipelines.tasks.corefs.quotes import quote_spans

LICENCE = ('"This License" refers to version 3 of the GNU General Public License.\n\n'
           '"Copyright" also means copyright-like laws that apply to other kinds of works.\n\n'
           'Each licensee is addressed as "you".  "Licensees" and "recipients" may be individuals.\n\n'
           'To "modify" a work means to copy from or adapt all or part of the work. See <https://fsf.org/>.')
NOVEL = ('"Where have you been?" asked Anna.\n\n"Out," said Teodor. "The sea was "rough" today."\n\n'
         '"Yes," she said, "I know."')


def test_a_mention_holds_a_word():
    for text in ("Anna", "the old house", "I", "you", "its", "The GNU General Public License", "1984"):
        assert is_word_mention(text), text
    for text in (".", ",", "://", "/", "c", "b)", "is", "the", "Of", "is a free, copyleft license", "the License is",
                 "The licenses for most software and other practical works are designed to take away your freedom."):
        assert not is_word_mention(text), text


def test_url_parts_are_found():
    text = "See https://www.gnu.org/licenses/ or write to gnu@gnu.org today."
    spans = url_spans(text)
    assert [text[a:z] for a, z in spans] == ["https://www.gnu.org/licenses/", "gnu@gnu.org"]
    assert in_any((text.index("gnu.org"), text.index("gnu.org") + 7), spans) and not in_any((0, 3), spans)


def test_a_mention_that_cuts_a_name_of_its_chain_leaves():
    text = "The GNU General Public License is free. Anna, the keeper, climbed. Mr. Darcy came."

    def at(words: str) -> tuple[int, int]:
        return text.index(words), text.index(words) + len(words)

    spans = [(0, 15), (0, 22), (0, 30), (4, 18), at("Anna"), at("Anna, the keeper"), at("Mr. Darcy"), at("Darcy")]
    kept = cut_names(text, spans)
    assert [text[a:z] for a, z in kept] == ["The GNU General Public License", "Anna", "Anna, the keeper", "Mr. Darcy"]


def test_defined_terms_are_no_speech_and_dialogue_stays_speech():
    found = speech_quotes(LICENCE, quote_spans(LICENCE))
    assert found == []  # "This License", "Copyright", "modify": defined; "you", "Licensees": terms of a licence
    dialogue = quote_spans(NOVEL)
    assert speech_quotes(NOVEL, dialogue) == dialogue  # a novel's speech, its one plain short quote too


def test_the_reader_addressed_is_one_chain_where_nobody_speaks():
    texts = {0: "you", 1: "your", 2: "the Program", 3: "you", 4: "You", 5: "yourself", 6: "it", 7: "you"}
    groups = [[0, 1], [2, 6], [3, 4, 5], [7, 2]]
    joined = one_reader(groups, lambda m: texts[m])
    assert joined == [[0, 1, 3, 4, 5, 7], [2, 6], [2]]  # [7, 2] is half "you": its "you" goes to the reader
    assert one_reader([[2, 6]], lambda m: texts[m]) == [[2, 6]]  # no reader chain: nothing moves


def test_a_rare_name_does_not_title_a_chain_its_phrase_names_far_more():
    assert title_of(Counter({"GNU": 2}), Counter({"this License": 40})) == "this License"
    assert title_of(Counter({"GNU": 2}), Counter({"this License": 40}), rare_names=False) == "GNU"
    assert title_of(Counter({"Darcy": 12}), Counter({"the gentleman": 40})) == "Darcy"  # said often: a name
    assert title_of(Counter({"Darcy": 2}), Counter({"the gentleman": 6})) == "Darcy"  # not far more


LICENCES = Path("/usr/share/common-licenses")


@pytest.mark.skipif(not (LICENCES / "GPL-3").is_file(), reason="no /usr/share/common-licenses/GPL-3 on this machine")
def test_a_licence_through_corefs_has_no_wordless_mention_nor_speech(tmp_path):
    """The real GPL-3 text with the bundled small tier: no mention without a word, no speech,
    no chain titled by a fragment, one "you" chain."""
    from typer.testing import CliRunner

    from lfcli.cli import app

    try:
        from lfcli.models.bundled import resolve_model

        resolve_model("minilm-l6-long-litbank-coref")
    except Exception as exc:  # noqa: BLE001 - the bundled weights' package is an extra
        pytest.skip(f"the bundled coreference model is not available: {exc}")
    r = CliRunner().invoke(app, ["corefs", str(LICENCES / "GPL-3"), "--quiet"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout.splitlines()[0])
    mentions = [m["text"] for c in row["chains"] for m in c["mentions"]]
    assert mentions and all(is_word_mention(t) for t in mentions)
    assert row["quotes"] == []
    assert all(is_word_mention(c["title"].replace(" (unnamed)", "")) for c in row["chains"])
    addressed = [sum(m["text"].lower() in ("you", "your") for m in c["mentions"]) for c in row["chains"]]
    assert max(addressed) >= 0.9 * sum(addressed)  # one chain holds the reader's "you"
