"""`lfcli evaluate TASK PRED GOLD`: scores of predictions against gold labels, for each task the
registry (pipelines/registry.py) has an Evaluation for.

The scores go to stdout as one JSON object (the data of this command); a readable table goes
to stderr (plain text when stderr is not a terminal). The formats, the id matching and the
policy for missing or failed rows are in lfcli/pipelines/eval/evaluate.py; the measures in
lfcli/pipelines/eval/metrics.py. Nothing heavy is imported until the command runs.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table
from typing_extensions import Annotated

from lfcli.pipelines import registry
from lfcli.pipelines.errors import UsageError
from lfcli.pipelines.wording import plural

from .app import app, guarded
from .options import task_option


def _evaluate(
    task: Annotated[str, typer.Argument(help="The task whose output PRED is.", show_default=False)],
    pred: Annotated[str, typer.Argument(help="lfcli's output for TASK: .jsonl, .json or .parquet.", show_default=False)],
    gold: Annotated[str, typer.Argument(help="The gold answers (formats per task above).", show_default=False)],
    ids: Annotated[Optional[str], typer.Option(
        "--ids", help="Only these gold documents: a file with one id per line (CoNLL: file names without extension).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No table on stderr.")] = False,
    **task_options,
):
    """Score predictions against gold. Gold ids without a prediction, and failed rows, count as
    wrong; a prediction id not in gold is an error."""
    from lfcli.pipelines.eval.evaluate import evaluate as run  # lazy: pyarrow, not for --help

    names = registry.tasks("evaluate")
    if task not in names:
        raise UsageError(f"TASK must be one of {', '.join(names)}, not {task!r}")
    own = {o.name for o in registry.get(task).evaluation.options}
    for name, value in task_options.items():
        if value is not None and name not in own:
            having = [t for t in names if name in {o.name for o in registry.get(t).evaluation.options}]
            raise UsageError(f"{_flags(name)} only apply to {registry.listing(having)}")
    given = {name: value for name, value in task_options.items() if value is not None}
    result = run(task, pred, gold, ids=ids, **given)
    typer.echo(json.dumps(result, ensure_ascii=False))
    if not quiet:
        _print_table(result)


def _task_options() -> dict:
    """Every task's own `lfcli evaluate` options (their homes' Evaluation.options), by name."""
    found = {}
    for name in registry.tasks("evaluate"):
        for option in registry.get(name).evaluation.options:
            found.setdefault(option.name, option)
    return found


def _flags(name: str) -> str:
    return _task_options()[name].flags[0]


def _help() -> str:
    """The command's help: what each task scores and which gold it reads (from its home)."""
    lines = [inspect.cleandoc(_evaluate.__doc__), ""]
    for name in registry.tasks("evaluate"):
        evaluation = registry.get(name).evaluation
        lines.append(f"{name}: {evaluation.measures}. GOLD: {evaluation.gold_help}.\n")
    return "\n".join(lines)


def _command():
    """`lfcli evaluate` with every task's own options after the shared ones (each None unless
    given: a task's default is its own)."""
    params = [p for p in inspect.signature(_evaluate, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    params += [task_option(option, default=None) for option in _task_options().values()]

    def evaluate(**kwargs):
        return _evaluate(**kwargs)

    evaluate.__signature__ = inspect.Signature(params)
    evaluate.__doc__ = _help()
    return app.command("evaluate")(guarded(evaluate))


_command()


def _print_table(result: dict) -> None:
    tty = sys.stderr.isatty()
    console = Console(stderr=True, color_system="auto" if tty else None, highlight=False, soft_wrap=not tty)
    task = result["task"]
    table = Table(title=f"lfcli evaluate {task} ({result['gold_format']} gold, {plural(result['n'], 'item')})", title_justify="left")
    registry.get(task).evaluation.fill_table(table, result)
    console.print(table)
    notes = []
    if result["missing"]:
        notes.append(f"{plural(result['missing'], 'gold item')} without a prediction (counted as wrong, e.g. "
                     f"{result['missing_ids'][0]!r})")
    if result["errors"]:
        notes.append(f"{plural(result['errors'], 'error row')} among the predictions (counted as wrong)")
    if result["ignored"]:
        notes.append(f"{plural(result['ignored'], 'prediction')} outside --ids, skipped")
    if result.get("span_text_mismatches"):
        notes.append(f"warning: {plural(result['span_text_mismatches'], 'predicted span')} whose offsets do not match "
                     "the gold text (predictions made on a different text?)")
    for note in notes:
        console.print(f"lfcli: {note}", markup=False)
