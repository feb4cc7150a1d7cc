"""models/rebase.py: a model's change from its old base moved onto a new base (model - old
base + new base in the encoder, the head kept), for a full checkpoint and for an adapter."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from checkpoints import make_checkpoint
from lfcli.models import CheckpointError, LongformerConfig, LongformerForCoreference, LongformerModel
from lfcli.models.lora import ADAPTER_CONFIG
from lfcli.models.rebase import rebase
from test_average import adapter

SETTINGS = {"ffnn_size": 16, "max_span_width": 8}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """(old base, new base): the new one is the old with every encoder weight shifted, as
    continued pretraining leaves it (same tokenizer and shapes)."""
    root = tmp_path_factory.mktemp("bases")
    old = make_checkpoint(root / "old", "LongformerModel", max_tokens=64)
    shutil.copytree(old, root / "new")
    shifted = LongformerModel.from_pretrained(old)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in shifted.parameters():
            p.add_(0.01 * torch.randn_like(p))
    shifted.save_pretrained(root / "new")
    return old, root / "new"


def assert_moved(out, model, bases):
    """`out`'s encoder is `model`'s - the old base's + the new base's, its head `model`'s."""
    old, new = (LongformerModel.from_pretrained(b).state_dict() for b in bases)
    m, r = LongformerForCoreference.from_pretrained(model), LongformerForCoreference.from_pretrained(out)
    name = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(old[name], new[name])
    for key, value in r.longformer.named_parameters():
        torch.testing.assert_close(value, m.longformer.state_dict()[key] - old[key] + new[key], atol=1e-6, rtol=0)
    assert torch.equal(r.mention_s2e_classifier.weight, m.mention_s2e_classifier.weight)
    assert (out / "tokenizer.json").is_file() and (out / "model.safetensors").is_file()


def test_a_full_model_moves_onto_the_new_base(bases, tmp_path):
    old, new = bases
    config = LongformerConfig.from_json_file(old / "config.json")
    config.extra["coref"] = SETTINGS
    torch.manual_seed(2)
    model = LongformerForCoreference(config)  # its own encoder: the old base + its own change
    with torch.no_grad():
        for name, p in model.longformer.named_parameters():
            p.copy_(LongformerModel.from_pretrained(old).state_dict()[name] + 0.02 * torch.randn_like(p))
    model.save_pretrained(tmp_path / "model")
    shutil.copy(old / "tokenizer.json", tmp_path / "model")
    with pytest.raises(CheckpointError, match="a full checkpoint names no base"):
        rebase(tmp_path / "model", new, tmp_path / "out")
    out = rebase(tmp_path / "model", new, tmp_path / "out", old_base=old)
    assert_moved(out, tmp_path / "model", bases)
    assert json.loads((out / "config.json").read_text())["lfcli"]["rebase"] == {"old_base": str(old), "new_base": str(new)}


def test_an_adapter_moves_onto_the_new_base_as_a_full_model(bases, tmp_path):
    """The adapter's change is over the base it names; the result names no base any more."""
    old, new = bases
    model = adapter(old, tmp_path / "adapter", 1, cls=LongformerForCoreference, coref=SETTINGS)
    out = rebase(model, new, tmp_path / "out")
    assert_moved(out, model, bases)
    block = json.loads((out / "config.json").read_text())["lfcli"]
    assert "adapter" not in block and block["rebase"]["old_base"] == str(old.resolve())
    assert not (out / ADAPTER_CONFIG).exists()


def test_bases_of_another_shape_are_refused(bases, tmp_path):
    old, _ = bases
    model = adapter(old, tmp_path / "adapter", 1, cls=LongformerForCoreference, coref=SETTINGS)
    wider = make_checkpoint(tmp_path / "wider", "LongformerModel", max_tokens=96)
    with pytest.raises(CheckpointError, match="differ in shape"):
        rebase(model, wider, tmp_path / "out")
    with pytest.raises(CheckpointError, match="the model's own folder"):
        rebase(model, old, model)
