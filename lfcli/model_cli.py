"""`lfcli models [NAME]`, `lfcli convert SRC OUT` and `lfcli pretrain-continue PATH... -o DIR`:
the bundled models and their cards, making a long model from a short one, and continuing its
masked-LM pretraining.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.markdown import Markdown
from typing_extensions import Annotated

from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.job_defaults import JOB
from lfcli.pipelines.infer.catalog import (
    BUILD_SECONDS, ROOFLINE_RATIO, announce_build, convert_checkpoint, list_models, matmul_gflops, tier_sizes,
)
from lfcli.pipelines.progress import record_line
from lfcli.pipelines.wording import plural

from .app import app, follow_tasks, guarded, machine_line, options_after
from .model_check import check_model
from .options import (
    AttentionWindow, Backend, Corpus, Device, EncodingErrors, Glob, IdColumn, MaxPositions, Model, OverwriteFolder,
    Quiet, ResumeRun, RunFolder, StartOver, TextColumn, with_task_options,
)


@app.command()
@guarded
def models(
    name: Annotated[Optional[str], typer.Argument(metavar="NAME", help="A bundled model's name: print its model card (what it does, its data, scores, speed and failure modes).", show_default=False)] = None,
):
    """List the bundled models and the task heads each has; with NAME, print that model's card."""
    if name is not None:
        _print_card(name)
        return
    from lfcli.pipelines.infer.precision import bf16_pays  # lazy: torch, not for --help

    dtype = "bfloat16" if bf16_pays() else "float32"  # what --dtype auto runs here
    sizes, rate = tier_sizes(), matmul_gflops(dtype)
    for m in list_models():
        if m["available"] is not None:
            status = f"unavailable: {m['available']}"
        else:
            status = "ready" if m["built"] else f"builds on first use (about {m.get('build_seconds', BUILD_SECONDS)} s)"
        default = f" (default for {m['default']})" if m["default"] else ""
        typer.echo(f"{m['name']}{default}\t{m['description']}")
        typer.echo(f"    tasks: {', '.join(m['tasks'])}")
        size = sizes[m["tier"]]
        typer.echo(f"    tier: {m['tier']} (-m {m['tier']}): {size['layers']} layers x {size['hidden']}, "
                   f"{size['parameters'] / 1e6:.0f}M parameters; {_speed(m, size, rate, dtype)}")
        for key in ("trained_on", "scores"):
            if m.get(key):
                typer.echo(f"    {key.replace('_', ' ')}: {m[key]}")
        typer.echo(f"    {status}")
        typer.echo(f"    card: lfcli models {m['name']}")
    typer.echo(machine_line())


# A bundled task model's time on its task against its encoder's embed time over the same
# documents: the QA models run overlapping 256-token windows and span scoring, the coreference
# models mention and pair scoring. One thread, CPU time, two LitBank texts (12.5k tokens), bf16,
# 2-core AMD EPYC (AVX512-BF16), 2026-11-26.
TASK_COST = {"minilm-l6-long-squad": 0.95, "mpnet-base-long-squad": 1.01,
             "minilm-l6-long-litbank-coref": 1.24, "mpnet-base-long-litbank-coref": 1.16}


def _speed(m: dict, size: dict, rate: float, dtype: str) -> str:
    """The model's own task's speed on this CPU, estimated: the encoder's (this CPU's matmul
    rate over its FLOPs per token, x ROOFLINE_RATIO) over the model's cost (TASK_COST)."""
    task = m["tasks"][0].split()[0] if m["tasks"] else "embed"  # an encoder's first task: embed
    cost = TASK_COST.get(m["name"], 1.0)
    speed = rate * 1e9 / (size["flops_per_token"] * ROOFLINE_RATIO[dtype]) / cost
    how = f"; {task} takes {cost:.2f}x embed's time" if cost != 1.0 else ""
    return (f"{task} about {speed:,.0f} tokens/s on this CPU in {dtype} (its matmul rate, {rate:.0f} GFLOP/s, over "
            f"the encoder's FLOPs per token, x{ROOFLINE_RATIO[dtype]}{how})")


def _print_card(name: str) -> None:
    """`lfcli models NAME`: the model's card, rendered on a terminal, as Markdown text otherwise."""
    from lfcli.models.bundled import card_path, model_names, read_card  # lazy: torch, not for --help

    names = model_names()
    if name not in names:
        raise UsageError(f"unknown model {name!r}; usage: lfcli models [NAME], NAME one of: {', '.join(names)}")
    try:
        text = read_card(name)
    except OSError:
        raise InputError(f"the card of {name} is missing from this installation ({card_path(name)})") from None
    if sys.stdout.isatty():
        Console().print(Markdown(text))
    else:
        typer.echo(text.rstrip("\n"))


@app.command()
@guarded
def convert(
    src: Annotated[str, typer.Argument(metavar="SRC", help="A BERT, RoBERTa or Longformer checkpoint folder (transformers layout).")],
    out: Annotated[str, typer.Argument(metavar="OUT", help="The folder to write the Longformer checkpoint to.")],
    max_positions: MaxPositions = 4096, attention_window: AttentionWindow = 512, force: OverwriteFolder = False,
):
    """Make a long model from a short one (the paper's recipe): tiled positions, global
    projections copied from the local ones."""
    path = convert_checkpoint(src, out, max_positions=max_positions, attention_window=attention_window, force=force)
    typer.echo(f"lfcli: wrote {path}", err=True)


def _run_options(
    model: Model = None, text_column: TextColumn = JOB.text_column, id_column: IdColumn = None, glob: Glob = None,
    encoding_errors: EncodingErrors = JOB.encoding_errors, device: Device = JOB.device, attention_backend: Backend = None,
    force: StartOver = False, resume: ResumeRun = False, quiet: Quiet = False,
):
    """The options `pretrain-continue` takes after its task's own: the model, reading the
    corpus, where it runs and the run's folder (see options_after)."""


def _pretrain(spec, corpus: list[str], output: str, o: dict, settings: dict) -> None:
    """Run the task's pretraining with the run options `o` and its own `settings` (its home's
    pretrain_options, one per field of its settings)."""
    from lfcli.models.bundled import DEFAULT_MODEL  # lazy: torch, not for --help
    from lfcli.pipelines.infer.runner import check_backend, resolve_device  # lazy: torch

    check_model(o["model"], spec.name, tiers=False, command="pretrain-continue")  # an unknown -m is usage (exit 2)
    torch_device = resolve_device(o["device"])
    check_backend(o["attention_backend"], torch_device)
    model = o["model"] or DEFAULT_MODEL
    announce_build(model)

    def log(record: dict) -> None:  # plain lines on stderr when there is no live bar
        line = record_line(record, mlm=True) if record["event"] != "step" or record["step"] % 10 == 0 else None
        if line is not None:
            typer.echo(line, err=True)

    read = {k: o[k] for k in ("text_column", "id_column", "glob", "encoding_errors")}
    live = sys.stderr.isatty() and not o["quiet"]
    summary = spec.pretrain(corpus, model, output, settings, device=str(torch_device),
                            attention_backend=o["attention_backend"], resume=o["resume"], force=o["force"], read=read,
                            progress=live, log=None if live or o["quiet"] else log)
    if os.environ.get("RANK", "0") == "0":
        typer.echo(json.dumps(summary, default=str))  # the run's summary is this command's data
    if not o["quiet"] and summary:
        before, after = summary.get("eval_loss_before"), summary.get("eval_loss_after")
        line = f"lfcli: wrote {output} after {plural(summary.get('steps', 0), 'update')}"
        if before is not None and after is not None:
            line += (f"; held-out MLM loss {before:.3f} -> {after:.3f}"
                     f" ({summary['eval_bpt_before']:.3f} -> {summary['eval_bpt_after']:.3f} bits/token)")
        typer.echo(line, err=True)


def pretrain_command(spec):
    """`lfcli pretrain-continue PATH... -o DIR [its task's own options] [-m MODEL and the run
    options]`: the command of the task that pretrains, its options and defaults from its home."""

    def command(corpus: Corpus, output: RunFolder, *, options: dict, **settings):
        _pretrain(spec, corpus, output, options, settings)

    with_task_options(command, spec.pretrain_options, name="pretrain_continue", doc=spec.summary)
    return app.command("pretrain-continue")(guarded(options_after(_run_options)(command)))


follow_tasks(app, lambda spec: spec.pretrain is not None, pretrain_command, command="pretrain-continue")
