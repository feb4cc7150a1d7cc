"""The Triton kernels (kernels/triton_banded.py) against the reference, in Triton's interpreter.

`@triton.jit` picks interpreter or compiler when a function is decorated, and that includes
triton's own helpers (tl.sum, tl.max, tl.rand), decorated when triton is first imported. So
TRITON_INTERPRET=1 must be set before anything in the process imports triton. This module sets
it before its own imports and restores it right after (the fixture sets it again per test,
because the backend resolution reads it too). When the whole suite runs, an earlier module may
already have imported triton (transformers does, through torch._dynamo); then every test here
is skipped and `test_in_a_fresh_process` runs this file again in a new process.
With LFCLI_TRITON_GPU=1 on a CUDA machine the same tests run the compiled kernels instead.

Accuracy rule (flash-attention's): the kernel's error against a float64 reference is at most
twice the error of plain PyTorch (`reference_attention`) at the same precision, plus a small
absolute floor. The interpreter runs fp32 (and fp16); its tl.dot misreads bf16, so bf16 runs
only on a GPU. Small blocks (16 x 16) make short sequences span many blocks, so band edges,
tails and block boundaries are exercised without long (slow, interpreted) inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ON_GPU = os.environ.get("LFCLI_TRITON_GPU") == "1" and torch.cuda.is_available()
DEVICE = "cuda" if ON_GPU else "cpu"

_previous = os.environ.get("TRITON_INTERPRET")
if not ON_GPU:
    os.environ["TRITON_INTERPRET"] = "1"
try:
    import triton.language as tl

    from lfcli.kernels import triton_banded as tb
except ImportError as exc:
    pytest.skip(f"triton is not importable: {exc}", allow_module_level=True)
finally:
    if _previous is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = _previous

from triton.runtime.interpreter import InterpretedFunction  # noqa: E402

from lfcli.kernels import banded_attention  # noqa: E402
from lfcli.kernels.position_bias import bias_at  # noqa: E402
from lfcli.kernels.reference import allowed_keys, reference_attention, reference_global_rows  # noqa: E402

IN_PROCESS = ON_GPU or (isinstance(tl.sum, InterpretedFunction) and isinstance(tb.fwd_kernel, InterpretedFunction))

SMALL = tb.KernelConfig(block_m=16, block_n=16, num_warps=4, num_stages=1)
slow = pytest.mark.slow  # skipped unless LFCLI_SLOW_TESTS=1 (conftest.py)


@pytest.fixture(autouse=True)
def _interpreter_env(request, monkeypatch):
    if not IN_PROCESS and request.node.name != "test_in_a_fresh_process":
        pytest.skip("triton was imported before TRITON_INTERPRET=1 was set: test_in_a_fresh_process runs this")
    if not ON_GPU:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("LFCLI_ATTENTION_BACKEND", raising=False)


# ----------------------------------------------------------------------------------------------
# float64 twins of the reference (reference.py computes its softmax in float32)


def reference64(q, k, v, w1, key_padding_mask, is_global, dilation, rel_bias=None):
    n = q.shape[2]
    allowed = allowed_keys(n, w1, key_padding_mask, is_global, dilation)
    scores = q.double() @ k.double().transpose(-1, -2)
    if rel_bias is not None:
        i = torch.arange(n, device=q.device)
        scores = scores + bias_at(rel_bias.double(), i[None, :] - i[:, None])  # key minus query
    probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    probs = probs.masked_fill(key_padding_mask[:, None, :, None], 0.0)
    return probs @ v.double()


def global_rows64(q, k, v, key_padding_mask, rel_bias=None, positions=None):
    scores = q.double() @ k.double().transpose(-1, -2)
    if rel_bias is not None:
        j = torch.arange(k.shape[2], device=q.device)
        scores = scores + bias_at(rel_bias.double(), j[None, None, :] - positions[:, :, None]).transpose(0, 1)
    scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1) @ v.double()


def make_bias(H, R, seed=0):
    """A (H, 2R+1) relative position bias of order 1: enough to move the softmax."""
    return torch.randn(H, 2 * R + 1, generator=torch.Generator().manual_seed(seed)).to(DEVICE)


def make_inputs(B, H, n, D, lengths=None, globals_=None, dtype=torch.float32, seed=0):
    """q, k, v (B, H, n, D) with q at attention scale, and the masks: sample b has lengths[b]
    real tokens (right padding) and global tokens at globals_[b] (which may hit padding)."""
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, n, D, generator=gen) for _ in range(3))
    q = q * 2.0 / D**0.5  # scores of order 1-2: a peaked softmax, so a wrong mask shows
    key_padding_mask = torch.zeros(B, n, dtype=torch.bool)
    is_global = torch.zeros(B, n, dtype=torch.bool)
    for b in range(B):
        if lengths is not None:
            key_padding_mask[b, lengths[b]:] = True
        if globals_ is not None and globals_[b]:
            is_global[b, list(globals_[b])] = True
    to = dict(device=DEVICE, dtype=dtype)
    return q.to(**to), k.to(**to), v.to(**to), key_padding_mask.to(DEVICE), is_global.to(DEVICE)


def max_err(x, ref):
    return (x.double() - ref).abs().max().item() if x.numel() else 0.0


def assert_close_to(name, kernel, torch_same_precision, ref64, floor):
    """Flash-attention's rule: kernel error <= 2 x PyTorch's error at the same precision + floor."""
    err, torch_err = max_err(kernel, ref64), max_err(torch_same_precision, ref64)
    bound = 2 * torch_err + floor * max(1.0, ref64.abs().max().item() if ref64.numel() else 0.0)
    assert err <= bound, f"{name}: kernel error {err:.3g} > bound {bound:.3g} (PyTorch's error {torch_err:.3g})"


def check_banded(q, k, v, w1, key_padding_mask, is_global, dilation, config, floor=1e-5, grads=True, rel_bias=None):
    """The kernels against the reference; with rel_bias (H, 2R+1), its gradient too."""
    dilation = torch.as_tensor(dilation, dtype=torch.long)
    inputs = (q, k, v) if rel_bias is None else (q, k, v, rel_bias.to(q.dtype))
    leaves = [x.detach().requires_grad_(grads) for x in inputs]
    leaves32 = [x.detach().float().requires_grad_(grads) for x in inputs]
    leaves64 = [x.detach().double().requires_grad_(grads) for x in inputs]
    bias, bias32, bias64 = (None, None, None) if rel_bias is None else (leaves[3], leaves32[3], leaves64[3])
    masks = (w1, key_padding_mask, is_global, dilation)
    out = tb.triton_attention(*leaves[:3], *masks, rel_bias=bias, config=config)
    plain = reference_attention(*(x.to(q.dtype) for x in leaves32[:3]), *masks,
                                rel_bias=None if bias32 is None else bias32.to(q.dtype))
    ref = reference64(*leaves64[:3], *masks, rel_bias=bias64)
    assert out.shape == q.shape and out.dtype == q.dtype
    assert_close_to("out", out, plain, ref, floor)
    if not grads:
        return
    grad_out = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(ref.device)
    got = torch.autograd.grad(out, leaves, grad_out.to(out.dtype))
    plain_grads = torch.autograd.grad(plain, leaves32, grad_out.to(plain.dtype))
    want = torch.autograd.grad(ref, leaves64, grad_out)
    for name, g, p, w in zip(("dq", "dk", "dv", "d_rel_bias"), got, plain_grads, want):
        assert g.dtype == q.dtype, name
        assert_close_to(name, g, p, w, floor)


# ----------------------------------------------------------------------------------------------
# Band bounds and work efficiency (pure functions, no kernels)


def brute_force_ranges(length, block, w1, other_length):
    rows = []
    for start in range(0, length, block):
        rows_in_block = range(start, min(start + block, length))
        reached = [j for j in range(other_length) if any(abs(i - j) <= w1 for i in rows_in_block)]
        lo, hi = (reached[0], reached[-1] + 1) if reached else (0, 0)
        assert reached == list(range(lo, hi))  # the band of a block is one interval
        rows.append((start, lo, hi))
    return rows


@pytest.mark.parametrize("length", [1, 15, 16, 17, 63, 64, 65, 130])
@pytest.mark.parametrize("block", [16, 64])
@pytest.mark.parametrize("w1", [1, 4, 16, 17, 64, 200])
def test_band_block_ranges_match_brute_force(length, block, w1):
    got = tb.band_block_ranges(length, block, w1).tolist()
    want = brute_force_ranges(length, block, w1, length)
    assert [tuple(r) for r in got] == want


@pytest.mark.parametrize("length, other_length", [(3, 100), (17, 5), (1, 1)])
def test_band_block_ranges_other_side_longer_or_shorter(length, other_length):
    # Global rows use a window wider than both sides: every block visits all the keys.
    w1 = max(length, other_length)
    got = tb.band_block_ranges(length, 16, w1, other_length).tolist()
    assert [tuple(r) for r in got] == brute_force_ranges(length, 16, w1, other_length)
    assert all(lo == 0 and hi == other_length for _, lo, hi in got)


def test_work_table_covers_every_position_once():
    n, w1, dilations = 37, 3, (1, 2, 5)
    table = tb.work_table(n, n, w1, dilations, 16, torch.device("cpu"))
    for h, d in enumerate(dilations):
        covered = []
        for residue, dil, own_len, start, lo, hi in table[h].tolist():
            if own_len == 0:
                continue
            assert dil == d and lo == max(0, start - w1) and hi == min(own_len, min(start + 16, own_len) + w1)
            covered += [residue + t * d for t in range(start, min(start + 16, own_len))]
        assert sorted(covered) == list(range(n))


def test_work_efficiency_figures():
    """The figures themselves are benchmarks/run_all.py's to print; a test prints nothing."""
    rows = []
    for window in (128, 256, 512, 1024):
        eff = tb.work_efficiency(16384, window, 64, 64)
        rows.append((window, eff))
        assert eff.blocks == 1.0  # computed bounds: every visited key tile holds in-band keys
        # whole tiles: (2*w1 + 1) / (64 + 2*w1) for a long sequence
        assert eff.scores == pytest.approx((window + 1) / (64 + window), rel=2e-3)
    assert dict(rows)[512].scores >= 0.8
    dilated = tb.work_efficiency(16384, 512, 64, 64, dilation=4)
    assert dilated.blocks == 1.0 and dilated.scores >= 0.8


def test_work_efficiency_short_sequence_is_exact():
    # n=8, window 4 (w1=2): one whole 16 x 16 tile computed, 3+4+5+5+5+5+4+3 = 34 scores needed.
    eff = tb.work_efficiency(8, 4, 16, 16)
    assert eff == (1.0, 34 / 256)


# ----------------------------------------------------------------------------------------------
# Banded attention: forward and gradients against the reference


# (n, one-sided window, dilation per head, real lengths per sample, global positions per sample)
BANDED_CASES = {
    "plain": (40, 4, [1, 1], None, None),
    "band-edges-on-block-edges": (64, 16, [1, 1], None, None),
    "window-one": (33, 1, [1, 1], None, None),
    "window-wider-than-sequence": (20, 32, [1, 1], None, None),
    "globals-first-last": (45, 3, [1, 1], None, [[0], [44]]),
    "globals-middle-and-none": (45, 3, [1, 1], None, [[7, 22, 23], []]),
    "globals-all-over": (50, 2, [1, 1], None, [[0, 16, 17, 31, 49], list(range(18))]),  # 18 > one column tile
    "padding": (50, 5, [1, 1], [50, 23], None),
    "padding-and-globals": (50, 5, [1, 1], [31, 50], [[0, 40], [3]]),  # global 40 is padding
    "dilation-per-head": (61, 3, [1, 3], None, None),
    "dilation-globals-padding": (61, 4, [2, 5], [61, 50], [[0, 30], [59, 1]]),
    "dilation-beyond-sequence": (10, 2, [1, 16], [10, 7], [[4], []]),
    "odd-length": (37, 6, [2, 1], [37, 36], [[36], [18]]),
}


@pytest.mark.parametrize("case", list(BANDED_CASES))
def test_banded_small_blocks(case):
    n, w1, dilation, lengths, globals_ = BANDED_CASES[case]
    q, k, v, kpm, isg = make_inputs(2, 2, n, 32, lengths, globals_, seed=len(case))
    check_banded(q, k, v, w1, kpm, isg, dilation, SMALL)


@pytest.mark.parametrize("n", [63, 64, 65, 127, 129])
def test_banded_block_boundary_lengths(n):
    # Default blocks (64): lengths one short of, on, and one past a block edge.
    q, k, v, kpm, isg = make_inputs(2, 2, n, 32, [n, n - 5], [[0, n // 2], [n - 6]], seed=n)
    check_banded(q, k, v, 20, kpm, isg, [1, 2], None)


@pytest.mark.parametrize("n", [63, 65, 129])
def test_banded_block_boundary_lengths_small_blocks(n):
    q, k, v, kpm, isg = make_inputs(1, 2, n, 32, None, [[n - 1]], seed=n)
    check_banded(q, k, v, 16, kpm, isg, [1, 2], SMALL)


@pytest.mark.parametrize("D", [16, 64, 48])
def test_banded_head_dims(D):
    # 16 is the tiny model's; 48 is not a power of two (padded to 64 inside the kernel).
    q, k, v, kpm, isg = make_inputs(1, 2, 70, D, [66], [[3, 69]], seed=D)
    check_banded(q, k, v, 8, kpm, isg, [1, 2], None)


@slow
def test_banded_head_dim_128_and_longer():
    q, k, v, kpm, isg = make_inputs(2, 2, 300, 128, [300, 257], [[0, 150], []], seed=5)
    check_banded(q, k, v, 40, kpm, isg, [1, 3], None)


@slow
@pytest.mark.parametrize("window", [64, 128])
def test_banded_long(window):
    q, k, v, kpm, isg = make_inputs(1, 2, 1000, 64, [1000], [[0, 500, 999]], seed=window)
    check_banded(q, k, v, window // 2, kpm, isg, [1, 2], None)


def test_banded_fp16():
    q, k, v, kpm, isg = make_inputs(2, 2, 70, 32, [70, 60], [[0], [65]], dtype=torch.float16, seed=3)
    check_banded(q, k, v, 8, kpm, isg, [1, 2], None, floor=1e-3)


@pytest.mark.skipif(not ON_GPU, reason="Triton's interpreter misreads bf16 in tl.dot; bf16 runs on a GPU only")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [32, 64, 128])
def test_banded_half_precision_gpu(dtype, D):
    q, k, v, kpm, isg = make_inputs(2, 4, 1030, D, [1030, 700], [[0, 512], []], dtype=dtype, seed=D)
    check_banded(q, k, v, 128, kpm, isg, [1, 1, 2, 4], None, floor=1e-3)


# ----------------------------------------------------------------------------------------------
# Relative position bias (MPNet's): rel_bias[h, clamp(j - i, -R, R) + R] added to every score


# (n, one-sided window, R, real lengths per sample, global positions per sample); dilation 1
BIAS_CASES = {
    "inside-one-window": (20, 32, 4, [20, 13], [[3], []]),  # n < w1: the band is every key
    "reach-below-window": (50, 8, 3, [50, 41], [[0, 25], [49]]),  # band offsets clamp at +-R
    "reach-above-window": (45, 3, 20, [45, 30], [[0, 44], [7]]),  # only far global columns clamp
    "reach-beyond-sequence": (33, 4, 40, None, [[16], []]),  # nothing clamps
    "reach-one-odd-length": (37, 6, 1, [37, 36], [[36], [18]]),
    "globals-all-over": (50, 2, 6, None, [[0, 16, 17, 31, 49], list(range(18))]),  # 18 > one column tile
}


@pytest.mark.parametrize("case", list(BIAS_CASES))
def test_banded_bias_small_blocks(case):
    n, w1, R, lengths, globals_ = BIAS_CASES[case]
    q, k, v, kpm, isg = make_inputs(2, 2, n, 32, lengths, globals_, seed=len(case))
    check_banded(q, k, v, w1, kpm, isg, [1, 1], SMALL, rel_bias=make_bias(2, R, seed=n))


@pytest.mark.parametrize("R", [5, 40])
def test_banded_bias_default_blocks(R):
    q, k, v, kpm, isg = make_inputs(2, 2, 70, 32, [70, 61], [[0, 35], [69]], seed=R)
    check_banded(q, k, v, 20, kpm, isg, [1, 1], None, rel_bias=make_bias(2, R, seed=R))


def test_banded_bias_fp16():
    q, k, v, kpm, isg = make_inputs(2, 2, 70, 32, [70, 60], [[0], [65]], dtype=torch.float16, seed=3)
    check_banded(q, k, v, 8, kpm, isg, [1, 1], None, floor=1e-3, rel_bias=make_bias(2, 5))


def test_bias_refuses_dilation_and_missing_positions():
    # banded_attention refuses a dilated bias with a ValueError; the launcher only asserts it
    # (under torch.compile the dilations reach triton_attention as symbols, not ints).
    q, k, v, kpm, isg = make_inputs(1, 2, 20, 16)
    with pytest.raises(AssertionError, match="dilation 1"):
        tb.triton_attention(q, k, v, 3, kpm, isg, torch.tensor([1, 2]), rel_bias=make_bias(2, 3))
    with pytest.raises(ValueError, match="positions"):
        tb.triton_global_rows(q[:, :, :2], k, v, kpm, rel_bias=make_bias(2, 3))


# ----------------------------------------------------------------------------------------------
# Global rows: a dense masked pass of the global queries over every key


def check_global_rows(q, k, v, kpm, config, rel_bias=None, positions=None):
    """triton_global_rows against the reference; with rel_bias (H, 2R+1), its gradient too."""
    inputs = (q, k, v) if rel_bias is None else (q, k, v, rel_bias)
    leaves = [x.detach().requires_grad_() for x in inputs]
    leaves32 = [x.detach().float().requires_grad_() for x in inputs]
    leaves64 = [x.detach().double().requires_grad_() for x in inputs]
    bias, bias32, bias64 = (None, None, None) if rel_bias is None else (leaves[3], leaves32[3], leaves64[3])
    out = tb.triton_global_rows(*leaves[:3], kpm, rel_bias=bias, positions=positions, config=config)
    plain = reference_global_rows(*leaves32[:3], kpm, rel_bias=bias32, positions=positions)
    ref = global_rows64(*leaves64[:3], kpm, rel_bias=bias64, positions=positions)
    assert_close_to("out", out, plain, ref, 1e-5)
    grad_out = torch.randn(ref.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(ref.device)
    got = torch.autograd.grad(out, leaves, grad_out.float())
    plain_grads = torch.autograd.grad(plain, leaves32, grad_out.float())
    want = torch.autograd.grad(ref, leaves64, grad_out)
    for name, g, p, w in zip(("dq", "dk", "dv", "d_rel_bias"), got, plain_grads, want):
        assert_close_to(name, g, p, w, 1e-5)


@pytest.mark.parametrize(
    "G, n, lengths",
    [(1, 40, None), (3, 65, [65, 30]), (17, 33, [20, 33]), (2, 129, [129, 128])],
)
@pytest.mark.parametrize("config", [None, SMALL], ids=["default-blocks", "small-blocks"])
def test_global_rows(G, n, lengths, config):
    _, k, v, kpm, _ = make_inputs(2, 2, n, 32, lengths, seed=G * n)
    q = make_inputs(2, 2, G, 32, seed=G)[0]
    check_global_rows(q, k, v, kpm, config)


@pytest.mark.parametrize(
    "G, n, lengths, R",
    [(1, 40, None, 4), (3, 65, [65, 30], 10), (17, 33, [20, 33], 40)],  # R below, above, beyond n
)
@pytest.mark.parametrize("config", [None, SMALL], ids=["default-blocks", "small-blocks"])
def test_global_rows_bias(G, n, lengths, R, config):
    _, k, v, kpm, _ = make_inputs(2, 2, n, 32, lengths, seed=G * n)
    q = make_inputs(2, 2, G, 32, seed=G)[0]
    gen = torch.Generator().manual_seed(G)  # the global queries sit anywhere, in any order
    positions = torch.stack([torch.randperm(n, generator=gen)[:G] for _ in range(2)]).to(DEVICE)
    check_global_rows(q, k, v, kpm, config, rel_bias=make_bias(2, R, seed=n), positions=positions)


def test_global_rows_no_global_queries():
    _, k, v, kpm, _ = make_inputs(1, 2, 10, 32)
    q = torch.zeros(1, 2, 0, 32, device=DEVICE)
    assert tb.triton_global_rows(q, k, v, kpm).shape == (1, 2, 0, 32)


# ----------------------------------------------------------------------------------------------
# Dropout: the kernels draw their own mask; recover it and check everything against it


def recover_keep_mask(B, H, n, w1, kpm, isg, dilation, p, seed):
    """With v = identity rows, out[i, j] = kept probability of key j / (1 - p): nonzero where kept."""
    q = torch.zeros(B, H, n, n, device=DEVICE)  # uniform softmax: every allowed probability > 0
    v = torch.eye(n, device=DEVICE).expand(B, H, n, n).contiguous()
    torch.manual_seed(seed)
    out = tb.triton_attention(q, q, v, w1, kpm, isg, dilation, p)
    return out != 0


@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_dropout_matches_reference_with_the_same_mask(with_bias):
    B, H, n, w1, p = 2, 2, 32, 4, 0.3
    dilation = torch.tensor([1, 1] if with_bias else [1, 2])
    q, k, v, kpm, isg = make_inputs(B, H, n, 32, [32, 27], [[5], [0, 31]], seed=11)
    inputs = (q, k, v, make_bias(H, 3)) if with_bias else (q, k, v)
    keep = recover_keep_mask(B, H, n, w1, kpm, isg, dilation, p, seed=123)
    allowed = allowed_keys(n, w1, kpm, isg, dilation) & ~kpm[:, None, :, None]
    assert not (keep & ~allowed).any()  # nothing outside the pattern is ever kept
    kept = keep.sum().item() / allowed.sum().item()
    assert abs(kept - (1 - p)) < 0.06, kept

    leaves = [x.detach().requires_grad_() for x in inputs]
    leaves64 = [x.detach().double().requires_grad_() for x in inputs]
    torch.manual_seed(123)  # the same seed: the kernels draw the same mask
    out = tb.triton_attention(*leaves[:3], w1, kpm, isg, dilation, p, rel_bias=leaves[3] if with_bias else None)
    scores = leaves64[0] @ leaves64[1].transpose(-1, -2)
    if with_bias:
        i = torch.arange(n, device=DEVICE)
        scores = scores + bias_at(leaves64[3], i[None, :] - i[:, None])
    scores = scores.masked_fill(~allowed_keys(n, w1, kpm, isg, dilation), float("-inf"))
    probs = torch.softmax(scores, -1).masked_fill(kpm[:, None, :, None], 0.0)
    ref = (probs * keep / (1 - p)) @ leaves64[2]
    assert max_err(out, ref) < 1e-5
    # drawn on the CPU (the same numbers on every machine), then put where the kernel ran
    grad_out = torch.randn(ref.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(ref.device)
    got = torch.autograd.grad(out, leaves, grad_out.float())
    want = torch.autograd.grad(ref, leaves64, grad_out)
    for g, w in zip(got, want):
        assert max_err(g, w) < 1e-5 * max(1.0, w.abs().max().item())


def test_dropout_draws_a_new_mask_each_call():
    q, k, v, kpm, isg = make_inputs(1, 2, 20, 32, seed=4)
    a = tb.triton_attention(q, k, v, 3, kpm, isg, torch.tensor([1, 1]), 0.5)
    b = tb.triton_attention(q, k, v, 3, kpm, isg, torch.tensor([1, 1]), 0.5)
    assert not torch.equal(a, b)


# ----------------------------------------------------------------------------------------------
# Through the public entry point, torch.library, and the model


def test_entry_point_backend_triton():
    q, k, v, kpm, isg = make_inputs(2, 2, 30, 32, [30, 25], [[0], [24]], seed=9)
    got = banded_attention(q, k, v, 8, kpm, isg, dilation=[1, 2], backend="triton")
    want = banded_attention(q, k, v, 8, kpm, isg, dilation=[1, 2], backend="chunked")
    assert max_err(got, want.double()) < 1e-5


def test_entry_point_passes_the_bias():
    q, k, v, kpm, isg = make_inputs(2, 2, 30, 32, [30, 25], [[0], [24]], seed=9)
    rel_bias = make_bias(2, 6)
    got = banded_attention(q, k, v, 8, kpm, isg, backend="triton", rel_bias=rel_bias)
    want = banded_attention(q, k, v, 8, kpm, isg, backend="reference", rel_bias=rel_bias)
    assert max_err(got, want.double()) < 1e-5


def test_entry_point_refuses_triton_on_cpu_without_interpreter(monkeypatch):
    from lfcli.kernels import BackendUnavailable

    if ON_GPU:
        pytest.skip("runs on CUDA tensors")
    monkeypatch.delenv("TRITON_INTERPRET")
    q, k, v, kpm, isg = make_inputs(1, 1, 8, 16)
    with pytest.raises(BackendUnavailable, match="TRITON_INTERPRET"):
        banded_attention(q, k, v, 2, kpm, isg, backend="triton")


@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_registered_ops_pass_opcheck(with_bias):
    q, k, v, kpm, isg = make_inputs(1, 2, 24, 16, [20], [[0, 5]], seed=1)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    rel_bias = make_bias(2, 4).requires_grad_() if with_bias else None
    positions = torch.tensor([[0, 17, 5]], device=DEVICE) if with_bias else None
    dilation = [1, 1] if with_bias else [1, 2]
    masks = tb._banded_masks(kpm, isg)
    args = (q, k, v, *masks, rel_bias, 3, dilation, 0.0, 0, list(SMALL))
    torch.library.opcheck(torch.ops.lfcli.triton_banded_attention.default, args,
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
    rows_args = (q[:, :, :3].detach().requires_grad_(), k, v, kpm, rel_bias, positions, 0.0, 0, list(SMALL))
    torch.library.opcheck(torch.ops.lfcli.triton_global_rows.default, rows_args,
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))


@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_torch_compile_sees_the_op(with_bias):
    # fullgraph: the registered op must not break the graph; aot_eager also traces the backward.
    q, k, v, kpm, isg = make_inputs(1, 2, 40, 16, [36], [[3]], seed=2)
    dilation = torch.tensor([1, 1] if with_bias else [1, 2])
    inputs = (q, k, v, make_bias(2, 3)) if with_bias else (q, k, v)

    def loss(q, k, v, rel_bias=None):
        return tb.triton_attention(q, k, v, 4, kpm, isg, dilation, rel_bias=rel_bias, config=SMALL).sin().sum()

    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    leaves = [x.detach().requires_grad_() for x in inputs]
    eager = [x.detach().requires_grad_() for x in inputs]
    a, b = compiled(*leaves), loss(*eager)
    a.backward()
    b.backward()
    assert torch.allclose(a, b)
    for x, y in zip(leaves, eager):
        assert torch.allclose(x.grad, y.grad)


def test_model_runs_through_the_kernels(monkeypatch):
    from lfcli.models import LongformerConfig, LongformerModel, apply_fast_paths

    config = LongformerConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        attention_window=8, max_position_embeddings=80, attention_dilation=[[1, 2], [1, 1]],
    )
    torch.manual_seed(0)
    model = apply_fast_paths(LongformerModel(config)).to(DEVICE).eval()  # with the fast paths, as loading builds it
    with torch.no_grad():  # non-zero biases, so a mask slip would show
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    ids = torch.randint(3, 50, (2, 29), device=DEVICE)
    attention_mask = torch.ones_like(ids)
    attention_mask[1, 21:] = 0
    global_mask = torch.zeros_like(ids)
    global_mask[0, 0] = global_mask[1, [0, 5]] = 1

    calls = []
    original = tb.triton_attention

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return original(*args, **kwargs)

    monkeypatch.setattr(tb, "triton_attention", counting)
    outs = {}
    for backend in ("triton", "chunked"):
        model.attention_backend = backend
        outs[backend] = model(ids, attention_mask, global_mask)
    assert len(calls) == config.num_hidden_layers  # the triton run went through the kernels
    assert max_err(outs["triton"], outs["chunked"].double()) < 1e-5


def test_model_with_many_globals_uses_the_global_rows_kernel(monkeypatch):
    """G*H >= hidden: the model projects every position with key/value_global and, on the
    triton backend, runs the global rows through triton_global_rows."""
    from lfcli.models import LongformerConfig, LongformerModel, apply_fast_paths

    config = LongformerConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
        attention_window=8, max_position_embeddings=80,
    )
    torch.manual_seed(2)
    model = apply_fast_paths(LongformerModel(config)).to(DEVICE).eval()  # with the fast paths, as loading builds it
    ids = torch.randint(3, 50, (2, 41), device=DEVICE)
    attention_mask = torch.ones_like(ids)
    attention_mask[1, 33:] = 0
    global_mask = torch.zeros_like(ids)
    global_mask[0, :17] = 1  # 17 globals x 2 heads > 32 hidden
    global_mask[1, 3:10] = 1
    calls = []
    original = tb.triton_global_rows
    monkeypatch.setattr(tb, "triton_global_rows", lambda *a, **k: calls.append(1) or original(*a, **k))
    outs = {}
    for backend in ("triton", "chunked"):
        model.attention_backend = backend
        outs[backend] = model(ids, attention_mask, global_mask)
    assert calls, "the global rows did not go through the kernel"
    assert max_err(outs["triton"], outs["chunked"].double()) < 1e-5


def test_model_gradients_match_chunked():
    from lfcli.models import LongformerConfig, LongformerModel, apply_fast_paths

    config = LongformerConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        attention_window=8, max_position_embeddings=80, attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0,
    )
    torch.manual_seed(1)
    model = apply_fast_paths(LongformerModel(config)).to(DEVICE)  # with the fast paths, as loading builds it
    ids = torch.randint(3, 50, (2, 23), device=DEVICE)
    attention_mask = torch.ones_like(ids)
    attention_mask[0, 19:] = 0
    global_mask = torch.zeros_like(ids)
    global_mask[:, 0] = 1
    grads = {}
    for backend in ("triton", "chunked"):
        model.attention_backend = backend
        model.zero_grad()
        model(ids, attention_mask, global_mask).pow(2).mean().backward()
        grads[backend] = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    for name, g in grads["chunked"].items():
        assert max_err(grads["triton"][name], g.double()) < 1e-5, name


@pytest.mark.skipif(IN_PROCESS, reason="the kernels already run in this process")
def test_in_a_fresh_process(capsys):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"]
    cwd = Path(__file__).parents[1]
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=1200)
    with capsys.disabled():
        print(f"\n{Path(__file__).name} in a fresh process: {result.stdout.strip().splitlines()[-1]}")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


# ----------------------------------------------------------------------------------------------
# Planned once a forward, and the tuned block sizes


@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_columns_planned_with_spare_slots_give_the_same_attention(with_bias):
    """The model counts the global columns on the host (possibly more than any sample has, as
    globals on padding count there) and hands them to every layer: empty slots change nothing."""
    from lfcli.kernels.chunked import global_columns

    q, k, v, kpm, isg = make_inputs(2, 2, 70, 16, [70, 50], [[0, 9], [3, 60]], seed=5)  # 60 is padding
    dilation = torch.tensor([1, 1] if with_bias else [1, 2])
    rel_bias = make_bias(2, 4) if with_bias else None
    plain = tb.triton_attention(q, k, v, 6, kpm, isg, dilation, rel_bias=rel_bias, config=SMALL)
    for spare in (0, 3):
        columns = global_columns(isg & ~kpm, num_global=2 + spare)
        assert columns[0].shape[1] == 2 + spare
        got = tb.triton_attention(q, k, v, 6, kpm, isg, dilation, rel_bias=rel_bias, config=SMALL, columns=columns)
        assert max_err(got, plain) < 1e-6, spare


def tuning_cases():
    """(D, block_m, block_n) -> (config, the first dtype tuning offers it for): a candidate
    offered for 16-bit types only (too big for fp32 tiles) is checked in fp16."""
    from lfcli.kernels.triton_tune import candidates

    seen = {}
    for D in (32, 128):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for cfg in candidates(D, dtype):
                seen.setdefault((D, cfg.block_m, cfg.block_n), (cfg, dtype))
    return seen


@pytest.mark.parametrize("key", list(tuning_cases()), ids=lambda key: f"D{key[0]}-m{key[1]}-n{key[2]}")
def test_every_tuning_candidate_matches_the_reference(key):
    """Tuning may pick any candidate: each must give the reference's result, band edges,
    padding, globals and the bias included, in a dtype tuning offers it for."""
    D = key[0]
    cfg, dtype = tuning_cases()[key]
    q, k, v, kpm, isg = make_inputs(2, 2, 300, D, [300, 211], [[0, 150], [5]], dtype=dtype, seed=7)
    floor = 1e-5 if dtype == torch.float32 else 1e-3
    check_banded(q, k, v, 40, kpm, isg, torch.tensor([1, 1]), cfg, floor=floor, grads=False,
                 rel_bias=make_bias(2, 50))


# ----------------------------------------------------------------------------------------------
# Inference runs the registered ops' bodies directly (no dispatch, no torch._dynamo import)


def test_inference_calls_the_ops_bodies_with_the_ops_results():
    q, k, v, kpm, isg = make_inputs(2, 2, 90, 32, [90, 70], [[0, 40], [3]], seed=11)
    bias = make_bias(2, 6)
    masks = tb._banded_masks(kpm.clone(), isg.clone(), None)
    params = (10, [1, 1], 0.0, 0)
    config = list(tb.kernel_config(32))
    via_op, _ = tb._banded_op(q, k, v, *masks, bias, *params, config)
    with torch.inference_mode():
        direct = tb.triton_attention(q, k, v, 10, kpm, isg, [1, 1], rel_bias=bias, config=tb.kernel_config(32))
        rows = tb.triton_global_rows(q[:, :, :3], k, v, kpm, rel_bias=bias, positions=torch.tensor([[0, 1, 2]] * 2))
    assert torch.equal(direct, via_op)
    rows_op, _ = tb._global_rows_op(q[:, :, :3], k, v, kpm, bias, torch.tensor([[0, 1, 2]] * 2), 0.0, 0,
                                    list(tb.kernel_config(32)._replace(block_m=16)))
    assert torch.equal(rows, rows_op)


def test_an_inference_process_never_imports_dynamo():
    """The ops' dispatch imports torch._dynamo (seconds of a cold start); inference skips it."""
    code = ("import sys, torch\n"
            "from lfcli.kernels import triton_banded as tb\n"
            "q = torch.randn(1, 2, 40, 16); kpm = torch.zeros(1, 40, dtype=torch.bool); isg = kpm.clone()\n"
            "isg[0, 0] = True\n"
            "with torch.inference_mode():\n"
            "    tb.triton_attention(q, q, q, 6, kpm, isg, [1, 1])\n"
            "    tb.triton_global_rows(q[:, :, :1], q, q, kpm)\n"
            "assert 'torch._dynamo' not in sys.modules, 'imported'\n")
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
