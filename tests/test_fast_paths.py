"""Every fast path (models/fast_paths.py) against the plain model (models/longformer.py,
models/heads.py): each swap alone and all together, every architecture, fp32.

Small real configs, random weights (biases and norms included), batches with padding; few
global tokens (G*H < hidden: the global-row algebra) and many (G*H >= hidden: the plain
projection); chunk_rows shrunk so that each layer's tail runs in chunks, and oneDNN's
projections taken from 8 rows up. In inference the
outputs, in training (dropout 0) the outputs and every gradient, agree within a tolerance
derived from float32's rounding and the size of the sums (TOL, about 2.4e-5 relative to the
outputs' size). Then: loading gives the fast paths, a plain model can be asked for,
LoRA-wrapped queries keep the fold's behaviour, and the fp32 head under a bf16 encoder.
"""

from __future__ import annotations

import copy
import re

import pytest
import torch

from conftest import make_batch, randomize_

from lfcli.models import ARCHITECTURES, FAST_PATHS, LongformerConfig, apply_fast_paths
from lfcli.models.checkpoint import init_from_encoder, load_pretrained
from lfcli.kernels import fused
from lfcli.models.fast_paths import RowChunks, fast_paths_of
from lfcli.models.lora import add_lora

SWAPS = [[name] for name in FAST_PATHS] + [list(FAST_PATHS)]
SWAP_IDS = list(FAST_PATHS) + ["all"]
B, N = 2, 40
LENGTHS = [N, 29]  # the second sample padded
HIDDEN = 32
# The tolerance, from the dtype and the size of the sums: a value here (an output, or a weight's
# gradient summed over every position) ends a chain of sums of about K = B*N*HIDDEN terms, and
# two orders of summation (the fast path's and the plain one's) differ by about
# u * sqrt(K) relative to the values' size (rounding errors adding up like a random walk; u is
# float32's unit roundoff, 2^-24), times 8 for the few such chains behind one value. K = 2560:
# 2.4e-5. (A fixed 1e-5 tuned on an AVX2 machine failed on an AVX512-BF16 one at 1.21e-5.)
TOL = 8 * torch.finfo(torch.float32).eps / 2 * (B * N * HIDDEN) ** 0.5
GLOBALS = {
    "few": [[0], [0, 5, 12]],  # G = 3, G*H = 12 < 32
    "many": [list(range(0, N, 4)), [1, 2, 3, 20]],  # G = 10, G*H = 40 >= 32
}


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits


@pytest.fixture(autouse=True)
def _short_chunks(monkeypatch):
    monkeypatch.setattr(RowChunks, "chunk_rows", 7)  # B*n = 80 rows: 10 chunks of 8
    monkeypatch.setattr(fused, "ONEDNN_LINEAR_ROWS", 8)  # whole-batch projections (80 rows) take oneDNN


def tiny_config(dropout: float = 0.1, **overrides) -> LongformerConfig:
    cfg = dict(
        vocab_size=64, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, attention_window=8, attention_dilation=[1, [1, 2, 1, 3]],
        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
        id2label={0: "a", 1: "b", 2: "c"}, attention_backend="chunked",
    )
    cfg.update(overrides)
    return LongformerConfig(**cfg)


def plain_and_fast(arch: str, names, config: LongformerConfig, seed: int = 0):
    torch.manual_seed(seed)
    plain = randomize_(ARCHITECTURES[arch](config), seed=seed + 1)
    fast = apply_fast_paths(copy.deepcopy(plain), names)
    return plain, fast


def outputs(model, ids, mask, glob) -> list[torch.Tensor]:
    out = model(ids, mask, glob)
    return [o for o in (out if isinstance(out, tuple) else (out,))]


def assert_close(a: torch.Tensor, b: torch.Tensor, what: str):
    assert a.shape == b.shape and a.dtype == b.dtype, what
    if not a.is_floating_point():
        assert torch.equal(a, b), what
        return
    finite = torch.isfinite(b)
    assert torch.equal(finite, torch.isfinite(a)) and torch.equal(a[~finite], b[~finite]), what
    a, b = a[finite].double(), b[finite].double()
    if b.numel():
        scale = max(1.0, b.abs().max().item())
        assert (a - b).abs().max().item() <= TOL * scale, f"{what}: {(a - b).abs().max().item():.3g}"


@pytest.mark.parametrize("globals_", list(GLOBALS))
@pytest.mark.parametrize("names", SWAPS, ids=SWAP_IDS)
@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_inference_matches_plain(arch, names, globals_):
    plain, fast = plain_and_fast(arch, names, tiny_config())
    plain.eval(), fast.eval()
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS[globals_], seed=3)
    with torch.inference_mode():
        want, got = outputs(plain, ids, mask, glob), outputs(fast, ids, mask, glob)
    assert len(want) == len(got)
    for i, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, f"output {i}")


@pytest.mark.parametrize("globals_", list(GLOBALS))
@pytest.mark.parametrize("names", SWAPS, ids=SWAP_IDS)
@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_training_gradients_match_plain(arch, names, globals_):
    plain, fast = plain_and_fast(arch, names, tiny_config(dropout=0.0))
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS[globals_], seed=4)
    results = []
    for model in (plain, fast):
        model.train()
        outs = outputs(model, ids, mask, glob)
        gen = torch.Generator().manual_seed(5)
        loss = sum((torch.randn(o.shape, generator=gen) * o.masked_fill(~torch.isfinite(o), 0)).sum()
                   for o in outs if o.is_floating_point())
        loss.backward()
        grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
        results.append((outs, grads))
    (want, want_grads), (got, got_grads) = results
    for i, (a, b) in enumerate(zip(got, want)):
        assert_close(a.detach(), b.detach(), f"output {i}")
    assert got_grads.keys() == want_grads.keys() and want_grads
    for name in want_grads:
        assert_close(got_grads[name], want_grads[name], f"d {name}")


@pytest.mark.parametrize("globals_", list(GLOBALS))
@pytest.mark.parametrize("arch", ["LongformerModel", "LongformerForQuestionAnswering"])
def test_relative_position_bias_through_every_swap(arch, globals_):
    """MPNet's relative position bias (the base tier's), past the window with global rows and
    columns: all the swaps together against the plain model, in inference and in training (the
    bias table's gradient included). Dilation 1: a bias runs with no other."""
    config = tiny_config(dropout=0.0, relative_attention_num_buckets=32, relative_attention_max_distance=16,
                         attention_dilation=1)
    plain, fast = plain_and_fast(arch, None, config)
    for model in (plain, fast):
        with torch.no_grad():  # a table large enough to move the scores by several units
            model.get_submodule("longformer.encoder" if arch != "LongformerModel" else "encoder") \
                .relative_attention_bias.weight.normal_(0, 2.0, generator=torch.Generator().manual_seed(9))
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS[globals_], seed=10)
    plain.eval(), fast.eval()
    with torch.inference_mode():
        for a, b in zip(outputs(fast, ids, mask, glob), outputs(plain, ids, mask, glob)):
            assert_close(a, b, "inference")
    results = []
    for model in (plain, fast):
        model.train()
        outs = outputs(model, ids, mask, glob)
        gen = torch.Generator().manual_seed(11)
        sum((torch.randn(o.shape, generator=gen) * o.masked_fill(~torch.isfinite(o), 0)).sum()
            for o in outs if o.is_floating_point()).backward()
        results.append({name: p.grad for name, p in model.named_parameters() if p.grad is not None})
    want, got = results
    assert any(name.endswith("relative_attention_bias.weight") for name in want)
    for name in want:
        assert_close(got[name], want[name], f"d {name}")


def test_gradient_checkpointing_with_fast_paths():
    plain, fast = plain_and_fast("LongformerForSequenceClassification", None, tiny_config(dropout=0.0))
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS["few"], seed=6)
    grads = []
    for model in (plain, fast):
        model.set_gradient_checkpointing(True)
        model.train()
        model(ids, mask, glob).pow(2).sum().backward()
        grads.append({name: p.grad for name, p in model.named_parameters()})
    for name in grads[0]:
        assert_close(grads[1][name], grads[0][name], name)


def test_lora_wrapped_query_keeps_the_fold():
    """add_lora after the swaps (as finetune does): the fold scales the LoRA layer's output."""
    plain, fast = plain_and_fast("LongformerForQuestionAnswering", None, tiny_config(dropout=0.0))
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS["few"], seed=7)
    results = []
    for model in (plain, fast):
        torch.manual_seed(8)
        add_lora(model, r=2, alpha=4.0)
        with torch.no_grad():  # a non-zero update, so that the adapted weights matter
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0.0, 0.1, generator=torch.Generator().manual_seed(len(name)))
        model.train()
        start, end = model(ids, mask, glob)
        (start.sum() + 2 * end.sum()).backward()
        results.append(((start, end), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}))
    for a, b in zip(results[1][0], results[0][0]):
        assert_close(a.detach(), b.detach(), "logits")
    for name in results[0][1]:
        assert_close(results[1][1][name], results[0][1][name], f"d {name}")


def test_apply_keeps_names_weights_and_is_idempotent():
    plain, fast = plain_and_fast("LongformerForMaskedLM", None, tiny_config())
    assert type(fast).__name__ == "LongformerForMaskedLM"
    # the repr is the plain one with each swapped module's swaps named
    assert "fast paths: query_scale_fold, fused_qkv, global_row_algebra" in repr(fast)
    without = re.sub(r"\n *fast paths: [a-z0-9_, ]+(?=\n)|(, )?fast paths: [a-z0-9_, ]+(?=\))", "", repr(fast))
    assert without == repr(plain)
    assert list(fast.state_dict()) == list(plain.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(fast.state_dict().values(), plain.state_dict().values()))
    attention = fast.longformer.encoder.layer[0].attention.self
    assert fast_paths_of(attention) == ("query_scale_fold", "fused_qkv", "global_row_algebra", "triton_global_rows",
                                        "local_global_rows")
    assert fast_paths_of(fast) == ()  # the MLM decoder is the word embeddings: no fp32 head
    before = type(attention)
    apply_fast_paths(fast)
    apply_fast_paths(fast, ["global_row_algebra"])
    assert type(attention) is before
    one = apply_fast_paths(copy.deepcopy(plain), ["triton_global_rows"])
    apply_fast_paths(one, ["global_row_algebra"])  # added later, still decides first
    mro = type(one.longformer.encoder.layer[0].attention.self).__mro__
    assert mro.index(FAST_PATHS["global_row_algebra"]) < mro.index(FAST_PATHS["triton_global_rows"])
    with pytest.raises(ValueError, match="unknown fast path 'nope'"):
        apply_fast_paths(plain, ["nope"])


def _swaps_in(model) -> set[str]:
    return {name for module in model.modules() for name in fast_paths_of(module)}


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_loading_gives_the_fast_paths_and_plain_on_request(arch, tmp_path):
    torch.manual_seed(0)
    randomize_(ARCHITECTURES[arch](tiny_config()), seed=9).save_pretrained(tmp_path)
    expected = set(FAST_PATHS) - ({"fp32_head"} if arch in ("LongformerModel", "LongformerForMaskedLM") else set())
    loaded = ARCHITECTURES[arch].from_pretrained(tmp_path)
    assert _swaps_in(loaded) == expected and type(loaded).__name__ == arch
    assert _swaps_in(init_from_encoder(ARCHITECTURES[arch], tmp_path)) == expected
    plain = load_pretrained(ARCHITECTURES[arch], tmp_path, fast_paths=())
    assert _swaps_in(plain) == set() and _swaps_in(ARCHITECTURES[arch](tiny_config())) == set()
    assert _swaps_in(init_from_encoder(ARCHITECTURES[arch], tmp_path, fast_paths=[])) == set()
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS["few"], seed=10)
    with torch.inference_mode():
        for a, b in zip(outputs(loaded, ids, mask, glob), outputs(plain, ids, mask, glob)):
            assert_close(a, b, arch)


def test_fp32_head_under_a_bf16_encoder(tmp_path):
    torch.manual_seed(0)
    randomize_(ARCHITECTURES["LongformerForQuestionAnswering"](tiny_config()), seed=11).save_pretrained(tmp_path)
    fast = load_pretrained(ARCHITECTURES["LongformerForQuestionAnswering"], tmp_path, dtype=torch.bfloat16)
    assert fast.longformer.encoder.layer[0].attention.self.query.weight.dtype == torch.bfloat16
    assert fast.qa_outputs.weight.dtype == torch.float32 and fast.head_dtype == torch.float32
    plain = load_pretrained(ARCHITECTURES["LongformerForQuestionAnswering"], tmp_path, dtype=torch.bfloat16,
                            fast_paths=[name for name in FAST_PATHS if name != "fp32_head"])
    assert {p.dtype for p in plain.parameters()} == {torch.bfloat16}
    ids, mask, _ = make_batch(LENGTHS, seed=12)
    with torch.inference_mode():
        start, _ = fast(ids, mask)
        plain_start, _ = plain(ids, mask)
    assert start.dtype == torch.float32 and plain_start.dtype == torch.bfloat16
    # back to fp32: the head follows and nothing is cast any more
    fast.set_inference_dtype(torch.float32)
    assert fast.head_dtype is None and {p.dtype for p in fast.parameters()} == {torch.float32}
    mlm = apply_fast_paths(ARCHITECTURES["LongformerForMaskedLM"](tiny_config())).set_inference_dtype(torch.bfloat16)
    assert {p.dtype for p in mlm.parameters()} == {torch.bfloat16}  # tied head: no fp32 copy


# -- the Triton global rows, in Triton's interpreter on the CPU ---------------------------------

def _interpreted_triton():
    """triton_banded, when its kernels run on a GPU or in Triton's interpreter (conftest sets
    TRITON_INTERPRET=1 before anything imports triton; see test_triton.py), else None."""
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpretedFunction

        from lfcli.kernels import triton_banded
    except ImportError:
        return None
    return triton_banded if torch.cuda.is_available() or isinstance(tl.sum, InterpretedFunction) else None


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_triton_global_rows_match_plain(monkeypatch, train):
    tb = _interpreted_triton()
    if tb is None:
        pytest.skip("triton is not importable, or was imported before TRITON_INTERPRET=1 (see test_triton.py)")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("LFCLI_ATTENTION_BACKEND", raising=False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = tiny_config(dropout=0.0, num_hidden_layers=1, attention_dilation=1, attention_backend="triton")
    plain, fast = plain_and_fast("LongformerModel", ["triton_global_rows"], config)
    plain, fast = plain.to(device), fast.to(device)
    calls = []
    original = tb.triton_global_rows
    monkeypatch.setattr(tb, "triton_global_rows", lambda *a, **k: calls.append(1) or original(*a, **k))
    ids, mask, glob = (t.to(device) for t in make_batch(LENGTHS, globals_=GLOBALS["many"], seed=13))
    results = []
    for model in (plain, fast):
        model.train(train)
        with torch.set_grad_enabled(train):
            out = model(ids, mask, glob)
            if train:
                out.pow(2).mean().backward()
        results.append((out.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}))
    assert calls, "the global rows did not go through the kernel"
    assert_close(results[1][0].cpu(), results[0][0].cpu(), "hidden states")
    for name in results[0][1]:
        assert_close(results[1][1][name].cpu(), results[0][1][name].cpu(), f"d {name}")


@pytest.mark.parametrize("arch", ["LongformerModel", "LongformerForSequenceClassification"])
def test_local_global_rows_where_the_band_covers_the_input(arch, monkeypatch):
    """Global weights copied from the local ones (a converted BERT) and an input within half a
    window: the global rows are skipped (layer 0) and the outputs equal the plain model's; a
    dilated layer (layer 1), a longer input or weights that differ keep the global rows."""
    from lfcli.models.longformer import LongformerSelfAttention

    config = tiny_config(attention_window=80)  # w1 = 40 >= N - 1
    plain, fast = plain_and_fast(arch, ["local_global_rows"], config)
    for model in (plain, fast):
        with torch.no_grad():
            for layer in getattr(model, "longformer", model).encoder.layer:
                for name in ("query", "key", "value"):
                    local, glob = getattr(layer.attention.self, name), getattr(layer.attention.self, name + "_global")
                    glob.weight.copy_(local.weight), glob.bias.copy_(local.bias)
    calls = []
    real = LongformerSelfAttention.global_rows
    monkeypatch.setattr(LongformerSelfAttention, "global_rows", lambda self, *a, **k: calls.append(self) or real(self, *a, **k))
    plain.eval(), fast.eval()
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS["few"], seed=9)
    with torch.inference_mode():
        want = outputs(plain, ids, mask, glob)
        calls.clear()
        got = outputs(fast, ids, mask, glob)
    layers = list(getattr(fast, "longformer", fast).encoder.layer)
    assert [layers.index(next(l for l in layers if l.attention.self is c)) for c in calls] == [1]  # dilated
    for i, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, f"output {i}")
    with torch.no_grad():
        layers[0].attention.self.key_global.bias.add_(1.0)
    with torch.inference_mode():  # no longer a copy: the rows come back
        calls.clear()
        outputs(fast, ids, mask, glob)
    assert len(calls) == 2


@pytest.mark.skipif(not torch.ops.mkldnn._is_mkldnn_bf16_supported(), reason="needs a CPU with bf16 matmuls")
def test_fused_qkv_in_bf16_inference():
    """bf16 inference on the CPU projects q, k and v with one stacked weight: the same
    outputs as the three projections (to bf16's rounding of the sums), and a weight changed
    in place is seen at once (the stacked copy is made again)."""
    config = tiny_config(dropout=0.0)
    others = [name for name in FAST_PATHS if name != "fused_qkv"]
    _, fused = plain_and_fast("LongformerModel", list(FAST_PATHS), config)
    _, three = plain_and_fast("LongformerModel", others, config)
    for model in (fused, three):
        model.eval().to(torch.bfloat16)
    ids, mask, glob = make_batch(LENGTHS, globals_=GLOBALS["few"], seed=5)
    attention = fused.encoder.layer[0].attention.self
    for step in range(2):
        with torch.inference_mode():
            got, want = fused(ids, mask, glob), three(ids, mask, glob)
        assert "_qkv_cache" in attention.__dict__  # the stacked path ran
        # The two ways sum each projection's fp32 terms in their own order before the one
        # rounding to bf16, so q, k and v may differ by that rounding in each of the two layers
        # (and the outputs by one rounding each way): 4 bf16 ulps of the outputs' size.
        scale = max(1.0, want.abs().max().item())
        assert (got.float() - want.float()).abs().max().item() <= 4 * torch.finfo(torch.bfloat16).eps * scale
        with torch.no_grad():  # the same change to both: the second pass holds only with the stacked copy remade
            for model in (fused, three):
                model.encoder.layer[0].attention.self.key.weight.mul_(-1.5)
