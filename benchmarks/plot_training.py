"""Training curves: a training run's metrics.jsonl as a PNG of the loss and the validation score
against updates.

`lfcli finetune` and `lfcli pretrain-continue` write DIR/metrics.jsonl, one JSON object a
line: `"event": "step"` lines carry the training loss (every `log_every` updates), `"event":
"eval"` lines the validation metrics after each evaluation (`score` is the one that chose the
kept model; `"best": true` marks a new best). The left panel is the loss, the right panel the
validation score with the kept evaluation circled; the evaluations are also printed as a table.

    python benchmarks/plot_training.py                         # the bundled models' curves (below)
    python benchmarks/plot_training.py DIR/metrics.jsonl -o curve.png
    python benchmarks/plot_training.py DIR/metrics.jsonl -o curve.png --metric exact_match --title "my QA run"

Without arguments it redraws the curves the model cards show, from the metrics files in the
repository:

    lfcli/data/models/minilm-l6-long-squad/metrics.jsonl  -> benchmarks/results/qa_training.png
    benchmarks/results/coref_training_metrics.jsonl       -> benchmarks/results/coref_training.png
    benchmarks/results/coref_stage2_metrics.jsonl         -> benchmarks/results/coref_stage2_training.png

The reading and drawing are lfcli's own (lfcli/pipelines/view/curves.py, as `lfcli plot RUN_DIR`
draws them); this script adds the bundled list, a title and the evaluations table on stdout.
Needs matplotlib (`pip install 'lfcli[plots]'`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfcli.pipelines.view.curves import (  # noqa: F401  kept, score_label: this script's names too
    PlotsMissing,
    draw_curves,
    evaluations_table,
    kept,
    read_curves,
    score_label,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BUNDLED_CURVES = [
    (ROOT / "lfcli" / "data" / "models" / "minilm-l6-long-squad" / "metrics.jsonl", RESULTS / "qa_training.png",
     "minilm-l6-long-squad: lfcli finetune qa (SQuAD)"),
    (RESULTS / "coref_training_metrics.jsonl", RESULTS / "coref_training.png",
     "minilm-l6-long-litbank-coref, stage 1: lfcli finetune corefs (LitBank fold 0)"),
    (RESULTS / "coref_stage2_metrics.jsonl", RESULTS / "coref_stage2_training.png",
     "minilm-l6-long-litbank-coref, stage 2: LitBank + GAP rows, from stage 1"),
]


def read_metrics(path: Path) -> tuple[list[tuple[int, float]], list[dict]]:
    """(update, loss) of the step lines and the eval records, in update order (the reading
    rules, resumed runs and torn last lines among them, are curves.read_curves')."""
    curves = read_curves(path)
    return curves.losses, curves.evals


def plot(path: Path, out: Path, metric: str | None = None, title: str | None = None) -> Path:
    """Draw `path`'s curves into `out`; print the evaluations table and where the plot went."""
    curves = read_curves(path)
    if curves.empty:
        raise SystemExit(f"{path}: no step or eval lines (is it a metrics.jsonl of lfcli finetune?)")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        draw_curves(curves, out, metric, title)
    except PlotsMissing as exc:
        raise SystemExit(f"plot_training.py: {exc}") from None
    print(evaluations_table(curves.evals, metric))
    print(f"plot written to {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics", nargs="?", type=Path, help="a run's metrics.jsonl (default: the bundled models' curves)")
    p.add_argument("-o", "--output", type=Path, help="the PNG to write (default: METRICS with .png)")
    p.add_argument("--metric", help="the eval field to plot (default: the task's score, the one that chose the kept "
                   "model; bits per token for pretraining)")
    p.add_argument("--title", help="a title over both panels")
    p.add_argument("--quick", action="store_true", help="the same curves drawn into benchmarks/out/ (a smoke "
                   "test for run_all.py --quick: the committed plots stay as they are)")
    args = p.parse_args(argv)
    if args.metrics is None:
        for metrics, out, title in BUNDLED_CURVES:
            plot(metrics, ROOT / "benchmarks" / "out" / out.name if args.quick else out, args.metric, title)
        return 0
    if not args.metrics.is_file():
        p.error(f"{args.metrics}: no such file")
    plot(args.metrics, args.output or args.metrics.with_suffix(".png"), args.metric, args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
