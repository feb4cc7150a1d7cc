"""The `lfcli` command's frame, shared by the modules that add its commands: the typer app
(its help without type names), `--version`, the `guarded` decorator that turns errors into
one line on stderr and an exit code, and `options_after`, which gives a family of commands
its shared options. The options themselves are declared once, in options.py.

cli.py imports the command modules (task_cli, model_cli, evaluate_cli, train_cli, show_cli,
plot_cli), which register their commands on `app` from here. Nothing heavy is imported until
a command runs.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from pathlib import Path
from typing import Callable, get_args, get_origin

import typer
from typer.core import TyperGroup
from typing_extensions import Annotated

from lfcli.pipelines import registry
from lfcli.pipelines.errors import LfcliError

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
    import torch  # lazy: --help and --version stay fast

    from lfcli.models.fast_paths import described  # lazy: torch
    from lfcli.pipelines.infer.precision import cpu_name, describe_auto

    cuda = f", CUDA {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    swaps = "\n".join(f"  {name}: {what}" for name, what in described())
    return (f"torch {torch.__version__}, {cpu_name()}, {torch.get_num_threads()} threads{cuda}\n{describe_auto()}\n"
            f"speed swaps of a loaded model (models/fast_paths.py; --no-fast-paths runs the plain model):\n{swaps}")


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
        try:
            return command(*args, **kwargs)
        except typer.Exit:  # a command's own exit code, its message said already
            raise
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


def follow_tasks(group: typer.Typer, has: Callable, make: Callable, command: str | None = None) -> None:
    """Keep one command in `group` for each registered task that `has(spec)`, made by
    `make(spec)`: from the task's registration on, and gone when it is unregistered. The
    command is named after the task, or `command` (pretrain-continue: one task pretrains)."""

    def follow(event: str, spec) -> None:
        if not has(spec):
            return
        name = command or spec.name
        group.registered_commands[:] = [c for c in group.registered_commands if c.name != name]
        if event == "added":
            make(spec)

    registry.watch(follow)


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
