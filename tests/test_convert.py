"""convert_to_long: BERT / RoBERTa (and heads) -> a Longformer transformers and lfcli both load,
equal to the source on short input and able to run past the source's positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import (  # noqa: E402
    BertConfig,
    BertForPreTraining,
    BertForSequenceClassification,
    BertModel,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaForQuestionAnswering,
    RobertaModel,
)
from transformers import LongformerForMaskedLM as HFLongformerForMaskedLM  # noqa: E402
from transformers import LongformerForQuestionAnswering as HFLongformerForQuestionAnswering  # noqa: E402
from transformers import LongformerForSequenceClassification as HFLongformerForSequenceClassification  # noqa: E402
from transformers import LongformerModel as HFLongformerModel  # noqa: E402

from lfcli.models import CheckpointError, LongformerModel  # noqa: E402
from lfcli.models import LongformerForMaskedLM, LongformerForQuestionAnswering  # noqa: E402
from lfcli.models import LongformerForSequenceClassification  # noqa: E402
from lfcli.models.convert import convert_to_long  # noqa: E402

VOCAB = 128  # holds BERT's [CLS] 101 / [SEP] 102
MAX_POSITIONS = 256
# Full window 96: every query sees 48 keys each side, i.e. the whole of a <= 40-token input,
# so the converted model must give exactly the source's numbers there.
WINDOW = 96
BERT_POSITIONS = 40
ROBERTA_POSITIONS = 42  # 40 learned rows after the 2 offset rows
TOL = 1e-5


def tiny(config_cls, **extra):
    return config_cls(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **extra,
    )


def save(model, folder: Path) -> Path:
    model.eval()
    model.save_pretrained(folder)
    return folder


def batch(pad_id: int, n: int = 30, seed: int = 0):
    """Two samples of n tokens (no pad ids inside), the second right-padded after 22 tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (2, n), generator=g)
    ids[ids == pad_id] = 5
    mask = torch.ones_like(ids)
    mask[1, 22:] = 0
    ids[1, 22:] = pad_id
    return ids, mask


def close(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> float:
    return float((a - b)[mask.bool()].abs().max())


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("sources")
    models = {
        "bert": BertModel(tiny(BertConfig, max_position_embeddings=BERT_POSITIONS)),
        "roberta": RobertaModel(tiny(RobertaConfig, max_position_embeddings=ROBERTA_POSITIONS)),
        "roberta_mlm": RobertaForMaskedLM(tiny(RobertaConfig, max_position_embeddings=ROBERTA_POSITIONS)),
    }
    return {name: (model.eval(), save(model, root / name)) for name, model in models.items()}


@pytest.fixture(scope="module")
def converted(sources, tmp_path_factory):
    root = tmp_path_factory.mktemp("converted")
    return {
        name: convert_to_long(folder, root / name, max_positions=MAX_POSITIONS, attention_window=WINDOW)
        for name, (_, folder) in sources.items()
    }


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_base_models_match_source_on_short_input(name, sources, converted):
    source, _ = sources[name]
    out = converted[name]
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "longformer" and config["architectures"] == ["LongformerModel"]
    pad = config["pad_token_id"]
    assert config["max_position_embeddings"] == MAX_POSITIONS + pad + 1
    assert config["attention_window"] == WINDOW
    assert config["type_vocab_size"] == source.config.type_vocab_size
    assert config["layer_norm_eps"] == source.config.layer_norm_eps
    if name == "bert":
        assert (pad, config["bos_token_id"], config["eos_token_id"], config["sep_token_id"]) == (0, 101, 102, 102)
    else:
        assert (pad, config["bos_token_id"], config["eos_token_id"], config["sep_token_id"]) == (1, 0, 2, 2)

    hf, info = HFLongformerModel.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    hf.eval()
    ours = LongformerModel.from_pretrained(out)
    ids, mask = batch(pad)
    with torch.no_grad():
        want = source(input_ids=ids, attention_mask=mask).last_hidden_state
        got_hf = hf(input_ids=ids, attention_mask=mask).last_hidden_state
        got_ours = ours(ids, mask)
    assert close(got_hf, want, mask) < TOL
    assert close(got_ours, want, mask) < TOL


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_longer_than_source_runs(name, converted):
    out = converted[name]
    hf = HFLongformerModel.from_pretrained(out).eval()
    ours = LongformerModel.from_pretrained(out)
    pad = ours.config.pad_token_id
    ids, mask = batch(pad, n=MAX_POSITIONS, seed=1)  # far past the source's 40 positions
    global_mask = torch.zeros_like(ids)
    global_mask[:, 0] = 1
    with torch.no_grad():
        a = hf(input_ids=ids, attention_mask=mask, global_attention_mask=global_mask).last_hidden_state
        b = ours(ids, mask, global_mask)
    assert torch.isfinite(b).all()
    assert close(a, b, mask) < 1e-4


def test_position_table_layout(sources, converted):
    from safetensors.torch import load_file

    bert_rows = sources["bert"][0].embeddings.position_embeddings.weight.detach()
    table = load_file(str(converted["bert"] / "model.safetensors"))["embeddings.position_embeddings.weight"]
    assert table.shape[0] == MAX_POSITIONS + 1
    assert torch.equal(table[0], torch.zeros_like(table[0]))
    for i in (0, 1, BERT_POSITIONS - 1, BERT_POSITIONS, 3 * BERT_POSITIONS + 7, MAX_POSITIONS - 1):
        assert torch.equal(table[1 + i], bert_rows[i % BERT_POSITIONS]), i  # BERT row i -> row pad + 1 + i

    roberta_rows = sources["roberta"][0].embeddings.position_embeddings.weight.detach()
    table = load_file(str(converted["roberta"] / "model.safetensors"))["embeddings.position_embeddings.weight"]
    assert table.shape[0] == MAX_POSITIONS + 2
    assert torch.equal(table[:2], roberta_rows[:2])
    learned = ROBERTA_POSITIONS - 2
    for i in (0, learned - 1, learned, MAX_POSITIONS - 1):
        assert torch.equal(table[2 + i], roberta_rows[2 + i % learned]), i


def test_global_projections_are_copies(converted):
    from safetensors.torch import load_file

    state = load_file(str(converted["roberta"] / "model.safetensors"))
    for part in ("query", "key", "value"):
        for kind in ("weight", "bias"):
            local = state[f"encoder.layer.1.attention.self.{part}.{kind}"]
            assert torch.equal(state[f"encoder.layer.1.attention.self.{part}_global.{kind}"], local)


def test_roberta_mlm_keeps_its_head(sources, converted):
    source, _ = sources["roberta_mlm"]
    out = converted["roberta_mlm"]
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LongformerForMaskedLM"]
    hf, info = HFLongformerForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    hf.eval()
    ids, mask = batch(1)
    with torch.no_grad():
        want = source(input_ids=ids, attention_mask=mask).logits
        assert close(hf(input_ids=ids, attention_mask=mask).logits, want, mask) < TOL
        assert close(LongformerForMaskedLM.from_pretrained(out)(ids, mask), want, mask) < TOL
        # The bare encoder of the converted MLM checkpoint loads too (lm_head ignored).
        assert close(LongformerModel.from_pretrained(out)(ids, mask), source.roberta(ids, mask).last_hidden_state, mask) < TOL


def test_bert_mlm_head_is_mapped(tmp_path):
    torch.manual_seed(1)
    source = BertForPreTraining(tiny(BertConfig, max_position_embeddings=BERT_POSITIONS)).eval()
    notes: list[str] = []
    out = convert_to_long(save(source, tmp_path / "src"), tmp_path / "out", MAX_POSITIONS, WINDOW, on_note=notes.append)
    assert any("next-sentence" in n for n in notes)
    hf, info = HFLongformerForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ids, mask = batch(0)
    with torch.no_grad():
        want = source(input_ids=ids, attention_mask=mask).prediction_logits
        assert close(hf.eval()(input_ids=ids, attention_mask=mask).logits, want, mask) < TOL
        assert close(LongformerForMaskedLM.from_pretrained(out)(ids, mask), want, mask) < TOL


def test_bert_sequence_classifier_is_mapped(tmp_path):
    torch.manual_seed(2)
    config = tiny(BertConfig, max_position_embeddings=BERT_POSITIONS, num_labels=3)
    source = BertForSequenceClassification(config).eval()
    out = convert_to_long(save(source, tmp_path / "src"), tmp_path / "out", MAX_POSITIONS, WINDOW)
    assert json.loads((out / "config.json").read_text())["id2label"] == {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    hf, info = HFLongformerForSequenceClassification.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ids, mask = batch(0)
    with torch.no_grad():
        want = source(input_ids=ids, attention_mask=mask).logits  # token 0 is global in Longformer
        assert float((hf.eval()(input_ids=ids, attention_mask=mask).logits - want).abs().max()) < TOL
        assert float((LongformerForSequenceClassification.from_pretrained(out)(ids, mask) - want).abs().max()) < TOL


def test_roberta_qa_head_is_kept(tmp_path):
    torch.manual_seed(3)
    source = RobertaForQuestionAnswering(tiny(RobertaConfig, max_position_embeddings=ROBERTA_POSITIONS)).eval()
    out = convert_to_long(save(source, tmp_path / "src"), tmp_path / "out", MAX_POSITIONS, WINDOW)
    hf, info = HFLongformerForQuestionAnswering.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ids, mask = batch(1)
    ids[:, 0], ids[:, 5:7], ids[0, 29], ids[1, 21] = 0, 2, 2, 2  # <s> q </s></s> context </s>
    with torch.no_grad():
        start, end = LongformerForQuestionAnswering.from_pretrained(out)(ids, mask)
        ref = hf.eval()(input_ids=ids, attention_mask=mask)
    assert close(start, ref.start_logits, mask) < TOL and close(end, ref.end_logits, mask) < TOL


def test_tokenizer_files_and_special_ids(tmp_path):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    torch.manual_seed(4)
    source = BertModel(tiny(BertConfig, max_position_embeddings=BERT_POSITIONS))
    src = save(source, tmp_path / "src")
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 7, "[SEP]": 8}
    vocab.update({f"w{i}": i for i in range(VOCAB) if i not in vocab.values()})
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.enable_truncation(16)
    tok.enable_padding(length=16, pad_id=0, pad_token="[PAD]")
    tok.save(str(src / "tokenizer.json"))
    (src / "special_tokens_map.json").write_text(json.dumps({"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"}))
    (src / "tokenizer_config.json").write_text(json.dumps({"model_max_length": BERT_POSITIONS, "do_lower_case": True}))
    notes: list[str] = []
    out = convert_to_long(src, tmp_path / "out", MAX_POSITIONS, WINDOW, on_note=notes.append)

    config = json.loads((out / "config.json").read_text())
    assert (config["pad_token_id"], config["bos_token_id"], config["eos_token_id"], config["sep_token_id"]) == (0, 7, 8, 8)
    assert json.loads((out / "special_tokens_map.json").read_text())["cls_token"] == "[CLS]"
    assert json.loads((out / "tokenizer_config.json").read_text())["model_max_length"] == MAX_POSITIONS
    converted_tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert converted_tok.truncation is None and converted_tok.padding is None  # no silent cut at 16
    assert len(converted_tok.encode(" ".join(f"w{i % 90 + 10}" for i in range(300))).ids) == 300
    assert sum("tokenizer.json" in n for n in notes) == 2


def test_deterministic(sources, tmp_path):
    _, folder = sources["bert"]
    a = convert_to_long(folder, tmp_path / "a", MAX_POSITIONS, WINDOW)
    b = convert_to_long(folder, tmp_path / "b", MAX_POSITIONS, WINDOW)
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir()) == ["config.json", "model.safetensors"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folders left


def test_output_folder_rules(sources, tmp_path):
    _, folder = sources["roberta"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "something").write_text("x")
    with pytest.raises(CheckpointError, match="not empty"):
        convert_to_long(folder, out, MAX_POSITIONS, WINDOW)
    convert_to_long(folder, out, MAX_POSITIONS, WINDOW, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    with pytest.raises(CheckpointError, match="must differ"):
        convert_to_long(folder, folder, MAX_POSITIONS, WINDOW)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message and message
    return message


def test_bad_sources(sources, tmp_path):
    _, good = sources["bert"]

    def copy(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for f in good.iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
        return folder

    with pytest.raises(CheckpointError) as exc:
        convert_to_long(tmp_path / "nowhere", tmp_path / "o1")
    assert "not a checkpoint folder" in _one_line(exc)

    no_config = copy("no_config")
    (no_config / "config.json").unlink()
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(no_config, tmp_path / "o2")
    assert "no config.json" in _one_line(exc)

    gpt = copy("gpt")
    (gpt / "config.json").write_text(json.dumps({**json.loads((good / "config.json").read_text()), "model_type": "gpt2"}))
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(gpt, tmp_path / "o3")
    assert "'gpt2'" in _one_line(exc)

    no_weights = copy("no_weights")
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(no_weights, tmp_path / "o4")
    assert "no weights file" in _one_line(exc)

    corrupt = copy("corrupt")
    (corrupt / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(corrupt, tmp_path / "o5")
    assert "corrupt" in _one_line(exc)

    wrong = copy("wrong_shapes")
    raw = json.loads((good / "config.json").read_text())
    (wrong / "config.json").write_text(json.dumps({**raw, "intermediate_size": 48}))
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(wrong, tmp_path / "o6")
    assert "intermediate.dense" in _one_line(exc)

    layers = copy("layers")
    (layers / "config.json").write_text(json.dumps({**raw, "num_hidden_layers": 3}))
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(layers, tmp_path / "o7")
    assert "missing" in _one_line(exc) and "layer.2" in str(exc.value)

    relative = copy("relative")
    (relative / "config.json").write_text(json.dumps({**raw, "position_embedding_type": "relative_key"}))
    with pytest.raises(CheckpointError) as exc:
        convert_to_long(relative, tmp_path / "o8")
    assert "absolute" in _one_line(exc)

    with pytest.raises(CheckpointError) as exc:
        convert_to_long(good, tmp_path / "o9", attention_window=33)
    assert "even" in _one_line(exc)

    assert not any((tmp_path / f"o{i}").exists() for i in range(1, 10))


def test_longformer_source_is_resized(sources, converted, tmp_path):
    """A Longformer checkpoint converts too (here: shrunk to 64 positions, window per layer)."""
    source, _ = sources["bert"]
    out = convert_to_long(converted["bert"], tmp_path / "short", max_positions=64, attention_window=[96, 80])
    config = json.loads((out / "config.json").read_text())
    assert config["max_position_embeddings"] == 65 and config["attention_window"] == [96, 80]
    assert config["lfcli"]["converted_from"] == "longformer"
    ids, mask = batch(0)
    with torch.no_grad():
        want = source(input_ids=ids, attention_mask=mask).last_hidden_state
        assert close(LongformerModel.from_pretrained(out)(ids, mask), want, mask) < TOL
