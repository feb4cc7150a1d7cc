"""The `lfcli` command's frame, shared by the modules that add its commands: the typer app
(its help without type names), the options the commands share, `--version`, and the
`guarded` decorator that turns errors into one line on stderr and an exit code.

cli.py imports the command modules (task_cli, model_cli, evaluate_cli, train_cli), which
register their commands on `app` from here. Nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import functools
import inspect
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
Output = Annotated[Optional[str], typer.Option("--output", "-o", help="Output file: .jsonl, .json, .parquet, or .html for a page to read in a browser (classify, qa, corefs; show: required) (default: JSONL on stdout).")]
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
            typer.echo(machine_line())
        raise typer.Exit()


def machine_line() -> str:
    """torch, the CPU, and the floating-point path `--dtype auto` takes on it."""
    import torch

    from lfcli.pipelines.infer.precision import cpu_name, describe_auto

    cuda = f", CUDA {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return f"torch {torch.__version__}, {cpu_name()}, {torch.get_num_threads()} threads{cuda}\n{describe_auto()}"


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="With --version: also torch, the CPU and the dtype `--dtype auto` runs here.")] = False,
):
    """Longformer over long documents from the shell."""


def fail(message: str, code: int):
    typer.echo(f"lfcli: error: {message}", err=True)
    raise typer.Exit(code)


def guarded(command):
    """A command whose errors end as one line on stderr with the right exit code (lfcli's
    known errors, bad input, an interrupt); with LFCLI_DEBUG=1, as tracebacks."""

    @functools.wraps(command)  # typer reads the command's parameters and help through the wrapper
    def run(*args, **kwargs):
        if os.environ.get("LFCLI_DEBUG") == "1":
            return command(*args, **kwargs)
        from lfcli.pipelines.errors import LfcliError

        try:
            return command(*args, **kwargs)
        except LfcliError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted (rerun with --resume to continue)", 130)
        except BrokenPipeError:
            raise typer.Exit(0)
        except (ValueError, OSError) as exc:  # bad checkpoints, configs, paths: bad input
            fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 1)
        except Exception as exc:  # noqa: BLE001 - last resort: still one line, no traceback
            fail(f"internal error: {type(exc).__name__}: {exc} (set LFCLI_DEBUG=1 for a traceback)", 1)

    return run


def options_after(shared):
    """A decorator: the command gets `shared`'s parameters (options declared once for a family
    of commands) after its own, in that order in --help, and their values as one dict, its
    keyword `options`."""
    def decorate(command):
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "options"]
        common = list(inspect.signature(shared, eval_str=True).parameters.values())

        @functools.wraps(command)
        def run(**kwargs):  # typer passes every parameter by name
            options = {p.name: kwargs.pop(p.name) for p in common}
            return command(**kwargs, options=options)

        run.__signature__ = inspect.Signature(own + common)  # what typer reads the command's options from
        return run

    return decorate
