"""`lfcli average`: the mean of LoRA adapters of one start, written as an adapter that loads;
adapters that cannot average are refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from checkpoints import make_checkpoint
from lfcli.cli import app
from lfcli.models import LongformerForQuestionAnswering
from lfcli.models.checkpoint import init_from_encoder
from lfcli.models.lora import ADAPTER_WEIGHTS, LoraLinear, add_lora
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.train.average import average_adapters
from lfcli.pipelines.train.finetune import model_saver


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("base"), "LongformerModel", max_tokens=64, attention_window=16)


def adapter(base: Path, folder: Path, seed: int, r: int = 4) -> Path:
    """A QA adapter over `base` as `lfcli finetune` writes it, its LoRA and head set by `seed`."""
    torch.manual_seed(0)
    model = init_from_encoder(LongformerForQuestionAnswering, base).eval()
    add_lora(model, r=r, alpha=2.0 * r)
    torch.manual_seed(seed)
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, LoraLinear):
                torch.nn.init.normal_(layer.lora_B.weight, std=0.05)
        model.qa_outputs.weight.add_(0.1 * torch.randn_like(model.qa_outputs.weight))
    model_saver(str(base), base, adapter="lora", lora_rank=r, lora_alpha=None, merge=False, note={})(model, folder)
    return folder


def test_the_mean_of_adapters_is_an_adapter_that_loads(base, tmp_path):
    one, two = adapter(base, tmp_path / "one", 1), adapter(base, tmp_path / "two", 2)
    out = average_adapters([str(one), str(two)], str(tmp_path / "mean"))
    a, b, m = (load_file(str(f / ADAPTER_WEIGHTS)) for f in (one, two, out))
    assert m.keys() == a.keys() and any(not torch.equal(a[k], b[k]) for k in a)
    for k in m:
        torch.testing.assert_close(m[k], (a[k] + b[k]) / 2)
    assert json.loads((out / "config.json").read_text())["lfcli"]["average"] == [str(one), str(two)]
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
    with pytest.raises(InputError, match="not a LoRA adapter folder"):
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
    result = CliRunner().invoke(app, ["average", str(one), str(base), "-o", str(tmp_path / "bad")])
    assert result.exit_code == 1 and "not a LoRA adapter folder" in result.output
    assert "Traceback" not in result.output
