"""Encoding long texts: in stretches of paragraphs, into compact arrays, giving the very tokens
and character spans of encoding the whole text at once (pipelines/infer/tokenize.py).

Real tokenizers trained here (BERT's WordPiece, RoBERTa's byte-level BPE, a SentencePiece-style
Unigram with Metaspace) on the README's example documents; the stretch size is shrunk so that
these texts are cut many times, at every kind of line break they hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from checkpoints import make_tokenizer
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from lfcli.pipelines.infer.tokenize import PROBE, DocumentTokenizer, Offsets, stretches

ROOT = Path(__file__).resolve().parents[1]
LITBANK = ROOT.parent / "shared" / "data" / "litbank" / "original"


def example_text() -> str:
    docs = sorted((ROOT / "examples" / "docs").glob("*.txt"))
    # joined with the kinds of breaks a book has: blank lines, indented lines, CRLF, a form feed
    return "\n\n".join(p.read_text(encoding="utf-8") for p in docs) + "\r\n\r\n  Indented.\n\f\nThe end.\n"


def _trained(kind: str, folder: Path) -> Tokenizer:
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "wordpiece":
        make_tokenizer(folder)
        return Tokenizer.from_file(str(folder / "tokenizer.json"))
    lines = example_text().splitlines()
    if kind == "bytelevel":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "</s>", "<pad>"],
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    else:  # SentencePiece-style: a word-start marker that a stretch's first word would get too
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.train_from_iterator(lines, trainers.UnigramTrainer(vocab_size=300, special_tokens=["<s>", "</s>", "<unk>"],
                                                               unk_token="<unk>"))
    return tok


@pytest.fixture(scope="module", params=["wordpiece", "bytelevel", "metaspace"])
def tokenizer(request, tmp_path_factory):
    return _trained(request.param, tmp_path_factory.mktemp(request.param))


@pytest.mark.parametrize("size", [40, 300, 2000])
def test_stretches_give_the_whole_texts_tokens(tokenizer, size):
    text = example_text()
    tok = DocumentTokenizer(tokenizer, 64, stretch_chars=size)
    whole = tokenizer.encode(text, add_special_tokens=False)
    got = tok.encode(text)
    assert len(stretches(text, size)) > 1 or size >= len(text)
    assert list(got.ids) == whole.ids
    assert list(got.offsets) == [tuple(o) for o in whole.offsets]


@pytest.mark.parametrize("at_once", [1, 3])
def test_stretches_in_batch_encoder_groups_keep_order_and_offsets(tokenizer, at_once, monkeypatch):
    """The stretches go through the batch encoder a group at a time (tokenize.STRETCHES_AT_ONCE):
    groups of 1 or 3 over some 30 stretches give the whole text's tokens, in order."""
    import lfcli.pipelines.infer.tokenize as tokenize

    monkeypatch.setattr(tokenize, "STRETCHES_AT_ONCE", at_once)
    text = example_text()
    tok = DocumentTokenizer(tokenizer, 64, stretch_chars=40)
    if not tok.stretch_safe:
        pytest.skip("this tokenizer reads a long text whole")
    assert len(stretches(text, 40)) > 3 * at_once
    whole = tokenizer.encode(text, add_special_tokens=False)
    got = tok.encode(text)
    assert list(got.ids) == whole.ids
    assert list(got.offsets) == [tuple(o) for o in whole.offsets]


def test_the_probe_decides_which_tokenizers_are_cut(tmp_path):
    assert DocumentTokenizer(_trained("wordpiece", tmp_path / "w"), 64).stretch_safe
    assert DocumentTokenizer(_trained("bytelevel", tmp_path / "b"), 64).stretch_safe
    metaspace = _trained("metaspace", tmp_path / "m")
    cut = [metaspace.encode(PROBE[a:b], add_special_tokens=False).ids for a, b in stretches(PROBE, 1)]
    same = [i for ids in cut for i in ids] == metaspace.encode(PROBE, add_special_tokens=False).ids
    assert DocumentTokenizer(metaspace, 64).stretch_safe == same  # a marker per stretch: whole texts


@pytest.mark.parametrize("size", [1, 7, 50, 10_000])
def test_stretches_partition_the_text_at_line_breaks(size):
    text = example_text()
    parts = stretches(text, size)
    assert parts[0][0] == 0 and parts[-1][1] == len(text)
    assert all(a < b for a, b in parts) and all(b == c for (_, b), (c, _) in zip(parts, parts[1:]))
    for _, cut in parts[:-1]:  # each cut opens a whitespace run that holds a line break
        assert not text[cut - 1].isspace() and text[cut].isspace()
        run = text[cut:len(text) - len(text[cut:].lstrip())]
        assert "\n" in run


def test_a_text_without_line_breaks_is_one_stretch():
    assert stretches("word " * 1000, 100) == [(0, 5000)]


def test_offsets_read_like_a_list_of_spans():
    spans = [(0, 3), (4, 9), (9, 10)]
    flat = Offsets()
    for a, b in spans:
        flat.flat.extend((a, b))
    assert len(flat) == 3 and list(flat) == spans and flat == spans
    assert flat[1] == (4, 9) and flat[-1] == (9, 10) and flat[1:] == spans[1:]
    with pytest.raises(IndexError):
        flat[3]


@pytest.mark.skipif(not LITBANK.is_dir(), reason="needs ../shared/data/litbank (LitBank's novels)")
def test_a_whole_novel_in_stretches(tmp_path):
    text = (LITBANK / "105_persuasion.txt").read_text(encoding="utf-8")
    tokenizer = _trained("wordpiece", tmp_path)
    tok = DocumentTokenizer(tokenizer, 64, stretch_chars=20_000)
    whole = tokenizer.encode(text, add_special_tokens=False)
    got = tok.encode(text)
    assert len(stretches(text, 20_000)) > 10
    assert list(got.ids) == whole.ids and list(got.offsets) == [tuple(o) for o in whole.offsets]
