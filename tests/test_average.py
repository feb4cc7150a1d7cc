"""`lfcli average`: the mean of LoRA adapters of one start, written as an adapter that loads;
adapters that cannot average are refused with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from checkpoints import make_checkpoint
from lfcli.cli import app
from lfcli.models import (LongformerConfig, LongformerForCoreference, LongformerForQuestionAnswering,
                          LongformerForSequenceClassification)
from lfcli.models.checkpoint import init_from_encoder
from lfcli.models.lora import ADAPTER_WEIGHTS, LoraLinear, add_lora
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.train.average import average_adapters
from lfcli.pipelines.train.finetune import model_saver


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("base"), "LongformerModel", max_tokens=64, attention_window=16)


def adapter(base: Path, folder: Path, seed: int, r: int = 4, cls=LongformerForQuestionAnswering,
            labels: list[str] | None = None, coref: dict | None = None) -> Path:
    """An adapter over `base` as `lfcli finetune` writes it (a QA head unless `cls` says another,
    with `labels` or the config's `coref` settings), its LoRA and head set by `seed`."""
    config = LongformerConfig.from_json_file(base / "config.json")
    config.id2label = dict(enumerate(labels)) if labels else None
    if coref:
        config.extra["coref"] = coref
    torch.manual_seed(seed)
    model = init_from_encoder(cls, base, config).eval()
    add_lora(model, r=r, alpha=2.0 * r)
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, LoraLinear):
                torch.nn.init.normal_(layer.lora_B.weight, std=0.05)
    note = {"seed": seed}  # the run's training note, which the mean does not keep
    model_saver(str(base), base, adapter="lora", lora_rank=r, lora_alpha=None, merge=False, note=note)(model, folder)
    return folder


def refused(*args) -> str:
    """`lfcli average ARGS`'s one-line error, after checking it exits 1 without a traceback."""
    result = CliRunner().invoke(app, ["average", *map(str, args)])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output, result.stderr
    return result.stderr


def test_the_mean_of_adapters_is_an_adapter_that_loads(base, tmp_path):
    one, two = adapter(base, tmp_path / "one", 1), adapter(base, tmp_path / "two", 2)
    out = average_adapters([str(one), str(two)], str(tmp_path / "mean"))
    a, b, m = (load_file(str(f / ADAPTER_WEIGHTS)) for f in (one, two, out))
    assert m.keys() == a.keys() and any(not torch.equal(a[k], b[k]) for k in a)
    for k in m:
        torch.testing.assert_close(m[k], (a[k] + b[k]) / 2)
    # its config names the runs, not the first run's training alone, and keeps the base it is over
    block = json.loads((out / "config.json").read_text())["lfcli"]
    assert block["average"]["runs"] == [str(one), str(two)] and "mean of these 2 adapters" in block["average"]["note"]
    assert "finetune" not in block and block["adapter"]["base"] == str(base.resolve())
    # it loads over its base like any adapter; the mean of an adapter with itself is that adapter
    ids = torch.randint(5, 250, (1, 30))
    same = average_adapters([str(one), str(one)], str(tmp_path / "same"))
    with torch.no_grad():
        for x, y in zip(LongformerForQuestionAnswering.from_pretrained(one).eval()(ids),
                        LongformerForQuestionAnswering.from_pretrained(same).eval()(ids)):
            torch.testing.assert_close(x, y)
        assert LongformerForQuestionAnswering.from_pretrained(out).eval()(ids)[0].isfinite().all()


def test_adapters_that_cannot_average_are_refused(base, tmp_path):
    one = adapter(base, tmp_path / "one", 1)
    with pytest.raises(InputError, match="differs .* in r"):
        average_adapters([str(one), str(adapter(base, tmp_path / "rank8", 2, r=8))], str(tmp_path / "out"))
    with pytest.raises(InputError, match="already a full checkpoint"):
        average_adapters([str(one), str(base)], str(tmp_path / "out"))
    with pytest.raises(UsageError, match="at least two"):
        average_adapters([str(one)], str(tmp_path / "out"))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(UsageError, match="--force"):
        average_adapters([str(one), str(one)], str(tmp_path / "taken"))
    assert (tmp_path / "taken" / "file").read_text() == "x"  # nothing lost
    before = (one / ADAPTER_WEIGHTS).read_bytes()
    for inside in (one, tmp_path):  # --force never removes an input, nor a folder holding one
        with pytest.raises(UsageError, match="holds the adapter"):
            average_adapters([str(one), str(one)], str(inside), force=True)
    assert (one / ADAPTER_WEIGHTS).read_bytes() == before


def test_the_command_writes_it_and_exits_1_on_bad_input(base, tmp_path):
    one, two = adapter(base, tmp_path / "one", 1), adapter(base, tmp_path / "two", 2)
    result = CliRunner().invoke(app, ["average", str(one), str(two), "-o", str(tmp_path / "mean")])
    assert result.exit_code == 0 and (tmp_path / "mean" / ADAPTER_WEIGHTS).is_file()
    assert (f"{base}: already a full checkpoint (model.safetensors): nothing to average"
            in refused(one, base, "-o", tmp_path / "bad"))
    assert (f"{tmp_path / 'none'}: no such folder; `lfcli average` expects a folder that `lfcli finetune` wrote "
            "with a LoRA adapter" in refused(one, tmp_path / "none", "-o", tmp_path / "bad"))
    shutil.copytree(two, tmp_path / "bare")
    (tmp_path / "bare" / ADAPTER_WEIGHTS).unlink()
    assert (f"{tmp_path / 'bare'}: no adapter_model.safetensors beside its adapter_config.json"
            in refused(one, tmp_path / "bare", "-o", tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()


def test_classifiers_of_other_labels_are_refused(base, tmp_path):
    pos = adapter(base, tmp_path / "pos", 1, cls=LongformerForSequenceClassification, labels=["neg", "pos"])
    spam = adapter(base, tmp_path / "spam", 2, cls=LongformerForSequenceClassification, labels=["neg", "spam"])
    assert (f"{spam}: its labels differ from {pos}'s (1: pos vs spam); only adapters of one head, labels and "
            "settings average" in refused(pos, spam, "-o", tmp_path / "mean"))
    assert not (tmp_path / "mean").exists()


def test_coreference_models_of_other_decoding_settings_are_refused(base, tmp_path):
    settings = {"ffnn_size": 16, "max_span_width": 8, "mention_threshold": 0.0, "link_threshold": 0.0}
    strict = adapter(base, tmp_path / "strict", 1, cls=LongformerForCoreference, coref=settings)
    loose = adapter(base, tmp_path / "loose", 2, cls=LongformerForCoreference, coref={**settings, "link_threshold": 0.5})
    same = adapter(base, tmp_path / "same", 3, cls=LongformerForCoreference, coref=settings)
    assert (f"{loose}: its coreference settings differ from {strict}'s (link_threshold: 0.0 vs 0.5)"
            in refused(strict, loose, "-o", tmp_path / "mean"))
    result = CliRunner().invoke(app, ["average", str(strict), str(same), "-o", str(tmp_path / "mean")])
    assert result.exit_code == 0, result.output
    assert LongformerForCoreference.from_pretrained(tmp_path / "mean").link_threshold == 0.0
