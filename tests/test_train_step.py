"""The fast training step against its reference twin, on a whole model.

The fast step is what `lfcli finetune` and `pretrain-continue` run on the CPU: the band's own
autograd function (kernels/chunked_grad.py), the torch.rand dropout (kernels/fused.py) and
PyTorch's fused AdamW (train.optimizer.make_optimizer). Its twin is the readable eager path: autograd
through the joined softmax (LFCLI_BAND_GRAD=autograd). With dropout off and a fixed seed both
give the same loss and gradients, within the dtype's tolerance, in fp32 and under bf16
autocast; and the fused AdamW update equals the for-each one.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F

from lfcli.models import LongformerConfig, LongformerForSequenceClassification
from lfcli.models.lora import add_lora

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_classifier(dropout: float = 0.0) -> LongformerForSequenceClassification:
    config = LongformerConfig(vocab_size=300, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=96, max_position_embeddings=402, attention_window=32,
                              hidden_dropout_prob=dropout, attention_probs_dropout_prob=0.0, id2label={0: "a", 1: "b"})
    torch.manual_seed(0)
    return LongformerForSequenceClassification(config).train()


def batch(n: int = 150):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 300, (2, n), generator=g)
    mask = torch.ones_like(ids)
    mask[1, n - 37:] = 0  # the second sample is padded
    ids[1, n - 37:] = 1
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    glob[0, 70] = 1  # a second global token in one sample
    return {"input_ids": ids, "attention_mask": mask, "global_attention_mask": glob}, torch.tensor([0, 1])


def loss_and_grads(model, inputs, labels, band_grad: str, autocast: bool, monkeypatch):
    monkeypatch.setenv("LFCLI_BAND_GRAD", band_grad)
    model.zero_grad(set_to_none=True)
    context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with context:
        logits = model(**inputs)
    loss = F.cross_entropy(logits.float(), labels)
    loss.backward()
    return float(loss.detach()), {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("mode", ["full", "lora"])
@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16-autocast"])
def test_fast_step_equals_reference_step(mode, autocast, monkeypatch):
    model = tiny_classifier()
    if mode == "lora":
        torch.manual_seed(2)
        add_lora(model, r=4, alpha=8.0)
        for name, p in model.named_parameters():  # LoRA's B starts at zero: give it values to differentiate
            if "lora_B" in name:
                p.data.normal_(0, 0.05)
    inputs, labels = batch()
    fast_loss, fast = loss_and_grads(model, inputs, labels, "fused", autocast, monkeypatch)
    ref_loss, ref = loss_and_grads(model, inputs, labels, "autograd", autocast, monkeypatch)
    assert fast.keys() == ref.keys() and len(fast) > 10
    # fp32: rounding only. bf16 autocast: the twin runs the band in bf16, the fast step in fp32,
    # so they differ by bf16's rounding of the attention; the loss to a few 1e-3.
    assert fast_loss == pytest.approx(ref_loss, rel=1e-5 if not autocast else 1e-2)
    tol = 1e-4 if not autocast else 5e-2
    worst = max((fast[n] - ref[n]).abs().max().item() / max(ref[n].abs().max().item(), 1e-6) for n in fast)
    assert worst < tol, worst


def test_fused_adamw_update_equals_foreach():
    """make_optimizer's fused AdamW and PyTorch's default AdamW take the same step."""
    from lfcli.pipelines.train.optimizer import make_optimizer

    models = [tiny_classifier(), tiny_classifier()]
    inputs, labels = batch()
    for model in models:
        F.cross_entropy(model(**inputs), labels).backward()
    fused = make_optimizer(models[0], lr=1e-3, weight_decay=0.01)
    assert fused.defaults["fused"]
    decay = [p for p in models[1].parameters() if p.ndim >= 2]
    no_decay = [p for p in models[1].parameters() if p.ndim < 2]
    plain = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    for _ in range(3):
        fused.step()
        plain.step()
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert torch.allclose(a, b, atol=1e-6, rtol=1e-5)


def test_dropout_steps_are_reproducible(monkeypatch):
    """With dropout on, the same seed gives the same loss (a resumed run redraws the same
    masks); another seed another one."""
    model = tiny_classifier(dropout=0.1)
    inputs, labels = batch()
    losses = []
    for seed in (5, 5, 6):
        torch.manual_seed(seed)
        losses.append(loss_and_grads(model, inputs, labels, "fused", False, monkeypatch)[0])
    assert losses[0] == losses[1] != losses[2]
