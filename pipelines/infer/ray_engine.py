"""The Ray Data engine (`--engine ray`): the local engine's jobs on a Ray cluster.

A Parquet dataset (files, folders, globs) flows through Ray Data:

    Parquet row groups -> read (documents, in a Ray task) -> Pipeline on an actor pool -> write_parquet(OUT/)

* The task code is the local engine's: each actor builds one `runner.Pipeline` (the model loads
  once per actor) and runs `Pipeline.run` on its batches, so windows, token-budget packing,
  global attention and error rows are the same code. Documents are made from Parquet rows by
  `parquet_reader.parquet_row_document`, the local reader's own function, so ids and per-row errors
  are the same too.
* Ray reads row groups itself rather than through `ray.data.read_parquet`: a row's id, when the
  data has no id column, is its row number in its file, which read_parquet's parallel blocks do
  not carry. A row group is read with pyarrow, as read_parquet does underneath.
* The actor pool is sized from the cluster's free resources, keeping RESERVED_CPUS for the
  read and write tasks: an actor pool that takes every CPU starves them and the job stalls.
  A pool that cannot get one actor is refused in one line, never left waiting.
* Resume: the row groups are run in groups, each its own Ray job ending in `write_parquet`; once a group's files are written, a line naming its row groups and
  its output files is appended to OUT/_lfcli_manifest.jsonl. `--resume` skips the row groups
  listed there and deletes Parquet files that no line lists (a killed group's), so every id
  ends up in OUT/ exactly once. Each group starts its actors anew (model loads included), so
  groups are sized by time, as the local engine sizes its chunks: the first holds
  FIRST_GROUP_BYTES of text per actor, the next ones GROUP_SECONDS of work at the rate the
  groups before ran (a GPU pool gets big groups, a CPU pool small ones).

Differences from the local engine: a repeated id is not renamed `<id>#2` (that needs one
process to see every id), and notes that actors print (e.g. on --max-length) stay in Ray's
worker logs.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass

import pyarrow as pa
import torch

from .. import registry
from ..errors import InputError, LfcliError, UsageError
from ..io.jobs import job_record
from ..io.parquet_writer import normalize_schema
from ..io.readers import Document
from ..progress import note
from ..wording import plural
from .ray_inputs import (DOC_COLUMNS, first_texts, list_inputs, read_row_groups, reader_options, remaining_units,
                         take_group, unit_key)
from .ray_manifest import Manifest
from .runner import Pipeline, Stats, check_options, check_pair, model_name

ENGINES = ("local", "ray")
INSTALL_HINT = "--engine ray needs Ray: pip install 'lfcli[ray]'"
#: CPUs left to Ray Data's read and write tasks: with none left the job waits forever.
RESERVED_CPUS = 1
#: text per actor in the first resumable group (one Ray job, one manifest line): ~1M tokens,
#: minutes on a CPU core, seconds on a GPU.
FIRST_GROUP_BYTES = 4 * 2**20
#: work per later group: what a kill can lose, against a few seconds of actor start per group.
GROUP_SECONDS = 600.0
#: (LFCLI_RAY_GROUP_MB=X: groups of X MB of text per actor instead, fixed; for tests.)

#: rows per batch handed to an actor: Pipeline.run packs their windows by token budget.
ACTOR_BATCH_ROWS = 256
#: CPUs per read task: a share of the reserved one. Asking for other resources than the actors
#: also keeps Ray from fusing the read into the actors, where one task would take 256 row groups
#: (the actors' batch size, counted in input rows) and keep one actor busy while others wait.
READ_CPUS = 0.25
#: Ray writes at least this many rows per output file (fewer, bigger files).
ROWS_PER_FILE = 10_000
#: how long a pool waits for resources that another job is still releasing.
WAIT_FOR_RESOURCES_S = 10.0


@dataclass
class EngineOptions:
    engine: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    gpus_per_worker: float | None = None
    cpus_per_worker: float = 1.0


def engine_options(engine: str, ray_address: str | None, workers: int | None,
                   gpus_per_worker: float | None, cpus_per_worker: float | None) -> EngineOptions:
    """The --engine options, checked (UsageError) before anything is read or loaded."""
    if engine not in ENGINES:
        raise UsageError(f"--engine {engine!r}: choose local or ray")
    given = [name for name, value in (("--ray-address", ray_address), ("--workers", workers),
                                      ("--gpus-per-worker", gpus_per_worker), ("--cpus-per-worker", cpus_per_worker))
             if value is not None]
    if engine == "local" and given:
        raise UsageError(f"{given[0]} needs --engine ray")
    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1")
    if cpus_per_worker is not None and not cpus_per_worker > 0:
        raise UsageError("--cpus-per-worker must be positive")
    if gpus_per_worker is not None and gpus_per_worker < 0:
        raise UsageError("--gpus-per-worker must be 0 or more")
    return EngineOptions(engine, ray_address, workers, gpus_per_worker, cpus_per_worker or 1.0)


#: Ray's log lines that tell an lfcli user nothing, by the logger that writes them.
RAY_NOISE = {
    # A local instance starts with token authentication on (and one joined may have it):
    # Ray announces it on every start.
    "ray._private.authentication.authentication_token_setup": "Token authentication is enabled",
    # "No available CPUs ... the Dataset job will hang": true of a pool that takes every CPU;
    # lfcli's keeps RESERVED_CPUS for reading and writing (size_pool), and a group starting
    # while the last group's actors still hold theirs only waits until they stop.
    "ray.data.dataset": "does not have any available CPUs",
}


class _DropRayNoise(logging.Filter):
    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def require_ray(starts_local: bool):
    """Import Ray (UsageError with the install line when it is missing), its noise filtered."""
    if starts_local:
        # A local instance started for one job has no reason to listen beyond this machine:
        # this makes Ray bind the loopback address (read when ray is first imported).
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    for name, text in RAY_NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropRayNoise) for f in logger.filters):
            logger.addFilter(_DropRayNoise(text))
    try:
        import ray  # optional: the ray extra
        import ray.data  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


# ---------------------------------------------------------------------------------------------
# what runs in Ray: the actor (the read task: ray_inputs.read_row_groups)


class TaskActor:
    """One actor of the pool: loads the model once (runner.Pipeline) and runs its batches."""

    def __init__(self, task: str, pipe_opts: dict, on_error: str, threads: int, tally: str | None = None):
        import ray  # optional: the ray extra


        torch.set_num_threads(max(1, threads))
        # The tally actor comes by name: an actor handle among the constructor's arguments
        # makes Ray's core worker log an error line about actor restarts for every pool.
        self.on_error, self.tally, self.failed = on_error, tally and ray.get_actor(tally), None
        try:
            self.pipe = Pipeline(task, **pipe_opts)
        except LfcliError as exc:
            self.failed = exc
        except (ValueError, OSError) as exc:  # a corrupt checkpoint and such: bad input, as locally
            self.failed = InputError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        if self.failed is None:  # the local Parquet writer's schema: every field nullable, plus `error`
            self.schema = normalize_schema(self.pipe.task.schema(), pa)

    def __call__(self, batch):
        # An actor that failed to start raises here, not in __init__: Ray reports a failed
        # batch as one exception, where a failed actor start fills stderr with tracebacks.
        if self.failed is not None:
            raise self.failed
        columns = {name: batch.column(name).to_pylist() for name in batch.column_names}
        more = [name for name in columns if name not in DOC_COLUMNS]  # the task's document fields
        docs = [Document(id=i, text=t, error=e, fields={m: columns[m][n] for m in more if columns[m][n] is not None})
                for n, (i, t, e) in enumerate(zip(*(columns[name] for name in DOC_COLUMNS)))]
        first_error = None
        rows = []
        for row in self.pipe.run(docs, on_error=self.on_error):
            if first_error is None and row.get("error"):
                first_error = row["error"]
            rows.append(row)
        if self.tally is not None:
            stats = self.pipe.stats
            self.tally.add.remote(stats.docs, stats.tokens, stats.errors, first_error)
        return pa.Table.from_pylist(rows, schema=self.schema)


class _Tally:
    """A Ray actor adding up the pool's counts for the closing summary."""

    def __init__(self):
        self.docs = self.tokens = self.errors = 0
        self.first_error = None

    def add(self, docs: int, tokens: int, errors: int, first_error: str | None) -> None:
        self.docs, self.tokens, self.errors = self.docs + docs, self.tokens + tokens, self.errors + errors
        self.first_error = self.first_error or first_error

    def get(self) -> tuple[int, int, int, str | None]:
        return self.docs, self.tokens, self.errors, self.first_error


# ---------------------------------------------------------------------------------------------
# the cluster: start or join, size the pool


def connect(ray, address: str | None, quiet: bool) -> bool:
    """Join the cluster at `address` (or $RAY_ADDRESS), else start a local instance. True when
    this call started Ray (so the job shuts it down at the end)."""
    if ray.is_initialized():
        return False
    level = logging.WARNING if not quiet else logging.ERROR
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=level)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "a local instance"
        raise InputError(f"cannot start or reach Ray at {where}: {str(exc).strip().splitlines()[0]}") from None
    return True


def _fits(resources: dict, cpus: float, gpus: float) -> int:
    n = math.floor((resources.get("CPU", 0.0) - RESERVED_CPUS) / cpus + 1e-9)
    if gpus > 0:
        n = min(n, math.floor(resources.get("GPU", 0.0) / gpus + 1e-9))
    return max(n, 0)


def size_pool(ray, opts: EngineOptions, device: str) -> tuple[int, float]:
    """(actors, GPUs per actor) that the cluster's free resources hold, with RESERVED_CPUS kept
    for reading and writing; fewer than asked is said on stderr, none is a UsageError."""
    total = ray.cluster_resources()
    gpus = opts.gpus_per_worker
    if gpus is None:  # a GPU per actor when the cluster has GPUs and the device allows them
        gpus = 1.0 if total.get("GPU", 0) >= 1 and device != "cpu" else 0.0
    if device.startswith("cuda") and not gpus:
        raise UsageError(f"--device {device}: the Ray cluster has no GPU (or pass --gpus-per-worker)")
    cpus = opts.cpus_per_worker
    need = f"{cpus:g} CPU" + (f" and {gpus:g} GPU" if gpus else "") + f", plus {RESERVED_CPUS} CPU kept for reading and writing"
    has = plural(total.get("CPU", 0.0), "CPU") + (f" and {plural(total.get('GPU', 0.0), 'GPU')}" if gpus else "")
    if _fits(total, cpus, gpus) < 1:
        raise UsageError(f"the Ray cluster has {has}; one worker needs {need}: lower --cpus-per-worker"
                         + ("/--gpus-per-worker" if gpus else "") + " or add nodes")
    deadline = time.monotonic() + WAIT_FOR_RESOURCES_S  # a job that just ended may still hold some
    while (n := _fits(ray.available_resources(), cpus, gpus)) < 1 and time.monotonic() < deadline:
        time.sleep(0.5)
    if n < 1:
        raise UsageError(f"the Ray cluster has {has} but other jobs hold them; one worker needs {need}")
    if opts.workers is not None and opts.workers > n:
        note(f"--workers {opts.workers}: the cluster has room for {n} (it has {has}; each needs {need}); running {n}")
    return min(opts.workers or n, n), gpus


def quiet_ray_data(ray, quiet: bool) -> None:
    """Ray Data's progress bars only on a terminal, its log lines only when they warn, and the
    output in input order."""
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = sys.stderr.isatty() and not quiet
    ctx.execution_options.preserve_order = True
    for name in ("print_on_execution_start", "enable_auto_log_stats"):
        if hasattr(ctx, name):
            setattr(ctx, name, False)
    logging.getLogger("ray.data").setLevel(logging.ERROR if quiet else logging.WARNING)
    # These two announce, with a traceback, the failure that lfcli reports in one line.
    for name in ("ray.data._internal.execution.streaming_executor_state", "ray.data.exceptions"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if not ctx.enable_progress_bars:  # turned off on purpose: no warning that they are off
        from ray.util.debug import log_once  # optional: the ray extra

        log_once("ray_data_progress_manager_disabled")


# ---------------------------------------------------------------------------------------------
# the job


_RAISED = re.compile(r"^\s*((?:\w+\.)*(\w+(?:Error|Exception))): (.+)$", re.M)


def _lfcli_error(exc: BaseException) -> LfcliError:
    """The error inside a failed Ray job as one line. Ray hands back the actor's exception as
    text (its traceback) inside its own exception types: lfcli's errors keep their exit code."""
    texts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, LfcliError):
            return (UsageError if current.exit_code == 2 else InputError)(current.message)
        seen.add(id(current))
        texts.append(re.sub(r"\x1b\[[0-9;]*m", "", str(current)))
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else (current.__cause__ or current.__context__)
    raised = [m for text in texts for m in _RAISED.finditer(text)]
    ours = [m for m in raised if m.group(2) in ("InputError", "UsageError")]
    if ours:
        return (UsageError if ours[-1].group(2) == "UsageError" else InputError)(ours[-1].group(3))
    if raised:
        return InputError(f"the Ray job failed: {raised[-1].group(2)}: {raised[-1].group(3)}")
    return InputError(f"the Ray job failed: {type(exc).__name__}")


def _actor_device(device: str, gpus: float) -> str:
    # Ray gives each GPU actor its own CUDA_VISIBLE_DEVICES, so its GPU is always "cuda".
    return "cuda" if gpus else "cpu"


def run_ray(task: str, inputs: list[str], output: str | None, quiet: bool, read: dict, job: dict,
            pipe_opts: dict) -> tuple[Stats, int, str | None]:
    """Run `task` over Parquet `inputs` on Ray, writing OUT/ (a folder). Returns the job's
    Stats, the rows a resumed run found done, and the first error message."""
    opts: EngineOptions = job["engine"]
    Manifest.check(output)
    device = pipe_opts.get("device", "auto")
    # the driver may have no GPU where the workers do: their device is checked in the pool
    spec = registry.get(task, "infer")
    check_options(task, **{**_check_args(pipe_opts), "device": "cpu" if device.startswith("cuda") else device})
    reader = reader_options(read, spec.fields)
    ray = require_ray(starts_local=opts.ray_address is None and not os.environ.get("RAY_ADDRESS"))
    files = list_inputs(inputs, reader)
    if spec.pair:
        check_pair(spec, spec.asked(pipe_opts), any(spec.pair in f.fields for f in files))
    name = model_name(task, pipe_opts.get("model"), pipe_opts)
    header = {"lfcli": "ray-engine/1", "job": job_record(task, name, inputs, read, pipe_opts)}
    manifest = Manifest.open(output, header, job["resume"], job["force"])
    already = manifest.rows
    stats = Stats(started=time.perf_counter())
    units = remaining_units(files, manifest.done)
    if not units:
        return stats, already, None
    with contextlib.redirect_stdout(sys.stderr):  # whatever Ray prints is not data
        started = connect(ray, opts.ray_address, quiet)
        stats.started = time.perf_counter()  # the job's time: actors, model loads and all, not Ray's start
        try:
            quiet_ray_data(ray, quiet)
            workers, gpus = size_pool(ray, opts, device)
            tally_name = f"lfcli-tally-{os.getpid()}-{time.time_ns()}"
            tally = ray.remote(num_cpus=0)(_Tally).options(name=tally_name).remote()
            actor_opts = {**pipe_opts, "device": _actor_device(device, gpus)}
            if spec.for_workers is not None:  # what the task reads ahead, the same for every actor
                actor_opts = spec.for_workers(actor_opts, lambda n, chars: first_texts(files, reader, n, chars))
            fixed = os.environ.get("LFCLI_RAY_GROUP_MB")
            size = float(fixed) * 2**20 * workers if fixed else FIRST_GROUP_BYTES * workers
            total_rows = sum(files[f].group_rows[g] for f, g in units)
            while units:
                group = take_group(files, units, size)
                t0 = time.perf_counter()
                _run_group(ray, task, files, reader, group, manifest, job["on_error"], actor_opts,
                           workers, gpus, opts.cpus_per_worker, tally_name)
                if not fixed:  # the next group: GROUP_SECONDS at this group's rate
                    rate = sum(files[f].group_bytes[g] for f, g in group) / max(time.perf_counter() - t0, 1e-3)
                    size = max(FIRST_GROUP_BYTES * workers, rate * GROUP_SECONDS)
                docs, tokens, errors, first_error = ray.get(tally.get.remote())
                if not quiet:
                    note(f"{docs:,} of {plural(total_rows, 'document')} written to {manifest.folder}")
            stats.docs, stats.tokens, stats.errors = docs, tokens, errors
        finally:
            if started:
                ray.shutdown()
    return stats, already, first_error


def _check_args(pipe_opts: dict) -> dict:
    """The Pipeline's options check_options takes: all but the model (and the device, which the
    caller sets)."""
    return {name: value for name, value in pipe_opts.items() if name not in ("model", "device")}


def _run_group(ray, task, files, reader, group, manifest: Manifest, on_error, actor_opts, workers, gpus, cpus, tally: str):
    """One resumable group: read -> actors -> write_parquet, then its manifest line."""
    before = manifest.parquet_files()
    units = ray.data.from_items([{"file": f, "row_group": g} for f, g in group], override_num_blocks=len(group))
    docs = units.map_batches(read_row_groups, batch_size=1, batch_format="pyarrow", num_cpus=READ_CPUS,
                             fn_kwargs={"files": files, "opts": reader})
    # max_restarts=0: Ray Data's default restarts a dead actor and retries its batch forever, so
    # a document that gets its actor killed (out of memory) would make a job that never ends;
    # and Ray logs an error line per pool that such restarts fail anyway when the constructor's
    # arguments live in the object store, as Ray Data's do (ray-project/ray#53727). A lost actor
    # fails the job in one line instead, and --resume redoes its group only. (Ray >= 2.60 calls
    # passing it this way deprecated, and has no other way yet: its warning is not the user's.)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        rows = docs.map_batches(
            TaskActor, batch_size=ACTOR_BATCH_ROWS, batch_format="pyarrow", max_restarts=0,
            compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=cpus, num_gpus=gpus or None,
            fn_constructor_kwargs={"task": task, "pipe_opts": actor_opts, "on_error": on_error,
                                   "threads": int(cpus), "tally": tally},
        )
    try:
        rows.write_parquet(manifest.folder, min_rows_per_file=ROWS_PER_FILE)
    except Exception as exc:  # noqa: BLE001 - Ray wraps the actor's error; one line out of it
        raise _lfcli_error(exc) from None
    outputs = sorted(manifest.parquet_files() - before)
    manifest.finish_group([unit_key(files[f], g) for f, g in group], outputs,
                          sum(files[f].group_rows[g] for f, g in group))
