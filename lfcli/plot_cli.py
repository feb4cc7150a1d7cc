"""`lfcli plot RUN_DIR`: a training run's curves as a PNG.

RUN_DIR is the -o folder of `lfcli finetune` or `lfcli pretrain-continue`, finished or still
running, or its metrics.jsonl. The image goes to RUN_DIR/curve.png, the file training itself
redraws after each evaluation, or to -o FILE, refused when it exists unless --force (as is
NAME.png, the default for a metrics file kept under another name, NAME.jsonl).
The image is the command's output, so stdout stays empty; the evaluations table and the
path written go to stderr. matplotlib is imported only when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import typer
from typing_extensions import Annotated

from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.progress import note
from lfcli.pipelines.view.curves import (
    CURVE_FILE, FORMATS, METRICS_FILE, default_title, draw_curves, evaluations_table, metric_fields, read_curves,
)
from lfcli.pipelines.wording import plural

from .app import app, guarded
from .options import Image, Metric, OverwriteFile, Quiet, Title

RunDir = Annotated[str, typer.Argument(metavar="RUN_DIR", show_default=False,
                                       help="The -o folder of lfcli finetune or pretrain-continue (finished or running), or its metrics.jsonl.")]


@app.command("plot")
@guarded
def plot(run_dir: RunDir, output: Image = None, metric: Metric = None, title: Title = None,
         force: OverwriteFile = False, quiet: Quiet = False):
    """Draw a training run's curves: the training loss and the validation score against updates."""
    source = Path(run_dir)
    if source.is_dir():
        metrics = source / METRICS_FILE
        if not metrics.is_file():
            raise InputError(f"{run_dir}: no {METRICS_FILE} there (lfcli finetune and pretrain-continue write it "
                             "into their -o folder when training starts)")
    elif source.is_file():
        metrics = source
    else:
        raise InputError(f"{run_dir}: no such folder or file")
    # The trainer's own curve.png beside its metrics.jsonl is derived: redrawn at will. Another
    # metrics file (a copy, renamed) is drawn beside it under its own name.
    own = metrics.parent / CURVE_FILE if metrics.name == METRICS_FILE else None
    out = Path(output) if output else own or metrics.with_suffix(".png")
    if out.suffix.lower() not in FORMATS:
        raise UsageError(f"-o {output}: the image must end in {', '.join(FORMATS)}")
    if out.is_dir():
        raise InputError(f"{out} is a folder, not an image file")
    if not out.parent.is_dir():
        raise InputError(f"output folder {out.parent} does not exist")
    if out.exists() and not force and (own is None or out.resolve() != own.resolve()):
        raise UsageError(f"{out} exists; pass --force to overwrite")

    curves = read_curves(metrics)
    if curves.empty:
        raise InputError(f"{metrics}: nothing to draw yet: no training loss or evaluation logged "
                         "(the loss is logged every few updates)")
    if metric is not None and curves.evals and metric not in metric_fields(curves.evals):
        raise UsageError(f"--metric {metric}: the evaluations carry {', '.join(metric_fields(curves.evals))}")
    if curves.unreadable and not quiet:
        note(f"{metrics}: {plural(curves.unreadable, 'line')} not JSON, skipped")
    name = metrics.parent.resolve().name if own else metrics.stem
    draw_curves(curves, out, metric, title or default_title(name, curves))
    if not quiet:
        if curves.evals:
            typer.echo(evaluations_table(curves.evals, metric), err=True)
        typer.echo(f"lfcli: wrote {out} ({plural(len(curves.losses), 'loss point')}, "
                   f"{plural(len(curves.evals), 'evaluation')}, update {curves.last_step}"
                   + (f" of {curves.max_steps})" if curves.max_steps else ")"), err=True)
