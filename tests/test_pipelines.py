"""The document flow: windows, global-attention policies, batching, order, long documents."""

from __future__ import annotations

import pytest
import torch
from checkpoints import make_checkpoint
from tolerance import assert_rows_close

from lfcli.models import LongformerForQuestionAnswering
from lfcli.pipelines.errors import UsageError
from lfcli.pipelines.infer.policies import check_policy, global_positions
from lfcli.pipelines.io.readers import Document
from lfcli.pipelines.infer.runner import Pipeline, check_options
from lfcli.pipelines.tasks.corefs.task import CorefTask
from types import SimpleNamespace
from lfcli.pipelines.infer.tokenize import DocumentTokenizer, owned_ranges, plan_windows


@pytest.fixture(scope="session")
def encoder_dir(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("enc"), "LongformerModel", max_tokens=64, attention_window=16)


@pytest.fixture(scope="session")
def tok(encoder_dir):
    return DocumentTokenizer.from_folder(encoder_dir, 64)


@pytest.mark.parametrize("n,size,overlap", [(1, 10, 2), (10, 10, 2), (11, 10, 2), (100, 10, 3), (57, 16, 4), (30, 7, 7)])
def test_windows_cover_every_token_once(n, size, overlap):
    spans = plan_windows(n, size, overlap)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(e - s <= size for s, e in spans)
    owned = owned_ranges(spans)
    # owned ranges partition [0, n) and sit inside their windows
    assert [t for lo, hi in owned for t in range(lo, hi)] == list(range(n))
    assert all(s <= lo <= hi <= e for (s, e), (lo, hi) in zip(spans, owned))


def test_window_template_follows_tokenizer(tok):
    enc = tok.encode("the court held that the contract was void")
    w = tok.window(enc.ids, (0, len(enc.ids)))
    assert tok.tokenizer.id_to_token(w.input_ids[0]) == "[CLS]"
    assert tok.tokenizer.id_to_token(w.input_ids[-1]) == "[SEP]"
    q = tok.encode("what was void?").ids
    p = tok.window(enc.ids, (2, 5), q)
    assert p.input_ids[p.question_span[0]: p.question_span[1]] == q
    assert p.input_ids[p.content_start: p.content_start + 3] == enc.ids[2:5]
    assert p.token_type_ids[p.content_start] == 1 and p.token_type_ids[p.question_span[0]] == 0


def test_policies_give_intended_positions(tok):
    text = "It was cold. The clocks struck thirteen.\n\nShe said that he would come back."
    enc = tok.encode(text)
    w = tok.window(enc.ids, (0, len(enc.ids)))
    words = lambda ps: [text[enc.offsets[p - w.content_start][0]: enc.offsets[p - w.content_start][1]] for p in ps if p >= w.content_start]
    assert global_positions("none", w, text, enc.offsets) == []
    assert global_positions("cls", w, text, enc.offsets) == [0]
    sent = global_positions("sentence-starts", w, text, enc.offsets)
    assert sent[0] == 0 and words(sent) == ["It", "The", "She"]
    para = global_positions("paragraph-starts", w, text, enc.offsets)
    assert words(para) == ["It", "She"]
    rx = global_positions("regex:clock|come", w, text, enc.offsets)
    assert "come" in words(rx) and any(x.startswith("clock") for x in words(rx))
    q = tok.encode("who came back?").ids
    qw = tok.window(enc.ids, (0, 5), q)
    assert global_positions("question", qw, text, enc.offsets) == [0, *range(*qw.question_span)]
    with pytest.raises(UsageError):
        check_policy("sentences")
    with pytest.raises(UsageError):
        check_policy("regex:(")


def test_model_receives_the_policy_positions(encoder_dir):
    pipe = Pipeline("embed", str(encoder_dir), global_policy="sentence-starts", max_length=64)
    doc = Document("d", "It was cold. The clocks struck thirteen. She left.")
    prepared = pipe.task.prepare(0, doc)
    batch = pipe._tensors(prepared.items)
    got = batch["global_attention_mask"][0].nonzero().flatten().tolist()
    assert got == prepared.items[0].global_positions and len(got) == 4  # [CLS] + three sentences


def test_output_order_and_batching(encoder_dir):
    texts = ["word " * n for n in (3, 150, 1, 40, 7, 300, 12)]
    docs = [Document(str(i), t) for i, t in enumerate(texts)] + [Document("empty", "   ")]
    docs.insert(3, Document("bad", None, error="bad bytes"))
    pipe = Pipeline("embed", str(encoder_dir), batch_size=3, max_tokens=100, max_length=64, chunk_docs=4)
    rows = list(pipe.run(docs))
    assert [r["id"] for r in rows] == [d.id for d in docs]
    assert rows[3]["error"] == "bad bytes"
    assert "no tokens" in rows[-1]["error"]
    # a batch never exceeds the budget
    items = [it for i, d in enumerate(docs[:3]) for it in pipe.task.prepare(i, d).items]
    for b in pipe._batches(items):
        assert len(b) <= 3 and (len(b) == 1 or len(b[0]) * len(b) <= 100)


def test_rows_come_out_every_few_seconds_not_per_64_documents(encoder_dir):
    """The first chunk is one document; later chunks hold about chunk_chars characters, at most
    chunk_docs documents: a killed job loses seconds, not a whole chunk of long documents."""
    consumed = []

    def documents():
        for i in range(20):
            consumed.append(i)
            yield Document(str(i), "the court held that " * 40)

    for chunk_chars, consumed_by_second_row in ((1, 2), (2_000, 4), (10**9, 9)):  # 800 characters a document
        consumed.clear()
        pipe = Pipeline("embed", str(encoder_dir), max_length=64, chunk_docs=8, chunk_chars=chunk_chars)
        rows = pipe.run(documents())
        assert next(rows)["id"] == "0" and consumed == [0]
        next(rows)
        assert len(consumed) == consumed_by_second_row
        assert [r["id"] for r in rows] == [str(i) for i in range(2, 20)]


def test_chunks_are_cut_by_counts_not_by_the_clock(encoder_dir, monkeypatch):
    """A slow machine (each clock reading 100 s on) cuts the job where a fast one does, so the
    same windows share a batch and one input gives the same rows on every run."""
    import itertools

    import pipelines.infer.runner as runner

    def run(clock) -> tuple[list[int], list[dict]]:
        consumed = []

        def documents():
            for i in range(12):
                consumed.append(i)
                yield Document(str(i), "the court held that " * (10 + 7 * i))
        if clock is not None:
            monkeypatch.setattr(runner.time, "perf_counter", clock)
        pipe = Pipeline("embed", str(encoder_dir), max_length=64, chunk_docs=8, chunk_chars=3_000)
        read_by_each_row, rows = [], []
        for row in pipe.run(documents()):
            read_by_each_row.append(len(consumed))  # how far the reader was when the row came out
            rows.append(row)
        return read_by_each_row, rows

    fast = run(None)
    ticks = itertools.count(0, 100.0)
    slow = run(lambda: next(ticks))
    assert fast[0] == slow[0] and len(set(fast[0])) > 2  # the same chunks, and more than two
    assert [r["embedding"] for r in fast[1]] == [r["embedding"] for r in slow[1]]


def test_check_options_refuses_before_loading():
    for bad in (dict(dtype="fp64"), dict(global_policy="sentences"), dict(pooling="max"), dict(top_k=0),
                dict(max_length=0), dict(labels=[("law", "")]), dict(labels=[("a", ""), ("b", "")], temperature=0),
                dict(device="cuda:99"), dict(attention_backend="fast")):
        with pytest.raises(UsageError):
            check_options("embed", **bad)
    assert check_options("embed", device="cpu").type == "cpu"
    assert check_options("embed", device="auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_batching_does_not_change_results(encoder_dir):
    docs = [Document(str(i), "the court held that " * (i + 1)) for i in range(6)]
    # float32: under --dtype auto a bf16 CPU would round each batch's sums to bf16
    one = list(Pipeline("embed", str(encoder_dir), batch_size=1, max_length=64, dtype="float32").run(docs))
    many = list(Pipeline("embed", str(encoder_dir), batch_size=6, max_length=64, dtype="float32").run(docs))
    assert_rows_close(many, one)  # ids and token counts exactly, the embeddings to float rounding


def test_coref_clusters_merge_through_shared_mentions(tok):
    text = "Elizabeth walked . She smiled . Elizabeth laughed . she left"
    enc = tok.encode(text)
    from lfcli.pipelines.infer.tasks import Prepared

    task = CorefTask(tok, "none")
    # window 1 links mentions 0 and 3; window 2 links 3 and 6: one chain of three
    starts = [k for k, ch in enumerate(text) if ch != " " and (k == 0 or text[k - 1] == " ")]  # each word's first character
    first_token = {a: i for i, (a, b) in reversed(list(enumerate(enc.offsets)))}
    tokens = [first_token[c] for c in starts]  # a word's first token
    m = lambda word_index: (tokens[word_index], tokens[word_index])
    results = [[[m(0), m(3)]], [[m(3), m(6)], [m(9), m(9)]]]
    # window 1 keeps the mentions before word 5, window 2 the rest (tokenize.owned_ranges)
    windows = [SimpleNamespace(owned=(0, tokens[5])), SimpleNamespace(owned=(tokens[5], len(tokens)))]
    row = task.finish(Document("d", text), Prepared(enc, windows), results)
    texts = [[x["text"] for x in c] for c in (chain["mentions"] for chain in row["chains"])]
    assert len(texts) == 1 and len(texts[0]) == 3
    assert all(text[x["start"]: x["end"]] == x["text"] for c in row["chains"] for x in c["mentions"])


def _planted_qa_model(folder, answer_token_id):
    """A real QA checkpoint whose layers pass embeddings through unchanged (output
    projections zeroed) and whose head points at one word: it answers with that word
    wherever it appears, which lets a test check windowing and character offsets."""
    model = LongformerForQuestionAnswering.from_pretrained(folder)
    with torch.no_grad():
        for layer in model.longformer.encoder.layer:
            for dense in (layer.attention.output.dense, layer.output.dense):
                dense.weight.zero_()
                dense.bias.zero_()
        direction = torch.randn(model.config.hidden_size)
        direction /= direction.norm()
        model.longformer.embeddings.word_embeddings.weight[answer_token_id] = 20 * direction
        model.qa_outputs.weight[:] = direction
        model.qa_outputs.bias.zero_()
    model.save_pretrained(folder)


def test_qa_finds_a_planted_answer_past_token_5000(tmp_path):
    folder = make_checkpoint(tmp_path / "qa", "LongformerForQuestionAnswering", max_tokens=256, attention_window=32)
    tok = DocumentTokenizer.from_folder(folder, 256)
    answer_id = tok.encode("netherfield").ids
    assert len(answer_id) == 1
    _planted_qa_model(folder, answer_id[0])
    filler = "The committee will meet on Tuesday to discuss the budget. "
    before = filler * 500
    text = before + "Elizabeth walked to Netherfield alone. " + filler * 20
    n_before = len(tok.encode(before).ids)
    assert n_before > 5000
    rows = list(Pipeline("qa", str(folder), question="Where did Elizabeth walk?").run([Document("novel", text)]))
    row = rows[0]
    assert row["answer"] == "Netherfield"
    assert text[row["start"]: row["end"]] == "Netherfield" and row["start"] == text.index("Netherfield")


def test_large_batches_of_mixed_lengths_bound_their_padding(encoder_dir):
    """A large --batch-size on short documents of mixed lengths: a batch past 8 windows keeps
    its padding under 20% of its tokens (each window is padded to the batch's longest), and
    the rows are the same as with small batches."""
    from lfcli.pipelines.infer.runner import PADDING_FREE_BATCH, PADDING_SHARE

    texts = ["word " * n for n in (40, 38, 35, 30, 29, 28, 25, 22, 20, 18, 15, 12, 10, 9, 6, 4, 3, 2, 1, 1)]
    docs = [Document(str(i), t) for i, t in enumerate(texts)]
    big = Pipeline("embed", str(encoder_dir), batch_size=64, max_length=64, dtype="float32")
    items = [it for i, d in enumerate(docs) for it in big.task.prepare(i, d).items]
    batches = list(big._batches(items))
    assert sorted(len(it) for b in batches for it in b) == sorted(len(it) for it in items)
    assert len(batches) > 1  # one batch of 20 would be half padding
    for b in batches:
        padded, real = len(b[0]) * len(b), sum(map(len, b))
        assert len(b) <= PADDING_FREE_BATCH or padded - real <= PADDING_SHARE * padded
    small = list(Pipeline("embed", str(encoder_dir), batch_size=1, max_length=64, dtype="float32").run(docs))
    assert_rows_close(list(big.run(docs)), small)


def test_embed_windows_overlap_only_when_short(tok):
    from lfcli.pipelines.tasks.embed.task import NO_OVERLAP_FROM, EmbedTask
    from lfcli.pipelines.tasks.qa.task import QATask

    embed = EmbedTask(tok, "cls")
    assert embed.overlap(NO_OVERLAP_FROM) == embed.overlap(4094) == 0
    assert embed.overlap(510) == 127 and embed.overlap(NO_OVERLAP_FROM - 1) == (NO_OVERLAP_FROM - 1) // 4
    assert QATask(tok, "question", question="Who?").overlap(4094) == 1023  # the other tasks keep a quarter


def test_long_windows_side_by_side_give_the_vector_of_overlapping_ones():
    """The bundled model on a document of ~9,300 tokens in windows of 4,096: without overlap
    (the default) the vector is the overlapping windows' one to cosine 0.999."""
    import glob
    from pathlib import Path

    from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

    if bundled_available(DEFAULT_MODEL) is not None:
        pytest.skip(f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}")
    examples = Path(__file__).resolve().parents[1] / "examples" / "docs"
    text = "\n\n".join([Path(f).read_text(encoding="utf-8") for f in sorted(glob.glob(str(examples / "*.txt")))] * 5)
    pipe = Pipeline("embed", dtype="float32")
    side_by_side = list(pipe.run([Document("a", text)]))[0]
    assert len(pipe.task.prepare(0, Document("a", text)).items) == 3  # 9,315 tokens: no overlap
    pipe.task.overlap = lambda size: size // 4
    overlapping = list(pipe.run([Document("a", text)]))[0]
    cos = torch.nn.functional.cosine_similarity(torch.tensor(side_by_side["embedding"]),
                                                torch.tensor(overlapping["embedding"]), dim=0)
    assert side_by_side["n_tokens"] > 9000 and cos > 0.999


def test_embed_window_results_hold_no_view_of_the_batch(encoder_dir):
    """A window's result keeps small tensors (at most the batch's pooled vectors, which the
    batch computes in one product): a view of the batch's hidden states would keep every batch
    of a long document alive until its last window ran."""
    pipe = Pipeline("embed", model=str(encoder_dir), max_length=64, pooling="cls")
    prepared = pipe.task.prepare(0, Document("a", "The court held that the lease ran on. " * 40))
    assert len(prepared.items) > 2
    batch = prepared.items[:2]
    for vector_sum, _, first_token, _ in pipe._forward(batch):
        for t in (vector_sum, first_token):
            assert t.untyped_storage().nbytes() <= len(batch) * t.numel() * t.element_size()
