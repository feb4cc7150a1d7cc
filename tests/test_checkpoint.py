"""Checkpoint I/O: clear errors for every way a checkpoint folder can be wrong, and round trips.

Every refusal is a CheckpointError or ConfigError (both ValueError), whose message says what is
wrong and names the offending field, file or tensors.
"""

from __future__ import annotations

import json
import pickle
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import TINY, make_batch, tiny_config

from lfcli.models import (
    ARCHITECTURES,
    CheckpointError,
    ConfigError,
    LongformerConfig,
    LongformerForQuestionAnswering,
    LongformerForSequenceClassification,
    LongformerModel,
    MissingHead,
    SequenceTooLong,
    available_heads,
)

HEAD_ARCHS = [a for a in ARCHITECTURES if a != "LongformerModel"]
LABELS = {"LongformerForSequenceClassification": 3, "LongformerForTokenClassification": 5}


def overrides_for(arch: str) -> dict:
    return {"num_labels": LABELS[arch]} if arch in LABELS else {}


@pytest.fixture
def copy_of(lfcli_checkpoint, tmp_path):
    """A private, editable copy of a cached lfcli checkpoint folder."""

    def make(arch: str = "LongformerModel", **overrides):
        folder, model = lfcli_checkpoint(arch, **overrides)
        target = tmp_path / "ckpt"
        shutil.copytree(folder, target)
        return target, model

    return make


def edit_config(folder, **changes):
    path = folder / "config.json"
    raw = json.loads(path.read_text())
    raw.update(changes)
    path.write_text(json.dumps(raw))


def edit_weights(folder, drop=(), add=None):
    path = folder / "model.safetensors"
    state = load_file(str(path))
    for name in drop:
        del state[name]
    state.update(add or {})
    save_file(state, str(path), metadata={"format": "pt"})


def outputs(model, ids, mask, glob):
    with torch.no_grad():
        out = model(ids, mask, glob)
    return list(out) if isinstance(out, tuple) else [out]


# --- folders and files ---------------------------------------------------------------------------

def test_error_classes():
    assert issubclass(CheckpointError, ValueError)
    assert issubclass(ConfigError, ValueError)
    assert issubclass(MissingHead, CheckpointError)
    assert issubclass(SequenceTooLong, ValueError)


def test_not_a_folder(tmp_path):
    with pytest.raises(CheckpointError, match="not a checkpoint folder"):
        LongformerModel.from_pretrained(tmp_path / "nowhere")


def test_missing_config(copy_of):
    folder, _ = copy_of()
    (folder / "config.json").unlink()
    with pytest.raises(CheckpointError, match="config.json"):
        LongformerModel.from_pretrained(folder)


def test_config_not_json(copy_of):
    folder, _ = copy_of()
    (folder / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        LongformerModel.from_pretrained(folder)


def test_missing_weights_file(copy_of):
    folder, _ = copy_of()
    (folder / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no weights file") as info:
        LongformerModel.from_pretrained(folder)
    assert "model.safetensors" in str(info.value) and str(folder) in str(info.value)


@pytest.mark.parametrize("damage", ["truncated", "half", "empty", "garbage-header"])
def test_corrupt_safetensors(copy_of, damage):
    folder, _ = copy_of()
    path = folder / "model.safetensors"
    data = path.read_bytes()
    if damage == "truncated":
        data = data[:-100]
    elif damage == "half":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    else:
        data = (1 << 40).to_bytes(8, "little") + data[8:]  # header length far past the end
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match="corrupt or unreadable") as info:
        LongformerModel.from_pretrained(folder)
    assert str(folder) in str(info.value)


# --- config.json ------------------------------------------------------------------------------

def test_unknown_model_type(copy_of):
    folder, _ = copy_of()
    edit_config(folder, model_type="gpt2")
    with pytest.raises(CheckpointError, match="unknown model_type 'gpt2'"):
        LongformerModel.from_pretrained(folder)
    with pytest.raises(ConfigError, match="unknown model_type 'gpt2'"):
        LongformerConfig.from_dict(dict(tiny_config(), model_type="gpt2"))
    with pytest.raises(ConfigError, match="unknown model_type"):
        LongformerConfig(model_type="t5")


@pytest.mark.parametrize("window", [5, 0, -4, [4, 3, 4], [4, 0, 4], 4.0], ids=str)
def test_bad_attention_window(copy_of, window):
    folder, _ = copy_of()
    edit_config(folder, attention_window=window)
    with pytest.raises(CheckpointError, match="attention_window"):
        LongformerModel.from_pretrained(folder)
    with pytest.raises(ConfigError, match="attention_window"):
        LongformerConfig.from_dict(dict(tiny_config(), attention_window=window))


def test_attention_window_per_layer_count():
    with pytest.raises(ConfigError, match="attention_window has 2 values for 3 layers"):
        LongformerConfig.from_dict(dict(tiny_config(), attention_window=[4, 4]))


@pytest.mark.parametrize("dilation", [0, [1, 1], [[1, 2, 1, 0], 1, 1], [[1, 2], 1, 1]], ids=str)
def test_bad_attention_dilation(dilation):
    with pytest.raises(ConfigError, match="attention_dilation"):
        LongformerConfig.from_dict(dict(tiny_config(), attention_dilation=dilation))


def test_heads_must_divide_hidden():
    with pytest.raises(ConfigError, match="num_attention_heads"):
        LongformerConfig.from_dict(dict(tiny_config(), num_attention_heads=5))


# --- tensors: shapes, missing and unexpected names ---------------------------------------------

def test_shape_mismatch_lists_names(copy_of):
    folder, _ = copy_of()
    edit_config(folder, intermediate_size=48)  # the checkpoint's FFN is 64 wide
    with pytest.raises(CheckpointError, match="shapes differ") as info:
        LongformerModel.from_pretrained(folder)
    message = str(info.value)
    assert "encoder.layer.0.intermediate.dense.weight (64, 32) vs (48, 32)" in message
    assert "encoder.layer.0.output.dense.weight" in message
    assert "more" in message  # 9 tensors differ: the list is cut after 8


def test_shape_mismatch_vocab(copy_of):
    folder, _ = copy_of()
    edit_config(folder, vocab_size=TINY["vocab_size"] + 1)
    with pytest.raises(CheckpointError, match=r"embeddings\.word_embeddings\.weight \(64, 32\) vs \(65, 32\)"):
        LongformerModel.from_pretrained(folder)


def test_missing_weights_lists_names(copy_of):
    folder, _ = copy_of()
    edit_weights(folder, drop=["encoder.layer.1.attention.self.query.weight", "encoder.layer.2.output.LayerNorm.bias"])
    with pytest.raises(CheckpointError, match="weights missing") as info:
        LongformerModel.from_pretrained(folder)
    assert "encoder.layer.1.attention.self.query.weight" in str(info.value)
    assert "encoder.layer.2.output.LayerNorm.bias" in str(info.value)


def test_missing_weights_in_task_checkpoint(copy_of):
    folder, _ = copy_of("LongformerForQuestionAnswering")
    edit_weights(folder, drop=["longformer.embeddings.LayerNorm.weight"])
    with pytest.raises(CheckpointError, match=r"weights missing.*longformer\.embeddings\.LayerNorm\.weight"):
        LongformerForQuestionAnswering.from_pretrained(folder)


def test_missing_global_projection_in_longformer_checkpoint(copy_of):
    folder, _ = copy_of()
    edit_weights(folder, drop=["encoder.layer.0.attention.self.key_global.weight"])
    with pytest.raises(CheckpointError, match=r"encoder\.layer\.0\.attention\.self\.key_global\.weight"):
        LongformerModel.from_pretrained(folder)


def test_unexpected_encoder_weights(copy_of):
    folder, _ = copy_of()
    edit_config(folder, num_hidden_layers=2)  # the checkpoint has 3 layers
    with pytest.raises(CheckpointError, match=r"weights this model does not have: encoder\.layer\.2\."):
        LongformerModel.from_pretrained(folder)


# --- task heads ----------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", HEAD_ARCHS)
def test_missing_head(lfcli_checkpoint, arch):
    folder, _ = lfcli_checkpoint("LongformerModel")
    with pytest.raises(MissingHead, match="this checkpoint has no") as info:
        ARCHITECTURES[arch].from_pretrained(folder)
    words = {
        "LongformerForMaskedLM": "lm_head",
        "LongformerForSequenceClassification": "classifier.out_proj",
        "LongformerForQuestionAnswering": "qa_outputs",
        "LongformerForTokenClassification": "classifier.weight",
        "LongformerForCoreference": "mention_s2e_classifier",
    }
    assert words.get(arch, "head") in str(info.value)


def test_token_classifier_is_not_a_sequence_classifier(lfcli_checkpoint):
    folder, _ = lfcli_checkpoint("LongformerForTokenClassification", num_labels=5)
    with pytest.raises(MissingHead, match="sequence-classification"):
        LongformerForSequenceClassification.from_pretrained(folder)


def test_other_heads_are_ignored_by_the_bare_encoder(lfcli_checkpoint):
    folder, qa = lfcli_checkpoint("LongformerForQuestionAnswering")
    encoder = LongformerModel.from_pretrained(folder)
    ids, mask, glob = make_batch([10, 6], globals_=[[0], [0, 1]])
    assert torch.equal(outputs(encoder, ids, mask, glob)[0], outputs(qa.longformer, ids, mask, glob)[0])


# --- inputs longer than the position table ---------------------------------------------------

@pytest.mark.parametrize("arch", ["LongformerModel", "LongformerForQuestionAnswering", "LongformerForSequenceClassification"])
def test_sequence_too_long(lfcli_checkpoint, arch):
    _, model = lfcli_checkpoint(arch, **overrides_for(arch))
    limit = TINY["max_position_embeddings"] - 2  # RoBERTa-style: pad_token_id + 1 rows reserved
    assert model.config.max_tokens == limit
    ids, mask, _ = make_batch([limit])
    outputs(model, ids, mask, None)  # the longest input works
    ids, mask, _ = make_batch([limit + 1])
    with pytest.raises(SequenceTooLong, match=f"{limit + 1} tokens.*{limit} positions"):
        outputs(model, ids, mask, None)


def test_sequence_too_long_bert_style():
    config = LongformerConfig.from_dict(dict(tiny_config(max_position_embeddings=20), model_type="bert"))
    model = LongformerModel(config).eval()
    assert config.max_tokens == 20
    outputs(model, torch.randint(3, 64, (1, 20)), None, None)
    with pytest.raises(SequenceTooLong, match="20 positions"):
        outputs(model, torch.randint(3, 64, (1, 21)), None, None)


# --- pytorch_model.bin ---------------------------------------------------------------------------

def to_bin(folder):
    path = folder / "model.safetensors"
    torch.save(load_file(str(path)), folder / "pytorch_model.bin")
    path.unlink()


@pytest.mark.parametrize("arch", ["LongformerModel", "LongformerForMaskedLM"])
def test_pytorch_model_bin(copy_of, arch):
    folder, model = copy_of(arch)
    to_bin(folder)
    loaded = ARCHITECTURES[arch].from_pretrained(folder)
    ids, mask, glob = make_batch([12, 7], globals_=[[0], [2]])
    assert torch.equal(outputs(loaded, ids, mask, glob)[0], outputs(model, ids, mask, glob)[0])
    assert available_heads(folder) == ["LongformerModel"] + ([arch] if arch != "LongformerModel" else [])


EXECUTED = []


def _payload(*args):  # what an unsafe unpickler would call
    EXECUTED.append(args)
    return {}


class _Unsafe:
    def __reduce__(self):
        return (_payload, ("pwned",))


def write_unsafe_bin(folder):
    (folder / "model.safetensors").unlink()
    with open(folder / "pytorch_model.bin", "wb") as f:
        torch.save({"encoder.layer.0.attention.self.query.weight": _Unsafe()}, f, pickle_module=pickle)


def test_pytorch_model_bin_is_loaded_weights_only(copy_of):
    """A pickle that calls a function on load is refused before anything runs."""
    folder, _ = copy_of()
    write_unsafe_bin(folder)
    EXECUTED.clear()
    with pytest.raises(Exception, match="(?i)weights.only|unsupported|global"):
        LongformerModel.from_pretrained(folder)
    assert EXECUTED == []


@pytest.mark.parametrize("content", ["unsafe-pickle", "garbage", "not-a-state-dict"])
def test_bad_pytorch_model_bin_is_a_checkpoint_error(copy_of, content):
    folder, _ = copy_of()
    if content == "unsafe-pickle":
        write_unsafe_bin(folder)
    elif content == "not-a-state-dict":
        (folder / "model.safetensors").unlink()
        torch.save([torch.zeros(2)], folder / "pytorch_model.bin")
    else:
        (folder / "model.safetensors").unlink()
        (folder / "pytorch_model.bin").write_bytes(b"\x80\x02not a checkpoint" * 10)
    EXECUTED.clear()
    with pytest.raises(CheckpointError, match="pytorch_model.bin|corrupt or unreadable|not a state dict"):
        LongformerModel.from_pretrained(folder)
    assert EXECUTED == []


def test_truncated_pytorch_model_bin(copy_of):
    folder, _ = copy_of()
    to_bin(folder)
    path = folder / "pytorch_model.bin"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupt or unreadable"):
        LongformerModel.from_pretrained(folder)


# --- round trips ---------------------------------------------------------------------------------

ROUND_TRIPS = [
    ("LongformerModel", {}),
    ("LongformerModel", {"attention_window": [4, 8, 2], "attention_dilation": [[1, 2, 1, 3], 2, 1]}),
    ("LongformerForMaskedLM", {}),
    ("LongformerForSequenceClassification", {"num_labels": 3}),
    ("LongformerForQuestionAnswering", {"attention_dilation": 2}),
    ("LongformerForTokenClassification", {"num_labels": 5}),
]


@pytest.mark.parametrize("arch, overrides", ROUND_TRIPS, ids=[f"{a}-{i}" for i, (a, _) in enumerate(ROUND_TRIPS)])
def test_round_trip(lfcli_checkpoint, tmp_path, arch, overrides):
    folder, model = lfcli_checkpoint(arch, **overrides)
    loaded = ARCHITECTURES[arch].from_pretrained(folder)
    assert type(loaded) is type(model) and not loaded.training
    assert loaded.config.to_dict() == model.config.to_dict()
    ids, mask, glob = make_batch([17, 11], globals_=[[0, 9], [3]])
    for a, b in zip(outputs(loaded, ids, mask, glob), outputs(model, ids, mask, glob)):
        assert torch.equal(a, b)
    # and once more, from the loaded model
    loaded.save_pretrained(tmp_path / "again")
    again = ARCHITECTURES[arch].from_pretrained(tmp_path / "again")
    for a, b in zip(outputs(again, ids, mask, glob), outputs(model, ids, mask, glob)):
        assert torch.equal(a, b)
    raw = json.loads((folder / "config.json").read_text())
    assert raw["architectures"] == [arch] and raw["model_type"] == "longformer"
    if "num_labels" in overrides:
        assert raw["id2label"] == {str(i): f"LABEL_{i}" for i in range(overrides["num_labels"])}
        assert raw["label2id"] == {f"LABEL_{i}": i for i in range(overrides["num_labels"])}


def test_masked_lm_decoder_is_tied_after_loading(lfcli_checkpoint):
    folder, _ = lfcli_checkpoint("LongformerForMaskedLM")
    assert "lm_head.decoder.weight" not in load_file(str(folder / "model.safetensors"))
    loaded = ARCHITECTURES["LongformerForMaskedLM"].from_pretrained(folder)
    assert loaded.lm_head.decoder.weight is loaded.longformer.embeddings.word_embeddings.weight


def test_from_pretrained_dtype(lfcli_checkpoint):
    folder, _ = lfcli_checkpoint("LongformerModel")
    model = LongformerModel.from_pretrained(folder, dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}


# --- available_heads -----------------------------------------------------------------------------

@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_available_heads_lfcli(lfcli_checkpoint, arch):
    folder, _ = lfcli_checkpoint(arch, **overrides_for(arch))
    expected = ["LongformerModel"] + ([arch] if arch != "LongformerModel" else [])
    assert available_heads(folder) == expected
    for name in available_heads(folder):  # every listed class really loads
        ARCHITECTURES[name].from_pretrained(folder)


@pytest.mark.parametrize("arch", ["LongformerForQuestionAnswering", "LongformerForTokenClassification", "RobertaModel"])
def test_available_heads_transformers(hf_checkpoint, arch):
    folder, _ = hf_checkpoint(arch, **overrides_for(arch))
    expected = ["LongformerModel"] + ([arch] if arch.startswith("LongformerFor") else [])
    assert available_heads(folder) == expected


def test_sharded_transformers_checkpoint(hf_checkpoint, tmp_path):
    """model.safetensors.index.json + shards load like a single file."""
    _, theirs = hf_checkpoint("LongformerForTokenClassification", num_labels=5)
    theirs.save_pretrained(tmp_path, max_shard_size="30KB")
    assert (tmp_path / "model.safetensors.index.json").exists()
    assert not (tmp_path / "model.safetensors").exists()
    ours = ARCHITECTURES["LongformerForTokenClassification"].from_pretrained(tmp_path)
    assert available_heads(tmp_path) == ["LongformerModel", "LongformerForTokenClassification"]
    ids, mask, glob = make_batch([9, 5], globals_=[[0], [1]])
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask, global_attention_mask=glob).logits
    assert (outputs(ours, ids, mask, glob)[0] - expected).abs().max().item() < 1e-4


def test_loading_skips_initialisation_and_restores_it(lfcli_checkpoint):
    """Built on the meta device with torch.nn.init's functions switched off (initialising
    meta tensors is wasted, and meta normal_ imports torch._dynamo: 1.2 s of CLI start-up);
    they are back afterwards, also when loading fails."""
    import subprocess
    import sys

    folder, _ = lfcli_checkpoint("LongformerModel")
    before = torch.nn.init.normal_
    LongformerModel.from_pretrained(folder)
    assert torch.nn.init.normal_ is before
    with pytest.raises(CheckpointError):
        LongformerForQuestionAnswering.from_pretrained(folder)  # no QA head: fails after building
    assert torch.nn.init.normal_ is before
    fresh = torch.nn.Linear(4, 4)  # initialisation works again outside the load
    assert fresh.weight.abs().sum() > 0
    code = (
        "import sys, torch; from lfcli.models import LongformerModel;"
        "LongformerModel.from_pretrained(sys.argv[1]); print('torch._dynamo' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
