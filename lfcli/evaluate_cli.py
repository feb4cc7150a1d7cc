"""`lfcli evaluate classify|qa|corefs PRED GOLD`: scores of predictions against gold labels.

The scores go to stdout as one JSON object (the data of this command); a readable table goes
to stderr (plain text when stderr is not a terminal). The formats, the id matching and the
policy for missing or failed rows are in lfcli/pipelines/eval/evaluate.py; the measures in
lfcli/pipelines/eval/metrics.py. Nothing heavy is imported until the command runs.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from typing_extensions import Annotated

from .app import app, guarded


@app.command()
@guarded
def evaluate(
    task: Annotated[str, typer.Argument(help="classify, qa or corefs.", show_default=False)],
    pred: Annotated[str, typer.Argument(help="lfcli's output for TASK: .jsonl, .json or .parquet.", show_default=False)],
    gold: Annotated[str, typer.Argument(
        help="classify: .jsonl/.parquet with id, label, or a folder of LABEL/ subfolders; qa: SQuAD .json, or "
        ".jsonl with id, answers; corefs: CoNLL-2012 file or folder, .jsonl with id, clusters, or a GAP .tsv.",
        show_default=False)],
    singletons: Annotated[Optional[bool], typer.Option(
        "--singletons/--no-singletons",
        help="corefs: headline CoNLL F1 with (default) or without one-mention clusters; the JSON has both.")] = None,
    ids: Annotated[Optional[str], typer.Option(
        "--ids", help="Only these gold documents: a file with one id per line (CoNLL: file names without extension).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No table on stderr.")] = False,
):
    """Score predictions: accuracy and F1 (classify), SQuAD EM/F1 (qa), MUC, B3, CEAF-e and
    CoNLL F1 (corefs; GAP F1 and bias for a GAP .tsv). Gold ids without a prediction, and
    failed rows, count as wrong; a prediction id not in gold is an error."""
    from lfcli.pipelines.errors import UsageError
    from lfcli.pipelines.eval.evaluate import evaluate as run
    from lfcli.pipelines.infer.tasks import LABELLED_TASKS

    if task not in LABELLED_TASKS:
        raise UsageError(f"TASK must be one of {', '.join(LABELLED_TASKS)}, not {task!r}")
    if singletons is not None and task != "corefs":
        raise UsageError("--singletons/--no-singletons only apply to corefs")
    result = run(task, pred, gold, singletons=True if singletons is None else singletons, ids=ids)
    typer.echo(json.dumps(result, ensure_ascii=False))
    if not quiet:
        _print_table(result)


def _print_table(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    from lfcli.pipelines.wording import plural

    tty = sys.stderr.isatty()
    console = Console(stderr=True, color_system="auto" if tty else None, highlight=False, soft_wrap=not tty)
    task = result["task"]
    table = Table(title=f"lfcli evaluate {task} ({result['gold_format']} gold, {plural(result['n'], 'item')})", title_justify="left")
    if task == "classify":
        table.add_column("label")
        for name in ("precision", "recall", "F1", "support"):
            table.add_column(name, justify="right")
        for label, s in result["per_class"].items():
            table.add_row(label, f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}", str(s["support"]))
        table.add_section()
        table.add_row("accuracy", "", "", f"{result['accuracy']:.3f}", str(result["n"]))
        table.add_row("macro F1", "", "", f"{result['macro_f1']:.3f}", str(result["n"]))
    elif task == "qa":
        table.add_column("measure")
        table.add_column("score", justify="right")
        table.add_row("exact match", f"{result['exact_match']:.2f}")
        table.add_row("F1", f"{result['f1']:.2f}")
    elif result["gold_format"] == "gap":
        gap = result["gap"]
        table.add_column("GAP")
        for name in ("recall", "precision", "F1", "tp", "fp", "fn", "tn"):
            table.add_column(name, justify="right")
        for group in ("overall", "masculine", "feminine"):
            s = gap[group]
            table.add_row(group, f"{s['recall']:.1f}", f"{s['precision']:.1f}", f"{s['f1']:.1f}",
                          *(str(s[k]) for k in ("tp", "fp", "fn", "tn")))
        table.add_section()
        table.add_row("bias (F/M)", "", "", "-" if gap["bias"] is None else f"{gap['bias']:.2f}")
    else:
        head, other = ("with", "without") if result["singletons"] else ("without", "with")
        table.title += f", {head} singletons"
        table.add_column("measure")
        for name in ("recall", "precision", "F1"):
            table.add_column(name, justify="right")
        table.add_column(f"F1 ({other} singletons)", justify="right")
        for metric, label in (("muc", "MUC"), ("b_cubed", "B-cubed"), ("ceaf_e", "CEAF-e"), ("mentions", "mentions")):
            s, o = result[f"{head}_singletons"][metric], result[f"{other}_singletons"][metric]
            table.add_row(label, f"{s['recall']:.2f}", f"{s['precision']:.2f}", f"{s['f1']:.2f}", f"{o['f1']:.2f}")
        table.add_section()
        table.add_row("CoNLL F1", "", "", f"{result[f'{head}_singletons']['conll_f1']:.2f}",
                      f"{result[f'{other}_singletons']['conll_f1']:.2f}")
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
