"""lfcli's Longformer computes what transformers' Longformer computes, for the same weights.

Random tiny transformers models (every bias and norm randomised, see conftest.randomize_) are
saved with transformers' `save_pretrained` and loaded with lfcli's `from_pretrained`, and the
other way round. fp32 outputs must agree within 1e-4 (they typically agree within 1e-6).

transformers' own limits shape the grid: it pads the input to a multiple of the largest window
and then needs that padded length to be a multiple of every layer's window, so per-layer
windows like [4, 8, 6] only run on lengths whose padded length is a multiple of 24; and its
chunked kernel fails for attention_window=2 (one key each side), so the smallest window here is 4
(window 2 is covered against the reference backend in test_backends.py).
"""

from __future__ import annotations

import pytest
import torch

from conftest import BOS, FIRST_ORDINARY_ID, PAD, SEP, TINY, make_batch, max_abs_diff

transformers = pytest.importorskip("transformers")

from lfcli.models import (  # noqa: E402
    ARCHITECTURES,
    LongformerForQuestionAnswering,
    LongformerModel,
    question_global_attention_mask,
)

ATOL = 1e-4
MAX_TOKENS = TINY["max_position_embeddings"] - PAD - 1  # RoBERTa-style position table


def lfcli_outputs(model, ids, mask, glob, token_type_ids=None) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model(ids, mask, glob, token_type_ids)
    return list(out) if isinstance(out, tuple) else [out]


def hf_outputs(model, ids, mask, glob, token_type_ids=None) -> list[torch.Tensor]:
    kwargs = dict(input_ids=ids, attention_mask=mask, token_type_ids=token_type_ids)
    if glob is not None:
        kwargs["global_attention_mask"] = glob
    with torch.no_grad():
        out = model(**kwargs)
    if hasattr(out, "start_logits"):
        return [out.start_logits, out.end_logits]
    if hasattr(out, "logits"):
        return [out.logits]
    return [out.last_hidden_state]


def assert_same(ours: list[torch.Tensor], theirs: list[torch.Tensor], rows: torch.Tensor | None = None):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape, (a.shape, b.shape)
        assert a.dtype == torch.float32
        if rows is not None:  # compare real tokens only
            a, b = a[rows], b[rows]
        diff = max_abs_diff(a, b)
        assert diff < ATOL, f"max abs difference {diff:.3g} (allowed {ATOL})"


# --- the encoder over a grid of windows, lengths, padding and global tokens --------------------

# (id, config overrides, real lengths per sample, padded length, global positions per sample)
ENCODER_CASES = [
    ("uniform-window-padding-mixed-globals", {}, [13, 9], None, [[0, 5], [2]]),
    ("no-global-mask", {}, [13, 10], None, None),
    ("global-mask-all-zero", {}, [11, 11], None, [[], []]),
    ("globals-in-one-sample-only", {}, [12, 7], None, [[], [3, 4]]),
    ("global-on-padded-position", {}, [10, 6], None, [[0], [0, 8]]),
    ("global-only-on-padding", {}, [10, 6], None, [[], [7, 9]]),
    ("global-first-and-last", {}, [9, 9], None, [[0, 8], [8]]),
    ("clustered-middle-globals", {"attention_window": 8}, [40, 33], None, [[18, 19, 20, 21], [15, 16]]),
    # G * H >= hidden: lfcli projects every position for the global rows (the other path).
    ("many-globals-projected-path", {"attention_window": 8}, [50, 37], None, [list(range(0, 50, 5)), [1, 2, 3]]),
    ("every-token-global", {}, [6, 4], None, [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3]]),
    ("length-not-multiple-of-window", {"attention_window": 8}, [29, 21], None, [[0], [0]]),
    ("shorter-than-window", {"attention_window": 16}, [5, 3], None, [[0], []]),
    ("length-1", {}, [1], None, None),
    ("length-1-global", {}, [1, 1], None, [[0], []]),
    ("length-2", {}, [2, 1], None, [[1], [0]]),
    ("extra-padding-columns", {}, [7, 4], 15, [[0], [1]]),
    ("per-layer-windows-4-8-6-n17", {"attention_window": [4, 8, 6]}, [17, 12], None, [[0], [3]]),
    ("per-layer-windows-4-8-6-n24", {"attention_window": [4, 8, 6]}, [24, 20], None, [[0, 23], []]),
    ("per-layer-windows-4-8-6-n45", {"attention_window": [4, 8, 6]}, [45, 30], None, [[10], [0, 1]]),
    ("per-layer-windows-8-4-16-n11", {"attention_window": [8, 4, 16]}, [11, 6], None, [[0], [5]]),
    ("per-layer-windows-8-4-16-n3", {"attention_window": [8, 4, 16]}, [3], None, None),
    ("two-layers", {"num_hidden_layers": 2, "attention_window": [16, 4]}, [30, 25], None, [[0], [2]]),
    ("full-position-table", {}, [MAX_TOKENS, 100], None, [[0, MAX_TOKENS - 1], [50]]),
]


@pytest.mark.parametrize(
    "overrides, lengths, n, globals_", [c[1:] for c in ENCODER_CASES], ids=[c[0] for c in ENCODER_CASES]
)
def test_encoder_matches_transformers(hf_checkpoint, overrides, lengths, n, globals_):
    folder, theirs = hf_checkpoint("LongformerModel", **overrides)
    ours = LongformerModel.from_pretrained(folder)
    assert not ours.training
    ids, mask, glob = make_batch(lengths, n, globals_=globals_, seed=len(lengths) * 31 + sum(lengths))
    assert_same(lfcli_outputs(ours, ids, mask, glob), hf_outputs(theirs, ids, mask, glob))


@pytest.mark.parametrize("chunk_rows", [1, 7, 40])
def test_layer_tail_in_row_chunks_matches_transformers(hf_checkpoint, monkeypatch, chunk_rows):
    """Inference runs everything after the attention (output projection, residuals,
    LayerNorms, FFN) on `chunk_rows` positions at a time (B*n rows flattened, so a chunk can
    straddle two samples and end on a ragged tail), and projects with oneDNN from a few rows
    up: same numbers as transformers."""
    from lfcli.kernels import fused
    from lfcli.models.fast_paths import RowChunks  # where chunk_rows lives

    monkeypatch.setattr(RowChunks, "chunk_rows", chunk_rows)
    monkeypatch.setattr(fused, "ONEDNN_LINEAR_ROWS", 8)
    folder, theirs = hf_checkpoint("LongformerModel", num_hidden_layers=2, attention_window=8)
    ours = LongformerModel.from_pretrained(folder)
    ids, mask, glob = make_batch([29, 17], globals_=[[0], [3]], seed=5)
    assert_same(lfcli_outputs(ours, ids, mask, glob), hf_outputs(theirs, ids, mask, glob))


def test_encoder_padding_does_not_change_real_tokens(hf_checkpoint):
    """A padded sample's real tokens equal the same sample alone (also in transformers)."""
    folder, _ = hf_checkpoint("LongformerModel", attention_window=8)
    ours = LongformerModel.from_pretrained(folder)
    ids, mask, glob = make_batch([19, 12], globals_=[[0, 4], [0, 4]])
    both = lfcli_outputs(ours, ids, mask, glob)[0]
    alone = lfcli_outputs(ours, ids[1:, :12], mask[1:, :12], glob[1:, :12])[0]
    assert max_abs_diff(both[1, :12], alone[0]) < 1e-5


# --- the task heads ------------------------------------------------------------------------------

def qa_batch(question_lengths: list[int], context_lengths: list[int], n: int | None = None, seed: int = 0):
    """`<s> q </s></s> context </s>` per sample, right-padded: exactly three separators each."""
    rows = []
    gen = torch.Generator().manual_seed(seed)
    for ql, cl in zip(question_lengths, context_lengths):
        q = torch.randint(FIRST_ORDINARY_ID, TINY["vocab_size"], (ql,), generator=gen).tolist()
        c = torch.randint(FIRST_ORDINARY_ID, TINY["vocab_size"], (cl,), generator=gen).tolist()
        rows.append([BOS, *q, SEP, SEP, *c, SEP])
    n = n or max(len(r) for r in rows)
    ids = torch.full((len(rows), n), PAD, dtype=torch.long)
    mask = torch.zeros(len(rows), n, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r)
        mask[b, : len(r)] = 1
    return ids, mask


HEAD_CASES = [
    # (id, arch, config overrides, batch kind, lengths, global positions or None = head's default)
    ("mlm-no-global", "LongformerForMaskedLM", {}, "plain", [14, 9], None),
    ("mlm-globals", "LongformerForMaskedLM", {}, "plain", [14, 9], [[0, 7], [3]]),
    ("seqcls-default-global", "LongformerForSequenceClassification", {"num_labels": 3}, "plain", [17, 11], None),
    ("seqcls-explicit-globals", "LongformerForSequenceClassification", {"num_labels": 3}, "plain", [17, 11], [[0, 9], [0]]),
    ("seqcls-per-layer-windows", "LongformerForSequenceClassification",
     {"num_labels": 3, "attention_window": [8, 4, 16]}, "plain", [21, 5], None),
    ("qa-default-global", "LongformerForQuestionAnswering", {}, "qa", ([3, 6], [12, 4]), None),
    ("qa-default-global-long-question", "LongformerForQuestionAnswering", {"attention_window": 8},
     "qa", ([12, 1], [20, 30]), None),
    ("qa-explicit-globals", "LongformerForQuestionAnswering", {}, "qa", ([3, 6], [12, 4]), [[0, 1], [0]]),
    ("tokcls-no-global", "LongformerForTokenClassification", {"num_labels": 5}, "plain", [16, 13], None),
    ("tokcls-globals", "LongformerForTokenClassification", {"num_labels": 5}, "plain", [16, 13], [[0], [12]]),
]


def head_batch(kind, lengths, globals_):
    if kind == "qa":
        ids, mask = qa_batch(*lengths)
        glob = None
        if globals_ is not None:
            glob = torch.zeros_like(ids)
            for b, positions in enumerate(globals_):
                glob[b, positions] = 1
        return ids, mask, glob
    return make_batch(lengths, globals_=globals_, seed=7)


@pytest.mark.parametrize(
    "arch, overrides, kind, lengths, globals_", [c[1:] for c in HEAD_CASES], ids=[c[0] for c in HEAD_CASES]
)
def test_heads_match_transformers(hf_checkpoint, arch, overrides, kind, lengths, globals_):
    folder, theirs = hf_checkpoint(arch, **overrides)
    ours = ARCHITECTURES[arch].from_pretrained(folder)
    assert type(ours).__name__ == arch and not ours.training
    ids, mask, glob = head_batch(kind, lengths, globals_)
    assert_same(lfcli_outputs(ours, ids, mask, glob), hf_outputs(theirs, ids, mask, glob))


def test_question_global_mask_matches_transformers():
    from transformers.models.longformer.modeling_longformer import _compute_global_attention_mask

    ids, _ = qa_batch([3, 1, 7], [5, 9, 2], n=20)
    ours = question_global_attention_mask(ids, SEP)
    theirs = _compute_global_attention_mask(ids, SEP)
    assert torch.equal(ours.bool(), theirs.bool())


def test_qa_without_three_separators_still_runs(hf_checkpoint):
    """transformers asserts exactly three separators; lfcli falls back to the first token."""
    folder, _ = hf_checkpoint("LongformerForQuestionAnswering")
    ours = LongformerForQuestionAnswering.from_pretrained(folder)
    ids, mask, _ = make_batch([9, 6])
    start, end = lfcli_outputs(ours, ids, mask, None)
    assert start.shape == end.shape == ids.shape
    expected = torch.zeros_like(ids)
    expected[:, 0] = 1
    assert torch.equal(question_global_attention_mask(ids, SEP), expected)


@pytest.mark.parametrize("arch", ["LongformerForQuestionAnswering", "LongformerForSequenceClassification"])
def test_bare_encoder_of_a_task_checkpoint(hf_checkpoint, arch):
    """lfcli's LongformerModel loads the encoder of a task checkpoint (its head is ignored)."""
    overrides = {"num_labels": 3} if "Sequence" in arch else {}
    folder, theirs = hf_checkpoint(arch, **overrides)
    ours = LongformerModel.from_pretrained(folder)
    ids, mask, glob = make_batch([12, 8], globals_=[[0], [0, 3]])
    assert_same(lfcli_outputs(ours, ids, mask, glob), hf_outputs(theirs.longformer, ids, mask, glob))


# --- the other direction: lfcli writes, transformers reads ------------------------------------

REVERSE_CASES = [
    ("LongformerModel", {}),
    ("LongformerModel", {"attention_window": [8, 4, 16]}),
    ("LongformerForMaskedLM", {}),
    ("LongformerForSequenceClassification", {"num_labels": 4}),
    ("LongformerForQuestionAnswering", {"attention_window": 8}),
    ("LongformerForTokenClassification", {"num_labels": 3}),
]


@pytest.mark.parametrize("arch, overrides", REVERSE_CASES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(REVERSE_CASES)])
def test_transformers_reads_lfcli_checkpoints(lfcli_checkpoint, arch, overrides):
    folder, ours = lfcli_checkpoint(arch, **overrides)
    theirs = getattr(transformers, arch).from_pretrained(folder).eval()
    if "num_labels" in overrides:
        assert theirs.config.num_labels == overrides["num_labels"]
    if arch == "LongformerForQuestionAnswering":
        ids, mask = qa_batch([2, 5], [20, 9])
        cases = [(ids, mask, None)]
    else:
        cases = [make_batch([15, 10], globals_=[[0, 3], [9]]), make_batch([5], globals_=None)]
    for ids, mask, glob in cases:
        assert_same(lfcli_outputs(ours, ids, mask, glob), hf_outputs(theirs, ids, mask, glob))


# --- short models: BERT and RoBERTa checkpoints loaded as Longformers ---------------------------

@pytest.mark.parametrize("arch", ["BertModel", "RobertaModel"])
@pytest.mark.parametrize("lengths", [[20, 13], [1], "full"], ids=["padded", "length-1", "full-table"])
def test_short_models_match_transformers(hf_checkpoint, arch, lengths):
    folder, theirs = hf_checkpoint(arch)
    ours = LongformerModel.from_pretrained(folder)
    # The window covers every position: each query sees every key, as in BERT/RoBERTa.
    assert all(w // 2 >= ours.config.max_tokens for w in ours.config.attention_windows)
    pad = theirs.config.pad_token_id
    if lengths == "full":
        lengths = [ours.config.max_tokens, 7]
    ids, mask, _ = make_batch(lengths, pad_token_id=pad)
    token_type_ids = None
    # BERT/RoBERTa leave padded query rows unmasked (they attend to the real tokens); those
    # outputs mean nothing, so compare the real tokens only.
    assert_same(
        lfcli_outputs(ours, ids, mask, None, token_type_ids),
        hf_outputs(theirs, ids, mask, None, token_type_ids),
        rows=mask.bool(),
    )


def test_bert_token_type_ids(hf_checkpoint):
    folder, theirs = hf_checkpoint("BertModel", type_vocab_size=2)
    ours = LongformerModel.from_pretrained(folder)
    ids, mask, _ = make_batch([12, 9], pad_token_id=0)
    token_type_ids = torch.zeros_like(ids)
    token_type_ids[:, 6:] = 1
    assert_same(
        lfcli_outputs(ours, ids, mask, None, token_type_ids),
        hf_outputs(theirs, ids, mask, None, token_type_ids),
        rows=mask.bool(),
    )


def test_short_model_global_projections_are_copies(hf_checkpoint):
    folder, _ = hf_checkpoint("RobertaModel")
    ours = LongformerModel.from_pretrained(folder)
    for layer in ours.encoder.layer:
        att = layer.attention.self
        for local, glob in ((att.query, att.query_global), (att.key, att.key_global), (att.value, att.value_global)):
            assert torch.equal(local.weight, glob.weight) and torch.equal(local.bias, glob.bias)
            assert local.weight.data_ptr() != glob.weight.data_ptr()  # copies, not shared
