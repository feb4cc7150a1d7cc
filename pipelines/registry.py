"""The task registry: each task's name -> its home's `TaskSpec`, the one table the runner, the
trainer, the evaluator, the Ray engine, the views and the CLI look tasks up in.

A task's home (`lfcli.pipelines.tasks.<name>`) builds a TaskSpec of what only that task has;
`register(spec)` adds it. The built-in homes are registered, in the order messages list them,
when the package `lfcli.pipelines.tasks` is imported, which the first look-up does by name (`importlib`), as a plugin registry does: the
machinery in the rooms below never imports a task's home, and a new task is one new home.

A TaskSpec holds values and functions, no machinery:
  inference  `runner(tokenizer, policy, config, options) -> Task` (pipelines/infer/tasks.py's
             prepare/forward/finish/schema), its default `global_policy`, its own command-line
             `options` (plain data; lfcli turns them into typer options), `check(options)`
             before anything loads, the model class (`architecture`) and bundled trained models
             (`models`) it runs, the document field its windows carry beside the text (`pair`:
             qa's question), its page
  training   `finetune`: the setup `lfcli finetune TASK` trains (pipelines/train/setups.py's
             Setup), and its defaults
  evaluation `evaluation`: how `lfcli evaluate TASK` reads gold and scores rows
  pretraining `pretrain`: the run `lfcli pretrain-continue` starts (mlm), and its options
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from .errors import UsageError

BUILTIN_HOMES = "lfcli.pipelines.tasks"


@dataclass(frozen=True)
class Option:
    """One of a task command's own options, as plain data (lfcli/options.py makes it a typer
    option). `flags`: the option's names, e.g. ("--top-k", "-k"), or ("--normalize/--no-normalize",)
    for a switch with both spellings."""

    name: str  # the keyword the task's runner gets
    flags: tuple[str, ...]  # () for `shared(name)`
    type: type = str
    default: Any = None
    help: str = ""


def shared(name: str, default: Any = None) -> Option:
    """A task's use of one of the CLI's shared options (e.g. "text_column"), declared once in
    lfcli/options.py with its flags, help and default; `default`, when given, is the task's own."""
    return Option(name, (), default=default)


@dataclass(frozen=True)
class TrainingDefaults:
    """`lfcli finetune TASK`'s defaults where the tasks differ (measured on each task's data)."""

    lr: dict[str, float]  # per --adapter (lora, full): LoRA's zero-started updates want a larger step
    epochs: float
    batch_tokens: int
    patience: int
    max_length: int | None = None  # None: the model's positions


def _as_read(row: dict) -> dict:
    return row


@dataclass(frozen=True)
class Evaluation:
    """How `lfcli evaluate TASK PRED GOLD` scores the task (pipelines/eval/evaluate.py runs it).

    field       the output rows' field it scores ("label", "answer", "clusters")
    read_gold   path -> Gold (pipelines/eval/evaluate.py)
    score       (gold, selected ids, prediction(id) -> value or None, where(id) -> its place
                for messages, **options) -> the scores
    fill_table  (a rich Table, the result) -> None: the table `lfcli evaluate` prints on stderr
    from_row    a row as read -> the shape `field` expects (corefs: chains -> clusters)
    options     the task's own `lfcli evaluate` options
    gold_help   the gold formats it reads, for the command's help
    measures    what it scores, for the command's help
    """

    field: str
    read_gold: Callable
    score: Callable
    fill_table: Callable
    from_row: Callable[[dict], dict] = _as_read
    options: tuple[Option, ...] = ()
    gold_help: str = ""
    measures: str = ""


def evaluation_in(module: str, field: str, **more) -> Evaluation:
    """An Evaluation whose read_gold, score and fill_table are the functions of those names in
    `module` (a home's evaluation.py), imported when first called."""
    return Evaluation(field=field, read_gold=lazy(module, "read_gold"), score=lazy(module, "score"),
                      fill_table=lazy(module, "fill_table"), **more)


def _no_check(options: dict) -> None:
    return None


def _never(options: dict) -> bool:
    return False


def _as_given(options: dict) -> dict:
    return options


def _by_id(options: dict) -> str:
    return "id"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    summary: str  # the command's help
    runner: Callable[..., Any] | None = None  # (tokenizer, policy, config, options) -> an inference Task
    global_policy: str = "cls"  # the default --global
    # The model: the checkpoint class with this task's head (its name in lfcli.models.heads'
    # HEADS; None: the bare encoder) and, without -m, the first of its bundled trained
    # `models` over the tier's encoder (else that bundled encoder); or, when
    # bare_encoder(options), the bundled encoder itself (zero-shot classify).
    architecture: str | None = None
    models: tuple[str, ...] = ()  # its bundled trained models (lfcli.models.bundled.TASK_MODELS), one a tier
    missing_head: str = ""  # how a user gets a model with its head, said when -m has none
    bare_encoder: Callable[[dict], bool] = _never
    zero_shot: str = ""  # how `lfcli models` says it runs on a bare encoder when bare_encoder can hold
    options: tuple[Option, ...] = ()
    parse: Callable[[dict], dict] = _as_given  # the command line's (or the API's) values -> the runner's options
    check: Callable[[dict], None] = _no_check  # its options, before anything loads (UsageError)
    # The document field each window holds beside the text, in the pair template (qa:
    # "question"): the task's option of that name asks it of every document, else each
    # record's field gives it. `pair_missing`: what to do, said when no document can have one.
    pair: str | None = None
    pair_missing: str = ""
    # (its options, parsed) -> the pair texts asked of every document (qa: its questions), None:
    # each record's own; default: the option named `pair`, when given
    asked_pairs: Callable[[dict], list[str] | None] | None = None
    page: Callable | None = None  # (rows, texts, title, subtitle, footer) -> HTML; None: no page for it
    no_page: str = ""  # why its rows have no page, said when one is asked for
    # () -> an object that sees each row (`add(row)`) and gives the run's closing `lines()`, said
    # on stderr after the rates when it is a terminal (corefs: the cast); None: nothing more
    report: Callable[[], Any] | None = None
    row_fields: tuple[str, ...] = ()  # fields only its rows have (which task wrote an output)
    # (its options, parsed) -> the field(s) that tell a job's rows apart, which --resume reads
    # (a tuple: those fields together; qa with many questions: id and question_id)
    row_key: Callable[[dict], str | tuple[str, ...]] = _by_id
    row_form: int = 1  # bumped when its rows change shape: an output of another form is never resumed
    finetune: Callable | None = None  # the Setup `lfcli finetune TASK` trains; None: not trainable
    finetune_summary: str = ""  # `lfcli finetune TASK`'s help: what it trains, the data it reads
    training: TrainingDefaults | None = None
    finetune_options: tuple[Option, ...] = ()  # its own options there (the Setup's keywords)
    evaluation: Evaluation | None = None
    # (corpus, model, output, PretrainConfig, **run options) -> summary: `lfcli pretrain-continue`
    pretrain: Callable | None = None
    pretrain_options: tuple[Option, ...] = ()  # its own options there (the run's settings)
    # (options, first_texts) -> the options for workers that each run a part of one job (Ray):
    # whatever the task measures on the job's first documents (its Task.begin), fixed from
    # first_texts(n, chars), the job's first n texts (at most `chars` characters), so that every
    # part scores as the whole job would locally. None: the options as they are.
    for_workers: Callable[[dict, Callable[[int, int], list[str]]], dict] | None = None

    def asked(self, options: dict) -> list[str] | None:
        """The pair texts the options ask of every document (qa's questions); None: the
        records' own (or a task without a pair)."""
        if not self.pair:
            return None
        if self.asked_pairs is not None:
            return self.asked_pairs(options)
        given = options.get(self.pair)
        return None if given is None else [given]

    @property
    def fields(self) -> tuple[str, ...]:
        """The per-record fields its documents keep beside id and text (the readers read them)."""
        return (self.pair,) if self.pair else ()


_TASKS: dict[str, TaskSpec] = {}
_WATCHERS: list[Callable[[str, TaskSpec], None]] = []
_loaded = False


def register(spec: TaskSpec) -> TaskSpec:
    """Add a task (a name taken twice is refused: two homes for one task is the bug this stops)."""
    if spec.name in _TASKS and _TASKS[spec.name] is not spec:
        raise ValueError(f"task {spec.name!r} is registered twice")
    _TASKS[spec.name] = spec
    for watcher in _WATCHERS:
        watcher("added", spec)
    return spec


def unregister(name: str) -> None:
    """Remove a task (tests that register one of their own)."""
    spec = _TASKS.pop(name, None)
    if spec is not None:
        for watcher in _WATCHERS:
            watcher("removed", spec)


def watch(watcher: Callable[[str, TaskSpec], None]) -> None:
    """Call `watcher("added", spec)` for every task registered now and later, and
    `watcher("removed", spec)` when one goes: how the CLI keeps a command per task."""
    _load_builtins()
    _WATCHERS.append(watcher)
    for spec in list(_TASKS.values()):
        watcher("added", spec)


def lazy(module: str, name: str) -> Callable:
    """`module.name`, imported when first called: a SPEC names its task's code this way, so
    that reading the registry (`lfcli --help`) imports no torch."""

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.target = (module, name)  # what it stands for (a test resolves every built-in spec's)
    return call


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(BUILTIN_HOMES)


def tasks(kind: str | None = None) -> tuple[str, ...]:
    """Every registered task's name, in registration order; `kind` keeps those that run on
    documents ("infer"), draw a page ("page"), train ("finetune"), score ("evaluate") or
    pretrain ("pretrain")."""
    _load_builtins()
    have = {"infer": lambda s: s.runner is not None, "page": lambda s: s.page is not None,
            "finetune": lambda s: s.finetune is not None, "evaluate": lambda s: s.evaluation is not None,
            "pretrain": lambda s: s.pretrain is not None, None: lambda s: True}[kind]
    return tuple(name for name, spec in _TASKS.items() if have(spec))


def get(name: str, kind: str | None = None) -> TaskSpec:
    """The task called `name` (UsageError naming the choices when there is none)."""
    names = tasks(kind)
    if name not in names:
        raise UsageError(f"unknown task {name!r}; choose one of {', '.join(names)}")
    return _TASKS[name]


def document_fields() -> tuple[str, ...]:
    """Every registered task's document fields (the API's read_documents keeps them all)."""
    return tuple(dict.fromkeys(f for name in tasks() for f in _TASKS[name].fields))


def serving(model: str) -> tuple[str, ...]:
    """The tasks a bundled trained model serves (those whose `models` name it)."""
    return tuple(name for name in tasks() if model in _TASKS[name].models)


def listing(names) -> str:
    """'a, b and c', for messages."""
    names = list(names)
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1] if names else ""
