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
  log       OUTPUT/metrics.jsonl gets one line per update and per evaluation; progress
            (loss, tokens/s, ETA) on stderr: a rich bar on a terminal, plain lines otherwise.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import torch

from .errors import InputError, UsageError
from .precision import autocast_for

STATE_DIR = "train_state"
STATE_FILE = "trainer_state.pt"
METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "training_summary.json"
STATE_VERSION = 1


# -- pieces shared with pretraining ------------------------------------------------------------
def lr_factor(step: int, warmup_steps: int, max_steps: int, power: float = 3.0) -> float:
    """Multiplier of the peak learning rate for the update taken after `step` updates.

    Linear warm-up: (step + 1) / warmup_steps for step < warmup_steps, reaching 1 at the
    last warm-up update. Then polynomial decay of the given power:
    (1 - (step - warmup_steps) / (max_steps - warmup_steps)) ** power, which is 1 right
    after warm-up and 0 at step = max_steps (when training is over). No update gets a zero
    learning rate. Clipped to 0 beyond max_steps.
    """
    if step < 0:
        raise ValueError("step must be >= 0")
    if max_steps <= warmup_steps:
        raise ValueError("max_steps must be larger than warmup_steps")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step >= max_steps:
        return 0.0
    remaining = 1.0 - (step - warmup_steps) / (max_steps - warmup_steps)
    return remaining**power


def mix_seed(*parts: object) -> int:
    """A 63-bit seed from `parts`, stable across processes and runs."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def unit_hash(*parts: object) -> float:
    """A stable number in [0, 1) from `parts` (sha256; the same in every process and run)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class Stream:
    """Training example k of the run: epoch k // n, position k % n of that epoch's seeded
    permutation of the n training examples."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed = n, seed
        self._epoch, self._perm = -1, None

    def __getitem__(self, k: int) -> int:
        epoch, i = divmod(k, self.n)
        if epoch != self._epoch:
            gen = torch.Generator().manual_seed(mix_seed(self.seed, "epoch", epoch))
            self._epoch, self._perm = epoch, torch.randperm(self.n, generator=gen).tolist()
        return self._perm[i]


class Dist:
    """The process group (or its absence): rank, world size, and the few collectives used."""

    def __init__(self, device: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
        self.owned = False
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise UsageError(f"device {device!r}: CUDA is not available here")
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise UsageError(f"device {device!r} is not a device torch knows") from None
        if self.world > 1 and dev.type == "cuda":
            dev = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(dev)
        self.device = dev
        if self.world > 1:
            import torch.distributed as dist

            if not dist.is_initialized():
                dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
                self.owned = True
            self.rank, self.world = dist.get_rank(), dist.get_world_size()

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: Sequence[float]) -> list[float]:
        t = torch.tensor(list(values), dtype=torch.float64)
        if self.world > 1:
            import torch.distributed as dist

            t = t.to(self.device)
            dist.all_reduce(t)
        return t.cpu().tolist()

    def gather(self, obj) -> list:
        if self.world == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        if self.owned:
            import torch.distributed as dist

            dist.destroy_process_group()


def rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def make_optimizer(model: torch.nn.Module, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """AdamW over the trainable parameters; no weight decay on biases and LayerNorm."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():  # a tied parameter appears once
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # PyTorch's fused AdamW: one kernel over each parameter instead of a dozen elementwise ops
    # (half the update's time on the CPU, measured); it needs every parameter on one device type.
    devices = {p.device.type for p in decay + no_decay}
    fused = len(devices) == 1 and devices <= {"cpu", "cuda"}
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=fused)


# -- the output folder's rules, the same for every training command ---------------------------------
def check_output(output: Path, model_folder: Path, resume: bool, force: bool, command: str) -> None:
    """Refuse an output folder a run must not write into: a file, the base model's own
    folder, or an earlier run's folder without --resume or --force."""
    if resume and force:
        raise UsageError("--resume and --force contradict each other; pick one")
    if output.exists() and not output.is_dir():
        raise UsageError(f"{output}: exists and is not a folder; the output of {command} is a model folder")
    try:
        same = output.exists() and output.resolve() == Path(model_folder).resolve()
    except OSError:
        same = False
    if same:
        raise UsageError(f"{output}: is the model folder itself; write the trained model to another folder")
    if output.is_dir() and any(output.iterdir()) and not (resume or force):
        raise UsageError(f"{output}: exists and is not empty; pass --resume to continue the run there or --force to start over")


def clear_output(output: Path, files: Sequence[str]) -> None:
    """--force: remove what an earlier run wrote there (its `files`, the trainer's own files
    and folders), and nothing else."""
    if not output.is_dir():
        return
    for child in output.iterdir():
        if child.is_file() and child.name in (*files, METRICS_FILE, SUMMARY_FILE):
            child.unlink()
        elif child.is_dir() and child.name in (STATE_DIR, f".tmp-{STATE_DIR}", ".tmp-best"):
            shutil.rmtree(child, ignore_errors=True)


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
    micro_tokens: int = 8192  # padded tokens per forward pass (memory)
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
        from .precision import check_autocast

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
        if self.batch_tokens < 1 or self.micro_tokens < 1:
            raise UsageError("--batch-tokens must be positive")
        if (self.batch_size is not None and self.batch_size < 1) or self.grad_accum < 1:
            raise UsageError("--batch-size and --grad-accum must be at least 1")
        if self.weight_decay < 0:
            raise UsageError("--weight-decay must be >= 0")
        if self.patience is not None and self.patience < 1:
            raise UsageError("--patience must be at least 1")
        check_autocast(self.autocast)


@dataclass
class Plan:
    """The update's micro-batches for this process (lists of example indices)."""

    micro: list[list[int]]
    cursor: int  # stream position after the update
    tokens: int  # real tokens of the whole update (all processes)


def plan_update(stream: Stream, examples: Sequence, cursor: int, batch_tokens: int, micro_tokens: int,
                rank: int = 0, world: int = 1) -> Plan:
    """The update starting at stream position `cursor`: its examples, longest first in
    micro-batches of at most micro_tokens padded tokens, dealt to the processes round-robin.

    An update never reaches into the next epoch: each epoch is split into exactly
    steps_per_epoch(examples, batch_tokens) updates, update k ending once the epoch's examples
    so far hold k/steps_per_epoch of its tokens (at least one example each). So an update
    holds about batch_tokens tokens, or the whole data set when that is smaller, and
    `--epochs 1` is one pass over the data. (Under torchrun an update takes a few examples
    more when its micro-batches do not share evenly among the processes.)"""
    import bisect
    import itertools

    n_examples = len(examples)
    per_epoch = steps_per_epoch(examples, batch_tokens)
    start = cursor - cursor % n_examples  # of the epoch
    # The epoch's update ends (stream positions, relative to its start), from its token count
    # so far at each position: the same in every process and on every call, so the plan needs
    # no state beyond the cursor (resume included).
    cum = list(itertools.accumulate((len(examples[stream[start + p]]) for p in range(n_examples)), initial=0))
    ends, end = [], 0
    for k in range(1, per_epoch):
        end = max(end + 1, bisect.bisect_left(cum, -(-k * cum[-1] // per_epoch)))
        ends.append(min(end, n_examples - (per_epoch - k)))  # leave an example for each update after it
    stop = start + next(e for e in [*ends, n_examples] if e > cursor - start)
    taken = [stream[k] for k in range(cursor, stop)]
    cursor = stop
    while True:
        while len(taken) < world:  # an example for each process
            taken.append(stream[cursor])
            cursor += 1
        tokens = sum(len(examples[i]) for i in taken)
        taken.sort(key=lambda i: (-len(examples[i]), i))
        micro: list[list[int]] = []
        for i in taken:
            n = len(examples[i])
            if micro and max(len(examples[micro[-1][0]]), n) * (len(micro[-1]) + 1) <= micro_tokens:
                micro[-1].append(i)
            else:
                micro.append([i])
        if len(micro) % world == 0:
            return Plan(micro[rank::world], cursor, tokens)
        taken.append(stream[cursor])  # one more example, until the processes share evenly
        cursor += 1


def plan_fixed(stream: Stream, examples: Sequence, cursor: int, batch_size: int, grad_accum: int,
               rank: int = 0, world: int = 1) -> Plan:
    """grad_accum x world micro-batches of batch_size examples in stream order; micro-batch
    a * world + r is process r's a-th, so the processes share what one process would take."""
    taken = [stream[k] for k in range(cursor, cursor + batch_size * grad_accum * world)]
    micro = [taken[j:j + batch_size] for j in range(0, len(taken), batch_size)]
    return Plan(micro[rank::world], cursor + len(taken), sum(len(examples[i]) for i in taken))


def steps_per_epoch(examples: Sequence, batch_tokens: int) -> int:
    """Updates in one pass over the examples (plan_update's split of every epoch): as many as
    updates of at most batch_tokens tokens on average need, at least one, at most one per
    example. A data set smaller than batch_tokens is one update per epoch, not dozens of
    passes over it in one update."""
    total = sum(len(e) for e in examples)
    return max(1, min(len(examples), math.ceil(total / batch_tokens)))


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


def train(model: torch.nn.Module, task: TrainTask, output: Path, config: TrainConfig, *, dist: Dist | None = None,
          resume: bool = False, fingerprint: dict | None = None, log: Callable[[dict], None] | None = None,
          progress: bool = False) -> dict:
    """Train `model` on `task`; the best model ends in `output`. Returns the run's summary."""
    config.check()
    dist = dist or Dist("cpu")
    output = Path(output)
    examples = task.examples
    if not examples:
        raise InputError("no training examples")
    if config.batch_size:
        per_epoch = max(1, round(len(examples) / (config.batch_size * config.grad_accum * dist.world)))
    else:
        per_epoch = steps_per_epoch(examples, config.batch_tokens)
    max_steps = config.max_steps or max(1, math.ceil(per_epoch * config.epochs))
    warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup * max_steps)
    warmup_steps = min(warmup, max_steps - 1)
    eval_every = config.eval_every or per_epoch
    save_every = config.save_every or eval_every
    fingerprint = {**(fingerprint or {}), "seed": config.seed, "batch_tokens": config.batch_tokens,
                   "micro_tokens": config.micro_tokens, "world_size": dist.world, "examples": len(examples),
                   "max_steps": max_steps}
    autocast, bf16 = autocast_for(dist.device, config.autocast)
    model.to(dist.device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(model, config.lr, config.weight_decay, config.betas, config.eps)

    class LossModule(torch.nn.Module):  # what DDP wraps: the whole forward + loss
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, batch):
            return task.loss(self.model, batch)

    loss_module = LossModule()
    if dist.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        ids = [dist.device.index] if dist.device.type == "cuda" else None
        wrapped = DistributedDataParallel(loss_module, device_ids=ids)
    else:
        wrapped = loss_module

    state_dir = output / STATE_DIR
    st = RunState()
    started = time.perf_counter()

    def emit(record: dict) -> None:
        if not dist.main:
            return
        with open(output / METRICS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=float) + "\n")
        if log is not None:
            log(record)

    if resume and (state_dir / STATE_FILE).is_file():
        saved = torch.load(state_dir / STATE_FILE, map_location="cpu", weights_only=False)
        if saved.get("version") != STATE_VERSION:
            raise InputError(f"{state_dir / STATE_FILE}: written by another version of lfcli; cannot resume from it")
        differ = [k for k, v in fingerprint.items() if saved["fingerprint"].get(k) != v]
        if differ:
            raise UsageError(f"{output}: the run there used other settings ({', '.join(differ)}); "
                             "resume with the same data and options, or use --force to start over")
        trainable = dict(model.named_parameters())
        with torch.no_grad():
            for name, value in saved["trainable"].items():
                trainable[name].copy_(value)
        optimizer.load_state_dict(saved["optimizer"])
        st = RunState(**saved["run"])
        resumed_from = st.step
        set_rng_state(saved["rng"][dist.rank], dist.device)
        emit({"event": "message", "message": f"resuming at update {st.step} of {max_steps}"})
    else:
        resumed_from = None
        output.mkdir(parents=True, exist_ok=True)
        if dist.main:
            (output / METRICS_FILE).unlink(missing_ok=True)
        random.seed(mix_seed(config.seed, "python", dist.rank))
        torch.manual_seed(mix_seed(config.seed, "dropout", dist.rank))
    trainable_n = sum(p.numel() for p in params)
    emit({"event": "start", "max_steps": max_steps, "steps_per_epoch": per_epoch, "examples": len(examples),
          "trainable_parameters": trainable_n, "bf16_autocast": bf16, "config": asdict(config)})

    def save_state() -> None:
        rngs = dist.gather(rng_state(dist.device))
        if dist.main:
            tmp = output / f".tmp-{STATE_DIR}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            torch.save({
                "version": STATE_VERSION, "fingerprint": fingerprint, "run": asdict(st), "rng": rngs,
                "trainable": {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad},
                "optimizer": optimizer.state_dict(),
            }, tmp / STATE_FILE)
            shutil.rmtree(state_dir, ignore_errors=True)
            os.replace(tmp, state_dir)
        dist.barrier()

    def evaluate(baseline: bool = False) -> None:
        was = model.training
        model.eval()
        with torch.no_grad(), autocast():
            metrics = task.evaluate(model)
        model.train(was)
        score = None if metrics.get("score") is None else float(metrics["score"])
        # A baseline is the starting point, never kept: the output folder is for the trained model.
        better = not baseline and (score is None or st.best_score is None or score > st.best_score)
        record = {"event": "eval", "step": st.step, "epoch": round(st.step / per_epoch, 2), **metrics, "best": better}
        st.evals.append({k: v for k, v in record.items() if k != "event"})
        if better:
            st.best_score, st.best_step, st.evals_since_best = score, st.step, 0
            if dist.main:
                tmp = output / ".tmp-best"
                shutil.rmtree(tmp, ignore_errors=True)
                task.save(model, tmp)
                for child in tmp.iterdir():
                    target = output / child.name
                    if target.is_dir():
                        shutil.rmtree(target)
                    os.replace(child, target)
                tmp.rmdir()
            dist.barrier()
        elif not baseline:
            st.evals_since_best += 1
        emit(record)

    bar = _Progress(progress and dist.main, max_steps, st.step)
    model.train()
    stream = Stream(len(examples), config.seed)
    session_tokens, session_time = 0, 0.0
    stopped_early = False
    if config.eval_before and not st.evals:
        evaluate(baseline=True)
    try:
        while st.step < max_steps:
            t0 = time.perf_counter()
            if config.batch_size:
                plan = plan_fixed(stream, examples, st.cursor, config.batch_size, config.grad_accum, dist.rank, dist.world)
            else:
                plan = plan_update(stream, examples, st.cursor, config.batch_tokens, config.micro_tokens, dist.rank,
                                   dist.world)
            batches = [task.collate([examples[i] for i in idx], [mix_seed(config.seed, "example", st.step, i) for i in idx])
                       for idx in plan.micro]
            (units,) = dist.sum([sum(task.count(b) for b in batches)])
            scale = dist.world / max(units, 1e-9)  # DDP averages the processes' gradients
            loss_sum = 0.0
            for k, batch in enumerate(batches):
                batch = {n: v.to(dist.device) if isinstance(v, torch.Tensor) else v for n, v in batch.items()}
                sync = k == len(batches) - 1 or dist.world == 1
                with (nullcontext() if sync else wrapped.no_sync()):
                    with autocast():
                        loss = wrapped(batch)
                    (loss.float() * scale).backward()
                loss_sum += float(loss.detach())
            if config.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            current_lr = config.lr * lr_factor(st.step, warmup_steps, max_steps, config.decay_power)
            for group in optimizer.param_groups:
                group["lr"] = current_lr
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            (loss_total,) = dist.sum([loss_sum])
            st.step, st.cursor = st.step + 1, plan.cursor
            st.tokens += plan.tokens
            dt = time.perf_counter() - t0
            session_tokens += plan.tokens
            session_time += dt
            record = {"event": "step", "step": st.step, "max_steps": max_steps, "loss": loss_total / max(units, 1e-9),
                      "lr": current_lr, "tokens_per_s": plan.tokens / max(dt, 1e-9),
                      "eta_s": (max_steps - st.step) * session_time / max(1, st.step - (bar.first_step))}
            bar.update(record)
            if dist.main and (st.step % config.log_every == 0 or st.step == max_steps):
                emit(record)
            if st.step % eval_every == 0 or st.step == max_steps:
                evaluate()
                if config.patience and st.evals_since_best >= config.patience:
                    stopped_early = True
            if st.step % save_every == 0 or st.step == max_steps or stopped_early:
                st.elapsed += time.perf_counter() - started
                started = time.perf_counter()
                save_state()
                emit({"event": "checkpoint", "step": st.step})
            if stopped_early:
                emit({"event": "message", "message": f"no better score in {config.patience} evaluations: stopping at update {st.step}"})
                break
    finally:
        bar.close()
    st.elapsed += time.perf_counter() - started
    summary = {
        "updates": st.step, "max_steps": max_steps, "resumed_from_step": resumed_from, "stopped_early": stopped_early,
        "tokens": st.tokens, "best_step": st.best_step, "best_score": st.best_score, "evals": st.evals,
        "train_tokens_per_s": session_tokens / session_time if session_time else None,
        "elapsed_s": st.elapsed, "bf16_autocast": bf16, "trainable_parameters": trainable_n,
    }
    if dist.main:
        (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=float) + "\n", encoding="utf-8")
    return summary


class _Progress:
    """A rich bar on stderr (terminal only): update, loss, tokens/s, ETA."""

    def __init__(self, enabled: bool, total: int, done: int):
        self.first_step = done
        self.bar = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                TextColumn("{task.fields[info]}"), TimeRemainingColumn(), transient=True,
                                console=Console(file=sys.stderr))  # stdout is for the command's data
            self.bar.start()
            self.task = self.bar.add_task("train", total=total, completed=done, info="")

    def update(self, record: dict) -> None:
        if self.bar is not None:
            info = f"loss {record['loss']:.4f}  {record['tokens_per_s']:,.0f} tokens/s"
            self.bar.update(self.task, completed=record["step"], info=info)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
