"""What the GPU path needs from the host, checked on the CPU: the forward's plans (global
columns counted on the host, global rows written without reading back), the pipeline's
read-ahead and device budgets, results brought to the host once a batch, and the band
kernel's tuner. The GPU itself is checked by benchmarks/gpu_check.py."""

from __future__ import annotations

import json

import pytest
import torch
from checkpoints import make_checkpoint

from lfcli.kernels.chunked import global_columns
from lfcli.kernels.triton_plan import KernelConfig, kernel_config
from lfcli.kernels.triton_tune import Tuner, candidates, tuned_config, tuning_applies
from lfcli.models import LongformerConfig, LongformerModel, apply_fast_paths
from lfcli.models.longformer import overwrite_rows
from lfcli.pipelines.infer.read_ahead import read_ahead
from lfcli.pipelines.infer.results import results_to_host
from lfcli.pipelines.infer.runner import Pipeline, batch_budget
from lfcli.pipelines.io.readers import Document
from lfcli.pipelines.job_defaults import JOB


# -- the forward's plans -----------------------------------------------------------------------


def test_global_columns_with_spare_slots():
    is_global = torch.tensor([[1, 0, 0, 1, 0], [0, 0, 1, 0, 0]], dtype=torch.bool)
    index, valid = global_columns(is_global, num_global=4)
    assert index.shape == valid.shape == (2, 4)
    assert valid.tolist() == [[True, True, False, False], [True, False, False, False]]
    assert index[0, :2].tolist() == [0, 3] and index[1, 0].item() == 2
    for b in range(2):  # a sample's slots point at distinct positions, the empty ones at non-globals
        assert len(set(index[b].tolist())) == 4
        assert not is_global[b, index[b][~valid[b]]].any()
    assert global_columns(is_global, num_global=9)[0].shape[1] == 5  # never more than n


@pytest.mark.parametrize("grad", [False, True])
def test_overwrite_rows_matches_indexing_by_the_filled_slots(grad):
    gen = torch.Generator().manual_seed(0)
    out = torch.randn(2, 3, 7, 4, generator=gen)
    rows = torch.randn(2, 3, 3, 4, generator=gen).requires_grad_(grad)
    index = torch.tensor([[1, 5, 0], [6, 2, 3]])
    valid = torch.tensor([[True, True, False], [True, False, False]])
    want = out.clone()
    b, g = valid.nonzero(as_tuple=True)
    want[b, :, index[b, g]] = rows.detach()[b, :, g]
    got = overwrite_rows(out.clone().requires_grad_(grad) if grad else out.clone(), rows, index, valid)
    assert torch.equal(got.detach(), want)
    if grad:
        got.sum().backward()
        by_slot = rows.grad.transpose(1, 2)  # (B, G, H, D)
        assert torch.equal(by_slot[~valid], torch.zeros_like(by_slot[~valid]))  # empty slots take no gradient
        assert torch.equal(by_slot[valid], torch.ones_like(by_slot[valid]))


def test_a_global_on_padding_counted_on_the_host_changes_nothing():
    """The model counts the globals of a host mask before padding is taken out: a sample whose
    padding is marked global gets a spare, empty column, and the same output."""
    config = LongformerConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=37, attention_window=8, max_position_embeddings=80)
    torch.manual_seed(0)
    model = apply_fast_paths(LongformerModel(config)).eval()
    ids = torch.randint(3, 50, (2, 40))
    attention = torch.ones_like(ids)
    attention[1, 30:] = 0
    glob = torch.zeros_like(ids)
    glob[0, [0, 7]] = glob[1, 0] = 1
    spare = glob.clone()
    spare[1, [33, 35, 38]] = 1  # on padding: 4 counted for sample 1 where 1 is real
    with torch.no_grad():
        plain, padded = model(ids, attention, glob), model(ids, attention, spare)
    # the same to fp32 rounding: the column merge runs over 4 slots instead of 2, a few
    # roundings per layer of values of order 1 (2 layers), whatever the CPU's kernels
    eps = torch.finfo(torch.float32).eps
    assert (plain - padded).abs().max() <= 16 * config.num_hidden_layers * eps * plain.abs().max()


# -- the pipeline -------------------------------------------------------------------------------


def test_read_ahead_hands_over_every_item_in_order_and_raises_where_the_iterator_did():
    assert list(read_ahead(iter(range(50)), depth=2)) == list(range(50))

    def failing():
        yield from range(5)
        raise ValueError("document 5 is unreadable")

    seen = []
    with pytest.raises(ValueError, match="document 5"):
        for x in read_ahead(failing(), depth=3):
            seen.append(x)
    assert seen == list(range(5))


def test_read_ahead_stops_its_thread_when_the_consumer_stops():
    made = []

    def endless():
        i = 0
        while True:
            made.append(i)
            yield i
            i += 1

    stream = read_ahead(endless(), depth=2)
    assert next(stream) == 0
    stream.close()
    count = len(made)
    import time

    time.sleep(0.3)
    assert len(made) == count <= 4  # at most depth + the one in hand + the one being made


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("enc"), "LongformerModel", max_tokens=64, attention_window=16)


def test_reading_ahead_gives_the_same_rows_in_order_with_a_failing_document(encoder_dir):
    docs = [Document(f"d{i}", "The lease ran on for years. " * (3 + 7 * (i % 4))) for i in range(9)]
    docs[4] = Document("d4", None, "unreadable: not UTF-8")
    docs[6] = Document("d6", "   ")  # no tokens: fails in prepare
    rows = {}
    for ahead in (False, True):
        pipe = Pipeline("embed", str(encoder_dir), max_length=64, chunk_docs=2, read_ahead=ahead)
        rows[ahead] = list(pipe.run(docs))
    assert [r["id"] for r in rows[True]] == [d.id for d in docs]
    assert "error" in rows[True][4] and "error" in rows[True][6]
    assert rows[True] == rows[False]


def test_a_gpu_plan_takes_the_larger_budget():
    assert batch_budget(torch.device("cuda")) == (JOB.cuda_batch_size, JOB.cuda_max_tokens)
    assert batch_budget(torch.device("cpu")) == (JOB.batch_size, JOB.max_tokens)
    assert JOB.cuda_max_tokens > JOB.max_tokens and JOB.cuda_batch_size > JOB.batch_size
    assert batch_budget(torch.device("cuda"), 3, 500) == (3, 500)  # the user's options win
    assert batch_budget(torch.device("cuda"), None, 500) == (JOB.cuda_batch_size, 500)


def test_results_come_to_the_host_in_one_copy_a_dtype_with_their_structure():
    a, b = torch.arange(6.0).view(2, 3), torch.tensor([7, 8])
    results = [(a[0], 3, [b]), (a[1], 4, [b[:1]]), None]
    moved = results_to_host(results, on_host=lambda t: False)  # as if every tensor were on a GPU
    assert moved[2] is None and moved[0][1] == 3 and isinstance(moved[0][2], list)
    assert torch.equal(moved[0][0], a[0]) and torch.equal(moved[1][0], a[1])
    assert torch.equal(moved[0][2][0], b) and torch.equal(moved[1][2][0], b[:1])
    assert moved[0][0].untyped_storage().data_ptr() == moved[1][0].untyped_storage().data_ptr()  # one copy
    assert results_to_host(results) is results  # on the CPU already: nothing to do


# -- the tuner ------------------------------------------------------------------------------------


def test_the_tuner_keeps_the_fastest_candidate_and_remembers_it(tmp_path):
    options = candidates(64, torch.bfloat16)
    assert options[0] == kernel_config(64) and len(set(options)) == len(options) >= 3
    speed = {options[2]: 1.0, options[0]: 2.0}

    def timer(run):
        cfg = run()
        if cfg == options[1]:
            raise RuntimeError("out of shared memory")  # a candidate the card cannot compile
        return speed.get(cfg, 3.0)

    path = tmp_path / "tune.json"
    first = Tuner(path, timer=timer)
    assert first.choose("H200/D64", options, lambda cfg: cfg) == options[2]
    assert json.loads(path.read_text()) == {"H200/D64": list(options[2])}
    later = Tuner(path, timer=lambda run: pytest.fail("measured again"))
    assert later.choose("H200/D64", options, lambda cfg: cfg) == options[2]


def test_nothing_is_tuned_on_the_cpu_or_in_training():
    q = torch.zeros(1, 2, 8, 64)
    assert not tuning_applies(q)
    cfg = tuned_config(q, None, [1, 1], lambda c: pytest.fail("tuned on the CPU"))
    assert cfg == kernel_config(64)
    assert all(isinstance(c, KernelConfig) for c in candidates(128, torch.float32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="tuning runs on a CUDA GPU only")
def test_a_short_call_keeps_the_paper_blocks_untuned():
    """Under TUNE_MIN_TOKENS (a short text's first call) nothing is compiled to be timed."""
    from lfcli.kernels.triton_tune import TUNE_MIN_TOKENS

    q = torch.zeros(1, 2, TUNE_MIN_TOKENS // 2, 64, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        cfg = tuned_config(q, None, [1, 1], lambda c: pytest.fail("tuned a short call"))
    assert cfg == kernel_config(64)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a CUDA GPU's dtype")
def test_auto_dtype_is_bf16_on_a_gpu_with_bf16():
    from lfcli.pipelines.infer.precision import resolve_dtype

    want = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    assert resolve_dtype("auto", torch.device("cuda")) == want
