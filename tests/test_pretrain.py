"""Continued MLM pretraining (pipelines/tasks/mlm/: pretrain.py, masking.py, config.py; on the shared trainer): schedule,
masking, data split, fixed batches, resume, two-process DDP and a real loss decrease of the
bundled model on LitBank novels. All CPU; the tiny runs use the trainer's default autocast
(bf16 on CPUs with native bf16), and the runs compared bitwise use the same setting."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from checkpoints import TRAINING_TEXT, make_checkpoint
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.tasks.mlm.config import PretrainConfig
from lfcli.pipelines.tasks.mlm.masking import MaskVocab, Piece, mask_tokens
from lfcli.pipelines.tasks.mlm.pretrain import build_sequences, pretrain_continue, split_heldout
from lfcli.pipelines.train.batches import Stream, plan_fixed
from lfcli.pipelines.train.checkpoint import STATE_DIR, STATE_FILE
from lfcli.pipelines.train.optimizer import lr_factor
from lfcli.pipelines.train.output import SUMMARY_FILE
from shared_data import DATA

LITBANK = DATA / "litbank" / "original"


pytestmark = pytest.mark.usefixtures("one_thread")


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random Longformer (64 positions, window 16, BERT WordPiece vocab with [MASK])."""
    return make_checkpoint(tmp_path_factory.mktemp("tiny"), "LongformerModel", max_tokens=64, attention_window=16)


@pytest.fixture(scope="module")
def tiny_no_dropout(tmp_path_factory):
    folder = make_checkpoint(tmp_path_factory.mktemp("tiny_nodrop"), "LongformerModel", max_tokens=64, attention_window=16)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["hidden_dropout_prob"] = cfg["attention_probs_dropout_prob"] = 0.0
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Eight small documents of shuffled sentences (a few 64-token sequences each)."""
    folder = tmp_path_factory.mktemp("corpus")
    lines = [line for line in TRAINING_TEXT.splitlines() if line.strip()]
    rng = random.Random(0)
    for i in range(8):
        (folder / f"doc{i}.txt").write_text(" ".join(rng.choice(lines) for _ in range(12)), encoding="utf-8")
    return folder


def _tokenizer(folder: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json"))


# -- schedule -----------------------------------------------------------------------------
def test_lr_factor_warmup_then_power3_decay():
    w, n = 500, 2000
    assert lr_factor(0, w, n) == pytest.approx(1 / 500)
    assert lr_factor(249, w, n) == pytest.approx(0.5)
    assert lr_factor(499, w, n) == 1.0  # last warm-up update at the peak
    assert lr_factor(500, w, n) == 1.0  # decay starts at the peak
    assert lr_factor(500 + 750, w, n) == pytest.approx(0.5**3)  # half-way through the decay
    assert lr_factor(n - 1, w, n) == pytest.approx((1 / 1500) ** 3) and lr_factor(n - 1, w, n) > 0
    assert lr_factor(n, w, n) == 0.0 and lr_factor(n + 10, w, n) == 0.0
    values = [lr_factor(s, w, n) for s in range(n + 1)]
    assert all(a <= b for a, b in zip(values[:w], values[1:w]))  # rising during warm-up
    assert all(a >= b for a, b in zip(values[w:], values[w + 1:]))  # falling after
    assert lr_factor(0, 0, 10) == 1.0 and lr_factor(5, 0, 10) == pytest.approx(0.5**3)
    assert lr_factor(3, 0, 10, power=1.0) == pytest.approx(0.7)
    with pytest.raises(ValueError):
        lr_factor(0, 10, 10)


# -- masking ------------------------------------------------------------------------------
def test_mask_vocab_reads_the_tokenizer(tiny):
    tok = _tokenizer(tiny)
    vocab = MaskVocab.from_tokenizer(tok, tok.get_vocab_size())
    assert vocab.mask_id == tok.token_to_id("[MASK]")
    names = {tok.id_to_token(i) for i in vocab.special_ids.tolist()}
    assert names == {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    assert not torch.isin(vocab.random_ids, vocab.special_ids).any()
    assert len(vocab.random_ids) + len(vocab.special_ids) == tok.get_vocab_size()


def test_masking_statistics_80_10_10_and_specials_never_masked(tiny):
    tok = _tokenizer(tiny)
    vocab = MaskVocab.from_tokenizer(tok, tok.get_vocab_size())
    gen = torch.Generator().manual_seed(0)
    ids = vocab.random_ids[torch.randint(len(vocab.random_ids), (64, 4096), generator=gen)]
    # Special tokens everywhere: [CLS]/[SEP] around each row, padding at the end, some [UNK]s.
    special_positions = torch.rand(ids.shape, generator=gen) < 0.1
    ids = torch.where(special_positions, vocab.special_ids[torch.randint(len(vocab.special_ids), ids.shape, generator=gen)], ids)
    ids[:, 0], ids[:, -1] = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    ids[:, -500:] = tok.token_to_id("[PAD]")
    special = torch.isin(ids, vocab.special_ids)

    inputs, labels = mask_tokens(ids, vocab, torch.Generator().manual_seed(1), mask_prob=0.15)
    chosen = labels != -100
    assert not (chosen & special).any()  # never a special token or padding
    assert torch.equal(inputs[special], ids[special])  # specials and padding untouched
    assert torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(inputs[~chosen], ids[~chosen])  # only targets change
    ordinary = int((~special).sum())
    assert chosen.sum() / ordinary == pytest.approx(0.15, abs=0.003)
    n = int(chosen.sum())  # ~ 26k targets: a 1-point tolerance is > 8 standard deviations
    as_mask = inputs[chosen] == vocab.mask_id
    kept = inputs[chosen] == ids[chosen]
    replaced = ~as_mask & ~kept
    assert as_mask.sum() / n == pytest.approx(0.80, abs=0.01)
    assert replaced.sum() / n == pytest.approx(0.10 * (1 - 1 / len(vocab.random_ids)), abs=0.01)
    assert kept.sum() / n == pytest.approx(0.10, abs=0.01)
    assert not torch.isin(inputs[chosen & (inputs != vocab.mask_id)], vocab.special_ids).any()
    # Same seed, same masks; another seed, other masks.
    again = mask_tokens(ids, vocab, torch.Generator().manual_seed(1), mask_prob=0.15)
    other = mask_tokens(ids, vocab, torch.Generator().manual_seed(2), mask_prob=0.15)
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)
    assert not torch.equal(other[1], labels)


def test_mask_vocab_without_mask_token_is_an_input_error(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "a": 2, "b": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(InputError, match="mask token"):
        MaskVocab.from_tokenizer(tok, 4)


# -- sequences and the held-out split ---------------------------------------------------------
def test_sequences_split_documents_and_wrap_in_special_tokens(tiny):
    from lfcli.pipelines.io.readers import Document

    tok = _tokenizer(tiny)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    long_text = " ".join(["the court held that the contract was void"] * 40)
    n_long = len(tok.encode(long_text, add_special_tokens=False).ids)
    docs = [Document("a", long_text), Document("b", "It was a bright cold day."), Document("c", None, "empty"),
            Document("d", "   ")]
    skipped = []
    pieces, stats = build_sequences(docs, tok, [cls_id], [sep_id], 32, lambda i, why: skipped.append(i))
    assert stats["documents"] == 2 and stats["skipped"] == 2 and skipped == ["c", "d"]
    a = [p for p in pieces if p.doc == "a"]
    assert all(p.ids.numel() <= 32 and p.ids[0] == cls_id and p.ids[-1] == sep_id for p in pieces)
    body = torch.cat([p.ids[1:-1] for p in a])
    full = torch.tensor(tok.encode(long_text, add_special_tokens=False).ids, dtype=torch.int32)
    # consecutive, non-overlapping pieces of 30 tokens; a tail under 16 tokens is dropped
    tail = n_long % 30
    expected = full if tail >= 16 or tail == 0 else full[: n_long - tail]
    assert torch.equal(body, expected)
    assert [p.part for p in a] == list(range(len(a)))
    assert [p.doc for p in pieces if p.doc == "b"] == ["b"]  # a short document is one piece


def test_heldout_split_is_deterministic_and_disjoint():
    pieces = [Piece(f"doc{d}", k, torch.tensor([1, 2])) for d in range(200) for k in range(3)]
    train, held, how = split_heldout(pieces, 0.1)
    assert how == "documents"
    assert {p.doc for p in train}.isdisjoint({p.doc for p in held})  # whole documents held out
    assert len(train) + len(held) == len(pieces)
    assert 0.04 < len(held) / len(pieces) < 0.2
    again = split_heldout(pieces, 0.1)
    assert [(p.doc, p.part) for p in again[1]] == [(p.doc, p.part) for p in held]
    capped = split_heldout(pieces, 0.1, max_eval=5)[1]
    assert len(capped) == 5 and all(p in held for p in capped)
    # a corpus of two long documents: pieces are held out instead, never everything
    few = [Piece(f"novel{d}", k, torch.tensor([1])) for d in range(2) for k in range(100)]
    train, held, how = split_heldout(few, 0.05)
    assert held and train and how in ("documents", "pieces")
    assert split_heldout(few, 0.0)[1] == []


# -- the job ------------------------------------------------------------------------------
TINY_RUN = PretrainConfig(max_steps=6, warmup_steps=2, grad_accum=2, batch_size=2, lr=2e-3, save_every=3, eval_fraction=0.1, seed=3)


def _state(out: Path) -> dict:
    return torch.load(out / STATE_DIR / STATE_FILE, weights_only=False)


def test_fixed_batches_share_one_process_work_among_processes():
    examples = [torch.zeros(n) for n in (5, 9, 3, 7, 4, 8, 6, 2)]
    stream = Stream(len(examples), seed=1)
    one = plan_fixed(stream, examples, 0, batch_size=2, grad_accum=2, rank=0, world=1)
    two = [plan_fixed(stream, examples, 0, batch_size=2, grad_accum=1, rank=r, world=2) for r in (0, 1)]
    assert [len(m) for m in one.micro] == [2, 2] and one.cursor == 4
    assert two[0].micro + two[1].micro == one.micro  # micro-batch a * world + r is process r's
    assert one.tokens == two[0].tokens == sum(len(examples[stream[k]]) for k in range(4))


def test_resume_after_interruption_equals_uninterrupted_run(tiny, corpus, tmp_path):
    full = pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "full"), TINY_RUN)
    assert full["steps"] == 6 and full["head"] == "new" and full["resumed_from_step"] is None
    assert [e["step"] for e in full["evals"]] == [0, 3, 6]  # before, every save_every, at the end

    class Crash(RuntimeError):
        pass

    def crash_after_checkpoint(record):
        if record["event"] == "step" and record["step"] == 5:
            raise Crash()

    out = tmp_path / "interrupted"
    with pytest.raises(Crash):
        pretrain_continue([str(corpus)], str(tiny), str(out), TINY_RUN, log=crash_after_checkpoint)
    assert _state(out)["run"]["step"] == 3
    with pytest.raises(UsageError, match="--resume"):
        pretrain_continue([str(corpus)], str(tiny), str(out), TINY_RUN)
    resumed = pretrain_continue([str(corpus)], str(tiny), str(out), TINY_RUN, resume=True)
    assert resumed["resumed_from_step"] == 3 and resumed["steps"] == 6
    assert resumed["tokens"] == full["tokens"]
    assert resumed["eval_loss_before"] == full["eval_loss_before"]
    trained = _state(out)["trainable"]
    for name, value in _state(tmp_path / "full")["trainable"].items():  # every trained weight, bitwise
        assert torch.equal(value, trained[name]), name
    a, b = _weights(tmp_path / "full"), _weights(out)  # and the kept models
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert resumed["eval_loss_after"] == full["eval_loss_after"]
    # resuming a finished run trains nothing and reports the same run
    again = pretrain_continue([str(corpus)], str(tiny), str(out), TINY_RUN, resume=True)
    assert again["resumed_from_step"] == 6 and again["evals"] == resumed["evals"]
    assert all(torch.equal(v, _weights(out)[k]) for k, v in b.items())


def test_gradient_checkpointing_gives_the_same_weights(tiny, corpus, tmp_path):
    # non-reentrant checkpointing replays dropout with the saved RNG state: same numbers
    run = replace(TINY_RUN, max_steps=3, save_every=0)
    pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "plain"), run)
    pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "gc"), replace(run, gradient_checkpointing=True))
    a, b = _weights(tmp_path / "plain"), _weights(tmp_path / "gc")
    assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6


def test_final_model_layout_and_global_copies(tiny, corpus, tmp_path):
    from lfcli.models import LongformerForMaskedLM, LongformerModel

    out = tmp_path / "out"
    log = []
    summary = pretrain_continue([str(corpus)], str(tiny), str(out), replace(TINY_RUN, max_steps=3, save_every=0),
                                log=log.append)
    assert summary["eval_sequences"] > 0 and summary["best_step"] == 3
    assert summary["eval_bpt_before"] == pytest.approx(summary["eval_loss_before"] / math.log(2))
    assert [r["when"] for r in log if r["event"] == "eval"] == ["before", "after"]
    assert {"message", "eval", "step", "checkpoint"} <= {r["event"] for r in log}
    steps = [r for r in log if r["event"] == "step"]
    assert [r["step"] for r in steps] == [1, 2, 3] and all(r["tokens_per_s"] > 0 and r["lr"] > 0 for r in steps)
    assert {"tokenizer.json", "config.json", "model.safetensors", SUMMARY_FILE, "metrics.jsonl", STATE_DIR} <= {
        p.name for p in out.iterdir()}
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["LongformerForMaskedLM"]
    assert cfg["lfcli"]["continued_pretraining"]["base_model"] == str(tiny)
    mlm = LongformerForMaskedLM.from_pretrained(out)  # has its head now
    enc = LongformerModel.from_pretrained(out)  # and loads as a bare encoder
    for layer in mlm.longformer.encoder.layer:
        attn = layer.attention.self
        for local, glob in (("query", "query_global"), ("key", "key_global"), ("value", "value_global")):
            assert torch.equal(getattr(attn, local).weight, getattr(attn, glob).weight)
            assert torch.equal(getattr(attn, local).bias, getattr(attn, glob).bias)
    # the encoder trained: it differs from the starting checkpoint
    start = LongformerModel.from_pretrained(tiny)
    assert not torch.equal(start.encoder.layer[0].attention.self.query.weight, enc.encoder.layer[0].attention.self.query.weight)
    # a second run continues from the saved head, whose held-out loss the first run reported
    again = pretrain_continue([str(corpus)], str(out), str(tmp_path / "again"), replace(TINY_RUN, max_steps=3, save_every=0))
    assert again["head"] == "checkpoint"
    assert again["eval_loss_before"] == pytest.approx(summary["eval_loss_after"], abs=1e-5)
    # nothing held out: no evaluation figures, and the latest model is kept
    none = pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "none"), replace(TINY_RUN, max_steps=3, eval_fraction=0.0))
    assert none["eval_loss_before"] is None and none["eval_loss_after"] is None and none["best_step"] == 3
    assert (tmp_path / "none" / "model.safetensors").is_file()


def test_errors_are_one_line(tiny, corpus, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a.txt").write_text("   \n", encoding="utf-8")
    with pytest.raises(InputError, match="no usable text"):
        pretrain_continue([str(empty)], str(tiny), str(tmp_path / "o1"), TINY_RUN)
    with pytest.raises(InputError):
        pretrain_continue([str(tmp_path / "missing")], str(tiny), str(tmp_path / "o2"), TINY_RUN)
    with pytest.raises(UsageError, match="warmup"):
        pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "o3"), replace(TINY_RUN, warmup_steps=6))
    with pytest.raises(UsageError, match="grad-accum"):
        pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "o3"), replace(TINY_RUN, grad_accum=0))
    with pytest.raises(UsageError, match="model folder"):
        pretrain_continue([str(corpus)], str(tiny), str(tiny), TINY_RUN)
    with pytest.raises(UsageError, match="contradict"):
        pretrain_continue([str(corpus)], str(tiny), str(tmp_path / "o4"), TINY_RUN, resume=True, force=True)
    assert not (tmp_path / "o3").exists() and not (tmp_path / "o4").exists()  # refused before writing
    out = tmp_path / "o5"
    pretrain_continue([str(corpus)], str(tiny), str(out), replace(TINY_RUN, max_steps=3, save_every=3))
    with pytest.raises(UsageError, match="other settings"):  # resume with another seed
        pretrain_continue([str(corpus)], str(tiny), str(out), replace(TINY_RUN, max_steps=3, seed=9), resume=True)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / STATE_DIR / "stale").write_text("from the earlier run", encoding="utf-8")
    pretrain_continue([str(corpus)], str(tiny), str(out), replace(TINY_RUN, max_steps=3, save_every=0), force=True)
    assert (out / "notes.txt").is_file() and not (out / STATE_DIR / "stale").exists()  # force removes only our files


# -- two processes ----------------------------------------------------------------------------
DDP_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from lfcli.pipelines.tasks.mlm.config import PretrainConfig
    from lfcli.pipelines.tasks.mlm.pretrain import pretrain_continue
    corpus, model, out, reports = sys.argv[1:5]
    s = pretrain_continue([corpus], model, out, PretrainConfig(max_steps=3, warmup_steps=1, grad_accum=1, batch_size=1,
                                                              lr=2e-3, save_every=2, eval_fraction=0.1, seed=3))
    rank = int(os.environ["RANK"])
    with open(os.path.join(reports, f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, **s}, f)
    """
)


def test_ddp_two_gloo_processes_match_one_process(tiny_no_dropout, corpus, tmp_path):
    from lfcli.models import LongformerForMaskedLM

    script = tmp_path / "ddp_run.py"
    script.write_text(DDP_SCRIPT, encoding="utf-8")
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("WORLD_SIZE", None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc_per_node", "2",
           str(script), str(corpus), str(tiny_no_dropout), str(out), str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert sorted(r["rank"] for r in reports) == [0, 1]
    assert all(r["world_size"] == 2 and r["steps"] == 3 for r in reports)
    assert reports[0]["eval_loss_after"] == pytest.approx(reports[1]["eval_loss_after"])
    assert len(_state(out)["rng"]) == 2  # every process's RNG state
    LongformerForMaskedLM.from_pretrained(out)  # loadable
    # One process accumulating the two micro-batches sees the same sequences and masks.
    single = pretrain_continue([str(corpus)], str(tiny_no_dropout), str(tmp_path / "single"), PretrainConfig(
        max_steps=3, warmup_steps=1, grad_accum=2, batch_size=1, lr=2e-3, save_every=0, eval_fraction=0.1, seed=3))
    assert single["tokens"] == reports[0]["tokens"]
    assert single["eval_loss_before"] == pytest.approx(reports[0]["eval_loss_before"], abs=1e-6)
    a, b = _weights(out), _weights(tmp_path / "single")
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst < 1e-5, worst


# -- a real model on real text ----------------------------------------------------------------
def test_short_run_on_litbank_lowers_heldout_loss_of_bundled_model(tmp_path):
    novels = sorted(LITBANK.glob("*.txt"))[:3] if LITBANK.is_dir() else []
    if len(novels) < 3:
        pytest.skip(f"LitBank novels not found in {LITBANK}")
    from lfcli.models.bundled import BundledUnavailable, resolve_model

    try:
        resolve_model("minilm-l6-long")
    except BundledUnavailable as exc:
        pytest.skip(f"bundled model unavailable: {exc}")
    corpus = tmp_path / "novels"
    corpus.mkdir()
    for path in novels:  # the first ~5k words of each novel: ~ 12 sequences of 512 tokens
        (corpus / path.name).write_text(path.read_text(encoding="utf-8")[:25000], encoding="utf-8")
    summary = pretrain_continue(
        [str(corpus)], "minilm-l6-long", str(tmp_path / "out"), PretrainConfig(
            max_length=512, batch_size=1, grad_accum=1, lr=1e-4, warmup_steps=1, max_steps=4, save_every=0,
            eval_fraction=0.1, max_eval_sequences=4, seed=0),
    )
    assert summary["head"] == "new" and summary["eval_sequences"] >= 2
    assert summary["eval_loss_after"] < summary["eval_loss_before"], summary


def test_a_short_run_warms_up_over_a_share_of_it(tiny, corpus, tmp_path):
    """--warmup-steps defaults to 6% of --max-steps (at most 500): a 40-update run works and
    warms up over 2 updates (a fixed default of 500 refused every run of 500 updates or fewer);
    an explicit warm-up as long as the run stays a usage error. --keep-checkpoints is gone."""
    from typer.testing import CliRunner

    from lfcli.cli import app

    out = tmp_path / "short"
    args = ["pretrain-continue", str(corpus), "-m", str(tiny), "-o", str(out), "--max-steps", "40", "--grad-accum", "1",
            "--save-every", "0", "--lr", "1e-3", "--quiet"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    lrs = [s["lr"] for s in steps if s["event"] == "step"]
    assert len(lrs) == 40 and lrs[0] == pytest.approx(1e-3 / 2) and lrs[1] == pytest.approx(1e-3)
    r = CliRunner().invoke(app, [*args, "--force", "--warmup-steps", "40"])
    assert r.exit_code == 2 and "--warmup-steps (40) must be >= 0 and smaller than --max-steps (40)" in r.stderr
    r = CliRunner().invoke(app, [*args, "--force", "--keep-checkpoints", "2"])
    assert r.exit_code == 2 and "No such option" in r.output


def test_freeze_embeddings_keeps_the_base_tables_and_trains_the_layers(tiny, corpus, tmp_path):
    from lfcli.models import LongformerModel

    out = tmp_path / "frozen"
    summary = pretrain_continue([str(corpus)], str(tiny), str(out),
                                replace(TINY_RUN, max_steps=3, save_every=0, freeze_embeddings=True))
    start, after = LongformerModel.from_pretrained(tiny).state_dict(), LongformerModel.from_pretrained(out).state_dict()
    tables = [k for k in start if k.startswith("embeddings.")]
    assert tables and all(torch.equal(start[k], after[k]) for k in tables)
    assert not torch.equal(start["encoder.layer.0.attention.self.query.weight"],
                           after["encoder.layer.0.attention.self.query.weight"])
    vocab, hidden = start["embeddings.word_embeddings.weight"].shape
    assert summary["trainable_parameters"] < sum(v.numel() for v in start.values()) - vocab * hidden
    # and a resume refuses to mix a frozen run with an unfrozen one
    with pytest.raises(UsageError, match=r"other settings \(freeze_embeddings\)"):
        pretrain_continue([str(corpus)], str(tiny), str(out), replace(TINY_RUN, max_steps=3, save_every=0), resume=True)
