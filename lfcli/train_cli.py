"""`lfcli finetune classify|qa|corefs DATA -o DIR`: train a task model on the shared trainer.

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

from .app import app, guarded, options_after
from .options import (
    Adapter, AveragedAdapter, Autocast, BaseModel, BatchTokens, ClassWeights, Delta, Device, Epochs, FfnnSize,
    FinetuneFreezeEmbeddings, FinetuneLr, FirstWindowOnly, Gap, GapValidation, GapWeight, Global, IdColumn,
    LabelColumn, LoraRank, MaxEval, MaxSteps, Merge, Negatives, OverwriteFolder, Patience, Quiet, ResumeRun, RunFolder,
    Seed, StartOver, TextColumn, TrainIds, TrainingData, TrainingMaxLength, Validation, ValidationIds, ValidationSplit,
)

finetune_app = typer.Typer(
    help="Train a task model (a LoRA adapter + head by default) on labelled data; the best model by validation ends in -o DIR.",
    no_args_is_help=True,
)
app.add_typer(finetune_app, name="finetune")

# Learning rates per (task, adapter): LoRA's low-rank updates start at zero and want a
# larger step than a full fine-tune, which moves pretrained weights directly.
DEFAULT_LR = {("classify", "lora"): 5e-4, ("qa", "lora"): 1e-3, ("corefs", "lora"): 1e-3,
              ("classify", "full"): 5e-5, ("qa", "full"): 5e-5, ("corefs", "full"): 5e-5}
DEFAULT_EPOCHS = {"classify": 6.0, "qa": 2.0, "corefs": 16.0}  # corefs: ~1,500 updates of one LitBank document
DEFAULT_BATCH_TOKENS = {"classify": 16384, "qa": 16384, "corefs": 2048}  # corefs: one LitBank document an update
DEFAULT_PATIENCE = {"classify": 3, "qa": 2, "corefs": 6}


def _training_options(
    validation: Validation = None, validation_split: ValidationSplit = 0.1, epochs: Epochs = None,
    max_steps: MaxSteps = None, lr: FinetuneLr = None, batch_tokens: BatchTokens = None,
    max_length: TrainingMaxLength = None, global_: Global = None, adapter: Adapter = "lora", lora_rank: LoraRank = None,
    merge: Merge = False, freeze_embeddings: FinetuneFreezeEmbeddings = False, delta: Delta = False, seed: Seed = 0,
    patience: Patience = None, device: Device = "auto", autocast: Autocast = "auto", force: StartOver = False,
    resume: ResumeRun = False, quiet: Quiet = False,
):
    """The options every finetune command takes after its own, declared once (see options_after)."""


training_options = options_after(_training_options)


def _run(task: str, data, output, model, options: dict, **task_options):
    """Train `task` with the shared `options` (each default the task's) and the task's own."""
    from lfcli.pipelines.train.finetune import finetune  # lazy: torch, not for --help
    from lfcli.pipelines.train.loop import TrainConfig  # lazy: torch

    o = options
    live = sys.stderr.isatty() and not o["quiet"]

    def log(record: dict) -> None:
        line = record_line(record) if record["event"] != "step" or not live else None  # the bar shows the steps
        if line is not None:
            typer.echo(line, err=True)

    config = TrainConfig(
        lr=o["lr"] or DEFAULT_LR[(task, o["adapter"] if o["adapter"] in ("lora", "full") else "lora")],
        epochs=o["epochs"] or DEFAULT_EPOCHS[task], max_steps=o["max_steps"],
        batch_tokens=DEFAULT_BATCH_TOKENS[task] if o["batch_tokens"] is None else o["batch_tokens"], seed=o["seed"],
        patience=DEFAULT_PATIENCE[task] if o["patience"] is None else o["patience"], autocast=o["autocast"],
    )
    summary = finetune(
        task, data, output, model=model, validation=o["validation"], validation_split=o["validation_split"],
        adapter=o["adapter"], lora_rank=o["lora_rank"], merge=o["merge"], freeze_embeddings=o["freeze_embeddings"],
        delta=o["delta"], max_length=o["max_length"], global_policy=o["global_"], train_config=config,
        device=o["device"], resume=o["resume"], force=o["force"], log=None if o["quiet"] else log, progress=live,
        **task_options,
    )
    typer.echo(json.dumps(summary, default=float))
    if not o["quiet"]:
        typer.echo(f"lfcli: best validation score {summary.get('best_score')} at update {summary.get('best_step')}; "
                   f"model in {output} (use it with: lfcli {task} ... -m {output})", err=True)


@finetune_app.command("classify")
@guarded
@training_options
def finetune_classify(
    data: TrainingData, output: RunFolder, model: BaseModel = None,
    text_column: TextColumn = "text", label_column: LabelColumn = "label", id_column: IdColumn = None,
    class_weights: ClassWeights = "auto", first_window_only: FirstWindowOnly = False,
    *, options: dict,
):
    """Train a document classifier. DATA: JSONL/Parquet with text and label, a folder with one
    subfolder per label, or a SemEval hyperpartisan articles XML (ground truth beside it)."""
    _run("classify", data, output, model, options, text_column=text_column, label_column=label_column,
         id_column=id_column, class_weights=class_weights, first_window_only=first_window_only)


@finetune_app.command("qa")
@guarded
@training_options
def finetune_qa(
    data: TrainingData, output: RunFolder, model: BaseModel = None, negatives: Negatives = 0.5, max_eval: MaxEval = 600,
    *, options: dict,
):
    """Train extractive question answering. DATA: SQuAD JSON, or JSONL/Parquet with context (or
    text), question and answers ({text, answer_start} lists). Validation holds out whole articles."""
    _run("qa", data, output, model, options, negatives=negatives, max_eval=max_eval)


@finetune_app.command("corefs")
@guarded
@training_options
def finetune_corefs(
    data: TrainingData, output: RunFolder, model: BaseModel = None,
    ids: TrainIds = None, validation_ids: ValidationIds = None, gap: Gap = None, gap_validation: GapValidation = None,
    ffnn_size: FfnnSize = None, gap_weight: GapWeight = None,
    *, options: dict,
):
    """Train coreference (start-to-end, Kirstain et al. 2021). DATA: CoNLL-2012 files or folders
    (coreference in the last column), or JSONL with text and clusters of {start, end} spans."""
    _run("corefs", data, output, model, options, ids=ids, validation_ids=validation_ids, gap=gap,
         gap_validation=gap_validation, ffnn_size=ffnn_size, gap_weight=gap_weight)


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
