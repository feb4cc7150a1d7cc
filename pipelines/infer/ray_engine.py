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
import glob as _glob
import json
import logging
import math
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import InputError, LfcliError, UsageError
from ..io.jobs import check_same_job, job_record
from ..progress import note
from ..io.inputs import ReadOptions
from ..io.parquet_reader import parquet_plan, parquet_row_document
from ..io.readers import ENCODING_ERRORS, Document, detect_format, walk_folder
from .. import registry
from .runner import Stats, check_options, check_questions, model_name
from ..wording import plural

ENGINES = ("local", "ray")
INSTALL_HINT = "--engine ray needs Ray: pip install 'lfcli[ray]'"
MANIFEST = "_lfcli_manifest.jsonl"
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
#: rows per block out of the read task (small blocks keep the object store light).
READ_BATCH_ROWS = 1024
#: CPUs per read task: a share of the reserved one. Asking for other resources than the actors
#: also keeps Ray from fusing the read into the actors, where one task would take 256 row groups
#: (the actors' batch size, counted in input rows) and keep one actor busy while others wait.
READ_CPUS = 0.25
#: Ray writes at least this many rows per output file (fewer, bigger files).
ROWS_PER_FILE = 10_000
#: how long a pool waits for resources that another job is still releasing.
WAIT_FOR_RESOURCES_S = 10.0
_GLOB_CHARS = set("*?[")
_DOC_COLUMNS = ("id", "text", "error", "question")


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
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


# ---------------------------------------------------------------------------------------------
# inputs: Parquet files and their row groups


@dataclass
class ParquetInput:
    path: str
    label: str  # as messages name it (the path as found)
    prefix: str | None  # of the ids, as the local engine makes them
    columns: tuple[str, ...]
    id_column: str | None
    question: bool
    group_rows: list[int] = field(default_factory=list)
    group_bytes: list[int] = field(default_factory=list)

    def first_row(self, group: int) -> int:
        return sum(self.group_rows[:group])


def reader_options(read: dict, empty_ok: bool = False) -> ReadOptions:
    if read.get("encoding_errors", "strict") not in ENCODING_ERRORS:
        raise UsageError(f"--encoding-errors must be one of {', '.join(ENCODING_ERRORS)}")
    if read.get("input_format", "auto") not in ("auto", "parquet"):
        raise UsageError("--engine ray reads Parquet: --input-format must be auto or parquet")
    return ReadOptions(text_column=read.get("text_column", "text"), id_column=read.get("id_column") or None,
                    glob=read.get("glob") or None, encoding_errors=read.get("encoding_errors", "strict"),
                    fields=("question",), input_format="auto", empty_ok=empty_ok)


def _expand(inputs: list[str]) -> list[str]:
    """The inputs with quoted globs expanded as a shell would (the local engine gets them expanded)."""
    paths = []
    for path in inputs:
        if path == "-":
            raise UsageError("--engine ray reads Parquet files, not standard input")
        if _GLOB_CHARS & set(path) and not os.path.exists(path):
            found = sorted(_glob.glob(path, recursive=True))
            if not found:
                raise InputError(f"{path}: no files match")
            paths += found
        else:
            paths.append(path)
    return paths


def list_inputs(inputs: list[str], opts: ReadOptions) -> list[ParquetInput]:
    """Every Parquet file of the inputs, checked as the local reader checks them (InputError)."""
    paths = _expand(list(inputs))
    multi = len(paths) > 1
    found: list[tuple[str, str | None]] = []  # (path, id prefix)
    for path in paths:
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder")
        if os.path.isdir(path):
            files = [(full, rel) for full, rel in walk_folder(path, opts.glob)]
            parquet = [(full, rel) for full, rel in files if detect_format(full) == "parquet"]
            if not parquet:
                raise InputError(f"{path}: folder has no Parquet files" + (f" matching {opts.glob!r}" if opts.glob else ""))
            if len(parquet) < len(files):
                note(f"{path}: skipped {plural(len(files) - len(parquet), 'file')} not in Parquet (--engine ray reads Parquet)")
            base = path.rstrip("/" + os.sep) or path
            found += [(full, f"{base}/{rel}" if multi else rel) for full, rel in parquet]
        elif detect_format(path) != "parquet":
            raise UsageError(f"{path}: --engine ray reads Parquet (.parquet, .pq); use the local engine for other inputs")
        else:
            found.append((path, path if multi else None))
    return [_describe(path, prefix, opts) for path, prefix in found]


def _describe(path: str, prefix: str | None, opts: ReadOptions) -> ParquetInput:
    import pyarrow.parquet as pq

    plan = parquet_plan(path, path, opts)  # the local reader's checks: columns and types
    meta = pq.ParquetFile(path).metadata
    text_index = meta.schema.to_arrow_schema().get_field_index(opts.text_column)
    info = ParquetInput(path=path, label=path, prefix=prefix, columns=plan.columns, id_column=plan.id_column,
                        question="question" in plan.field_columns)
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        info.group_rows.append(rg.num_rows)
        # the leaf chunk of the text column (flat string columns have one)
        info.group_bytes.append(rg.column(min(text_index, rg.num_columns - 1)).total_uncompressed_size)
    return info


def _unit_key(info: ParquetInput, group: int) -> str:
    return f"{os.path.abspath(info.path)}#{group}"


def remaining_units(files: list[ParquetInput], done: set[str]) -> list[tuple[int, int]]:
    """The (file index, row group) pairs with rows that the manifest does not list, in order."""
    return [(f, g) for f, info in enumerate(files) for g, rows in enumerate(info.group_rows)
            if rows and _unit_key(info, g) not in done]


def take_group(files: list[ParquetInput], units: list[tuple[int, int]], size: float) -> list[tuple[int, int]]:
    """The first units of `units` holding `size` bytes of text (at least one unit); removed from it."""
    total, n = 0, 0
    while n < len(units) and (n == 0 or total < size):
        f, g = units[n]
        total += files[f].group_bytes[g]
        n += 1
    group = units[:n]
    del units[:n]
    return group


# ---------------------------------------------------------------------------------------------
# what runs in Ray: the read task and the actor


def read_row_groups(batch, files: list[ParquetInput], opts: ReadOptions) -> Iterator[Any]:
    """Ray read task: the documents of each (file, row group) of `batch` as small Arrow tables
    (id, text, error, question), made by the local reader's parquet_row_document."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, pa.string()) for name in _DOC_COLUMNS])
    for f, g in zip(batch.column("file").to_pylist(), batch.column("row_group").to_pylist()):
        info = files[f]
        number = info.first_row(g)
        with pq.ParquetFile(info.path, pre_buffer=False) as pf:
            for part in pf.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=[g], columns=list(info.columns),
                                        use_threads=False):
                texts = part.column(opts.text_column).to_pylist()
                ids = part.column(info.id_column).to_pylist() if info.id_column else [None] * len(texts)
                questions = part.column("question").to_pylist() if info.question else [None] * len(texts)
                docs = [parquet_row_document(texts[i], ids[i], number + i, info.label, info.prefix, opts,
                                             {"question": questions[i]} if info.question else {})
                        for i in range(len(texts))]
                number += len(texts)
                # a question that is not a string is no question, as QATask reads it
                yield pa.table({
                    "id": [d.id for d in docs], "text": [d.text for d in docs], "error": [d.error for d in docs],
                    "question": [q if isinstance(q, str) else None for q in questions],
                }, schema=schema)


class TaskActor:
    """One actor of the pool: loads the model once (runner.Pipeline) and runs its batches."""

    def __init__(self, task: str, pipe_opts: dict, on_error: str, threads: int, tally: str | None = None):
        import pyarrow as pa
        import ray
        import torch

        from .runner import Pipeline
        from ..io.parquet_writer import normalize_schema

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
        import pyarrow as pa

        # An actor that failed to start raises here, not in __init__: Ray reports a failed
        # batch as one exception, where a failed actor start fills stderr with tracebacks.
        if self.failed is not None:
            raise self.failed
        docs = [Document(id=i, text=t, error=e, fields={} if q is None else {"question": q})
                for i, t, e, q in zip(*(batch.column(name).to_pylist() for name in _DOC_COLUMNS))]
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
        from ray.util.debug import log_once

        log_once("ray_data_progress_manager_disabled")


# ---------------------------------------------------------------------------------------------
# the output folder and its manifest


class Manifest:
    """OUT/_lfcli_manifest.jsonl: a header line (with the job's record, pipelines/io/jobs.py: a
    resumed job must be the same job), then one line per finished group."""

    def __init__(self, folder: str, header: dict):
        self.folder, self.path, self.header = folder, os.path.join(folder, MANIFEST), header
        self.done: set[str] = set()
        self.outputs: set[str] = set()
        self.rows = 0

    @staticmethod
    def check(out: str | None) -> str:
        """The output folder's path, refused (one line) when it cannot be one."""
        if not out or out == "-":
            raise UsageError("--engine ray writes a folder of Parquet files: give -o FOLDER/")
        out = out.rstrip("/" + os.sep) or out
        if out.lower().endswith((".jsonl", ".ndjson", ".json")):
            raise UsageError(f"--engine ray writes a folder of Parquet files: -o {out} names a JSON file; use -o FOLDER/")
        parent = os.path.dirname(out)
        if parent and not os.path.isdir(parent):
            raise InputError(f"output folder {parent} does not exist")
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"{out} is a file; --engine ray writes a folder of Parquet files (-o FOLDER/)")
        return out

    @classmethod
    def open(cls, out: str, header: dict, resume: bool, force: bool) -> "Manifest":
        self = cls(cls.check(out), header)
        out = self.folder
        ours = self._our_files()
        if ours and not (resume or force):
            raise UsageError(f"{out} holds output; pass --force to overwrite or --resume to continue")
        if force:
            for name in ours:
                os.remove(os.path.join(out, name))
        elif resume and ours:
            self._load()
        os.makedirs(out, exist_ok=True)
        if not os.path.exists(self.path):
            self._append(header)
        return self

    def _our_files(self) -> list[str]:
        if not os.path.isdir(self.folder):
            return []
        return sorted(n for n in os.listdir(self.folder) if n == MANIFEST or n.endswith(".parquet"))

    def parquet_files(self) -> set[str]:
        return {n for n in self._our_files() if n.endswith(".parquet")}

    def _load(self) -> None:
        if not os.path.exists(self.path):
            raise UsageError(f"{self.folder} has Parquet files but no {MANIFEST}: not an lfcli --engine ray "
                             "output to resume; pass --force to start over")
        with open(self.path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        records = []
        for i, line in enumerate(lines):
            try:
                records.append(json.loads(line))
            except ValueError:
                if i == len(lines) - 1:  # a line torn by a kill: its group is redone
                    break
                raise InputError(f"{self.path}: line {i + 1} is not JSON; cannot resume (pass --force)") from None
        if not records:  # killed while writing the header: no group was done
            records = [self.header]
        check_same_job(self.folder, records[0].get("job"), self.header["job"])
        for record in records[1:]:
            self.done.update(record["units"])
            self.outputs.update(record["outputs"])
            self.rows += record["rows"]
        with open(self.path, "w", encoding="utf-8") as fh:  # drop a torn last line
            fh.write("".join(json.dumps(r) + "\n" for r in records))
        leftovers = self.parquet_files() - self.outputs
        for name in leftovers:  # files of a group that was killed before its manifest line
            os.remove(os.path.join(self.folder, name))
        if leftovers:
            note(f"{self.folder}: removed {plural(len(leftovers), 'file')} of an unfinished group; its rows run again")

    def _append(self, record: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def finish_group(self, units: list[str], outputs: list[str], rows: int) -> None:
        self._append({"units": units, "outputs": outputs, "rows": rows})
        self.done.update(units)
        self.outputs.update(outputs)
        self.rows += rows


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
    reader = reader_options(read, empty_ok=spec.empty_ok)
    ray = require_ray(starts_local=opts.ray_address is None and not os.environ.get("RAY_ADDRESS"))
    files = list_inputs(inputs, reader)
    if spec.question:
        check_questions(pipe_opts.get("question"), any(f.question for f in files))
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
    manifest.finish_group([_unit_key(files[f], g) for f, g in group], outputs,
                          sum(files[f].group_rows[g] for f, g in group))
