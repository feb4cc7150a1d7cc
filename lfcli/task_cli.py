"""`lfcli classify|qa|embed|corefs PATH...`: a task over documents, rows to stdout or -o FILE.

Every option is checked before any input is read, and the inputs before the model loads, so
a typo fails at once; `--engine ray` hands the same job to pipelines/infer/ray_engine.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import PurePath

import typer

from lfcli.pipelines import registry
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.io.jobs import job_record
from lfcli.pipelines.job_defaults import JOB
from lfcli.pipelines.progress import progress_reporter
from lfcli.pipelines.wording import plural

from .app import app, follow_tasks, guarded, options_after
from .model_check import check_head, check_model
from .options import (
    Backend, BatchSize, CpusPerWorker, Device, Dtype, Encoding, EncodingErrors, Engine, FastPaths, Force, Glob, Global, GpusPerWorker,
    IdColumn, Inputs, InputFormat, MaxLength, MaxTokens, Model, OnError, Output, PartialOk, Quiet, RayAddress, Resume, RowGroup,
    TextColumn, Workers, with_task_options,
)


def _run_task(task: str, inputs: list[str], output: str | None, model: str | None, options: dict, **task_opts):
    """Run `task` over `inputs` with the shared `options` and the task's own Pipeline options."""
    from lfcli.pipelines.infer.runner import (  # lazy: torch, not for --help
        Pipeline, check_options, check_pair, model_name, window_tokenizer,
    )
    from lfcli.pipelines.io.readers import inputs_with_field, iter_documents  # lazy: pyarrow
    from lfcli.pipelines.io.writers import open_writer  # lazy: pyarrow

    spec = registry.get(task)
    read, job, pipe_opts = _job(model, options)
    pipe_opts.update(spec.parse(task_opts))
    job["engine"] = _engine(options)
    quiet = options["quiet"]
    resume, force, on_error = job["resume"], job["force"], job["on_error"]
    if resume and force:
        raise UsageError("--resume and --force contradict each other; pick one")
    if on_error not in ("skip", "fail"):
        raise UsageError("--on-error must be skip or fail")
    # By its name alone: a Ray job's -o is a folder, which has no format of its own.
    page = output is not None and output.lower().endswith(".html")
    if page and spec.page is None:
        raise UsageError(f"{spec.no_page or f'{task} rows'}: there is no page for them; use -o with .jsonl, .json or .parquet")
    if page and job["engine"] is not None and job["engine"].engine == "ray":
        raise UsageError("--engine ray writes a Parquet folder, not a page: run it, then `lfcli show FOLDER --text ...`")
    if job.get("engine") is not None and job["engine"].engine == "ray":
        from lfcli.pipelines.infer.ray_engine import run_ray  # lazy: torch

        _finish(*run_ray(task, inputs, output, quiet, read, job, pipe_opts), quiet, options["partial_ok"])
        return
    # Every option first, then inputs and output, then the model: a typo fails in a blink.
    check_options(task, **{k: v for k, v in pipe_opts.items() if k != "model"})
    check_model(pipe_opts["model"], task)  # an unknown -m is usage, said with the names -m takes
    pair_texts = spec.asked(pipe_opts)  # qa's questions
    name = model_name(task, pipe_opts["model"], pipe_opts)
    if pipe_opts["max_length"] is not None:  # room for the special tokens (and a question): the tokenizer tells
        window_tokenizer(task, name, pipe_opts["max_length"], pair_texts)
    docs = iter_documents(inputs, fields=spec.fields, **read)  # qa's documents keep each record's question
    if spec.pair:  # no question anywhere: one usage error, not an error row per document
        check_pair(spec, pair_texts, pair_texts is not None or inputs_with_field(
            inputs, spec.pair, glob=read["glob"], input_format=read["input_format"]))
    check_head(task, name, pipe_opts, pipe_opts["model"])  # before the output opens: no task head is usage
    first_error = None
    # What made the output: --resume must be the same job.
    record = job_record(task, name, inputs, read, pipe_opts)
    draw = None
    if page:  # the page shows the rows over their texts: keep every text read, resumed ones too
        docs, draw = _page_of(task, docs, record, output)
    with open_writer(output, resume=resume, force=force, rows_per_group=job["row_group_size"], job=record,
                     page=draw, id_field=spec.row_key(pipe_opts)) as writer:
        already_done = frozenset(writer.done_ids)  # the writer adds to done_ids as it goes
        pipe = Pipeline(task, **pipe_opts)
        writer.set_schema(pipe.task.schema())
        closing = spec.report() if spec.report is not None and not quiet and sys.stderr.isatty() else None
        with progress_reporter(quiet, total=_total_rows(inputs, read, spec, pipe_opts, len(already_done), quiet)) as report:
            for row in pipe.run(docs, skip_ids=already_done, on_error=on_error, progress=report):
                if first_error is None and row.get("error"):
                    first_error = row["error"]
                writer.write(row)
                if closing is not None:
                    closing.add(row)
    for line in closing.lines() if closing is not None else ():
        typer.echo(f"lfcli: {line}", err=True)
    _finish(pipe.stats, len(already_done), first_error, quiet, options["partial_ok"])

def _total_rows(inputs: list[str], read: dict, spec, pipe_opts: dict, already: int, quiet: bool) -> int | None:
    """The rows the job will still write, when cheap to know and a progress bar shows it: the
    inputs' documents (io/counts.py) times the pair texts asked of each (qa's questions), less
    those already in a resumed output."""
    if quiet or not sys.stderr.isatty():
        return None
    from lfcli.pipelines.io.counts import count_documents  # lazy: pyarrow, only for a terminal's bar

    docs = count_documents(inputs, glob=read["glob"], input_format=read["input_format"])
    if docs is None:
        return None
    return max(0, docs * len(spec.asked(pipe_opts) or [None]) - already) or None


def _page_of(task: str, docs, record: dict, output: str):
    """(`docs` passed on with each one's text kept, the function that draws the page of the
    job's rows over those texts) for `-o NAME.html`."""
    from lfcli.pipelines.view.show import render  # lazy: pyarrow

    texts: dict[str, str | None] = {}

    def keeping(docs):
        for doc in docs:
            texts[doc.id] = doc.text
            yield doc

    def draw(rows: list[dict]) -> str:
        return render(task, rows, texts, title=f"lfcli {task}: {PurePath(output).stem}", record=record)

    return keeping(docs), draw


def _engine(options: dict):
    """The --engine options, checked before any input is read (the engine module has no Ray import)."""
    from lfcli.pipelines.infer.ray_engine import engine_options  # lazy: torch

    return engine_options(options["engine"], options["ray_address"], options["workers"], options["gpus_per_worker"],
                          options["cpus_per_worker"])


def _finish(stats, already_done: int, first_error: str | None, quiet: bool, partial_ok: bool = False) -> None:
    """The job's closing lines on stderr: failures first, then rates over the documents that
    ran (a failed document costs nothing, so counting it would inflate docs/s). A job where
    any document failed exits 1 (its error rows and every other row written all the same), so
    a script that checks the exit code sees it; `partial_ok` (--partial-ok): exit 0 unless
    every document failed (then it made nothing)."""
    already = f"; {already_done} already in the output" if already_done else ""
    unit, short = ("document", "doc") if stats.unit == "doc" else (stats.unit, stats.unit)
    if stats.docs and stats.errors == stats.docs:
        raise InputError(f"all {plural(stats.docs, unit)} failed, each with an error row (first: {first_error}){already}")
    if quiet:
        _exit_on_failures(stats, partial_ok)
        return
    dt = max(time.perf_counter() - stats.started, 1e-9)
    ok = stats.docs - stats.errors
    lines = []
    if stats.errors:
        lines.append(f"{stats.errors} of {plural(stats.docs, unit)} failed, each with an error row (first: {first_error})")
    if ok:
        lines.append(f"{plural(ok, unit)} done in {dt:.1f} s: {ok / dt:.2f} {short}s/s, {stats.tokens / dt:,.0f} tokens/s")
    else:
        lines.append("no documents to run")
    lines[-1] += already
    for line in lines:
        typer.echo(f"lfcli: {line}", err=True)
    _exit_on_failures(stats, partial_ok)


def _exit_on_failures(stats, partial_ok: bool) -> None:
    """Exit 1 after the closing lines when a document failed, unless --partial-ok."""
    if stats.errors and not partial_ok:
        typer.echo("lfcli: exit code 1: some documents failed (their error rows are in the output; "
                   "--partial-ok exits 0 for them)", err=True)
        raise typer.Exit(1)


def _job(model: str | None, options: dict) -> tuple[dict, dict, dict]:
    """The shared options sorted out: how to read the inputs, what the job's output does, and
    the Pipeline's options (the --engine ones are _engine's)."""
    o = options
    read = dict(text_column=o["text_column"], id_column=o["id_column"], glob=o["glob"],
                encoding_errors=o["encoding_errors"], input_format=o["input_format"], encoding=o["encoding"])
    if o["row_group_size"] < 1:
        raise UsageError("--row-group-size must be positive")
    job = dict(force=o["force"], resume=o["resume"], on_error=o["on_error"], row_group_size=o["row_group_size"])
    pipe = dict(
        model=model, device=o["device"], dtype=o["dtype"], attention_backend=o["attention_backend"],
        max_length=o["max_length"], batch_size=o["batch_size"], max_tokens=o["max_tokens"], global_policy=o["global_"],
        fast_paths=o["fast_paths"],
    )
    return read, job, pipe


def _shared_options(
    text_column: TextColumn = JOB.text_column, id_column: IdColumn = None, glob: Glob = None,
    batch_size: BatchSize = None, max_tokens: MaxTokens = None, max_length: MaxLength = None,
    device: Device = JOB.device, dtype: Dtype = JOB.dtype, attention_backend: Backend = None, global_: Global = None,
    force: Force = False, resume: Resume = False, on_error: OnError = JOB.on_error, partial_ok: PartialOk = False,
    quiet: Quiet = False,
    encoding_errors: EncodingErrors = JOB.encoding_errors, encoding: Encoding = "utf-8",
    input_format: InputFormat = JOB.input_format,
    row_group_size: RowGroup = JOB.row_group_size, fast_paths: FastPaths = JOB.fast_paths,
    engine: Engine = "local", ray_address: RayAddress = None, workers: Workers = None,
    gpus_per_worker: GpusPerWorker = None, cpus_per_worker: CpusPerWorker = None,
):
    """The options every task command takes after its own, declared once (see job_options)."""


# The task commands' decorator: _shared_options' parameters after the command's own.
job_options = options_after(_shared_options)


def task_command(spec: registry.TaskSpec):
    """`lfcli TASK INPUT... [-o OUT] [-m MODEL] [its own options] [the shared options]`: one
    command per registered task, its options from its home."""

    def command(inputs: Inputs, output: Output = None, model: Model = None, *, options: dict, **task_opts):
        _run_task(spec.name, inputs, output, model, options, **task_opts)

    # INPUT first, then -o and -m, then the task's own options (the shared ones: job_options)
    with_task_options(command, spec.options, name=spec.name, doc=spec.summary)
    return app.command(spec.name)(guarded(job_options(command)))


follow_tasks(app, lambda spec: spec.runner is not None, task_command)  # a command per task that runs on documents
