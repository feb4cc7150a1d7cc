"""The `lfcli` command: classify | qa | embed | corefs | models | convert | pretrain-continue.

Data goes to stdout (or -o FILE), progress and messages to stderr. Exit codes: 0 ok, 1 bad
input, 2 bad usage. Tracebacks only with LFCLI_DEBUG=1. torch is imported only when a
command runs, so `lfcli --help` answers at once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional, get_args, get_origin

import typer
from typer.core import TyperGroup
from typing_extensions import Annotated

from . import __version__

_PLAIN_TYPES = {int: "INT", float: "FLOAT", str: "TEXT", Path: "PATH"}


def _plain_metavars(params) -> None:
    """typer's help shows a type beside every parameter (`<bool>` on flags, `<str>`, and
    `<list[str]>` beside arguments): show none on flags, and plain names elsewhere."""
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""  # a flag takes no value
            continue
        if param.metavar is None:
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if get_origin(annotation) is list:
                annotation = get_args(annotation)[0]
            if annotation is None:  # a typer without type descriptors: click's own name
                param.metavar = param.type.name.upper()
            elif param.param_type_name == "argument":
                param.metavar = param.name.upper()
            else:
                param.metavar = _PLAIN_TYPES.get(annotation, getattr(annotation, "__name__", "VALUE").upper())
        if param.param_type_name == "argument":
            param.display_type_rich = lambda ctx: None  # the argument's name column shows its metavar


class _PlainHelpGroup(TyperGroup):
    """The `lfcli` group: plain metavars (see _plain_metavars) on its own options and on
    every command and subcommand, whichever module registered them."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        _plain_metavars(params)
        return params

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        stack = [command] if command is not None else []
        while stack:
            cmd = stack.pop()
            _plain_metavars(cmd.get_params(ctx))
            stack.extend(getattr(cmd, "commands", {}).values())  # a group's subcommands
        return command


app = typer.Typer(
    name="lfcli",
    cls=_PlainHelpGroup,
    help="Longformer over long documents: labels, answers, vectors and coreference chains.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)

# -- options shared by the task commands ----------------------------------------------------
Inputs = Annotated[List[str], typer.Argument(metavar="PATH", help="Files, folders, .jsonl, .parquet, or - for stdin.", show_default=False)]
Output = Annotated[Optional[str], typer.Option("--output", "-o", help="Output file: .jsonl, .json or .parquet (default: JSONL on stdout).")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Bundled model name (see `lfcli models`) or checkpoint folder.")]
TextColumn = Annotated[str, typer.Option("--text-column", help="Text field of JSONL records / column of Parquet files.")]
IdColumn = Annotated[Optional[str], typer.Option("--id-column", help="Id field/column (default: 'id' when present, else the row number).")]
Glob = Annotated[Optional[str], typer.Option("--glob", "-g", help="Only files in folders matching this pattern, e.g. '*.txt'.")]
BatchSize = Annotated[int, typer.Option("--batch-size", "-b", help="Most windows per batch.")]
MaxTokens = Annotated[int, typer.Option("--max-tokens", "-t", help="Token budget per batch (longest window x batch size).")]
MaxLength = Annotated[Optional[int], typer.Option("--max-length", "-l", help="Longest window in tokens (default: the model's positions).")]
Device = Annotated[str, typer.Option("--device", "-d", help="auto (CUDA when there is a GPU, else cpu), cpu, cuda, cuda:1, ...")]
Dtype = Annotated[str, typer.Option("--dtype", help="auto (bfloat16 on a CPU with native bf16, else float32; `lfcli --version --verbose` says which), float32, bfloat16 or float16.")]
Backend = Annotated[Optional[str], typer.Option("--attention-backend", help="auto, chunked, triton or reference.")]
Global = Annotated[Optional[str], typer.Option("--global", help="Global attention: none|cls|question|sentence-starts|paragraph-starts|regex:PATTERN.")]
Force = Annotated[bool, typer.Option("--force", "-F", help="Overwrite an existing output file (and an unfinished run's rows).")]
Resume = Annotated[bool, typer.Option("--resume", "-r", help="Continue an interrupted job: keep the output's rows, skip their ids.")]
OnError = Annotated[str, typer.Option("--on-error", help="skip: write an error row and go on; fail: stop at the first bad document.")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress or summary on stderr.")]
EncodingErrors = Annotated[str, typer.Option("--encoding-errors", help="strict: a bad UTF-8 document is an error row; replace: decode with U+FFFD.")]
InputFormat = Annotated[str, typer.Option("--input-format", help="auto, text or jsonl (for stdin; files go by extension).")]
RowGroup = Annotated[int, typer.Option("--row-group-size", help="Parquet output: rows per row group. Finished rows reach the output file every 5 s or every row group, whichever comes first, so --resume after a kill redoes only the last seconds' documents.")]
# Help texts go through rich markup, where "[ray]" is a style tag and vanishes: "\\[" keeps it.
Engine = Annotated[str, typer.Option("--engine", help="local (this process) or ray (Ray Data over a Parquet dataset, writing -o FOLDER/; pip install 'lfcli\\[ray]').")]
RayAddress = Annotated[Optional[str], typer.Option("--ray-address", help="--engine ray: the cluster to join (e.g. auto, or HOST:6379; default $RAY_ADDRESS, else a local instance).")]
Workers = Annotated[Optional[int], typer.Option("--workers", help="--engine ray: model actors (default: as many as the free resources hold, one CPU kept for reading and writing).")]
GpusPerWorker = Annotated[Optional[float], typer.Option("--gpus-per-worker", help="--engine ray: GPUs per actor (default 1 when the cluster has GPUs, else 0; 0.5 puts two actors on a GPU).")]
CpusPerWorker = Annotated[Optional[float], typer.Option("--cpus-per-worker", help="--engine ray: CPUs per actor, also its torch threads (default 1).")]


def _version(value: bool):
    if value:
        typer.echo(f"lfcli {__version__}")
        # --version is eager (it answers before anything else is parsed), so --verbose is read
        # from the command line here.
        if {"--verbose", "-v"} & set(sys.argv[1:]):
            typer.echo(_machine_line())
        raise typer.Exit()


def _machine_line() -> str:
    """torch, the CPU, and the floating-point path `--dtype auto` takes on it."""
    import torch

    from lfcli.pipelines.precision import cpu_name, describe_auto

    cuda = f", CUDA {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return f"torch {torch.__version__}, {cpu_name()}, {torch.get_num_threads()} threads{cuda}\n{describe_auto()}"


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="With --version: also torch, the CPU and the dtype `--dtype auto` runs here.")] = False,
):
    """Longformer over long documents from the shell."""


def _fail(message: str, code: int):
    typer.echo(f"lfcli: error: {message}", err=True)
    raise typer.Exit(code)


def _guarded(fn):
    """Turn lfcli's known errors into one line on stderr and the right exit code."""
    if os.environ.get("LFCLI_DEBUG") == "1":
        return fn()
    from lfcli.pipelines.errors import LfcliError

    try:
        return fn()
    except LfcliError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted (rerun with --resume to continue)", 130)
    except BrokenPipeError:
        raise typer.Exit(0)
    except (ValueError, OSError) as exc:  # bad checkpoints, configs, paths: bad input
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 1)
    except Exception as exc:  # noqa: BLE001 - last resort: still one line, no traceback
        _fail(f"internal error: {type(exc).__name__}: {exc} (set LFCLI_DEBUG=1 for a traceback)", 1)


def _run_task(task: str, inputs: list[str], output: str | None, quiet: bool, read: dict, job: dict, pipe_opts: dict):
    from lfcli.pipelines.errors import UsageError
    from lfcli.pipelines.jobs import job_record
    from lfcli.pipelines.progress import progress_reporter
    from lfcli.pipelines.readers import inputs_with_field, iter_documents
    from lfcli.pipelines.runner import Pipeline, check_options, check_questions, model_name, window_tokenizer
    from lfcli.pipelines.writers import open_writer

    resume, force, on_error = job["resume"], job["force"], job["on_error"]
    if resume and force:
        raise UsageError("--resume and --force contradict each other; pick one")
    if on_error not in ("skip", "fail"):
        raise UsageError("--on-error must be skip or fail")
    if job.get("engine") is not None and job["engine"].engine == "ray":
        from lfcli.pipelines.ray_engine import run_ray

        _finish(*run_ray(task, inputs, output, quiet, read, job, pipe_opts), quiet)
        return
    # Every option first, then inputs and output, then the model: a typo fails in a blink.
    check_options(
        task, device=pipe_opts["device"], dtype=pipe_opts["dtype"], attention_backend=pipe_opts["attention_backend"],
        max_length=pipe_opts["max_length"], batch_size=pipe_opts["batch_size"], max_tokens=pipe_opts["max_tokens"],
        global_policy=pipe_opts["global_policy"], labels=pipe_opts.get("labels"),
        temperature=pipe_opts.get("temperature", 0.05), top_k=pipe_opts.get("top_k", 1), pooling=pipe_opts.get("pooling"),
    )
    question = pipe_opts.get("question")
    if pipe_opts["max_length"] is not None:  # room for the special tokens (and a question): the tokenizer tells
        window_tokenizer(task, model_name(task, pipe_opts["model"], pipe_opts.get("labels")), pipe_opts["max_length"], question)
    docs = iter_documents(inputs, **read)
    if task == "qa":  # no question anywhere: one usage error, not an error row per document
        check_questions(question, question is not None or inputs_with_field(
            inputs, "question", glob=read["glob"], input_format=read["input_format"]))
    first_error = None
    record = job_record(task, inputs, read, pipe_opts)  # what made the output: --resume must be the same job
    with open_writer(output, resume=resume, force=force, rows_per_group=job["row_group_size"], job=record) as writer:
        already_done = frozenset(writer.done_ids)  # the writer adds to done_ids as it goes
        pipe = Pipeline(task, **pipe_opts)
        writer.set_schema(pipe.task.schema())
        with progress_reporter(quiet) as report:
            for row in pipe.run(docs, skip_ids=already_done, on_error=on_error, progress=report):
                if first_error is None and row.get("error"):
                    first_error = row["error"]
                writer.write(row)
    _finish(pipe.stats, len(already_done), first_error, quiet)


def _engine(engine: str, ray_address, workers, gpus_per_worker, cpus_per_worker):
    """The --engine options, checked before any input is read (the engine module has no Ray import)."""
    from lfcli.pipelines.ray_engine import engine_options

    return engine_options(engine, ray_address, workers, gpus_per_worker, cpus_per_worker)


def _finish(stats, already_done: int, first_error: str | None, quiet: bool) -> None:
    """The job's closing lines on stderr: failures first, then rates over the documents that
    ran (a failed document costs nothing, so counting it would inflate docs/s). A job whose
    every document failed exits 1, its error rows written all the same: it made nothing."""
    import time

    from lfcli.pipelines.errors import InputError
    from lfcli.pipelines.wording import plural

    already = f"; {already_done} already in the output" if already_done else ""
    if stats.docs and stats.errors == stats.docs:
        raise InputError(f"all {plural(stats.docs, 'document')} failed, each with an error row (first: {first_error}){already}")
    if quiet:
        return
    dt = max(time.perf_counter() - stats.started, 1e-9)
    ok = stats.docs - stats.errors
    lines = []
    if stats.errors:
        lines.append(f"{stats.errors} of {plural(stats.docs, 'document')} failed, each with an error row (first: {first_error})")
    if ok:
        lines.append(f"{plural(ok, 'document')} done in {dt:.1f} s: {ok / dt:.2f} docs/s, {stats.tokens / dt:,.0f} tokens/s")
    else:
        lines.append("no documents to run")
    lines[-1] += already
    for line in lines:
        typer.echo(f"lfcli: {line}", err=True)


def _common(
    inputs, output, model, text_column, id_column, glob, batch_size, max_tokens, max_length, device, dtype,
    attention_backend, global_, force, resume, on_error, quiet, encoding_errors, input_format, row_group_size,
):
    read = dict(text_column=text_column, id_column=id_column, glob=glob, encoding_errors=encoding_errors, input_format=input_format)
    if row_group_size < 1:
        from lfcli.pipelines.errors import UsageError

        raise UsageError("--row-group-size must be positive")
    job = dict(force=force, resume=resume, on_error=on_error, row_group_size=row_group_size)
    pipe = dict(
        model=model, device=device, dtype=dtype, attention_backend=attention_backend, max_length=max_length,
        batch_size=batch_size, max_tokens=max_tokens, global_policy=global_,
    )
    return read, job, pipe


def _parse_labels(labels: str | None, labels_file: str | None) -> list[tuple[str, str]] | None:
    from lfcli.pipelines.errors import InputError, UsageError

    if labels and labels_file:
        raise UsageError("give --labels or --labels-file, not both")
    if labels is not None:
        out = [(x.strip(), "") for x in labels.split(",") if x.strip()]
    elif labels_file is not None:
        try:
            lines = Path(labels_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{labels_file}: cannot read the labels file ({exc})") from None
        out = []
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                name, _, desc = line.partition(":")
                out.append((name.strip(), desc.strip()))
    else:
        return None
    return out  # how many there must be is the runner's check_options' business


@app.command()
def classify(
    inputs: Inputs,
    output: Output = None,
    model: Model = None,
    labels: Annotated[Optional[str], typer.Option("--labels", help="Zero-shot: comma-separated labels, e.g. 'sports,politics,science'.")] = None,
    labels_file: Annotated[Optional[str], typer.Option("--labels-file", help="Zero-shot: one label per line, optionally 'label: description'.")] = None,
    temperature: Annotated[float, typer.Option("--temperature", help="Zero-shot softmax temperature over cosine similarities.")] = 0.05,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    batch_size: BatchSize = 8, max_tokens: MaxTokens = 16384, max_length: MaxLength = None,
    device: Device = "auto", dtype: Dtype = "auto", attention_backend: Backend = None, global_: Global = None,
    force: Force = False, resume: Resume = False, on_error: OnError = "skip", quiet: Quiet = False,
    encoding_errors: EncodingErrors = "strict", input_format: InputFormat = "auto", row_group_size: RowGroup = 256,
    engine: Engine = "local", ray_address: RayAddress = None, workers: Workers = None,
    gpus_per_worker: GpusPerWorker = None, cpus_per_worker: CpusPerWorker = None,
):
    """Label documents: id, label, score, scores. With --labels, zero-shot (no trained head needed)."""

    def go():
        read, job, pipe = _common(inputs, output, model, text_column, id_column, glob, batch_size, max_tokens, max_length,
                                  device, dtype, attention_backend, global_, force, resume, on_error, quiet, encoding_errors, input_format, row_group_size)
        parsed = _parse_labels(labels, labels_file)
        if parsed is not None:
            pipe.update(labels=parsed, temperature=temperature)
        job["engine"] = _engine(engine, ray_address, workers, gpus_per_worker, cpus_per_worker)
        _run_task("classify", inputs, output, quiet, read, job, pipe)

    _guarded(go)


@app.command()
def qa(
    inputs: Inputs,
    question: Annotated[Optional[str], typer.Option("--question", "-q", help="The question (else each record's 'question' field).")] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many answers per document.")] = 1,
    output: Output = None, model: Model = None,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    batch_size: BatchSize = 8, max_tokens: MaxTokens = 16384, max_length: MaxLength = None,
    device: Device = "auto", dtype: Dtype = "auto", attention_backend: Backend = None, global_: Global = None,
    force: Force = False, resume: Resume = False, on_error: OnError = "skip", quiet: Quiet = False,
    encoding_errors: EncodingErrors = "strict", input_format: InputFormat = "auto", row_group_size: RowGroup = 256,
    engine: Engine = "local", ray_address: RayAddress = None, workers: Workers = None,
    gpus_per_worker: GpusPerWorker = None, cpus_per_worker: CpusPerWorker = None,
):
    """Answer a question from each document: id, question, answer, start, end, score."""

    def go():
        read, job, pipe = _common(inputs, output, model, text_column, id_column, glob, batch_size, max_tokens, max_length,
                                  device, dtype, attention_backend, global_, force, resume, on_error, quiet, encoding_errors, input_format, row_group_size)
        pipe.update(question=question, top_k=top_k)
        job["engine"] = _engine(engine, ray_address, workers, gpus_per_worker, cpus_per_worker)
        _run_task("qa", inputs, output, quiet, read, job, pipe)

    _guarded(go)


@app.command()
def embed(
    inputs: Inputs,
    output: Output = None, model: Model = None,
    pooling: Annotated[Optional[str], typer.Option("--pooling", help="mean or cls (default: the model's, else mean).")] = None,
    normalize: Annotated[Optional[bool], typer.Option("--normalize/--no-normalize", help="L2-normalise (default: the model's, else yes).")] = None,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    batch_size: BatchSize = 8, max_tokens: MaxTokens = 16384, max_length: MaxLength = None,
    device: Device = "auto", dtype: Dtype = "auto", attention_backend: Backend = None, global_: Global = None,
    force: Force = False, resume: Resume = False, on_error: OnError = "skip", quiet: Quiet = False,
    encoding_errors: EncodingErrors = "strict", input_format: InputFormat = "auto", row_group_size: RowGroup = 256,
    engine: Engine = "local", ray_address: RayAddress = None, workers: Workers = None,
    gpus_per_worker: GpusPerWorker = None, cpus_per_worker: CpusPerWorker = None,
):
    """Document vectors: id, embedding, n_tokens."""

    def go():
        read, job, pipe = _common(inputs, output, model, text_column, id_column, glob, batch_size, max_tokens, max_length,
                                  device, dtype, attention_backend, global_, force, resume, on_error, quiet, encoding_errors, input_format, row_group_size)
        pipe.update(pooling=pooling, normalize=normalize)
        job["engine"] = _engine(engine, ray_address, workers, gpus_per_worker, cpus_per_worker)
        _run_task("embed", inputs, output, quiet, read, job, pipe)

    _guarded(go)


@app.command()
def corefs(
    inputs: Inputs,
    output: Output = None, model: Model = None,
    singletons: Annotated[bool, typer.Option("--singletons", help="Also report entities mentioned once (clusters of one span).")] = False,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    batch_size: BatchSize = 8, max_tokens: MaxTokens = 16384, max_length: MaxLength = None,
    device: Device = "auto", dtype: Dtype = "auto", attention_backend: Backend = None, global_: Global = None,
    force: Force = False, resume: Resume = False, on_error: OnError = "skip", quiet: Quiet = False,
    encoding_errors: EncodingErrors = "strict", input_format: InputFormat = "auto", row_group_size: RowGroup = 256,
    engine: Engine = "local", ray_address: RayAddress = None, workers: Workers = None,
    gpus_per_worker: GpusPerWorker = None, cpus_per_worker: CpusPerWorker = None,
):
    """Coreference chains: id, clusters of {start, end, text} character spans."""

    def go():
        read, job, pipe = _common(inputs, output, model, text_column, id_column, glob, batch_size, max_tokens, max_length,
                                  device, dtype, attention_backend, global_, force, resume, on_error, quiet, encoding_errors, input_format, row_group_size)
        pipe.update(singletons=singletons)
        job["engine"] = _engine(engine, ray_address, workers, gpus_per_worker, cpus_per_worker)
        _run_task("corefs", inputs, output, quiet, read, job, pipe)

    _guarded(go)


@app.command()
def models(
    name: Annotated[Optional[str], typer.Argument(metavar="NAME", help="A bundled model's name: print its model card (what it does, its data, scores, speed and failure modes).", show_default=False)] = None,
):
    """List the bundled models and the task heads each has; with NAME, print that model's card."""

    def go():
        if name is not None:
            _print_card(name)
            return
        from lfcli.pipelines.catalog import BUILD_SECONDS, list_models

        for m in list_models():
            if m["available"] is not None:
                status = f"unavailable: {m['available']}"
            else:
                status = "ready" if m["built"] else f"builds on first use (about {BUILD_SECONDS} s)"
            default = f" (default for {m['default']})" if m["default"] else ""
            typer.echo(f"{m['name']}{default}\t{m['description']}")
            typer.echo(f"    tasks: {', '.join(m['tasks'])}")
            for key in ("trained_on", "scores"):
                if m.get(key):
                    typer.echo(f"    {key.replace('_', ' ')}: {m[key]}")
            typer.echo(f"    {status}")
            typer.echo(f"    card: lfcli models {m['name']}")
        typer.echo(_machine_line())

    _guarded(go)


def _print_card(name: str) -> None:
    """`lfcli models NAME`: the model's card, rendered on a terminal, as Markdown text otherwise."""
    from lfcli.models.bundled import card_path, model_names, read_card
    from lfcli.pipelines.errors import InputError, UsageError

    names = model_names()
    if name not in names:
        raise UsageError(f"unknown model {name!r}; usage: lfcli models [NAME], NAME one of: {', '.join(names)}")
    try:
        text = read_card(name)
    except OSError:
        raise InputError(f"the card of {name} is missing from this installation ({card_path(name)})") from None
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        typer.echo(text.rstrip("\n"))


@app.command()
def convert(
    src: Annotated[str, typer.Argument(metavar="SRC", help="A BERT, RoBERTa or Longformer checkpoint folder (transformers layout).")],
    out: Annotated[str, typer.Argument(metavar="OUT", help="The folder to write the Longformer checkpoint to.")],
    max_positions: Annotated[int, typer.Option("--max-positions", help="Tokens the long model takes.")] = 4096,
    attention_window: Annotated[int, typer.Option("--attention-window", help="Full window (even).")] = 512,
    force: Annotated[bool, typer.Option("--force", "-F", help="Write over an existing, non-empty OUT folder.")] = False,
):
    """Make a long model from a short one (the paper's recipe): tiled positions, global
    projections copied from the local ones."""

    def go():
        from lfcli.pipelines.catalog import convert_checkpoint

        path = convert_checkpoint(src, out, max_positions=max_positions, attention_window=attention_window, force=force)
        typer.echo(f"lfcli: wrote {path}", err=True)

    _guarded(go)


@app.command("pretrain-continue")
def pretrain_continue(
    corpus: Annotated[List[str], typer.Argument(metavar="PATH", help="Files, folders, .jsonl or .parquet of long documents.", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Folder for the best model so far, its resume state (train_state/) and metrics.jsonl.")],
    model: Model = None,
    max_length: MaxLength = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Sequences per step and process.")] = 1,
    grad_accum: Annotated[int, typer.Option("--grad-accum", help="Steps of gradient accumulation per update.")] = 8,
    lr: Annotated[float, typer.Option("--lr", help="Peak learning rate (the paper: 3e-5).")] = 3e-5,
    warmup_steps: Annotated[Optional[int], typer.Option("--warmup-steps", help="Linear warm-up updates, then power-3 polynomial decay (default: 6% of --max-steps, at most 500).")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Optimizer updates in all.")] = 1000,
    weight_decay: Annotated[float, typer.Option("--weight-decay")] = 0.01,
    mask_prob: Annotated[float, typer.Option("--mask-prob", help="Share of tokens masked (80% [MASK], 10% random, 10% kept).")] = 0.15,
    max_grad_norm: Annotated[float, typer.Option("--max-grad-norm", help="Gradient clipping (0 turns it off).")] = 1.0,
    save_every: Annotated[int, typer.Option("--save-every", help="Score the held-out set, keep the best model and rewrite the resume state every N updates (0: at the end only).")] = 200,
    max_eval_sequences: Annotated[int, typer.Option("--max-eval-sequences", help="Cap on held-out sequences (CPU time).")] = 256,
    eval_fraction: Annotated[float, typer.Option("--eval-fraction", help="Share of documents held out for MLM loss / bits per token.")] = 0.05,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    gradient_checkpointing: Annotated[bool, typer.Option("--gradient-checkpointing", help="Recompute activations in the backward pass to save memory.")] = False,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    device: Device = "auto", attention_backend: Backend = None,
    force: Annotated[bool, typer.Option("--force", "-F", help="Start over: remove what an earlier run wrote to the output folder (model, train_state/, metrics), nothing else there.")] = False,
    resume: Annotated[bool, typer.Option("--resume", "-r", help="Continue from the output folder's resume state, ending with the weights of an uninterrupted run; refused if the corpus or data options differ.")] = False,
    quiet: Quiet = False,
    encoding_errors: EncodingErrors = "strict",
):
    """Continue masked-LM pretraining on long documents (the paper's recipe); works under torchrun."""

    def go():
        import json

        from lfcli.pipelines.catalog import announce_build
        from lfcli.pipelines.pretrain import pretrain_continue as run
        from lfcli.pipelines.runner import check_backend, resolve_device
        from lfcli.pipelines.wording import plural

        torch_device = resolve_device(device)
        check_backend(attention_backend, torch_device)
        announce_build(model or "minilm-l6-long")

        def log(record: dict) -> None:  # plain lines on stderr when there is no live bar
            if record["event"] == "message":
                typer.echo(f"lfcli: {record['message']}", err=True)
            elif record["event"] == "eval":
                typer.echo(f"lfcli: held-out MLM loss {record['when']}: {record['loss']:.4f} ({record['bpt']:.4f} bits/token)", err=True)
            elif record["event"] == "checkpoint":
                typer.echo(f"lfcli: checkpoint {record['path']}", err=True)
            elif record["event"] == "step" and record["step"] % 10 == 0:
                typer.echo(f"lfcli: step {record['step']}/{record['max_steps']} loss {record['loss']:.4f} "
                           f"lr {record['lr']:.2e} {record['tokens_per_s']:,.0f} tokens/s", err=True)

        live = sys.stderr.isatty() and not quiet
        summary = run(
            corpus, model or "minilm-l6-long", output, max_length=max_length, batch_size=batch_size,
            grad_accum=grad_accum, lr=lr, warmup_steps=warmup_steps, max_steps=max_steps,
            weight_decay=weight_decay, mask_prob=mask_prob, save_every=save_every, eval_fraction=eval_fraction,
            seed=seed, gradient_checkpointing=gradient_checkpointing, device=str(torch_device),
            attention_backend=attention_backend, resume=resume, force=force, text_column=text_column,
            id_column=id_column, glob=glob, encoding_errors=encoding_errors, progress=live,
            log=None if live or quiet else log, max_grad_norm=max_grad_norm or None,
            max_eval_sequences=max_eval_sequences,
        )
        if os.environ.get("RANK", "0") == "0":
            typer.echo(json.dumps(summary, default=str))  # the run's summary is this command's data
        if not quiet and summary:
            before, after = summary.get("eval_loss_before"), summary.get("eval_loss_after")
            line = f"lfcli: wrote {output} after {plural(summary.get('steps', 0), 'update')}"
            if before is not None and after is not None:
                line += (f"; held-out MLM loss {before:.3f} -> {after:.3f}"
                         f" ({summary['eval_bpt_before']:.3f} -> {summary['eval_bpt_after']:.3f} bits/token)")
            typer.echo(line, err=True)

    _guarded(go)


# The training and scoring commands live in their own modules; importing them registers them.
from . import evaluate_cli, train_cli  # noqa: E402,F401


def main():
    app()


if __name__ == "__main__":
    main()
