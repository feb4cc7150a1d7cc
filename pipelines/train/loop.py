"""The one training loop: continued pretraining and every fine-tuning task run through it.

A task supplies only what differs between tasks (see `TrainTask`): its training examples,
how a list of them becomes a batch, the loss of a batch, and its evaluation. The loop does
the rest, the same for every task, top to bottom as nanoGPT's train.py does:

  data      a seeded permutation of the examples per epoch, one epoch after the other
            (`Stream`); an update takes examples from the stream until it holds about
            `batch_tokens` real tokens, never reaching into the next epoch (so --epochs 1
            is one pass), sorts them by length and packs them into micro-batches of at
            most `micro_tokens` padded tokens (gradient accumulation).
            Under torchrun the micro-batches of an update are dealt out to the processes.
            Or fixed batches (`batch_size`, as pretraining's --batch-size/--grad-accum):
            `grad_accum` micro-batches of `batch_size` examples per process, in stream order.
  step      forward under bf16 autocast where the CPU multiplies bf16 natively (or on
            CUDA), loss = sum over the update's units / number of units (tokens for MLM,
            questions for QA, documents for classify), backward, clip, AdamW step. On the
            CPU the band attention's backward is its own blocked function
            (kernels/chunked_grad.py) and AdamW is PyTorch's fused one.
  schedule  linear warm-up, then polynomial decay to 0 at the last update (power 1:
            linear, the fine-tuning default; power 3: the Longformer paper's pretraining).
  eval      every `eval_every` updates and at the end (and before the first update with
            `eval_before`: a baseline, reported, never kept); the best score's model is
            written to the output folder (a task with no validation data scores None: the
            latest model is kept), and `patience` evaluations without a better score stop
            the run early.
  resume    a checkpoint after every evaluation (`save_every`) holds the trainable
            weights, the optimizer, the stream position and every RNG state; a resumed
            run ends with the same weights as one that never stopped.
  log       OUTPUT/metrics.jsonl gets one line per update and per evaluation, and
            OUTPUT/curve.png draws it after each evaluation (with matplotlib); progress
            (loss, tokens/s, ETA) on stderr: a rich bar on a terminal, plain lines otherwise.

Its parts live beside it: batches.py (the stream and each update's micro-batches),
optimizer.py (AdamW and lr_factor), distributed.py (Dist, the processes), checkpoint.py (the
resume checkpoint), output.py (the output folder's rules and the best model) and
progress_bar.py.
"""

from __future__ import annotations

import json
import math
import random
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import torch
from torch.nn.parallel import DistributedDataParallel

from ..errors import InputError, UsageError
from ..infer.precision import autocast_for, check_autocast
from ..view.curves import CURVE_FILE, METRICS_FILE, RunCurve
from .batches import Stream, micro_tokens_for, mix_seed, plan_fixed, plan_update, steps_per_epoch
from .checkpoint import STATE_DIR, STATE_FILE, load_state, save_state
from .distributed import Dist
from .optimizer import lr_factor, make_optimizer
from .output import SUMMARY_FILE, check_output, clear_output, keep_best
from .progress_bar import ProgressBar


# -- the frame of a training command --------------------------------------------------------------
class TrainingRun:
    """The frame every training command runs in (finetune, pretrain-continue): the output
    folder's rules checked before anything is read (check_output), the processes (Dist, closed
    however the run ends), messages from the main process only, and --force's clearing of an
    earlier run's files once the data has been read and every process is ready to write."""

    def __init__(self, command: str, output: Path, model_folder: Path, *, device: str, resume: bool, force: bool,
                 files: Sequence[str], sink: Callable[[dict], None] | None):
        check_output(output, model_folder, resume, force, command)
        self.output, self.force, self.files, self.sink = output, force, files, sink
        self.dist = Dist(device)

    def say(self, message: str) -> None:
        if self.dist.main and self.sink is not None:
            self.sink({"event": "message", "message": message})

    def clear(self) -> None:
        if self.force and self.dist.main:
            clear_output(self.output, self.files)
        self.dist.barrier()  # every process has checked the output before rank 0 writes anything

    def __enter__(self) -> "TrainingRun":
        return self

    def __exit__(self, *exc) -> None:
        self.dist.close()


# -- what a task supplies ------------------------------------------------------------------------
class TrainTask(Protocol):
    """The task-specific parts. `examples` are anything with a token count `len(example)`."""

    examples: Sequence[Any]

    def collate(self, examples: list, seeds: list[int]) -> dict:
        """A micro-batch (tensors on the CPU); `seeds` give each example its own randomness
        (e.g. MLM masks), independent of how examples are grouped."""

    def count(self, batch: dict) -> float:
        """The number of loss units in the batch (the loss is averaged over them)."""

    def loss(self, model, batch: dict) -> torch.Tensor:
        """The summed loss of the batch's units (a scalar)."""

    def evaluate(self, model) -> dict:
        """Validation metrics; "score" (higher is better) chooses the best model."""

    def save(self, model, folder: Path) -> None:
        """Write the model as a user loads it (`lfcli TASK -m folder`)."""


@dataclass
class TrainConfig:
    lr: float = 5e-4
    epochs: float = 3.0
    max_steps: int | None = None  # overrides epochs
    warmup: float = 0.06  # share of the updates
    warmup_steps: int | None = None  # overrides warmup
    decay_power: float = 1.0
    batch_tokens: int = 16384  # real tokens per update
    micro_tokens: int | None = None  # padded tokens per forward pass; None: micro_tokens_for(device)
    batch_size: int | None = None  # fixed batches instead: examples per micro-batch and process
    grad_accum: int = 1  # micro-batches per update and process (with batch_size)
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    max_grad_norm: float | None = 1.0
    eval_every: int | None = None  # default: once per epoch
    eval_before: bool = False  # a baseline evaluation before the first update
    patience: int | None = 2  # evaluations without a better score before stopping
    save_every: int | None = None  # resume checkpoints; default: at every evaluation
    seed: int = 0
    autocast: str = "auto"
    log_every: int = 10

    def check(self) -> None:
        if not self.lr > 0:
            raise UsageError("--lr must be positive")
        if self.max_steps is None and not self.epochs > 0:
            raise UsageError("--epochs must be positive")
        if self.max_steps is not None and self.max_steps < 1:
            raise UsageError("--max-steps must be at least 1")
        if not 0 <= self.warmup < 1:
            raise UsageError("--warmup must be a share of the updates in [0, 1)")
        if self.warmup_steps is not None and (
                self.warmup_steps < 0 or (self.max_steps is not None and self.warmup_steps >= self.max_steps)):
            raise UsageError(f"--warmup-steps ({self.warmup_steps}) must be >= 0 and smaller than --max-steps ({self.max_steps})")
        if self.batch_tokens < 1:
            raise UsageError("--batch-tokens must be positive")
        if self.micro_tokens is not None and self.micro_tokens < 1:
            raise UsageError("--micro-tokens must be positive")
        if (self.batch_size is not None and self.batch_size < 1) or self.grad_accum < 1:
            raise UsageError("--batch-size and --grad-accum must be at least 1")
        if self.weight_decay < 0:
            raise UsageError("--weight-decay must be >= 0")
        if self.eval_every is not None and self.eval_every < 1:
            raise UsageError("--eval-every must be at least 1")
        if self.patience is not None and self.patience < 1:
            raise UsageError("--patience must be at least 1")
        check_autocast(self.autocast)


# -- the loop -------------------------------------------------------------------------------------
@dataclass
class RunState:
    step: int = 0
    cursor: int = 0
    tokens: int = 0
    best_score: float | None = None
    best_step: int | None = None
    evals_since_best: int = 0
    evals: list = field(default_factory=list)
    elapsed: float = 0.0


class LossModule(torch.nn.Module):
    """What DDP wraps: the model's forward and the task's loss, as one module."""

    def __init__(self, model: torch.nn.Module, task: TrainTask):
        super().__init__()
        self.model, self.task = model, task

    def forward(self, batch):
        return self.task.loss(self.model, batch)


@dataclass
class Schedule:
    """How long a run is, in updates, and when it evaluates and checkpoints."""

    per_epoch: int
    max_steps: int
    warmup_steps: int
    eval_every: int
    save_every: int

    @classmethod
    def of(cls, examples: Sequence, config: TrainConfig, world: int) -> "Schedule":
        if config.batch_size:
            per_epoch = max(1, round(len(examples) / (config.batch_size * config.grad_accum * world)))
        else:
            per_epoch = steps_per_epoch(examples, config.batch_tokens)
        max_steps = config.max_steps or max(1, math.ceil(per_epoch * config.epochs))
        warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup * max_steps)
        eval_every = config.eval_every or per_epoch
        return cls(per_epoch, max_steps, min(warmup, max_steps - 1), eval_every, config.save_every or eval_every)


def train(model: torch.nn.Module, task: TrainTask, output: Path, config: TrainConfig, *, dist: Dist | None = None,
          resume: bool = False, fingerprint: dict | None = None, log: Callable[[dict], None] | None = None,
          progress: bool = False) -> dict:
    """Train `model` on `task`; the best model ends in `output`. Returns the run's summary."""
    config.check()
    if not task.examples:
        raise InputError("no training examples")
    run = Run(model, task, Path(output), config, dist or Dist("cpu"), log)
    run.begin(fingerprint or {}, resume)
    bar = ProgressBar(progress and run.dist.main, run.schedule.max_steps, run.st.step)
    model.train()
    stopped_early = False
    if config.eval_before and not run.st.evals:
        run.evaluate(baseline=True)
    try:
        while run.st.step < run.schedule.max_steps:
            record = run.update()
            bar.update(record)
            stopped_early = run.after_update(record)
            if stopped_early:
                break
    finally:
        bar.close()
    return run.finish(stopped_early)


class Run:
    """One training run's state and its parts, in the order train() calls them: begin (start
    or resume), update (one optimizer step), after_update (log, evaluate, checkpoint), finish."""

    def __init__(self, model, task: TrainTask, output: Path, config: TrainConfig, dist: Dist, log):
        if config.micro_tokens is None:
            config = replace(config, micro_tokens=micro_tokens_for(dist.device))
        self.model, self.task, self.output, self.config, self.dist, self.log = model, task, output, config, dist, log
        self.examples = task.examples
        self.schedule = Schedule.of(self.examples, config, dist.world)
        self.autocast, self.bf16 = autocast_for(dist.device, config.autocast)
        model.to(dist.device)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = make_optimizer(model, config.lr, config.weight_decay, config.betas, config.eps)
        loss_module = LossModule(model, task)
        if dist.world > 1:
            ids = [dist.device.index] if dist.device.type == "cuda" else None
            self.wrapped = DistributedDataParallel(loss_module, device_ids=ids)
        else:
            self.wrapped = loss_module
        self.state_dir = output / STATE_DIR
        self.st = RunState()
        self.started = time.perf_counter()
        self.stream = Stream(len(self.examples), config.seed)
        self.session_tokens, self.session_time, self.first_step = 0, 0.0, 0
        self.resumed_from: int | None = None
        self.curve = RunCurve(output, self.say, enabled=dist.main)

    def say(self, message: str) -> None:
        """A message line in the log (metrics.jsonl and the caller's)."""
        self.emit({"event": "message", "message": message})

    def emit(self, record: dict) -> None:
        """One line of OUTPUT/metrics.jsonl, and the caller's log."""
        if not self.dist.main:
            return
        with open(self.output / METRICS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=float) + "\n")
        if self.log is not None:
            self.log(record)

    def begin(self, fingerprint: dict, resume: bool) -> None:
        """Resume from the output's checkpoint (refused if the run there differs), else start
        afresh: seed the RNGs and clear the metrics log."""
        config, dist = self.config, self.dist
        self.fingerprint = {**fingerprint, "seed": config.seed, "batch_tokens": config.batch_tokens,
                            "micro_tokens": config.micro_tokens, "world_size": dist.world,
                            "examples": len(self.examples), "max_steps": self.schedule.max_steps}
        if resume and (self.state_dir / STATE_FILE).is_file():
            self.restore()
        else:
            self.output.mkdir(parents=True, exist_ok=True)
            if dist.main:
                for name in (METRICS_FILE, CURVE_FILE):
                    (self.output / name).unlink(missing_ok=True)
            random.seed(mix_seed(config.seed, "python", dist.rank))
            torch.manual_seed(mix_seed(config.seed, "dropout", dist.rank))
        self.trainable_n = sum(p.numel() for p in self.params)
        self.first_step = self.st.step  # this session's first update: its rate gives the ETA
        self.emit({"event": "start", "max_steps": self.schedule.max_steps, "steps_per_epoch": self.schedule.per_epoch,
                   "examples": len(self.examples), "trainable_parameters": self.trainable_n,
                   "bf16_autocast": self.bf16, "config": asdict(config)})

    def restore(self) -> None:
        """The trainable weights, optimizer, stream position and RNGs of the output's checkpoint."""
        self.st = RunState(**load_state(self.output, self.fingerprint, self.model, self.optimizer, self.dist, self.say))
        self.resumed_from = self.st.step
        self.say(f"resuming at update {self.st.step} of {self.schedule.max_steps}")

    def update(self) -> dict:
        """One optimizer update: its examples, micro-batches, backward, clip, AdamW. Returns
        the update's log record."""
        config, dist, st = self.config, self.dist, self.st
        t0 = time.perf_counter()
        if config.batch_size:
            plan = plan_fixed(self.stream, self.examples, st.cursor, config.batch_size, config.grad_accum, dist.rank,
                              dist.world)
        else:
            plan = plan_update(self.stream, self.examples, st.cursor, config.batch_tokens, config.micro_tokens,
                               dist.rank, dist.world)
        batches = [self.task.collate([self.examples[i] for i in idx],
                                     [mix_seed(config.seed, "example", st.step, i) for i in idx]) for idx in plan.micro]
        (units,) = dist.sum([sum(self.task.count(b) for b in batches)])
        scale = dist.world / max(units, 1e-9)  # DDP averages the processes' gradients
        loss_sum = 0.0
        for k, batch in enumerate(batches):
            batch = {n: v.to(dist.device) if isinstance(v, torch.Tensor) else v for n, v in batch.items()}
            sync = k == len(batches) - 1 or dist.world == 1
            with (nullcontext() if sync else self.wrapped.no_sync()):
                with self.autocast():
                    loss = self.wrapped(batch)
                (loss.float() * scale).backward()
            loss_sum += float(loss.detach())
        if config.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.params, config.max_grad_norm)
        current_lr = config.lr * lr_factor(st.step, self.schedule.warmup_steps, self.schedule.max_steps,
                                           config.decay_power)
        for group in self.optimizer.param_groups:
            group["lr"] = current_lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        (loss_total,) = dist.sum([loss_sum])
        st.step, st.cursor = st.step + 1, plan.cursor
        st.tokens += plan.tokens
        dt = time.perf_counter() - t0
        self.session_tokens += plan.tokens
        self.session_time += dt
        return {"event": "step", "step": st.step, "max_steps": self.schedule.max_steps,
                "loss": loss_total / max(units, 1e-9), "lr": current_lr, "tokens_per_s": plan.tokens / max(dt, 1e-9),
                "eta_s": (self.schedule.max_steps - st.step) * self.session_time / max(1, st.step - self.first_step)}

    def after_update(self, record: dict) -> bool:
        """Log the update; evaluate and checkpoint when due. True: stop early (patience)."""
        config, st, schedule = self.config, self.st, self.schedule
        last = st.step == schedule.max_steps
        if self.dist.main and (st.step % config.log_every == 0 or last):
            self.emit(record)
        stop = False
        if st.step % schedule.eval_every == 0 or last:
            self.evaluate()
            stop = bool(config.patience and st.evals_since_best >= config.patience)
        if st.step % schedule.save_every == 0 or last or stop:
            st.elapsed += time.perf_counter() - self.started
            self.started = time.perf_counter()
            save_state(self.output, self.fingerprint, asdict(st), self.model, self.optimizer, self.dist)
            self.emit({"event": "checkpoint", "step": st.step})
        if stop:
            self.emit({"event": "message",
                       "message": f"no better score in {config.patience} evaluations: stopping at update {st.step}"})
        return stop

    def evaluate(self, baseline: bool = False) -> None:
        """The task's validation; the best score's model is written to the output folder. A
        baseline (before the first update) is the starting point, reported and never kept."""
        st, model = self.st, self.model
        was = model.training
        model.eval()
        with torch.no_grad(), self.autocast():
            metrics = self.task.evaluate(model)
        model.train(was)
        score = None if metrics.get("score") is None else float(metrics["score"])
        better = not baseline and (score is None or st.best_score is None or score > st.best_score)
        record = {"event": "eval", "step": st.step, "epoch": round(st.step / self.schedule.per_epoch, 2), **metrics,
                  "best": better}
        st.evals.append({k: v for k, v in record.items() if k != "event"})
        if better:
            st.best_score, st.best_step, st.evals_since_best = score, st.step, 0
            if self.dist.main:
                keep_best(self.output, lambda folder: self.task.save(self.model, folder))
            self.dist.barrier()
        elif not baseline:
            st.evals_since_best += 1
        self.emit(record)
        self.curve.redraw()  # OUTPUT/curve.png (pipelines/view/curves.py)

    def finish(self, stopped_early: bool) -> dict:
        """The run's summary, also written to OUTPUT/training_summary.json."""
        st = self.st
        st.elapsed += time.perf_counter() - self.started
        summary = {
            "updates": st.step, "max_steps": self.schedule.max_steps, "resumed_from_step": self.resumed_from,
            "stopped_early": stopped_early, "tokens": st.tokens, "best_step": st.best_step, "best_score": st.best_score,
            "evals": st.evals,
            "train_tokens_per_s": self.session_tokens / self.session_time if self.session_time else None,
            "elapsed_s": st.elapsed, "bf16_autocast": self.bf16, "trainable_parameters": self.trainable_n,
        }
        if self.dist.main:
            (self.output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=float) + "\n",
                                                    encoding="utf-8")
        return summary
