"""The CoNLL-2012 coreference reader: brackets (nested, same-start, one-token, several per
token), text and spans, ids and the ids filter, errors; and the real LitBank files checked
against their brat stand-off annotation when ../shared/data is here."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest

from lfcli.pipelines.io.conll import parse_conll, read_conll, read_ids, select_documents
from lfcli.pipelines.errors import InputError
from shared_data import DATA  # noqa: E402


LITBANK = DATA / "litbank"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is missing: the shared data folder (../shared/data or $LFCLI_SHARED) is not here")
    return path


def conll(name: str, sentences: list[list[tuple[str, str]]], part: str | None = "0", sep: str = "\t") -> str:
    """A CoNLL-2012 document: (word, coreference column) per token, 12 columns like LitBank's."""
    head = f"#begin document ({name})" + (f"; part {part}" if part is not None else "")
    lines = [head]
    for sentence in sentences:
        for i, (word, coref) in enumerate(sentence):
            lines.append(sep.join([name, part or "0", str(i), word] + ["_"] * 8 + [coref]))
        lines.append("")
    lines.append("#end document")
    return "\n".join(lines) + "\n"


# "Sir Walter Elliot , of Kellynch Hall , said his own hall ." / "He left it ."
STORY = [
    [("Sir", "(0|(5"), ("Walter", "-"), ("Elliot", "0)|5)"), (",", "-"), ("of", "-"),
     ("Kellynch", "(1"), ("Hall", "1)"), (",", "-"), ("said", "-"),
     ("his", "(2|(0)"), ("own", "-"), ("hall", "2)"), (".", "-")],
    [("He", "(0)"), ("left", "-"), ("it", "(1)|(2)"), (".", "-")],
]


def test_brackets_text_and_spans():
    [doc] = parse_conll(conll("story_brat", STORY).splitlines(), "/data/story.conll")
    assert doc.id == "story" and doc.name == "story_brat" and doc.part == "0"
    assert doc.text == "Sir Walter Elliot , of Kellynch Hall , said his own hall .\nHe left it .\n"
    assert doc.sentences == [(0, 13), (13, 17)]
    assert all(doc.text[a:b] == tok for tok, (a, b) in zip(doc.tokens, doc.token_spans))
    # entity 0 and entity 5 both start on "Sir" and end on "Elliot": the same span twice, kept
    # once, in the cluster listed first (entity 5 is left with nothing); "(2|(0)" opens "his own
    # hall" and is the one-token "his"
    assert doc.cluster_ids == ["0", "1", "2"]
    assert doc.token_clusters == [[(0, 3), (9, 10), (13, 14)], [(5, 7), (15, 16)], [(9, 12)]]
    assert doc.clusters == [[(0, 17), (44, 47), (59, 61)], [(23, 36), (67, 69)], [(44, 56)]]


def test_a_mention_in_two_clusters_stays_in_the_first():
    [doc] = parse_conll(conll("d", STORY).splitlines())
    # "it" is listed for entities 1 and 2: the reference scorer keeps the first listing
    assert [[doc.mention_text(s) for s in c] for c in doc.clusters] == [
        ["Sir Walter Elliot", "his", "He"], ["Kellynch Hall", "it"], ["his own hall"]]


def test_nested_mentions_of_one_entity_and_same_start_mentions():
    # "(1" "(1" "1)" "1)": the inner mention closes first; "(3|(7)" starts a long mention of 3
    # and a one-token mention of 7 on the same token; "(4|(4" two mentions of 4 start together
    sentence = [("a", "(1"), ("b", "(1"), ("c", "1)"), ("d", "1)"),
                ("e", "(3|(7)"), ("f", "3)"), ("g", "(4|(4"), ("h", "4)"), ("i", "4)")]
    [doc] = parse_conll(conll("n", [sentence]).splitlines())
    got = dict(zip(doc.cluster_ids, doc.token_clusters))
    assert got == {"1": [(0, 4), (1, 3)], "3": [(4, 6)], "7": [(4, 5)], "4": [(6, 8), (6, 9)]}
    spans = dict(zip(doc.cluster_ids, doc.clusters))
    assert [doc.text[a:b] for a, b in spans["1"]] == ["a b c d", "b c"]
    assert [doc.text[a:b] for a, b in spans["4"]] == ["g h", "g h i"]
    assert doc.cluster_ids == ["1", "7", "3", "4"]  # in order of first mention: (4, 5) before (4, 6)


def test_space_separated_columns_no_part_and_comments():
    # the reference scorer's own test files: 5 space-separated columns, no "part"
    text = "#begin document (LuoTest);\n# a comment\nt1 0 0 a1 (0\nt1 0 1 a2 0)\nt1 0 2 x -\n\nt2 0 0 b (0)\n#end document\n"
    [doc] = parse_conll(text.splitlines(), "x.conll")
    assert (doc.name, doc.part, doc.text) == ("LuoTest", "0", "a1 a2 x\nb\n")
    assert doc.token_clusters == [[(0, 2), (3, 4)]]


def test_several_documents_in_one_file_get_name_and_part_ids(tmp_path):
    path = tmp_path / "ontonotes.v4_gold_conll"
    path.write_text(conll("bc/cctv/00/cctv_0000", [[("A", "(1)")]], part="000")
                    + conll("bc/cctv/00/cctv_0000", [[("B", "-")]], part="001"), encoding="utf-8")
    docs = read_conll(path)
    assert [d.id for d in docs] == ["bc/cctv/00/cctv_0000_000", "bc/cctv/00/cctv_0000_001"]
    assert [d.part for d in docs] == ["000", "001"]
    assert docs[1].clusters == []


def test_folder_and_ids_filter(tmp_path):
    folder = tmp_path / "conll"
    (folder / "sub").mkdir(parents=True)
    for name in ("b_two", "a_one"):
        (folder / f"{name}.conll").write_text(conll(f"{name}_brat", [[("x", "(0)"), ("y", "(0)")]]), encoding="utf-8")
    (folder / "sub" / "c_three.conll").write_text(conll("c_three_brat", [[("z", "-")]]), encoding="utf-8")
    (folder / "notes.txt").write_text("not CoNLL")
    (folder / ".hidden.conll").write_text("broken")
    assert [d.id for d in read_conll(folder)] == ["a_one", "b_two", "c_three"]
    ids = tmp_path / "dev.ids"
    ids.write_text("c_three\n\n# comment\nb_two_brat\n")  # a file stem, and a #begin name
    assert read_ids(ids) == ["c_three", "b_two_brat"]
    assert [d.id for d in read_conll(folder, ids=ids)] == ["b_two", "c_three"]
    assert [d.id for d in read_conll(folder, ids=["a_one"])] == ["a_one"]
    with pytest.raises(InputError, match=r"1 listed document id not in the CoNLL files: 'nope'"):
        select_documents(read_conll(folder), ["a_one", "nope"])
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("nothing")
    with pytest.raises(InputError, match="no CoNLL files"):
        read_conll(empty)
    with pytest.raises(InputError, match="no such file or folder"):
        read_conll(tmp_path / "missing")


@pytest.mark.parametrize(
    "body, message",
    [
        ("d 0 0 a (1\nd 0 1 b -\n#end document\n", r"x.conll:4: mention of entity 1 opens but is never closed"),
        ("d 0 0 a 1)\n#end document\n", r"x.conll:2: mention of entity 1 closes but was never opened"),
        ("d 0 0 a (1(\n#end document\n", r"x.conll:2: malformed coreference column"),
        ("d 0 0 a\n#end document\n", r"x.conll:2: expected at least 5 columns"),
        ("d 0 0 a (1)\n", r"x.conll:2: document 'd' has no '#end document'"),
    ],
)
def test_malformed_files_raise_one_line_errors(body, message):
    with pytest.raises(InputError, match=message):
        parse_conll(("#begin document (d); part 0\n" + body).splitlines(), "x.conll")
    with pytest.raises(InputError, match="outside a document"):
        parse_conll(["d 0 0 a -"], "x.conll")


def test_duplicate_document_ids_are_an_error(tmp_path):
    for sub in ("one", "two"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "same.conll").write_text(conll("same", [[("a", "-")]]))
    with pytest.raises(InputError, match="'same' appears twice"):
        read_conll(tmp_path)


# ---------------------------------------------------------------------------
# real data


def _brat(path: Path) -> tuple[dict[str, set], set]:
    """brat .ann of LitBank: coreference mentions ("Name-ID start end") by entity, and all spans."""
    chains: dict[str, set] = collections.defaultdict(set)
    spans: set = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("T"):
            continue
        _, info, _text = line.split("\t")
        kind, start, end = info.split(" ")
        spans.add((int(start), int(end)))
        if re.search(r"-\d+$", kind):
            chains[kind].add((int(start), int(end)))
    return chains, spans


# LitBank's CoNLL and brat releases of this one document group a few mentions differently
# (e.g. "the river" chains); every other document agrees exactly.
BRAT_DIFFERS = {"1400_great_expectations"}


def test_litbank_matches_its_brat_text_and_annotation():
    conll_dir = need(LITBANK / "coref" / "conll")
    brat = LITBANK / "coref" / "brat"
    docs = read_conll(conll_dir)
    assert len(docs) == 90
    differs = set()
    for doc in docs:
        # the same text as the brat .txt (two of those lack the final newline)
        txt = (brat / f"{doc.id}.txt").read_text(encoding="utf-8")
        assert doc.text.rstrip("\n") == txt.rstrip("\n"), doc.id
        assert all(doc.text[a:b] == t for t, (a, b) in zip(doc.tokens, doc.token_spans))
        for cluster, token_cluster in zip(doc.clusters, doc.token_clusters):
            for (a, b), (lo, hi) in zip(cluster, token_cluster):
                assert doc.text[a:b] == " ".join(doc.tokens[lo:hi])
        chains, spans = _brat(brat / f"{doc.id}.ann")
        mentions = {m for c in doc.clusters for m in c}
        linked = set().union(*chains.values())
        assert linked <= mentions, doc.id  # every brat coreference mention is in the CoNLL
        assert mentions <= spans, doc.id  # and the CoNLL has no mention brat lacks
        # restricted to brat's coreference mentions, the CoNLL clusters are brat's chains
        restricted = {frozenset(set(c) & linked) for c in doc.clusters} - {frozenset()}
        if restricted != {frozenset(c) for c in chains.values()}:
            differs.add(doc.id)
    assert differs <= BRAT_DIFFERS


def test_litbank_split_files_select_80_and_10_documents():
    conll_dir = need(LITBANK / "coref" / "conll")
    docs = read_conll(conll_dir)
    train = select_documents(docs, LITBANK / "train.ids")
    dev = select_documents(docs, LITBANK / "dev.ids")
    assert (len(train), len(dev)) == (80, 10)
    assert not {d.id for d in train} & {d.id for d in dev}
    assert [d.id for d in dev] == sorted(read_ids(LITBANK / "dev.ids"))
