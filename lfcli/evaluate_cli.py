"""`lfcli evaluate TASK PRED GOLD`: scores of predictions against gold labels, a subcommand for
each task the registry (pipelines/registry.py) has an Evaluation for, with that task's own
options (`lfcli evaluate corefs --help`).

The scores go to stdout as one JSON object (the data of this command); a readable table goes
to stderr (plain text when stderr is not a terminal). The formats, the id matching and the
policy for missing or failed rows are in lfcli/pipelines/eval/evaluate.py; the measures in
lfcli/pipelines/eval/metrics.py. Nothing heavy is imported until the command runs.
"""

from __future__ import annotations

import inspect
import json
import sys

import typer
from rich.console import Console
from rich.table import Table

from lfcli.pipelines import registry
from lfcli.pipelines.wording import plural

from .app import app, follow_tasks, guarded
from .options import Gold, GoldIds, Predictions, Quiet, task_option


evaluate_app = typer.Typer(
    help="Score predictions against gold labels: `lfcli evaluate TASK PRED GOLD`. The scores go to "
         "stdout as one JSON object; a table to stderr. Gold ids without a prediction, and failed rows, "
         "count as wrong; a prediction id not in gold is an error.",
    no_args_is_help=True,
)
app.add_typer(evaluate_app, name="evaluate")


def evaluate_command(spec) -> None:
    """`lfcli evaluate TASK`: its own arguments, --ids and --quiet, then the options of its
    home's Evaluation, with their own defaults."""
    evaluation = spec.evaluation

    def command(pred: Predictions, gold: Gold, ids: GoldIds = None, quiet: Quiet = False, **task_options):
        from lfcli.pipelines.eval.evaluate import evaluate as run  # lazy: pyarrow, not for --help

        given = {name: value for name, value in task_options.items() if value is not None}
        result = run(spec.name, pred, gold, ids=ids, **given)
        typer.echo(json.dumps(result, ensure_ascii=False))
        if not quiet:
            _print_table(result)

    doc = f"{evaluation.measures}. GOLD: {evaluation.gold_help}."
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    command.__signature__ = inspect.Signature(own + [task_option(o, default=None) for o in evaluation.options])
    command.__name__, command.__doc__ = spec.name, doc
    evaluate_app.command(spec.name)(guarded(command))


follow_tasks(evaluate_app, lambda spec: spec.evaluation is not None, evaluate_command)  # one per task it scores


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
