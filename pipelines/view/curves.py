"""Training curves: a run's metrics.jsonl read, and drawn as an image of the training loss and
the validation score against updates.

The trainer (pipelines/train/loop.py) appends one JSON object a line to OUTPUT/metrics.jsonl:
`"event": "start"` (with the planned `max_steps`) when a session begins, `"event": "step"`
with the training `loss` every few updates, `"event": "eval"` with the validation metrics
after each evaluation (`score` chose the kept model; `"best": true` marks a new best). The
reader takes the file as it stands, also while the run is writing it:

  * a last line without its newline is one being written: left out;
  * blank lines, and lines that are not JSON objects, are skipped (and counted);
  * a resumed run repeats the updates after its checkpoint: each session opens with a start
    line, and the first update or evaluation after it replaces what an earlier session wrote
    from that update on (at the same update, the later line wins).

The left panel is the loss (log scale), the right the validation metric with the kept
evaluation circled. matplotlib is optional (`pip install 'lfcli[plots]'`); it is imported
when a curve is drawn, and draws on its Agg canvas without touching pyplot's global backend
(a notebook's backend stays as it was). Without it, drawing raises `PlotsMissing`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import LfcliError, one_line

METRICS_FILE = "metrics.jsonl"  # the trainer's log, in its output folder
CURVE_FILE = "curve.png"  # drawn beside it
PLOTS_HINT = "pip install 'lfcli[plots]'"
FORMATS = (".png", ".svg", ".pdf")

# What each task's evaluations are drawn by: (a field its evaluations carry, the field drawn
# by default, its axis label). Pretraining's score is minus the held-out loss; its bits per
# token read better (lower is better).
TASK_METRICS = [
    ("gap_f1", "score", "validation: mean of CoNLL F1 and GAP F1"),  # corefs with --gap-validation
    ("conll_f1", "score", "validation CoNLL F1"),
    ("exact_match", "score", "validation F1 (SQuAD)"),
    ("macro_f1", "score", "validation macro-F1"),
    ("bpt", "bpt", "held-out bits per token"),
]


class PlotsMissing(LfcliError):
    """matplotlib is not installed (exit code 1)."""

    exit_code = 1


@dataclass
class Curves:
    """What a metrics.jsonl holds for the curves."""

    losses: list[tuple[int, float]] = field(default_factory=list)  # (update, training loss)
    evals: list[dict] = field(default_factory=list)  # the eval records, in update order
    max_steps: int | None = None  # the updates planned, from the latest start line
    unreadable: int = 0  # lines skipped as not JSON objects (a torn last line aside)

    @property
    def empty(self) -> bool:
        return not self.losses and not self.evals

    @property
    def last_step(self) -> int:
        return max([s for s, _ in self.losses[-1:]] + [e["step"] for e in self.evals[-1:]] + [0])


def read_curves(path: Path) -> Curves:
    """The losses and evaluations of a metrics.jsonl, complete or still being written."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    tail = lines.pop()  # "" after a final newline, else a line still being written
    losses: dict[int, float] = {}
    evals: dict[int, dict] = {}
    curves, session_begins = Curves(), False
    for number, line in enumerate(lines + [tail]):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            if number < len(lines):  # a torn tail is expected, not counted
                curves.unreadable += 1
            continue
        event, step = record.get("event"), record.get("step")
        if event == "start":
            session_begins = True
            if _is_int(record.get("max_steps")):
                curves.max_steps = record["max_steps"]
        if event not in ("step", "eval") or not _is_int(step):
            continue
        if session_begins:  # a resumed session's first line: what came before from there on is replaced
            losses = {s: v for s, v in losses.items() if s < step}
            evals = {s: e for s, e in evals.items() if s < step}
            session_begins = False
        if event == "eval":
            evals[step] = record
        elif _is_number(record.get("loss")) and math.isfinite(record["loss"]):
            losses[step] = float(record["loss"])
    curves.losses = sorted(losses.items())
    curves.evals = [evals[s] for s in sorted(evals)]
    return curves


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fields(evals: list[dict]) -> set[str]:
    return set().union(*(e.keys() for e in evals)) if evals else set()


def default_metric(evals: list[dict]) -> str:
    """The evaluation field drawn when none is asked for: the task's (see TASK_METRICS)."""
    keys = _fields(evals)
    return next((drawn for key, drawn, _ in TASK_METRICS if key in keys), "score")


def metric_fields(evals: list[dict]) -> list[str]:
    """The numeric fields of the evaluations: what can be drawn."""
    return sorted({k for e in evals for k, v in e.items() if k != "step" and _is_number(v)})


def score_label(evals: list[dict], metric: str) -> str:
    """The axis label of `metric`: the task's words for its score, else the field's name."""
    keys = _fields(evals)
    return next((label for key, drawn, label in TASK_METRICS if key in keys and drawn == metric),
                f"validation {metric}")


def kept(evals: list[dict]) -> dict | None:
    """The evaluation whose model the run kept: the last one marked best."""
    best = [e for e in evals if e.get("best")]
    return best[-1] if best else None


def evaluations_table(evals: list[dict], metric: str | None = None) -> str:
    """The evaluations as a small table: update, epoch, the metric, and which one was kept."""
    metric = metric or default_metric(evals)
    keep = kept(evals)
    values = [e[metric] for e in evals if _is_number(e.get(metric))]
    fmt = _value_format(max(values) - min(values)) if values else ""
    lines = [f"{'update':>7} {'epoch':>6} {metric:>12}"]
    for e in evals:
        value, epoch = e.get(metric), e.get("epoch")
        shown = f"{value:{fmt}}" if _is_number(value) else "-"
        lines.append(f"{e['step']:>7} {epoch if epoch is not None else '-':>6} {shown:>12}"
                     + ("  kept" if e is keep else ""))
    return "\n".join(lines)


def default_title(name: str, curves: Curves) -> str:
    planned = f" of {curves.max_steps}" if curves.max_steps else ""
    return f"{name}: update {curves.last_step}{planned}"


def draw_curves(curves: Curves, out: Path, metric: str | None = None, title: str | None = None) -> Path:
    """Draw `curves` into `out` (.png, .svg or .pdf by its suffix; written aside, then moved
    in place, so a reader never meets half an image). Raises PlotsMissing without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # optional: the plots extra
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise PlotsMissing(f"drawing curves needs matplotlib: {PLOTS_HINT}") from None

    metric = metric or default_metric(curves.evals)
    fig = Figure(figsize=(10, 3.8))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    end = max(curves.max_steps or 0, curves.last_step, 1)
    for ax in (left, right):
        ax.set_xlim(-0.04 * end, 1.04 * end)  # room for a value written over the first and last point
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)

    steps, values = [s for s, _ in curves.losses], [v for _, v in curves.losses]
    if values:
        left.plot(steps, values, color="tab:blue", linewidth=1.2, marker="." if len(values) < 30 else None)
        if min(values) > 0 and max(values) > 10 * min(values):  # over a decade: log scale
            left.set_yscale("log")
    else:
        _say_empty(left, "no training loss logged yet")
    left.set(title="training loss", xlabel="update",
             ylabel="loss (log scale)" if left.get_yscale() == "log" else "loss")

    points = [(e["step"], float(e[metric])) for e in curves.evals if _is_number(e.get(metric))]
    if points:
        right.plot([s for s, _ in points], [v for _, v in points], marker="o", color="tab:orange")
        low, high = min(v for _, v in points), max(v for _, v in points)
        shown = _value_format(high - low)
        keep = kept(curves.evals)
        if keep is not None and _is_number(keep.get(metric)):
            right.scatter([keep["step"]], [keep[metric]], s=160, facecolors="none", edgecolors="black",
                          linewidths=1.5, zorder=3, label=f"kept: {keep[metric]:{shown}} at update {keep['step']}")
            right.legend(loc="best")
        gaps = [b - a for (a, _), (b, _) in zip(points, points[1:])]
        if len(points) <= 8 and min(gaps, default=end) >= 0.1 * end:  # a few, apart: values written over them
            for step, value in points:
                where = step / end
                right.annotate(f"{value:{shown}}", (step, value), textcoords="offset points", xytext=(0, 9),
                               ha="left" if where < 0.1 else "right" if where > 0.9 else "center")
        pad = (high - low) or max(abs(high), 1.0)
        right.set_ylim(low - 0.15 * pad, high + 0.25 * pad)
    else:
        _say_empty(right, "no evaluation yet" if not curves.evals else f"no {metric} in the evaluations")
    right.set(title="validation", xlabel="update", ylabel=score_label(curves.evals, metric))
    if title:
        fig.suptitle(title)
    fig.tight_layout()

    out = Path(out)
    fmt = out.suffix[1:].lower() if out.suffix.lower() in FORMATS else "png"
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        fig.savefig(tmp, dpi=110, format=fmt)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _value_format(spread: float) -> str:
    """A format that tells the drawn values apart: F1 59.9 and 58.6, bits per token 8.1893
    and 8.1871."""
    if spread <= 0:
        return ".3g"
    return f".{min(max(1 - math.floor(math.log10(spread)), 1), 4)}f"


def _say_empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_yticks([])


class RunCurve:
    """A training run's OUTPUT/curve.png, redrawn from its metrics.jsonl when the trainer
    calls `redraw` (after each evaluation; the last update always evaluates, so the end of a
    run is drawn too). Only the main process draws. Without matplotlib
    `say` gets the pip hint, once; a drawing that fails is said once and never stops training."""

    def __init__(self, folder: Path, say: Callable[[str], None], enabled: bool = True):
        self.folder, self.say, self.enabled, self.failed = Path(folder), say, enabled, False

    def redraw(self) -> None:
        if not self.enabled:
            return
        try:
            curves = read_curves(self.folder / METRICS_FILE)
            if not curves.empty:
                draw_curves(curves, self.folder / CURVE_FILE, title=default_title(self.folder.name, curves))
        except PlotsMissing:
            self.enabled = False
            self.say(f"no {CURVE_FILE}: {PLOTS_HINT} to draw training curves")
        except Exception as exc:  # noqa: BLE001 - a picture is never worth a training run
            if not self.failed:
                self.say(f"{CURVE_FILE} not drawn: {type(exc).__name__}: {one_line(exc)}")
            self.failed = True
