"""The task registry: a task of the test's own, registered here and nowhere else, runs from
the CLI to its output file; and the built-in tasks are the registry's."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import torch
from checkpoints import make_checkpoint
from typer.testing import CliRunner

from lfcli.cli import app
from lfcli.pipelines import registry
from lfcli.pipelines.errors import UsageError
from lfcli.pipelines.infer.tasks import Task
from lfcli.pipelines.registry import Option, TaskSpec


class LoudestWindow(Task):
    """A small task: which window of a document has the largest first-token vector, and its
    norm (rows: id, windows, loudest, norm)."""

    def forward(self, model, batch, items):
        hidden = model(**batch).float()
        return [float(hidden[b, 0].norm()) for b in range(len(items))]

    def finish(self, doc, prepared, results):
        loudest = max(range(len(results)), key=results.__getitem__)
        return {"id": doc.id, "windows": len(results), "loudest": loudest,
                "norm": round(results[loudest], self.options["digits"])}

    def schema(self):
        return pa.schema([("id", pa.string()), ("windows", pa.int64()), ("loudest", pa.int64()), ("norm", pa.float64()),
                          ("error", pa.string())])


def check(options: dict) -> None:
    if options.get("digits", 3) < 0:
        raise UsageError("--digits must be 0 or more")


SPEC = TaskSpec(
    name="loudest",
    summary="The window with the largest first-token vector: id, windows, loudest, norm.",
    runner=lambda tokenizer, policy, config, options: LoudestWindow(tokenizer, policy, digits=options.get("digits", 3)),
    global_policy="cls",
    options=(Option("digits", ("--digits",), int, 3, "Digits of the norm."),),
    check=check,
)


@pytest.fixture
def loudest():
    registry.register(SPEC)
    yield SPEC
    registry.unregister(SPEC.name)


def test_a_task_of_its_own_runs_from_the_cli_to_its_output_file(loudest, tmp_path):
    model = make_checkpoint(tmp_path / "model", max_tokens=64, attention_window=8)
    long_doc = "The court held that the contract was void because the seller had concealed the defect. " * 12
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text(long_doc)
    (tmp_path / "docs" / "b.txt").write_text("She said that he would come back before the winter.")
    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(app, ["loudest", str(tmp_path / "docs"), "-m", str(model), "-o", str(out),
                                      "--digits", "2", "--quiet"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a.txt", "b.txt"]
    assert rows[0]["windows"] > 1 and rows[1]["windows"] == 1  # the long one is windowed by the shared machinery
    assert rows[0]["norm"] == round(rows[0]["norm"], 2) > 0
    # its own option is checked before anything loads, with its own words
    bad = CliRunner().invoke(app, ["loudest", str(tmp_path / "docs"), "-m", str(model), "--digits", "-1"])
    assert bad.exit_code == 2 and "--digits must be 0 or more" in bad.stderr
    help_text = CliRunner().invoke(app, ["loudest", "--help"]).output
    assert "--digits" in help_text and "--max-length" in help_text  # its options, then the shared ones


def test_a_task_of_its_own_has_its_python_function(loudest, tmp_path):
    """lfcli.<task>: made from the spec, with the task's own options, like the CLI's command."""
    import lfcli

    model = make_checkpoint(tmp_path / "model", max_tokens=64, attention_window=8)
    rows = lfcli.loudest(["One short document.", {"id": "b", "text": "Another one, a little longer."}],
                         model=str(model), digits=1)
    assert [r["id"] for r in rows] == ["0", "b"] and all(r["norm"] == round(r["norm"], 1) for r in rows)
    assert "loudest" in lfcli.__dir__() and "largest first-token vector" in lfcli.loudest.__doc__
    with pytest.raises(UsageError, match="--digits must be 0 or more"):
        lfcli.loudest(["x"], model=str(model), digits=-1)


class HintedWindow(LoudestWindow):
    def finish(self, doc, prepared, results):
        return {**super().finish(doc, prepared, results), "hint": doc.fields.get("hint")}

    def schema(self):
        return super().schema().append(pa.field("hint", pa.string()))


HINTED = TaskSpec(
    name="hinted", summary="The loudest window, and each document's hint.",
    runner=lambda tokenizer, policy, config, options: HintedWindow(tokenizer, policy, digits=3),
    architecture="LongformerForSequenceClassification",
    missing_head="Train one with the hinted recipe",
    options=(Option("hint", ("--hint",), str, None, "The hint (else each record's 'hint' field)."),),
    pair="hint", pair_missing="lfcli hinted needs hints: --hint or a 'hint' field",
)


def test_a_tasks_document_field_head_and_advice_come_from_its_spec(tmp_path):
    """The spec's pair field is read from each record (and missing everywhere, refused once);
    its head is the class loaded; a checkpoint without that head gets the spec's advice."""
    registry.register(HINTED)
    try:
        bare = make_checkpoint(tmp_path / "bare", max_tokens=64, attention_window=8)
        headed = make_checkpoint(tmp_path / "headed", "LongformerForSequenceClassification", max_tokens=64,
                                 attention_window=8, labels=["a", "b"])
        records = tmp_path / "docs.jsonl"
        records.write_text(json.dumps({"id": "r1", "text": "A record with a hint.", "hint": "look left"}) + "\n"
                           + json.dumps({"id": "r2", "text": "A record without one."}) + "\n")
        out = tmp_path / "rows.jsonl"
        ok = CliRunner().invoke(app, ["hinted", str(records), "-m", str(headed), "-o", str(out), "--quiet"])
        assert ok.exit_code == 0, ok.output
        assert [(r["id"], r["hint"]) for r in map(json.loads, out.read_text().splitlines())] == [
            ("r1", "look left"), ("r2", None)]
        plain = tmp_path / "plain.txt"
        plain.write_text("No hint can come from a text file.")
        none = CliRunner().invoke(app, ["hinted", str(plain), "-m", str(headed)])
        assert none.exit_code == 2 and "lfcli hinted needs hints: --hint or a 'hint' field; no input has one" in none.stderr
        headless = CliRunner().invoke(app, ["hinted", str(records), "-m", str(bare)])
        assert headless.exit_code == 2 and "Train one with the hinted recipe" in headless.stderr  # usage
    finally:
        registry.unregister(HINTED.name)


def test_unregistered_task_is_gone_from_the_cli(tmp_path):
    registry.register(SPEC)
    registry.unregister(SPEC.name)
    result = CliRunner().invoke(app, ["loudest", "x"])
    assert result.exit_code == 2 and "loudest" not in registry.tasks()


def test_the_builtin_tasks_are_the_registrys():
    assert registry.tasks("infer") == ("classify", "qa", "embed", "corefs")
    assert registry.tasks("finetune") == ("classify", "qa", "corefs")
    assert registry.tasks("evaluate") == ("classify", "qa", "corefs")
    assert registry.tasks("page") == ("classify", "qa", "corefs")
    assert registry.tasks("pretrain") == ("mlm",)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(TaskSpec(name="qa", summary="another qa"))
    with pytest.raises(UsageError, match="unknown task 'nope'; choose one of classify, qa, embed, corefs"):
        registry.get("nope", "infer")


def test_reading_the_registry_imports_no_torch():
    """`lfcli --help` lists the tasks from their SPECs, which name their code lazily."""
    import subprocess
    import sys

    code = ("import sys; from lfcli.pipelines import registry; registry.tasks(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_lazy_names_the_code_it_calls():
    norm = registry.lazy("torch.linalg", "vector_norm")
    assert norm.__name__ == "vector_norm" and float(norm(torch.tensor([3.0, 4.0]))) == 5.0


def _lazy_targets(value, where: str):
    """(where, (module, name)) of every lazy() callable in a spec, its dataclass fields included."""
    import dataclasses

    if hasattr(value, "target"):
        yield where, value.target
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _lazy_targets(getattr(value, f.name), f"{where}.{f.name}")


def test_every_lazy_target_of_every_builtin_spec_resolves():
    """A spec names its code by strings, read only when the code is first called: a typo there
    would pass every test that does not call it. Each target imports and is callable."""
    import importlib

    found = [t for name in registry.tasks() for t in _lazy_targets(registry.get(name), name)]
    assert len(found) >= 15, found  # runners, pages, finetune setups, evaluations, the cast, pretraining
    for where, (module, name) in found:
        assert callable(getattr(importlib.import_module(module), name, None)), f"{where}: {module}.{name} does not resolve"


def test_a_trainable_task_gets_its_finetune_command_with_its_options_and_defaults():
    from lfcli.pipelines.registry import TrainingDefaults

    spec = TaskSpec(name="loudest-train", summary="A test task.", finetune=lambda **kwargs: None,
                    finetune_summary="Train the loudest window finder.",
                    training=TrainingDefaults(lr={"lora": 7e-4, "full": 3e-5}, epochs=5.0, batch_tokens=1234, patience=4),
                    finetune_options=(Option("volume", ("--volume",), int, 11, "How loud."),))
    registry.register(spec)
    try:
        result = CliRunner().invoke(app, ["finetune", "loudest-train", "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        for words in ("Train the loudest window finder.", "--lr 0.0007 (LoRA) or 3e-05", "--epochs 5",
                      "--batch-tokens 1234", "--patience 4", "--volume", "How loud.", "--validation-split"):
            assert words in result.output, words
    finally:
        registry.unregister(spec.name)
    gone = CliRunner().invoke(app, ["finetune", "loudest-train", "--help"])
    assert gone.exit_code == 2


def test_pretrain_continue_takes_its_options_and_defaults_from_its_home():
    """`lfcli pretrain-continue`: its own options are the pretraining task's (a field of its
    settings each, their defaults PretrainConfig's), after them the run's shared ones."""
    from lfcli.pipelines.tasks.mlm.config import PretrainConfig

    spec = registry.get(registry.tasks("pretrain")[0])
    text = " ".join(CliRunner().invoke(app, ["pretrain-continue", "--help"], env={"COLUMNS": "200"}).output
                    .replace("│", " ").split())
    defaults = PretrainConfig()
    for option in spec.pretrain_options:
        assert hasattr(defaults, option.name), option.name  # one option per field of the settings
        if option.flags:
            assert option.flags[0] in text and option.default == getattr(defaults, option.name)
    assert "--mask-prob FLOAT Share of tokens masked (80% [MASK], 10% random, 10% kept). [default: 0.15]" in text
    assert "--max-steps INT Optimizer updates in all. [default: 1000]" in text  # a shared option, the task's default
    assert text.index("--freeze-embeddings") < text.index("--model") < text.index("--resume")
