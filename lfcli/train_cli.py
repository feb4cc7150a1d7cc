"""`lfcli finetune TASK DATA -o DIR`: train a task model on the shared trainer, one command per
trainable task in the registry (pipelines/registry.py), its options and defaults from its home.

The trained folder is an ordinary model: `lfcli TASK -m DIR`. Progress (loss, tokens/s, ETA)
and a line per evaluation go to stderr; the run's summary (JSON) is the command's data on
stdout. Defaults are the ones the README's figures were measured with.
"""

from __future__ import annotations

import json
import sys
from typing import List

import typer
from typing_extensions import Annotated

from lfcli.pipelines.progress import record_line

from .app import app, follow_tasks, guarded, options_after
from .model_check import check_model
from .options import (
    Adapter, AveragedAdapter, Autocast, BaseModel, BatchTokens, Delta, Device, Epochs, FinetuneFreezeEmbeddings,
    FinetuneLr, Global, EvalEvery, LoraRank, MaxSteps, Merge, MicroTokens, OverwriteFolder, Patience, Quiet, ResumeRun, RunFolder, SaveEvery, Seed,
    StartOver, TrainingData, TrainingMaxLength, Validation, ValidationSplit, with_task_options,
)

finetune_app = typer.Typer(
    help="Train a task model (a LoRA adapter + head by default) on labelled data; the best model by validation ends in -o DIR.",
    no_args_is_help=True,
)
app.add_typer(finetune_app, name="finetune")


def _training_options(
    validation: Validation = None, validation_split: ValidationSplit = 0.1, epochs: Epochs = None,
    max_steps: MaxSteps = None, lr: FinetuneLr = None, batch_tokens: BatchTokens = None, micro_tokens: MicroTokens = None,
    max_length: TrainingMaxLength = None, global_: Global = None, adapter: Adapter = "lora", lora_rank: LoraRank = None,
    merge: Merge = False, freeze_embeddings: FinetuneFreezeEmbeddings = False, delta: Delta = False, seed: Seed = 0,
    patience: Patience = None, eval_every: EvalEvery = None, save_every: SaveEvery = None, device: Device = "auto", autocast: Autocast = "auto", force: StartOver = False,
    resume: ResumeRun = False, quiet: Quiet = False,
):
    """The options every finetune command takes after its own, declared once (see options_after)."""


training_options = options_after(_training_options)


def _run(spec, data, output, model, options: dict, **task_options):
    """Train the task `spec` with the shared `options` (each default the task's, spec.training)
    and the task's own (its home's finetune_options)."""
    from lfcli.pipelines.train.finetune import finetune  # lazy: torch, not for --help
    from lfcli.pipelines.train.loop import TrainConfig  # lazy: torch

    check_model(model, spec.name, tiers=False, command="finetune")  # an unknown -m is usage (exit 2)
    o, defaults = options, spec.training
    live = sys.stderr.isatty() and not o["quiet"]

    def log(record: dict) -> None:
        line = record_line(record) if record["event"] != "step" or not live else None  # the bar shows the steps
        if line is not None:
            typer.echo(line, err=True)

    config = TrainConfig(
        lr=o["lr"] or defaults.lr["full" if o["adapter"] == "full" else "lora"],
        epochs=o["epochs"] or defaults.epochs, max_steps=o["max_steps"],
        batch_tokens=defaults.batch_tokens if o["batch_tokens"] is None else o["batch_tokens"],
        micro_tokens=o["micro_tokens"], seed=o["seed"],
        patience=defaults.patience if o["patience"] is None else o["patience"], autocast=o["autocast"],
        eval_every=o["eval_every"], save_every=o["save_every"],
    )
    summary = finetune(
        spec.name, data, output, model=model, validation=o["validation"], validation_split=o["validation_split"],
        adapter=o["adapter"], lora_rank=o["lora_rank"], merge=o["merge"], freeze_embeddings=o["freeze_embeddings"],
        delta=o["delta"], max_length=o["max_length"], global_policy=o["global_"], train_config=config,
        device=o["device"], resume=o["resume"], force=o["force"], log=None if o["quiet"] else log, progress=live,
        **task_options,
    )
    typer.echo(json.dumps(summary, default=float))
    if not o["quiet"]:
        typer.echo(f"lfcli: best validation score {summary.get('best_score')} at update {summary.get('best_step')}; "
                   f"model in {output} (use it with: lfcli {spec.name} ... -m {output})", err=True)


def _defaults_help(defaults) -> str:
    """The task's training defaults, for its command's help (they live in its home)."""
    length = f", --max-length {defaults.max_length}" if defaults.max_length else ""
    return (f"Defaults: --lr {defaults.lr['lora']:g} (LoRA) or {defaults.lr['full']:g} (--adapter full), "
            f"--epochs {defaults.epochs:g}, --batch-tokens {defaults.batch_tokens}, --patience {defaults.patience}{length}.")


def finetune_command(spec):
    """`lfcli finetune TASK DATA -o DIR [-m MODEL] [its own options] [the training options]`:
    one command per trainable task, its options and defaults from its home."""

    def command(data: TrainingData, output: RunFolder, model: BaseModel = None, *, options: dict, **task_opts):
        _run(spec, data, output, model, options, **task_opts)

    with_task_options(command, spec.finetune_options, name="finetune_" + spec.name,
                      doc=f"{spec.finetune_summary}\n\n{_defaults_help(spec.training)}")
    return finetune_app.command(spec.name)(guarded(training_options(command)))


follow_tasks(finetune_app, lambda spec: spec.finetune is not None, finetune_command)  # one per trainable task


@app.command("merge")
@guarded
def merge(
    adapter: Annotated[str, typer.Argument(metavar="DIR", help="A folder `lfcli finetune` wrote with a LoRA adapter.")],
    out: Annotated[str, typer.Argument(metavar="OUT", help="Where to write the full transformers-layout checkpoint.")],
    force: OverwriteFolder = False,
):
    """Merge a LoRA adapter into its base: a full checkpoint transformers loads (as --merge at training)."""
    from lfcli.pipelines.train.finetune import merge_adapter  # lazy: torch, not for --help

    typer.echo(f"lfcli: wrote {merge_adapter(adapter, out, force=force)}", err=True)


@app.command("average")
@guarded
def average(
    adapters: Annotated[List[str], typer.Argument(metavar="DIR", help="Two or more LoRA adapter folders trained on from one start (`lfcli finetune -m ADAPTER`).", show_default=False)],
    output: AveragedAdapter,
    force: OverwriteFolder = False,
):
    """Average LoRA adapters of one base, rank and head (a model soup): often better than each."""
    from lfcli.pipelines.train.average import average_adapters  # lazy: torch, not for --help

    typer.echo(f"lfcli: wrote {average_adapters(adapters, output, force=force)}", err=True)
