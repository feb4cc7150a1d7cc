"""models/cuda_graphs.py: the graphed forward against the eager one.

On the CPU the capture is replaced by its plain twin (the replay runs the eager forward again
on the static buffers), which checks everything the wrapper itself does: which calls it takes,
the static buffers each replay refills, the shapes it keeps, and the way back to eager. The
real capture runs where CUDA is (benchmarks/gpu_check.py runs this file on a GPU)."""

from __future__ import annotations

import pytest
import torch

from lfcli.models import LongformerConfig, LongformerModel, apply_fast_paths
from lfcli.models.cuda_graphs import GraphedEncoder, graphs_wanted, use_cuda_graphs
from lfcli.models.heads import LongformerForQuestionAnswering

CONFIG = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
              attention_window=8, max_position_embeddings=100)


def plain_capture(run, pool):
    out = run()
    return (lambda: out.copy_(run())), out


def model_on(device="cpu", dtype=torch.float32):
    torch.manual_seed(0)
    return apply_fast_paths(LongformerModel(LongformerConfig(**CONFIG))).eval().to(device=device, dtype=dtype)


def batch(B, n, seed, device="cpu", globals_at=(0,)):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 60, (B, n), generator=g)
    mask = torch.ones_like(ids)
    mask[-1, n - n // 3:] = 0  # the last sample padded
    glob = torch.zeros_like(ids)
    glob[:, list(globals_at)] = 1
    return ids.to(device), mask.to(device), glob  # the global mask stays on the host, as the pipelines give it


def test_replays_give_the_eager_outputs_on_new_inputs():
    model = model_on()
    eager = model.forward
    graphed = use_cuda_graphs(model, replay_after=1, capture=plain_capture)
    assert isinstance(graphed, GraphedEncoder) and model.forward is graphed
    with torch.inference_mode():
        for seed in range(4):  # seed 0: eager; 1: captured and replayed; 2, 3: replayed
            ids, mask, glob = batch(2, 40, seed, globals_at=(0, seed + 5))
            assert torch.allclose(model(ids, mask, glob), eager(ids, mask, glob), atol=1e-6, rtol=0)
    assert graphed.replays == 3 and list(graphed.graphs) == [(2, 40, 2, False)]


def test_each_shape_is_its_own_graph_and_the_oldest_goes():
    model = model_on()
    graphed = use_cuda_graphs(model, replay_after=0, max_graphs=2, capture=plain_capture)
    with torch.inference_mode():
        for n in (30, 40, 50, 40):
            ids, mask, glob = batch(2, n, n)
            assert torch.allclose(model(ids, mask, glob), graphed.eager(ids, mask, glob), atol=1e-6, rtol=0)
        ids, mask, glob = batch(2, 40, 9, globals_at=(0, 3, 4))  # more global columns: another shape
        model(ids, mask, glob)
    assert list(graphed.graphs) == [(2, 40, 1, False), (2, 40, 3, False)]


def test_token_types_and_a_missing_global_mask_are_refilled_too():
    model = model_on()
    graphed = use_cuda_graphs(model, replay_after=0, capture=plain_capture)
    with torch.inference_mode():
        for seed in range(3):
            ids, mask, _ = batch(1, 24, seed)
            types = torch.randint(0, 2, ids.shape, generator=torch.Generator().manual_seed(seed))
            assert torch.allclose(model(ids, mask, None, types), graphed.eager(ids, mask, None, types), atol=1e-6)


def test_training_and_autograd_stay_eager():
    model = model_on()
    calls = []
    graphed = use_cuda_graphs(model, replay_after=0, capture=lambda run, pool: calls.append(1) or plain_capture(run, pool))
    ids, mask, glob = batch(2, 30, 1)
    out = model(ids, mask, glob)  # autograd on: eager
    assert out.requires_grad and not calls
    with torch.inference_mode():
        model(ids, mask, glob)  # inference: captured, then replayed
    assert calls == [1]
    model.train()
    with torch.inference_mode():
        model(ids, mask, glob)
    assert calls == [1] and graphed.replays == 1


def test_a_failed_capture_turns_graphs_off_and_loses_nothing():
    model = model_on()

    def broken(run, pool):
        raise RuntimeError("operation not permitted when stream is capturing")

    graphed = use_cuda_graphs(model, replay_after=0, capture=broken)
    ids, mask, glob = batch(2, 30, 2)
    with torch.inference_mode():
        assert torch.allclose(model(ids, mask, glob), graphed.eager(ids, mask, glob))
        model(ids, mask, glob)
    assert not graphed.enabled and not graphed.graphs


def test_a_heads_encoder_is_the_one_graphed():
    torch.manual_seed(0)
    head = LongformerForQuestionAnswering(LongformerConfig(**CONFIG)).eval()
    graphed = use_cuda_graphs(head, replay_after=0, capture=plain_capture)
    assert head.longformer.forward is graphed
    ids, mask, glob = batch(2, 30, 3)
    with torch.inference_mode():
        first = head(ids, mask, glob)
        again = head(ids, mask, glob)
    assert graphed.replays == 2
    for a, b in zip(first if isinstance(first, tuple) else (first,), again if isinstance(again, tuple) else (again,)):
        assert torch.allclose(a, b, atol=1e-6)


def test_graphs_are_asked_for_on_cuda_only(monkeypatch):
    monkeypatch.setenv("LFCLI_CUDA_GRAPHS", "1")
    assert not graphs_wanted(torch.device("cpu"))
    assert graphs_wanted(torch.device("cuda"))
    monkeypatch.delenv("LFCLI_CUDA_GRAPHS")
    assert not graphs_wanted(torch.device("cuda"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a real CUDA graph needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_real_cuda_graph_gives_the_eager_output(dtype):
    model = model_on("cuda", dtype)
    eager = model.forward
    graphed = use_cuda_graphs(model, replay_after=1)
    with torch.inference_mode():
        for seed in range(4):
            ids, mask, glob = batch(3, 64, seed, "cuda", globals_at=(0, seed + 9))
            got, want = model(ids, mask, glob.pin_memory()), eager(ids, mask, glob)
            assert torch.allclose(got.float(), want.float(), atol=1e-2 if dtype == torch.bfloat16 else 1e-5, rtol=0)
    assert graphed.enabled and graphed.replays == 3
