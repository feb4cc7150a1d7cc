"""`lfcli finetune classify|qa|corefs DATA -o DIR`: train a task model on the shared trainer.

The trained folder is an ordinary model: `lfcli TASK -m DIR`. Progress (loss, tokens/s, ETA)
and a line per evaluation go to stderr; the run's summary (JSON) is the command's data on
stdout. Defaults are the ones the README's figures were measured with.
"""

from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer
from typing_extensions import Annotated

from .app import Device, Global, app, guarded, options_after

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

Data = Annotated[List[str], typer.Argument(help="Training data (see the command's help for the formats).", show_default=False)]
Output = Annotated[str, typer.Option("--output", "-o", help="Folder for the trained model (and its training state while it runs).")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Base model: bundled name or checkpoint folder (default: the bundled base). A LoRA adapter folder or bundled task model is trained on from where it stands.")]
Validation = Annotated[Optional[List[str]], typer.Option("--validation", help="Validation data in the training data's format (default: held out from DATA).")]
ValidationSplit = Annotated[float, typer.Option("--validation-split", help="Share of DATA held out for validation when --validation is not given (seeded).")]
Epochs = Annotated[Optional[float], typer.Option("--epochs", help="Passes over the training data (default: classify 6, qa 2, corefs 16).")]
MaxSteps = Annotated[Optional[int], typer.Option("--max-steps", help="Optimizer updates in all (overrides --epochs).")]
Lr = Annotated[Optional[float], typer.Option("--lr", help="Peak learning rate (default with LoRA: 5e-4 classify, 1e-3 qa and corefs; 5e-5 full).")]
BatchTokens = Annotated[Optional[int], typer.Option("--batch-tokens", help="Tokens per optimizer update (gradient accumulation over micro-batches; default: classify and qa 16384, corefs 2048).", show_default=False)]
MaxLength = Annotated[Optional[int], typer.Option("--max-length", "-l", help="Longest training window in tokens (default: qa 256, others the model's positions).")]
Adapter = Annotated[str, typer.Option("--adapter", help="lora: train a low-rank adapter + the head (small files); full: every weight.")]
LoraRank = Annotated[Optional[int], typer.Option("--lora-rank", help="Rank of the LoRA updates (default 16; with -m ADAPTER, that adapter's rank: training goes on from it).", show_default=False)]
FreezeEmbeddings = Annotated[bool, typer.Option("--freeze-embeddings", help="With --adapter full: keep the base's embedding tables as they are (the trained model then differs from its base in the layers and head only).")]
Delta = Annotated[bool, typer.Option("--delta", help="With --adapter full: write the weights as fp16 differences from the base model (a fraction of a full checkpoint; with --freeze-embeddings, the layers and head only).")]
Merge = Annotated[bool, typer.Option("--merge", help="Write a full transformers-layout checkpoint instead of the adapter.")]
Seed = Annotated[int, typer.Option("--seed", help="Seeds the split, the head's initialisation, the data order and dropout.")]
Patience = Annotated[Optional[int], typer.Option("--patience", help="Stop after this many evaluations without a better validation score (default: classify 3, qa 2, corefs 6).", show_default=False)]
Autocast = Annotated[str, typer.Option("--autocast", help="auto: bf16 on CUDA and on CPUs with native bf16 (AVX512-BF16/AMX); bf16; none.")]
Force = Annotated[bool, typer.Option("--force", "-F", help="Start over: remove an earlier run's model and training state in DIR.")]
Resume = Annotated[bool, typer.Option("--resume", "-r", help="Continue the interrupted run in DIR from its last checkpoint (same weights as an uninterrupted run).")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress or messages on stderr.")]


def _training_options(
    validation: Validation = None, validation_split: ValidationSplit = 0.1, epochs: Epochs = None,
    max_steps: MaxSteps = None, lr: Lr = None, batch_tokens: BatchTokens = None, max_length: MaxLength = None,
    global_: Global = None, adapter: Adapter = "lora", lora_rank: LoraRank = None, merge: Merge = False,
    freeze_embeddings: FreezeEmbeddings = False, delta: Delta = False, seed: Seed = 0, patience: Patience = None,
    device: Device = "auto", autocast: Autocast = "auto", force: Force = False, resume: Resume = False,
    quiet: Quiet = False,
):
    """The options every finetune command takes after its own, declared once (see options_after)."""


training_options = options_after(_training_options)


def _run(task: str, data, output, model, options: dict, **task_options):
    """Train `task` with the shared `options` (each default the task's) and the task's own."""
    from lfcli.pipelines.train.finetune import finetune
    from lfcli.pipelines.progress import record_line
    from lfcli.pipelines.train.loop import TrainConfig

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
    data: Data, output: Output, model: Model = None,
    text_column: Annotated[str, typer.Option("--text-column", help="Text field of JSONL records / column of Parquet files.")] = "text",
    label_column: Annotated[str, typer.Option("--label-column", help="Label field / column.")] = "label",
    id_column: Annotated[Optional[str], typer.Option("--id-column", help="Id field / column (default: 'id' when present).")] = None,
    class_weights: Annotated[str, typer.Option("--class-weights", help="auto: weigh classes by n / (k * n_class) in the loss; none.")] = "auto",
    first_window_only: Annotated[bool, typer.Option("--first-window-only", help="Train on each document's first window only.")] = False,
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
    data: Data, output: Output, model: Model = None,
    negatives: Annotated[float, typer.Option("--negatives", help="SQuAD JSON: chance that a question also trains on a no-answer window of another paragraph of its article.")] = 0.5,
    max_eval: Annotated[int, typer.Option("--max-eval", help="Validation questions scored at each evaluation (CPU time).")] = 600,
    *, options: dict,
):
    """Train extractive question answering. DATA: SQuAD JSON, or JSONL/Parquet with context (or
    text), question and answers ({text, answer_start} lists). Validation holds out whole articles."""
    _run("qa", data, output, model, options, negatives=negatives, max_eval=max_eval)


@finetune_app.command("corefs")
@guarded
@training_options
def finetune_corefs(
    data: Data, output: Output, model: Model = None,
    ids: Annotated[Optional[str], typer.Option("--ids", help="Train only on the documents listed in this file (one id per line, e.g. LitBank's train.ids).")] = None,
    validation_ids: Annotated[Optional[str], typer.Option("--validation-ids", help="Validate on these documents (of --validation, else of DATA).")] = None,
    gap: Annotated[Optional[List[str]], typer.Option("--gap", help="GAP TSV files (A-coref/B-coref labels) whose rows also train the pronoun's antecedent.")] = None,
    gap_validation: Annotated[Optional[str], typer.Option("--gap-validation", help="A GAP TSV scored at each evaluation; the best model then has the best mean of CoNLL F1 and GAP F1.")] = None,
    ffnn_size: Annotated[Optional[int], typer.Option("--ffnn-size", help="Width of the coreference head's mention and antecedent layers (default 128).")] = None,
    gap_weight: Annotated[Optional[float], typer.Option("--gap-weight", help="How much a GAP row's loss weighs against a training document's (default 0.2).")] = None,
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
    force: Annotated[bool, typer.Option("--force", "-F", help="Write over an existing, non-empty OUT folder.")] = False,
):
    """Merge a LoRA adapter into its base: a full checkpoint transformers loads (as --merge at training)."""
    from lfcli.pipelines.train.finetune import merge_adapter

    typer.echo(f"lfcli: wrote {merge_adapter(adapter, out, force=force)}", err=True)


@app.command("average")
@guarded
def average(
    adapters: Annotated[List[str], typer.Argument(metavar="DIR", help="Two or more LoRA adapter folders trained on from one start (`lfcli finetune -m ADAPTER`).", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Folder for the averaged adapter.")],
    force: Annotated[bool, typer.Option("--force", "-F", help="Write over an existing, non-empty output folder.")] = False,
):
    """Average LoRA adapters of one base, rank and head (a model soup): often better than each."""
    from lfcli.pipelines.train.average import average_adapters

    typer.echo(f"lfcli: wrote {average_adapters(adapters, output, force=force)}", err=True)
