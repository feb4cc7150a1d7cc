"""Every option of the `lfcli` commands, declared once: one typer `Annotated` alias each, with
one help text. A command module imports the aliases it takes; a flag that means different
things in different commands (`--output`, `--force`, `--resume`, ...) has one alias per
meaning, named for it, side by side below, so a reader sees why they differ.

typer takes an option's default from the command's signature, not from the alias: the
commands give each one from the place the pipelines define it (e.g. PretrainConfig), or the
plain value of a flag (False) or of "not given" (None). Nothing here imports more than typer.

A task's own options are plain data in its home (lfcli.pipelines.registry.Option);
`task_option` makes one a typer parameter, and `shared("text_column")` there means the
shared option of that name below (SHARED).
"""

from __future__ import annotations

import inspect
from typing import List, Optional

import typer
from typing_extensions import Annotated

from lfcli.pipelines.job_defaults import JOB

# -- what a command reads ---------------------------------------------------------------------
Inputs = Annotated[List[str], typer.Argument(metavar="PATH", help="Files, folders, .jsonl, .parquet, or - for stdin.", show_default=False)]
Corpus = Annotated[List[str], typer.Argument(metavar="PATH", help="Files, folders, .jsonl or .parquet of long documents.", show_default=False)]
TrainingData = Annotated[List[str], typer.Argument(help="Training data (see the command's help for the formats).", show_default=False)]
TextColumn = Annotated[str, typer.Option("--text-column", help="Text field of JSONL records / column of Parquet files.")]
IdColumn = Annotated[Optional[str], typer.Option("--id-column", help="Id field/column (default: 'id' when present, else the row number).")]
Glob = Annotated[Optional[str], typer.Option("--glob", "-g", help="Only files in folders matching this pattern, e.g. '*.txt'.")]
EncodingErrors = Annotated[str, typer.Option("--encoding-errors", help="strict: a document with bytes its encoding cannot read is an error row; replace: decode them as U+FFFD.")]
Encoding = Annotated[str, typer.Option("--encoding", help="Text files' encoding: utf-8; auto (UTF-8 where a file is UTF-8, else detected with charset-normalizer); or a name, e.g. cp1252, latin-1, utf-16.")]
InputFormat = Annotated[str, typer.Option("--input-format", help="auto, text or jsonl (for stdin; files go by extension).")]

# -- the model and where it runs --------------------------------------------------------------
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="A tier (small, the default; base: larger and slower), a bundled model name (see `lfcli models`) or a checkpoint folder.")]
# finetune also trains on from an adapter or a bundled task model.
BaseModel = Annotated[Optional[str], typer.Option("--model", "-m", help="Base model: bundled name (see `lfcli models`) or checkpoint folder (default: the bundled base). A LoRA adapter folder or bundled task model is trained on from where it stands.")]
MaxLength = Annotated[Optional[int], typer.Option("--max-length", "-l", help="Longest window in tokens (default: the model's positions).")]
# finetune qa trains on shorter windows than it reads with (a question and its passage).
TrainingMaxLength = Annotated[Optional[int], typer.Option("--max-length", "-l", help="Longest training window in tokens (default: the task's, in the help above).", show_default=False)]
Device = Annotated[str, typer.Option("--device", "-d", help="auto (CUDA when there is a GPU, else cpu), cpu, cuda, cuda:1, ...")]
Dtype = Annotated[str, typer.Option("--dtype", help="auto (bfloat16 on a GPU with bf16 and on a CPU with native bf16, else float32; `lfcli --version --verbose` says which), float32, bfloat16 or float16.")]
Backend = Annotated[Optional[str], typer.Option("--attention-backend", help="auto, chunked, triton or reference.")]
Global = Annotated[Optional[str], typer.Option("--global", help="Global attention: none|cls|question|sentence-starts|paragraph-starts|regex:PATTERN.")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress, messages or summary on stderr.")]
# -- lfcli evaluate TASK PRED GOLD -------------------------------------------------------------
Predictions = Annotated[str, typer.Argument(help="lfcli's output for the task: .jsonl, .json or .parquet.", show_default=False)]
Gold = Annotated[str, typer.Argument(help="The gold answers (formats above).", show_default=False)]
GoldIds = Annotated[Optional[str], typer.Option("--ids", help="Only these gold documents: a file with one id per line (CoNLL: file names without extension).")]

FastPaths = Annotated[bool, typer.Option("--fast-paths/--no-fast-paths", help="--no-fast-paths: run the plain reference model, without the speed swaps `lfcli --version --verbose` lists (the same outputs to rounding, slower).")]

# -- a task's job: rows to a file (classify, qa, embed, corefs) --------------------------------
Output = Annotated[Optional[str], typer.Option("--output", "-o", help="Output file: .jsonl, .json, .parquet, or .html for a page to read in a browser (classify, qa, corefs) (default: JSONL on stdout).")]
Force = Annotated[bool, typer.Option("--force", "-F", help="Overwrite an existing output file (and an unfinished run's rows).")]
Resume = Annotated[bool, typer.Option("--resume", "-r", help="Continue an interrupted job: keep the output's rows, skip their ids.")]
OnError = Annotated[str, typer.Option("--on-error", help="skip: write an error row and go on (the job then exits 1 if any document failed; see --partial-ok); fail: stop at the first bad document.")]
PartialOk = Annotated[bool, typer.Option("--partial-ok", help="Exit 0 even when some documents failed (each has its error row): for batch jobs that expect a few bad inputs. Without it, any failed document makes the exit code 1.")]
BatchSize = Annotated[Optional[int], typer.Option("--batch-size", "-b", help="Most windows per batch (default: 8 on a CPU, 64 on a GPU).", show_default=False)]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", "-t", help="Token budget per batch, longest window x batch size (default: 4096 on a CPU, 65536 on a GPU).", show_default=False)]
RowGroup = Annotated[int, typer.Option("--row-group-size", help="Parquet output: rows per row group. Finished rows reach the output file every 5 s or every row group, whichever comes first, so --resume after a kill redoes only the last seconds' documents.")]
# Help texts go through rich markup, where "[ray]" is a style tag and vanishes: "\\[" keeps it.
Engine = Annotated[str, typer.Option("--engine", help="local (this process) or ray (Ray Data over a Parquet dataset, writing -o FOLDER/; pip install 'lfcli\\[ray]').")]
RayAddress = Annotated[Optional[str], typer.Option("--ray-address", help="--engine ray: the cluster to join (e.g. auto, or HOST:6379; default $RAY_ADDRESS, else a local instance).")]
Workers = Annotated[Optional[int], typer.Option("--workers", help="--engine ray: model actors (default: as many as the free resources hold, one CPU kept for reading and writing).")]
GpusPerWorker = Annotated[Optional[float], typer.Option("--gpus-per-worker", help="--engine ray: GPUs per actor (default 1 when the cluster has GPUs, else 0; 0.5 puts two actors on a GPU).")]
CpusPerWorker = Annotated[Optional[float], typer.Option("--cpus-per-worker", help="--engine ray: CPUs per actor, also its torch threads (default 1).")]

# -- one file or folder written whole (show, plot, convert, merge, average) ---------------------
# show's -o: typer does not require it, so that its absence is show's own one-line usage error.
Page = Annotated[Optional[str], typer.Option("--output", "-o", help="The page to write: NAME.html (required).")]
Image = Annotated[Optional[str], typer.Option("--output", "-o", help="Image to write: .png, .svg or .pdf (default: RUN_DIR/curve.png, the one training draws, redrawn; NAME.png for a metrics file NAME.jsonl).")]
AveragedAdapter = Annotated[str, typer.Option("--output", "-o", help="Folder for the averaged adapter.")]
OverwriteFile = Annotated[bool, typer.Option("--force", "-F", help="Overwrite an existing output file.")]
OverwriteFolder = Annotated[bool, typer.Option("--force", "-F", help="Write over an existing, non-empty output folder.")]

# -- a training run: finetune and pretrain-continue ---------------------------------------------
RunFolder = Annotated[str, typer.Option("--output", "-o", help="Folder for the best model so far, its resume state (train_state/) and metrics.jsonl.")]
StartOver = Annotated[bool, typer.Option("--force", "-F", help="Start over: remove what an earlier run wrote to the output folder (model, train_state/, metrics), nothing else there.")]
ResumeRun = Annotated[bool, typer.Option("--resume", "-r", help="Continue the interrupted run from the output folder's resume state, ending with the weights of an uninterrupted run; refused if the data or its options differ.")]
MaxSteps = Annotated[Optional[int], typer.Option("--max-steps", help="Optimizer updates in all.")]
Seed = Annotated[int, typer.Option("--seed", help="Seeds everything random in a run: the held-out split, a new head's initialisation, the data order, dropout and, in pretraining, the masks.")]

# -- finetune ----------------------------------------------------------------------------------
Validation = Annotated[Optional[List[str]], typer.Option("--validation", help="Validation data in the training data's format (default: held out from DATA).")]
ValidationSplit = Annotated[float, typer.Option("--validation-split", help="Share of DATA held out for validation when --validation is not given (seeded).")]
Epochs = Annotated[Optional[float], typer.Option("--epochs", help="Passes over the training data (default: the task's, in the help above; --max-steps overrides it).", show_default=False)]
FinetuneLr = Annotated[Optional[float], typer.Option("--lr", help="Peak learning rate (default: the task's for the --adapter, in the help above).", show_default=False)]
MicroTokens = Annotated[Optional[int], typer.Option("--micro-tokens", help="Padded tokens per forward pass, the memory a step takes (default 2048 on the CPU, 8192 on a GPU); an update's examples and loss do not depend on it, so a --resume may change it.", show_default=False)]
BatchTokens = Annotated[Optional[int], typer.Option("--batch-tokens", help="Tokens per optimizer update (gradient accumulation over micro-batches; default: the task's, in the help above).", show_default=False)]
Adapter = Annotated[str, typer.Option("--adapter", help="lora: train a low-rank adapter + the head (small files); full: every weight.")]
LoraRank = Annotated[Optional[int], typer.Option("--lora-rank", help="Rank of the LoRA updates (default 16; with -m ADAPTER, that adapter's rank: training goes on from it).", show_default=False)]
FinetuneFreezeEmbeddings = Annotated[bool, typer.Option("--freeze-embeddings", help="With --adapter full: keep the base's embedding tables as they are (the trained model then differs from its base in the layers and head only).")]
Delta = Annotated[bool, typer.Option("--delta", help="With --adapter full: write the weights as fp16 differences from the base model (a fraction of a full checkpoint; with --freeze-embeddings, the layers and head only).")]
Merge = Annotated[bool, typer.Option("--merge", help="Write a full transformers-layout checkpoint instead of the adapter.")]
Patience = Annotated[Optional[int], typer.Option("--patience", help="Stop after this many evaluations without a better validation score (default: the task's, in the help above).", show_default=False)]
EvalEvery = Annotated[Optional[int], typer.Option("--eval-every", help="Updates between evaluations, each followed by a resume checkpoint (default: once per epoch). A long epoch wants a smaller number: --resume loses at most this many updates.", show_default=False)]
SaveEvery = Annotated[Optional[int], typer.Option("--save-every", help="Updates between resume checkpoints (default: --eval-every's, a checkpoint after each evaluation). A divisor of --eval-every keeps those and adds some between: --resume then loses less without evaluating more often.", show_default=False)]
Autocast = Annotated[str, typer.Option("--autocast", help="auto: bf16 on CUDA and on CPUs with native bf16 (AVX512-BF16/AMX); bf16; none.")]

# -- convert, show, plot -----------------------------------------------------------------------
MaxPositions = Annotated[int, typer.Option("--max-positions", help="Tokens the long model takes.")]
AttentionWindow = Annotated[int, typer.Option("--attention-window", help="Full window (even).")]
Texts = Annotated[Optional[List[str]], typer.Option(
    "--text", help="The job's inputs (files, folders, .jsonl, .parquet), read as the task read them; repeat for "
                   "several (default: the inputs its job record names, when they are still there).")]
Metric = Annotated[Optional[str], typer.Option("--metric", help="Evaluation field to draw, e.g. exact_match or accuracy (default: the task's score; bits per token for pretraining).")]
Title = Annotated[Optional[str], typer.Option("--title", help="Title over both panels (default: RUN_DIR's name and the update reached).")]


# The shared options a task's home can name with registry.shared(NAME): (alias, default).
SHARED = {"text_column": (TextColumn, JOB.text_column), "id_column": (IdColumn, None), "max_length": (MaxLength, None),
          "max_steps": (MaxSteps, None), "seed": (Seed, 0)}


def with_task_options(command, options, *, name: str, doc: str):
    """`command` (whose own parameters are the command's arguments and options, then a keyword
    `options` and **task_opts) with the typer parameters of a task's `options` after its own."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values()
           if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    command.__signature__ = inspect.Signature(own + [task_option(o) for o in options])
    command.__name__ = name.replace("-", "_")
    command.__doc__ = doc
    return command


def task_option(option, default=...) -> inspect.Parameter:
    """A task's own option (a registry.Option, plain data in its home) as the typer parameter of
    a command; `default` overrides the option's own (evaluate: None, "not given")."""
    if not option.flags:
        alias, value = SHARED[option.name]
        value = value if option.default is None else option.default  # the task's own default
        return inspect.Parameter(option.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=alias,
                                 default=value if default is ... else default)
    default = option.default if default is ... else default
    kind = option.type if default is not None else Optional[option.type]
    return inspect.Parameter(option.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                             annotation=Annotated[kind, typer.Option(*option.flags, help=option.help)])
