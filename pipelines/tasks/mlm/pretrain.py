"""Continued masked-LM pretraining of a Longformer on long documents (the paper's recipe).

`pretrain_continue(corpus, model, output, config)` takes a checkpoint (typically a short model
just converted to a long one, e.g. the bundled `minilm-l6-long`) and trains it further with
masked language modelling on long sequences, as Beltagy et al. (2020, section 5) did to let
the copied position embeddings and the windowed attention adapt; `config` is a
PretrainConfig (config.py: one field per option of `lfcli pretrain-continue`). The training
loop is the one every task shares (pipelines/train/loop.py: AdamW, warm-up and decay,
accumulation, bf16 autocast, clipping, evaluation, best-model keeping, bitwise resume, DDP,
metrics.jsonl); masking.py holds the masking, the model's MLM head and the task the loop
runs; this module is the run: its data, its settings for the loop, its output folder.

Data
  * Documents come from `readers.iter_documents` (files, folders, JSONL, Parquet); documents
    that cannot be read or are empty are skipped (and reported), the rest are tokenised once
    with the checkpoint's tokenizer.json, without special tokens.
  * Sequences: each document is SPLIT into consecutive, non-overlapping pieces of
    L - (special tokens) tokens, L = the model's positions or `max_length`; each piece is
    wrapped in the tokenizer's own single-sequence template ([CLS] x [SEP] / <s> x </s>).
    Documents are not packed together: a sequence never crosses a document boundary, so the
    held-out split below is clean and the model sees real long-range context only. A tail
    piece shorter than MIN_TAIL tokens is dropped unless it is the whole document. Short
    pieces are padded to the longest sequence of their micro-batch (padding is never a
    target and never attended to). The corpus is held in memory as int32 token ids.
Held-out split
  * A document goes to the evaluation set when a stable hash (sha256) of its id, read as a
    number in [0, 1), is below `eval_fraction`. When that picks nothing (a corpus of a few
    documents), the split falls back to hashing (document id, piece number), so a few pieces
    of each document are held out instead. At most `max_eval_sequences` held-out sequences
    are used (those with the smallest hashes). Training never sees a held-out sequence.
  * Held-out masks come from a fixed seed per sequence, so every evaluation (before
    training, every `save_every` updates, at the end) scores exactly the same masked
    tokens: mean MLM loss per masked token (nats) and bits per token = loss / ln 2. The
    model with the lowest held-out loss is the one kept in OUTPUT/.
Optimisation (trainer settings)
  * AdamW with RoBERTa's betas 0.9/0.98 and eps 1e-6, linear warm-up over `warmup_steps`
    (default: 6% of `max_steps`, at most 500), then power-3 polynomial decay to 0 at `max_steps` (`lr_factor`), clipping at
    `max_grad_norm`, `grad_accum` micro-batches of `batch_size` sequences per process and
    update, no early stopping. bf16 autocast on CUDA and on CPUs with native bf16
    (`autocast="auto"`), fp32 elsewhere or with `autocast="none"`.
  * `gradient_checkpointing` recomputes each layer in the backward pass (less memory, ~30%
    more time, the same numbers).
Output folder (the trainer's layout, as `lfcli finetune` writes it)
  * OUTPUT/ holds the best model so far (config.json, model.safetensors in transformers'
    layout as LongformerForMaskedLM, the tokenizer files), metrics.jsonl (every update and
    evaluation), curve.png (drawn from it after each evaluation, with matplotlib) and, at the
    end, training_summary.json.
  * OUTPUT/train_state/ is the resume state, rewritten every `save_every` updates (0: at the
    end only): trainable weights, optimizer, data position, every process's RNG states and
    the run's data fingerprint. `resume=True` continues from it: an interrupted-and-resumed
    run ends with the same weights as an uninterrupted one. Resuming with other
    data-shaping options (seed, lengths, batch, processes, corpus, steps) is refused.
Several processes
  * Launched by torchrun (WORLD_SIZE > 1), the same call initialises torch.distributed
    (gloo on CPU, nccl on CUDA); the trainer wraps the model in DistributedDataParallel and
    deals each update's micro-batches out; evaluation is split across processes and summed.
    Only rank 0 writes.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Callable, Iterable, Sequence as Seq

import torch

from lfcli.models import LongformerConfig, resolve_backend
from lfcli.models.bundled import resolve_model
from lfcli.models.checkpoint import TOKENIZER_FILES

from ...errors import InputError, UsageError
from ...infer.tokenize import DocumentTokenizer
from ...io.readers import iter_documents
from ...progress import record_line
from ...train.batches import unit_hash
from ...train.checkpoint import STATE_DIR
from ...train.loop import TrainConfig, TrainingRun, train
from ...wording import plural
from .config import PretrainConfig
from .masking import MaskVocab, MLMTask, Piece, freeze_global_projections, load_mlm_model

__all__ = ["pretrain_continue", "PretrainConfig", "build_sequences", "split_heldout"]

#: Default warm-up: the share of the updates that fine-tuning warms up over (6%), at most the
#: paper's 500 updates (of 65k): a fixed 500 refused any run of 500 updates or fewer.
WARMUP_SHARE = TrainConfig.warmup
MAX_DEFAULT_WARMUP = 500
MIN_TAIL = 16  # a document's last piece is dropped when shorter (unless it is the whole document)
# What a run writes to OUTPUT (removed by force=True before a new run; nothing else is).
OUTPUT_FILES = ("config.json", "model.safetensors", *TOKENIZER_FILES)  # what --force removes, with the trainer's files


# -- sequences and the held-out split -------------------------------------------------------
def build_sequences(
    documents: Iterable, tokenizer, prefix: Seq[int], suffix: Seq[int], seq_len: int,
    on_skip: Callable[[str, str], None] | None = None, batch_docs: int = 16,
) -> tuple[list[Piece], dict]:
    """Tokenise documents and split each into pieces of at most `seq_len` tokens including
    the special tokens of the template (see the module docstring). Returns the pieces in
    corpus order and counts (documents, skipped, tokens)."""
    budget = seq_len - len(prefix) - len(suffix)
    if budget < 1:
        raise UsageError(f"a sequence length of {seq_len} leaves no room for document tokens")
    pieces: list[Piece] = []
    stats = {"documents": 0, "skipped": 0, "tokens": 0}
    pre = torch.tensor(list(prefix), dtype=torch.int32)
    post = torch.tensor(list(suffix), dtype=torch.int32)

    def flush(batch):
        encodings = tokenizer.encode_batch([d.text for d in batch], add_special_tokens=False)
        for doc, enc in zip(batch, encodings):
            ids = torch.tensor(enc.ids, dtype=torch.int32)
            if ids.numel() == 0:
                stats["skipped"] += 1
                if on_skip:
                    on_skip(doc.id, "no tokens")
                continue
            stats["documents"] += 1
            stats["tokens"] += int(ids.numel())
            for part, start in enumerate(range(0, ids.numel(), budget)):
                body = ids[start:start + budget]
                if part > 0 and body.numel() < MIN_TAIL:
                    continue
                pieces.append(Piece(doc.id, part, torch.cat([pre, body, post])))

    batch = []
    for doc in documents:
        if doc.text is None:
            stats["skipped"] += 1
            if on_skip:
                on_skip(doc.id, doc.error or "unreadable")
            continue
        batch.append(doc)
        if len(batch) == batch_docs:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    return pieces, stats


def split_heldout(
    pieces: list[Piece], fraction: float, max_eval: int | None = None
) -> tuple[list[Piece], list[Piece], str]:
    """(train, held-out, how): by document-id hash, else by (id, piece) hash; see the module
    docstring. Never holds out every sequence; both lists keep corpus order."""
    if fraction <= 0 or len(pieces) < 2:
        return list(pieces), [], "none"
    keys = [unit_hash("doc", p.doc) for p in pieces]
    how = "documents"
    held = [k < fraction for k in keys]
    if not any(held) or all(held):
        keys = [unit_hash("piece", p.doc, p.part) for p in pieces]
        how = "pieces"
        held = [k < fraction for k in keys]
        if not any(held):  # a tiny corpus: hold out the one piece with the smallest hash
            held[min(range(len(pieces)), key=keys.__getitem__)] = True
        if all(held):
            return list(pieces), [], "none"
    train = [p for p, h in zip(pieces, held) if not h]
    heldout = [i for i, h in enumerate(held) if h]
    if max_eval is not None and len(heldout) > max_eval:
        heldout = sorted(sorted(heldout, key=keys.__getitem__)[:max_eval])
    return train, [pieces[i] for i in heldout], how


# -- the loop's settings -------------------------------------------------------------------
def trainer_config(config: PretrainConfig) -> TrainConfig:
    """The loop's settings for the paper's recipe: power-3 decay after a warm-up of 6% of the
    updates (at most 500), AdamW betas (0.9, 0.98) and eps 1e-6, fixed batches, an evaluation
    and a resume state every `save_every` updates (0 or None: at the end only), checked."""
    if config.save_every is not None and config.save_every < 0:
        raise UsageError("--save-every must be >= 0 (0: at the end only)")
    save_every = config.save_every or config.max_steps
    warmup_steps = config.warmup_steps
    if warmup_steps is None:
        warmup_steps = min(MAX_DEFAULT_WARMUP, int(WARMUP_SHARE * config.max_steps))
    loop = TrainConfig(
        lr=config.lr, max_steps=config.max_steps, warmup_steps=warmup_steps, decay_power=3.0,
        batch_size=config.batch_size, grad_accum=config.grad_accum, weight_decay=config.weight_decay,
        betas=(0.9, 0.98), eps=1e-6, max_grad_norm=config.max_grad_norm or None, eval_every=save_every,
        eval_before=True, patience=None, save_every=save_every, seed=config.seed, autocast=config.autocast, log_every=1,
    )
    loop.check()
    return loop


# -- the data -------------------------------------------------------------------------------
def read_corpus(corpus, read: dict, folder: Path, config, seq_len: int, say) -> tuple:
    """(the masking vocabulary, the corpus's sequences of at most seq_len tokens, counts),
    each skipped document said (the first five); no usable text is an InputError. `config`
    is the model's (LongformerConfig)."""
    tok = DocumentTokenizer.from_folder(folder, seq_len)
    template = tok.single
    vocab = MaskVocab.from_tokenizer(tok.tokenizer, config.vocab_size,
                                     extra_special=[*template.prefix, *template.suffix, config.pad_token_id])
    skipped = [0]

    def on_skip(doc_id: str, why: str) -> None:
        skipped[0] += 1
        if skipped[0] <= 5:
            say(f"skipped {doc_id}: {why}")

    documents = iter_documents([corpus] if isinstance(corpus, str) else list(corpus), **read)
    pieces, counts = build_sequences(documents, tok.tokenizer, template.prefix, template.suffix, seq_len, on_skip)
    if not pieces:
        raise InputError(
            f"no usable text in the corpus ({plural(counts['skipped'], 'document')} skipped as empty or unreadable)"
            if counts["skipped"] else "the corpus has no documents"
        )
    too_big = max(int(p.ids.max()) for p in pieces)
    if too_big >= config.vocab_size:
        raise InputError(f"{folder}: the tokenizer produces id {too_big}, outside the model's vocabulary ({config.vocab_size})")
    return vocab, pieces, counts


def corpus_split(corpus, read: dict, folder: Path, model_config, seq_len: int, config: PretrainConfig, say) -> tuple:
    """The run's data, said in one line: (the masking vocabulary, the training sequences, the
    held-out ones, how they were held out, the fingerprint a resumed run must match)."""
    vocab, pieces, counts = read_corpus(corpus, read, folder, model_config, seq_len, say)
    train_pieces, heldout, split_how = split_heldout(pieces, config.eval_fraction, config.max_eval_sequences)
    say(
        f"{plural(counts['documents'], 'document')}, {plural(counts['tokens'], 'token')} -> "
        f"{plural(len(train_pieces), 'training sequence')} and {plural(len(heldout), 'held-out sequence')} "
        f"of up to {seq_len} tokens"
        + (f" (held out by {split_how})" if heldout else "")
        + (f"; {plural(counts['skipped'], 'document')} skipped" if counts["skipped"] else "")
    )
    fingerprint = {  # the trainer adds seed, world size, steps and the number of sequences
        "sequence_length": seq_len, "batch_size": config.batch_size, "grad_accum": config.grad_accum,
        "mask_prob": config.mask_prob, "eval_fraction": config.eval_fraction,
        **({"freeze_embeddings": True} if config.freeze_embeddings else {}),
        "corpus": hashlib.sha256(
            "\n".join(f"{p.doc}\x1f{p.part}\x1f{p.ids.numel()}" for p in pieces).encode("utf-8")
        ).hexdigest()[:16],
    }
    return vocab, train_pieces, heldout, split_how, fingerprint


# -- the model ------------------------------------------------------------------------------
def start_model(folder: Path, config: PretrainConfig, attention_backend: str | None, say):
    """(the model with its MLM head, "checkpoint" | "new"), set to train as `config` says: the
    global projections frozen (no global attention in MLM), the embeddings too if asked."""
    mlm, head = load_mlm_model(folder, config.seed, say)
    mlm.attention_backend = attention_backend
    freeze_global_projections(mlm)
    if config.freeze_embeddings:
        mlm.longformer.embeddings.requires_grad_(False)
    mlm.set_gradient_checkpointing(config.gradient_checkpointing)
    return mlm, head


# -- the output folder and what the run says ------------------------------------------------
def _echo(record: dict) -> None:
    """Messages and evaluations on stderr, above the trainer's bar, when the caller gives no
    `log` (the CLI on a terminal)."""
    if record["event"] in ("message", "eval"):
        print(record_line(record, mlm=True), file=sys.stderr)


def named_evaluations(sink: Callable[[dict], None] | None, out: Path, max_steps: int) -> Callable[[dict], None]:
    """The trainer's records passed on to `sink`, evaluations named for MLM ("before", "at
    update N", "after") and checkpoints with their folder."""
    def relay(record: dict) -> None:
        if record["event"] == "eval":
            if record.get("loss") is None:  # no held-out sequences
                return
            step = record["step"]
            record = {**record, "when": "before" if step == 0 else "after" if step == max_steps else f"at update {step}"}
        elif record["event"] == "checkpoint":
            record = {**record, "path": str(out / STATE_DIR)}
        if sink is not None:
            sink(record)

    return relay


def mlm_summary(summary: dict, out: Path, model: str, head: str, seq_len: int, world: int, n_train: int, n_heldout: int,
                split_how: str) -> dict:
    """The loop's summary with the MLM figures: the held-out loss and bits per token before
    training and of the model kept in OUTPUT/."""
    scored = [e for e in summary["evals"] if e.get("loss") is not None]
    before = next((e for e in scored if e["step"] == 0), None)
    kept = next((e for e in reversed(scored) if e["best"]), None)
    return {
        "output": str(out), "base_model": str(model), "head": head, "steps": summary["updates"],
        "sequence_length": seq_len, "world_size": world, "train_sequences": n_train,
        "eval_sequences": n_heldout, "eval_split": split_how, "eval_targets": before["targets"] if before else 0,
        "eval_loss_before": before["loss"] if before else None, "eval_bpt_before": before["bpt"] if before else None,
        "eval_loss_after": kept["loss"] if kept else None, "eval_bpt_after": kept["bpt"] if kept else None,
        **summary,
    }


def done_line(result: dict, out: Path) -> str:
    return (
        f"done: {plural(result['steps'], 'update')}, {plural(result['tokens'], 'token')}"
        + (f"; held-out loss {result['eval_loss_before']:.4f} -> {result['eval_loss_after']:.4f} "
           f"(update {result['best_step']})" if result["eval_loss_before"] is not None
           and result["eval_loss_after"] is not None else "")
        + f"; model in {out}"
    )


# -- the run --------------------------------------------------------------------------------
def pretrain_continue(
    corpus: Seq[str] | str, model: str, output: str, config: PretrainConfig | dict | None = None, *,
    device: str = "cpu", attention_backend: str | None = None, resume: bool = False, force: bool = False,
    read: dict | None = None, progress: bool = False, log: Callable[[dict], None] | None = None,
) -> dict:
    """Continue masked-LM pretraining of `model` on the documents of `corpus`; the best model
    and the resume state go to the folder `output`, with the settings of `config` (default:
    PretrainConfig(); a dict: its fields, as `lfcli pretrain-continue` passes its options). See
    the module docstring.

    `config.save_every` updates between evaluations and resume states (0 or None: at the end
    only); a run keeps one resume state and its best model. `config.freeze_embeddings`: the
    base's embedding tables (and so the output layer tied to the word embeddings) stay as they
    are, and only the layers and the head's transform learn: a fine-tune over the result stored
    as fp16 deltas from the base then needs no embedding table. `read`: how to read the corpus
    (`iter_documents`' text_column, id_column, glob, encoding_errors).

    `log(record)` (rank 0 only) receives the trainer's records (see metrics.jsonl), with
    evaluations named: {"event": "message", "message"}, {"event": "eval", "when": "before" |
    "at update N" | "after", "step", "loss", "bpt", "targets", "sequences", "best"},
    {"event": "step", "step", "max_steps", "loss", "lr", "tokens_per_s", "eta_s"},
    {"event": "checkpoint", "step", "path"}. `progress=True` draws the trainer's bar on
    stderr when it is a terminal. Returns the run's summary: the trainer's, plus the MLM
    figures; "eval_loss_after" is the held-out loss of the model kept in OUTPUT/.
    """
    config = PretrainConfig(**config) if isinstance(config, dict) else config or PretrainConfig()
    loop = trainer_config(config)  # every option before anything is read or written
    config.check()
    folder = resolve_model(model)
    out = Path(output)
    sink = log or (_echo if progress and sys.stderr.isatty() else None)
    run = TrainingRun("pretrain-continue", out, folder, device=device, resume=resume, force=force, files=OUTPUT_FILES,
                      sink=sink)
    with run:
        model_config = LongformerConfig.from_json_file(folder / "config.json")
        seq_len = min(config.max_length or model_config.max_tokens, model_config.max_tokens)
        resolve_backend(attention_backend, model_config.attention_backend, run.dist.device)  # refuse a bad backend now
        vocab, train_pieces, heldout, split_how, fingerprint = corpus_split(
            corpus, read or {}, folder, model_config, seq_len, config, run.say)
        if resume and not (out / STATE_DIR).is_dir():
            run.say(f"{out}: no resume state there; starting at update 0")
        run.clear()

        mlm, head = start_model(folder, config, attention_backend, run.say)
        note = {"base_model": str(model), "sequence_length": seq_len, "mask_prob": config.mask_prob, "lr": config.lr,
                "max_steps": config.max_steps, **({"freeze_embeddings": True} if config.freeze_embeddings else {})}
        task = MLMTask(train_pieces, heldout, vocab, config.mask_prob, model_config.pad_token_id, config.seed,
                       config.batch_size, run.dist, folder, note)
        run.say(f"training {plural(config.max_steps, 'update')} of {config.grad_accum} x {config.batch_size} x "
                f"{run.dist.world} sequences, peak lr {config.lr:g}")
        summary = train(mlm, task, out, loop, dist=run.dist, resume=resume, fingerprint=fingerprint,
                        log=named_evaluations(sink, out, config.max_steps), progress=progress)

    result = mlm_summary(summary, out, model, head, seq_len, run.dist.world, len(train_pieces), len(heldout), split_how)
    run.say(done_line(result, out))
    return result
