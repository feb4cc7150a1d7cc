"""The chunked backend against the reference backend, and how a backend is chosen.

Accuracy follows the flash-attention rule: both backends run at the same precision (fp32 or
bf16) and are compared with an exact oracle (float64 throughout, same mask). The chunked error
must be at most twice the reference's error, plus a floor of a few units in the last place of
the result's magnitude. Gradients w.r.t. q, k and v are held to the same rule.
"""

from __future__ import annotations

import contextlib

import math

import pytest
import torch

from conftest import randomize_

from lfcli.kernels import (
    ENV_VAR,
    BackendUnavailable,
    banded_attention,
    dilation_per_head,
    reference_global_rows,
    resolve_backend,
)
from lfcli.kernels import attention as attention_module
from lfcli.kernels import blocks as blocks_module
from lfcli.kernels.chunked import global_columns
from lfcli.kernels.reference import allowed_keys
from lfcli.models import LongformerConfig, LongformerModel
from lfcli.models.fast_paths import GlobalRowAlgebra as LongformerSelfAttention  # the folded and the projected paths

# Absolute floor, times the magnitude of the exact results: ~8 ulp for fp32, ~1 ulp for bf16
# (whose last-place rounding of the output alone is half an ulp).
FLOOR = {torch.float32: 1e-6, torch.bfloat16: 1e-2}
DTYPES = [torch.float32, torch.bfloat16]
DTYPE_IDS = ["fp32", "bf16"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """These tensors are tiny: threads only add overhead (and other suites run alongside)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def exact_attention(q, k, v, window, key_padding_mask, is_global, dilation):
    """The oracle: the reference's mask, everything in float64 (softmax included)."""
    q, k, v = q.double(), k.double(), v.double()
    allowed = allowed_keys(q.shape[2], window // 2, key_padding_mask, is_global, dilation_per_head(dilation, q.shape[1]))
    scores = torch.matmul(q, k.transpose(-1, -2)).masked_fill(~allowed, torch.finfo(torch.float64).min)
    probs = torch.softmax(scores, dim=-1).masked_fill(key_padding_mask[:, None, :, None], 0.0)
    return torch.matmul(probs, v)


def forward_backward(fn, q, k, v, grad_out):
    q, k, v = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    out = fn(q, k, v)
    grads = torch.autograd.grad((out * grad_out.to(out.dtype)).sum(), (q, k, v))
    return [out.detach()] + [g.detach() for g in grads]


def random_qkv(B, H, n, D, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    # q already carries the 1/sqrt(D) of the model; x2 makes the softmax peaked enough that a
    # wrong mask shows.
    q = torch.randn(B, H, n, D, generator=gen) * (2.0 / math.sqrt(D))
    k = torch.randn(B, H, n, D, generator=gen)
    v = torch.randn(B, H, n, D, generator=gen)
    grad_out = torch.randn(B, H, n, D, generator=gen)
    return q.to(dtype), k.to(dtype), v.to(dtype), grad_out


def check_chunked(q, k, v, grad_out, window, key_padding_mask, is_global, dilation):
    """Assert the flash-attention rule for the output and the three gradients."""
    args = (window, key_padding_mask, is_global, dilation)
    exact = forward_backward(lambda a, b, c: exact_attention(a, b, c, *args), q, k, v, grad_out)
    ref = forward_backward(lambda a, b, c: banded_attention(a, b, c, *args, backend="reference"), q, k, v, grad_out)
    ours = forward_backward(lambda a, b, c: banded_attention(a, b, c, *args, backend="chunked"), q, k, v, grad_out)
    # One magnitude for the four results: a gradient that is exactly zero (n=1: a softmax over
    # one key) still gets the rounding of the terms that cancel in it.
    floor = FLOOR[q.dtype] * max(1.0, *(e.abs().max().item() for e in exact))
    for name, e, r, o in zip(("output", "dq", "dk", "dv"), exact, ref, ours):
        assert o.dtype == q.dtype and o.shape == e.shape, (name, o.dtype, o.shape)
        assert torch.isfinite(o).all(), f"{name}: not finite"
        ref_err = (r.double() - e).abs().max().item()
        our_err = (o.double() - e).abs().max().item()
        allowed = 2 * ref_err + floor
        assert our_err <= allowed, f"{name}: chunked error {our_err:.3g} > {allowed:.3g} (reference error {ref_err:.3g})"
    # padded query rows are exactly zero
    assert not ours[0].masked_select(key_padding_mask[:, None, :, None]).any()


def masks(B, n, pattern):
    """key_padding_mask and is_global (B, n) for a named placement of global tokens."""
    pad = torch.zeros(B, n, dtype=torch.bool)
    glob = torch.zeros(B, n, dtype=torch.bool)
    if B > 1 and n > 1:
        pad[1, max(1, (2 * n) // 3):] = True  # sample 1 is padded
    last_real = [int((~pad[b]).sum()) - 1 for b in range(B)]
    if pattern == "none":
        pass
    elif pattern == "first":
        glob[:, 0] = True
    elif pattern == "last":
        for b in range(B):
            glob[b, last_real[b]] = True
    elif pattern == "clustered-middle":
        mid = n // 3
        glob[:, mid : mid + 4] = True
    elif pattern == "different-counts":
        glob[0, [0, n // 2, n - 1]] = True
        glob[1, n // 4] = True
    elif pattern == "on-padding":
        glob[0, n // 2] = True
        glob[1, n - 1] = True  # a padded position: padding wins
        glob[1, 0] = True
    elif pattern == "all-global":
        glob[:] = True
    elif pattern == "empty-sample":  # a sample that is all padding, next to a real one
        pad[1] = True
        glob[0, 0] = True
    elif pattern == "mixed":  # first token of one sample; middle, end and a padded one in the other
        glob[0, 0] = True
        glob[1, [n // 3, last_real[1], n - 1]] = True
    else:  # pragma: no cover
        raise ValueError(pattern)
    return pad, glob


# --- the grids -----------------------------------------------------------------------------

LENGTHS = [1, 2, 7, 63, 65, 130, 257]
WINDOWS = [2, 4, 16, 64, "longer-than-n"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("n", LENGTHS)
def test_lengths_and_windows(n, window, dtype):
    if window == "longer-than-n":
        window = 2 * n + 2  # w1 > n: every key is in every band
    q, k, v, grad_out = random_qkv(2, 2, n, 8, dtype, seed=n * 1000 + window)
    pad, glob = masks(2, n, "mixed")
    check_chunked(q, k, v, grad_out, window, pad, glob, 1)


DILATIONS = [2, [1, 2], [2, 3, 1, 1], [3, 1, 4, 2]]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("window", [2, 16])
@pytest.mark.parametrize("n", [7, 65, 130])
@pytest.mark.parametrize("dilation", DILATIONS, ids=str)
def test_dilation(dilation, n, window, dtype):
    H = len(dilation) if isinstance(dilation, list) else 2
    q, k, v, grad_out = random_qkv(2, H, n, 8, dtype, seed=n * 7 + window)
    pad, glob = masks(2, n, "different-counts")
    check_chunked(q, k, v, grad_out, window, pad, glob, dilation)


PATTERNS = ["none", "first", "last", "clustered-middle", "different-counts", "on-padding", "all-global", "empty-sample"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("window, dilation", [(4, [1, 2]), (64, 1)], ids=["w4-dilated", "w64"])
@pytest.mark.parametrize("n", [7, 130])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_global_placements(pattern, n, window, dilation, dtype):
    q, k, v, grad_out = random_qkv(2, 2, n, 8, dtype, seed=n + window + len(pattern))
    pad, glob = masks(2, n, pattern)
    check_chunked(q, k, v, grad_out, window, pad, glob, dilation)


def test_larger_head_dim_and_batch():
    """Model-sized heads (D=64) and B=3, fp32."""
    q, k, v, grad_out = random_qkv(3, 2, 200, 64, torch.float32, seed=5)
    pad = torch.zeros(3, 200, dtype=torch.bool)
    pad[1, 150:] = True
    pad[2, 17:] = True
    glob = torch.zeros(3, 200, dtype=torch.bool)
    glob[0, [0, 99]] = True
    glob[2, 16] = True
    check_chunked(q, k, v, grad_out, 32, pad, glob, 1)


def test_default_masks_are_no_padding_no_globals():
    q, k, v, _ = random_qkv(2, 2, 40, 8, torch.float32, seed=9)
    none = torch.zeros(2, 40, dtype=torch.bool)
    for backend in ("reference", "chunked"):
        assert torch.equal(
            banded_attention(q, k, v, 8, backend=backend), banded_attention(q, k, v, 8, none, none, 1, backend=backend)
        )


# --- the dense short-input path ----------------------------------------------------------------

@pytest.mark.parametrize("n, window", [(1, 2), (2, 2), (5, 8), (9, 16), (9, 600)])
@pytest.mark.parametrize("dilation", [1, [2, 1]], ids=["d1", "d21"])
def test_dense_short_input_path(monkeypatch, n, window, dilation):
    """n <= w1 + 1: one dense block, never the banded blocks (block_size_for is not called)."""

    def no_blocks(_):
        raise AssertionError("the banded path ran for an input that fits in the window")

    monkeypatch.setattr(blocks_module, "block_size_for", no_blocks)
    assert n <= window // 2 + 1
    q, k, v, grad_out = random_qkv(2, 2, n, 8, torch.float32, seed=n)
    pad, glob = masks(2, n, "mixed")
    check_chunked(q, k, v, grad_out, window, pad, glob, dilation)


@pytest.mark.parametrize("n", [9, 10, 11])  # w1 + 1, w1 + 2, w1 + 3 for window 16
def test_around_the_dense_threshold(n):
    q, k, v, grad_out = random_qkv(2, 2, n, 8, torch.float32, seed=n)
    pad, glob = masks(2, n, "different-counts")
    check_chunked(q, k, v, grad_out, 16, pad, glob, 1)


# --- argument checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("window", [3, 0, -2, 1])
@pytest.mark.parametrize("backend", ["reference", "chunked"])
def test_odd_or_non_positive_window_raises(window, backend):
    q = torch.randn(1, 2, 8, 4)
    with pytest.raises(ValueError, match="attention_window"):
        banded_attention(q, q, q, window, backend=backend)


@pytest.mark.parametrize("dilation", [0, -1, [1, 0], [1, 2, 3], torch.tensor([2, 0])], ids=str)
def test_bad_dilation_raises(dilation):
    q = torch.randn(1, 2, 8, 4)  # two heads
    with pytest.raises(ValueError, match="dilation"):
        banded_attention(q, q, q, 4, dilation=dilation, backend="chunked")


def test_one_element_dilation_list_applies_to_every_head():
    assert dilation_per_head([3], 4).tolist() == [3, 3, 3, 3]
    assert dilation_per_head(2, 3).tolist() == [2, 2, 2]
    assert dilation_per_head([1, 2], 2).tolist() == [1, 2]


# --- choosing a backend ------------------------------------------------------------------------

@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return monkeypatch


def test_resolve_backend_precedence(clean_env):
    assert resolve_backend() == "chunked"  # auto on the CPU
    assert resolve_backend(None, None, "cpu") == "chunked"
    assert resolve_backend(None, "auto") == "chunked"
    assert resolve_backend(None, "reference") == "reference"  # config
    clean_env.setenv(ENV_VAR, "reference")
    assert resolve_backend(None, "chunked") == "reference"  # env beats config
    assert resolve_backend("chunked", "reference") == "chunked"  # explicit beats env
    clean_env.setenv(ENV_VAR, "chunked")
    assert resolve_backend("reference", None) == "reference"
    assert resolve_backend(None, "reference") == "chunked"
    assert resolve_backend("auto", "reference") == "chunked"  # explicit auto


@pytest.mark.parametrize("where", ["explicit", "env", "config"])
def test_unknown_backend_raises(clean_env, where):
    if where == "env":
        clean_env.setenv(ENV_VAR, "fast")
        args = (None, None)
    else:
        args = ("fast", None) if where == "explicit" else (None, "fast")
    with pytest.raises(ValueError, match="unknown attention backend 'fast'"):
        resolve_backend(*args)


def test_unknown_backend_in_banded_attention_raises(clean_env):
    q = torch.randn(1, 1, 4, 4)
    with pytest.raises(ValueError, match="unknown attention backend"):
        banded_attention(q, q, q, 2, backend="cuda")


def test_triton_on_cpu_without_interpreter_is_refused(clean_env):
    with pytest.raises(BackendUnavailable, match="triton"):
        resolve_backend("triton", None, "cpu")
    clean_env.setenv(ENV_VAR, "triton")
    with pytest.raises(BackendUnavailable):
        resolve_backend(None, "chunked", "cpu")
    q = torch.randn(1, 1, 4, 4)
    clean_env.delenv(ENV_VAR)
    with pytest.raises(BackendUnavailable):
        banded_attention(q, q, q, 2, backend="triton")
    assert issubclass(BackendUnavailable, RuntimeError)


def test_model_follows_backend_precedence(clean_env):
    """The model's explicit choice beats the env var, which beats config.attention_backend."""
    calls = []
    real = attention_module.reference_attention

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    clean_env.setattr(attention_module, "reference_attention", spy)
    model = LongformerModel(LongformerConfig(**_tiny(num_hidden_layers=1)))
    model.eval()
    ids = torch.randint(3, 64, (1, 10))

    def used_reference():
        calls.clear()
        with torch.no_grad():
            model(ids)
        return bool(calls)

    assert not used_reference()  # auto -> chunked on CPU
    model.config.attention_backend = "reference"
    assert used_reference()
    clean_env.setenv(ENV_VAR, "chunked")
    assert not used_reference()
    model.attention_backend = "reference"
    assert used_reference()
    clean_env.setenv(ENV_VAR, "reference")
    model.attention_backend = "chunked"
    assert not used_reference()


# --- the global rows of the self-attention module ---------------------------------------------

def _tiny(**overrides):
    cfg = dict(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=300, attention_window=8,
    )
    cfg.update(overrides)
    return cfg


def _heads(x, H):
    B, n, hidden = x.shape
    return x.view(B, n, H, hidden // H).transpose(1, 2)


@pytest.mark.parametrize(
    "global_positions, path",
    [
        ([[0], [0]], "folded"),
        ([[0, 5, 29], [3]], "folded"),  # G=3: G*H = 12 < 32
        ([[0, 1, 2, 3, 4, 5, 6], [39]], "folded"),  # G=7: 28 < 32
        ([list(range(0, 40, 5)), [1, 2]], "projected"),  # G=8: 32 >= 32
        ([list(range(0, 40, 2)), list(range(10))], "projected"),  # G=20
    ],
    ids=["G1", "G3", "G7", "G8", "G20"],
)
def test_global_rows_match_reference(global_positions, path):
    torch.manual_seed(0)
    config = LongformerConfig(**_tiny())
    att = randomize_(LongformerSelfAttention(config, 0), seed=3)
    H, D = config.num_attention_heads, config.head_dim
    B, n = 2, 40
    pad = torch.zeros(B, n, dtype=torch.bool)
    pad[1, 30:] = True
    is_global = torch.zeros(B, n, dtype=torch.bool)
    for b, positions in enumerate(global_positions):
        is_global[b, positions] = True
    is_global &= ~pad  # the model's rule: padding wins
    index, valid = global_columns(is_global)
    G = index.shape[1]
    assert (G * H < config.hidden_size) == (path == "folded")

    projected_calls = []
    att.key_global.register_forward_hook(lambda *_: projected_calls.append(1))
    hidden = torch.randn(B, n, config.hidden_size, generator=torch.Generator().manual_seed(1))
    grad_out = torch.randn(B, H, G, D, generator=torch.Generator().manual_seed(2)) * valid[:, None, :, None]

    def ours(h):
        return att.global_rows(h, pad, index, 0.0)

    def reference(h):
        h_global = torch.gather(h, 1, index[:, :, None].expand(B, G, config.hidden_size))
        q = _heads(att.query_global(h_global), H) / math.sqrt(D)
        return reference_global_rows(q, _heads(att.key_global(h), H), _heads(att.value_global(h), H), pad)

    params = [p for name, p in att.named_parameters() if "global" in name]
    results = []
    for fn in (ours, reference):
        projected_calls.clear()
        h = hidden.clone().requires_grad_(True)
        out = fn(h)
        if fn is ours:
            assert bool(projected_calls) == (path == "projected")
        grads = torch.autograd.grad((out * grad_out).sum(), [h, *params])
        results.append([out.detach(), *grads])
    names = ["rows", "d_hidden"] + [f"d_{name}" for name, _ in att.named_parameters() if "global" in name]
    for name, a, b in zip(names, *results):
        scale = max(1.0, b.abs().max().item())
        assert (a - b).abs().max().item() <= 2e-5 * scale, name


def test_self_attention_overwrites_global_rows_only():
    """Non-global rows come from the banded kernel, global rows from global_rows."""
    config = LongformerConfig(**_tiny())
    att = randomize_(LongformerSelfAttention(config, 0), seed=4).eval()
    B, n = 2, 24
    hidden = torch.randn(B, n, config.hidden_size, generator=torch.Generator().manual_seed(3))
    pad = torch.zeros(B, n, dtype=torch.bool)
    pad[1, 20:] = True
    is_global = torch.zeros(B, n, dtype=torch.bool)
    is_global[0, [0, 10]] = True
    is_global[1, 5] = True
    index, valid = global_columns(is_global)
    with torch.no_grad():
        out = att(hidden, pad, is_global, index, valid, "reference").view(B, n, 4, 8).transpose(1, 2)
        rows = att.global_rows(hidden, pad, index, 0.0)
        q = _heads(att.query(hidden), 4) / math.sqrt(8)
        band = banded_attention(q, _heads(att.key(hidden), 4), _heads(att.value(hidden), 4), 8, pad, is_global, backend="reference")
    for b in range(B):
        for g in range(index.shape[1]):
            if valid[b, g]:
                torch.testing.assert_close(out[b, :, index[b, g]], rows[b, :, g])
    local = ~is_global
    torch.testing.assert_close(out.transpose(1, 2)[local], band.transpose(1, 2)[local])


# --- a whole model with dilation: chunked == reference ----------------------------------------

def test_dilated_model_chunked_equals_reference():
    config = LongformerConfig(
        **_tiny(
            num_hidden_layers=3,
            attention_window=[4, 8, 2],
            attention_dilation=[[1, 2, 3, 1], 2, [1, 1, 4, 2]],
        )
    )
    torch.manual_seed(0)
    model = randomize_(LongformerModel(config), seed=11).eval()
    ids = torch.randint(3, 64, (2, 77), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, 50:] = 0
    ids[1, 50:] = config.pad_token_id
    glob = torch.zeros_like(ids)
    glob[0, [0, 40]] = 1
    glob[1, [0, 60]] = 1  # 60 is padding
    results = []
    for backend in ("reference", "chunked"):
        model.attention_backend = backend
        model.zero_grad()
        out = model(ids, mask, glob)
        (out * torch.linspace(-1, 1, out.shape[-1])).sum().backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        results.append((out.detach(), grads))
    (out_ref, grads_ref), (out_ch, grads_ch) = results
    assert (out_ref - out_ch).abs().max().item() < 1e-5
    assert grads_ref.keys() == grads_ch.keys()
    for name in grads_ref:
        scale = max(1.0, grads_ref[name].abs().max().item())
        assert (grads_ref[name] - grads_ch[name]).abs().max().item() <= 1e-5 * scale, name



@pytest.mark.parametrize("shape", [(1, 7, 32), (3, 130, 48), (2, 1, 16)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_linear_gelu_matches_plain(shape, dtype):
    """The oneDNN linear+bias+GELU (inference) against its plain twin, and the training path."""
    from lfcli.kernels.fused import linear_gelu

    torch.manual_seed(0)
    x = torch.randn(shape, dtype=dtype)
    w = (torch.randn(4 * shape[-1], shape[-1]) * 0.1).to(dtype)
    b = torch.randn(4 * shape[-1]).to(dtype)
    plain = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w.double(), b.double()))
    with torch.inference_mode():
        fused = linear_gelu(x, w, b)
    tol = 1e-5 if dtype == torch.float32 else 5e-2
    assert fused.dtype == dtype and (fused.double() - plain).abs().max() <= tol * max(1.0, plain.abs().max())
    xg = x.clone().requires_grad_()
    linear_gelu(xg, w, b).double().sum().backward()  # autograd path
    assert xg.grad is not None and torch.isfinite(xg.grad).all()


@pytest.mark.parametrize("rows", [3, 4096, 5000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_onednn_linear_matches_plain(rows, dtype):
    """`linear` (oneDNN's inner product, bias inside, from ONEDNN_LINEAR_ROWS rows up in fp32
    inference) against the float64 composition, on 2-D and 3-D inputs; under autocast and
    with autograd it is F.linear itself."""
    from lfcli.kernels import fused

    torch.manual_seed(1)
    x = torch.randn(rows, 24, dtype=dtype)
    w = (torch.randn(40, 24) * 0.2).to(dtype)
    b = torch.randn(40).to(dtype)
    want = torch.nn.functional.linear(x.double(), w.double(), b.double())
    tol = 1e-5 if dtype == torch.float32 else 5e-2
    with torch.inference_mode():
        for got in (fused.linear(x, w, b), fused.linear(x.view(1, rows, 24), w, b)[0], fused.linear(x, w, None) + b):
            assert got.dtype == dtype and (got.double() - want).abs().max() <= tol * max(1.0, want.abs().max())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert torch.equal(fused.linear(x, w, b), torch.nn.functional.linear(x, w, b))
    xg = x.clone().requires_grad_()
    fused.linear(xg, w, b).double().sum().backward()
    assert torch.allclose(xg.grad.double(), w.double().sum(0).expand(rows, 24), atol=tol)


@pytest.mark.parametrize("n,window,dilation", [(65, 16, 1), (130, 32, [1, 2]), (257, 64, 1), (300, 16, [3, 1])])
@pytest.mark.parametrize("globals_at", [[0], [0, 5, 64], [1, 40]])
@pytest.mark.parametrize("second_has_globals", [True, False])
def test_chunked_inference_merge_matches_reference(n, window, dilation, globals_at, second_has_globals):
    """fp32 inference merges the global columns after the band (log-sum-exp), a different
    path from the joined softmax that training takes: both against the reference. The second
    sample either has globals of its own or none (its column slots are all empty)."""
    torch.manual_seed(n)
    B, H, D = 2, 2, 8
    q, k, v = (torch.randn(B, H, n, D) for _ in range(3))
    pad = torch.zeros(B, n, dtype=torch.bool)
    pad[1, n - 9:] = True
    glob = torch.zeros(B, n, dtype=torch.bool)
    glob[0, [g for g in globals_at if g < n]] = True
    if second_has_globals:
        glob[1, globals_at[0]] = True
        glob[1, n - 3] = True  # a global on a padded position
    expected = banded_attention(q.double(), k.double(), v.double(), window, pad, glob, dilation, backend="reference")
    with torch.inference_mode():
        got = banded_attention(q, k, v, window, pad, glob, dilation, backend="chunked")
    assert (got.double() - expected).abs().max() < 2e-6
    training = banded_attention(q.requires_grad_(), k, v, window, pad, glob, dilation, backend="chunked")
    assert (training.detach().double() - expected).abs().max() < 2e-6


@pytest.mark.parametrize("n,window,dilation", [(130, 32, [1, 2]), (257, 64, 1)])
@pytest.mark.parametrize("globals_at", [[0], [0, 5, 64]])
@pytest.mark.parametrize("mode", ["bf16", "autocast"])
def test_chunked_bf16_inference_merge_matches_reference(n, window, dilation, globals_at, mode, monkeypatch):
    """bf16 inference (`--dtype auto` on a CPU with native bf16) and evaluation under the
    trainer's bf16 autocast take the log-sum-exp merge too, the merge itself in fp32: within
    bf16's rounding of the exact result, and on average as close as the joined softmax."""
    torch.manual_seed(n)
    B, H, D = 2, 2, 8
    q, k, v = (torch.randn(B, H, n, D).to(torch.bfloat16) for _ in range(3))
    pad = torch.zeros(B, n, dtype=torch.bool)
    pad[1, n - 9:] = True
    glob = torch.zeros(B, n, dtype=torch.bool)
    glob[:, [g for g in globals_at if g < n]] = True
    expected = banded_attention(q.double(), k.double(), v.double(), window, pad, glob, dilation, backend="reference")
    context = torch.autocast("cpu", dtype=torch.bfloat16) if mode == "autocast" else contextlib.nullcontext()
    with torch.inference_mode(), context:
        merged = banded_attention(q, k, v, window, pad, glob, dilation, backend="chunked")
    monkeypatch.setenv("LFCLI_BAND_GRAD", "autograd")  # the joined softmax in bf16 (training's fp32 band is closer)
    joined = banded_attention(q.requires_grad_(), k, v, window, pad, glob, dilation, backend="chunked").detach()
    assert merged.dtype == torch.bfloat16
    assert (merged.double() - expected).abs().max().item() <= FLOOR[torch.bfloat16] * max(1.0, expected.abs().max().item())
    # On average no worse than the joined softmax (a single worst element differs by an ulp).
    assert (merged.double() - expected).abs().mean() <= 1.2 * (joined.double() - expected).abs().mean() + 1e-5


# --- training: the band's own backward against its autograd twin ----------------------------

@pytest.mark.parametrize("n,window,dilation", [(65, 16, 1), (200, 32, [1, 2, 1]), (257, 64, 1), (130, 48, 1)])
@pytest.mark.parametrize("pattern", ["none", "first", "mixed", "all-global", "empty-sample"])
@pytest.mark.parametrize("mode", ["fp32", "bf16", "autocast"])
def test_band_backward_matches_autograd_twin(n, window, dilation, pattern, mode, monkeypatch):
    """The training path (`chunked_grad`: blocked backward from the saved output and LSE, band
    in fp32) and autograd through the joined softmax (`LFCLI_BAND_GRAD=autograd`) give the
    same output and gradients: to fp32 rounding in fp32; in bf16 within bf16's rounding of
    the twin's values (the fused band computes in fp32, so it is the closer of the two to
    the exact result, which the grids above check)."""
    B, H, D = 2, 3, 8
    dtype = torch.float32 if mode == "fp32" else torch.bfloat16
    q, k, v, grad_out = random_qkv(B, H, n, D, torch.float32 if mode == "autocast" else dtype, seed=n + len(pattern))
    pad, glob = masks(B, n, pattern)
    context = torch.autocast("cpu", dtype=torch.bfloat16) if mode == "autocast" else contextlib.nullcontext()

    def run(band_grad):
        monkeypatch.setenv("LFCLI_BAND_GRAD", band_grad)
        def fn(a, b, c):
            with context:  # under autocast the projections hand bf16 tensors to the kernel
                a, b, c = (x.to(dtype) for x in (a, b, c))
                return banded_attention(a, b, c, window, pad, glob, dilation, backend="chunked")
        return forward_backward(fn, q, k, v, grad_out)

    fused, twin = run("fused"), run("autograd")
    for name, f, t in zip(("output", "dq", "dk", "dv"), fused, twin):
        assert f.dtype == t.dtype and f.shape == t.shape, name
        scale = max(1.0, t.abs().max().item())
        tol = 2e-5 if mode == "fp32" else 2 * FLOOR[torch.bfloat16]
        assert (f.double() - t.double()).abs().max().item() <= tol * scale, name


def test_band_backward_is_used_in_training_only(monkeypatch):
    """The fused backward runs when autograd needs the band's gradient, never in inference or
    with attention dropout (then the twin runs)."""
    from lfcli.kernels import chunked_grad

    calls = []
    original = chunked_grad._BandAttention.apply
    monkeypatch.setattr(chunked_grad._BandAttention, "apply", lambda *a: calls.append(1) or original(*a))
    q, k, v, _ = random_qkv(1, 2, 100, 8, torch.float32, seed=0)
    glob = torch.zeros(1, 100, dtype=torch.bool)
    glob[0, 0] = True
    banded_attention(q, k, v, 16, None, glob, backend="chunked")
    assert calls == []
    banded_attention(q.requires_grad_(), k, v, 16, None, glob, dropout_p=0.1, backend="chunked")
    assert calls == []
    banded_attention(q, k, v, 16, None, glob, backend="chunked").sum().backward()
    assert calls == [1] and q.grad is not None


# --- dropout --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_matches_the_definition(dtype):
    """lfcli's dropout is inverted dropout: each element kept with probability 1 - p and then
    scaled by 1 / (1 - p), the gradient masked and scaled alike; identity in eval or at p=0;
    the same mask from the same seed."""
    from lfcli.kernels.fused import dropout
    from lfcli.models.fast_paths import FastDropout

    x = (torch.rand(200_000) + 0.5).to(dtype).requires_grad_()
    assert dropout(x, 0.1, training=False) is x and dropout(x, 0.0, training=True) is x
    torch.manual_seed(3)
    out = dropout(x, 0.25, training=True)
    kept = out != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.005
    scale = torch.tensor(1 / 0.75, dtype=dtype)
    assert torch.equal(out[kept].detach(), (x.detach() * scale)[kept])
    out.backward(torch.ones_like(out))
    assert torch.equal(x.grad, kept.to(dtype) * scale)
    torch.manual_seed(3)
    assert torch.equal(dropout(x, 0.25, training=True), out)
    module = FastDropout(0.25).train()  # the swap of the model's dropouts
    torch.manual_seed(3)
    assert torch.equal(module(x), out)
    assert torch.equal(module.eval()(x), x)


# --- inference: the band without per-block masks (chunked._band_inference) ------------------

BAND_CASES = {
    "right padding, global at 0": (dict(pad_from=[None, 150], globals_at=[[0], [0]]), 260),
    "globals inside and outside each other's band": (dict(pad_from=[None, 200], globals_at=[[3, 70, 200], [100]]), 257),
    "padding inside a sample (masked blocks)": (dict(pad_from=[None, None], inner_pad=(1, 40, 50), globals_at=[[0], [0]]), 200),
    "a sample shorter than its window": (dict(pad_from=[None, 20], globals_at=[[0], [2]]), 150),
    "an all-padding sample": (dict(pad_from=[None, 0], globals_at=[[5], []]), 130),
    "no globals": (dict(pad_from=[None, 99], globals_at=[[], []]), 140),
}


@pytest.mark.parametrize("case", list(BAND_CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("with_bias", [False, True])
def test_band_inference_matches_reference(case, dtype, with_bias):
    """Inference keeps each global key in the band of the rows whose window holds it (its
    column masked for those rows) and gives the blocks at either end only the keys that
    exist, sliced from the shared tile: against the reference in float64, with and without
    a relative position bias, on the inputs that take each branch."""
    spec, n = BAND_CASES[case]
    window, B, H, D = 64, 2, 3, 8
    torch.manual_seed(n)
    q, k, v = (torch.randn(B, H, n, D) for _ in range(3))
    pad = torch.zeros(B, n, dtype=torch.bool)
    for b, start in enumerate(spec["pad_from"]):
        if start is not None:
            pad[b, start:] = True
    if "inner_pad" in spec:
        b, s0, s1 = spec["inner_pad"]
        pad[b, s0:s1] = True
    glob = torch.zeros(B, n, dtype=torch.bool)
    for b, positions in enumerate(spec["globals_at"]):
        glob[b, positions] = True
    glob &= ~pad
    rel_bias = torch.randn(H, 2 * 40 + 1) * 2 if with_bias else None
    # the reference on the inputs as the kernel sees them: in bf16 the band's bias tile is bf16 too
    q, k, v = (x.to(dtype).double() for x in (q, k, v))
    expected = banded_attention(q, k, v, window, pad, glob, 1, backend="reference",
                                rel_bias=None if rel_bias is None else rel_bias.to(dtype).double())
    with torch.inference_mode():
        got = banded_attention(q.to(dtype), k.to(dtype), v.to(dtype), window, pad, glob, 1, backend="chunked",
                               rel_bias=rel_bias)
    assert got.dtype == dtype
    # The kernel's fp32 sums run over at most K keys a row and D terms a score: 8 u sqrt(K D)
    # of the values' size, as test_fast_paths bounds fp32 sums. In bf16 the inputs are exact
    # here (the reference gets them rounded), and the kernel rounds twice more: the
    # probabilities before P V and the output, each at most u_bf16 of the values' size.
    K = window + 1 + glob.sum(dim=1).max().item()
    fp32_sums = 8 * (torch.finfo(torch.float32).eps / 2) * (K * D) ** 0.5
    bf16_roundings = 2 * torch.finfo(torch.bfloat16).eps / 2 if dtype == torch.bfloat16 else 0.0
    tol = (fp32_sums + bf16_roundings) * v.abs().max().item()
    assert (got.double() - expected).abs().max().item() <= tol


def test_a_mask_built_once_a_forward_is_built_again_when_its_inputs_change():
    """LastBuilt (the bias tile and the dense path's mask, built once for all the layers of a
    forward): handed back for the very same tensors, built again for another tensor, for the
    same one changed in place, for other `extra`, and always while autograd needs an input."""
    from lfcli.kernels.blocks import LastBuilt

    built = []
    slot = LastBuilt()

    def get(x, extra=()):
        return slot.get((x,), extra, lambda: built.append(1) or x * 2)

    x = torch.ones(3)
    first = get(x)
    assert get(x) is first and len(built) == 1
    x.add_(1)  # the same object, changed
    assert torch.equal(get(x), x * 2) and len(built) == 2
    assert torch.equal(get(x.clone()), x * 2) and len(built) == 3  # another object, equal values
    get(x, ("bf16",))
    assert len(built) == 4
    with torch.inference_mode():
        y = torch.ones(2)
        assert get(y) is get(y) and len(built) == 5  # inference tensors: no version counter
    w = torch.ones(3, requires_grad=True)
    get(w), get(w)
    assert len(built) == 7
