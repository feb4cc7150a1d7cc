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

Needs matplotlib (`pip install -e '.[dev]'` or `pip install matplotlib`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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
# What the `score` of each task's evaluations is, for the axis label.
SCORE_LABELS = [
    ("gap_f1", "validation: mean of CoNLL F1 and GAP F1"),  # corefs with --gap-validation
    ("conll_f1", "validation CoNLL F1"),
    ("exact_match", "validation F1 (SQuAD)"),
    ("macro_f1", "validation macro-F1"),
    ("bpt", "held-out bits per token"),
]


def read_metrics(path: Path) -> tuple[list[tuple[int, float]], list[dict]]:
    """(update, loss) of the step lines and the eval records, in update order. A resumed run
    repeats updates after its restart point: the later line of an update wins."""
    losses: dict[int, float] = {}
    evals: dict[int, dict] = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise SystemExit(f"{path}:{number}: not JSON ({exc})") from None
            event = record.get("event")
            if event == "step" and isinstance(record.get("loss"), (int, float)):
                losses[int(record["step"])] = float(record["loss"])
            elif event == "eval" and "step" in record:
                evals[int(record["step"])] = record
    return sorted(losses.items()), [evals[s] for s in sorted(evals)]


def score_label(evals: list[dict], metric: str) -> str:
    if metric != "score":
        return f"validation {metric}"
    keys = set().union(*(e.keys() for e in evals)) if evals else set()
    return next((label for key, label in SCORE_LABELS if key in keys), "validation score")


def kept(evals: list[dict]) -> dict | None:
    """The evaluation whose model the run kept: the last one marked best."""
    best = [e for e in evals if e.get("best")]
    return best[-1] if best else None


def table(evals: list[dict], metric: str) -> str:
    keep = kept(evals)
    lines = [f"{'update':>7} {'epoch':>6} {metric:>12}"]
    for e in evals:
        value = e.get(metric)
        epoch = e.get("epoch")
        lines.append(f"{e['step']:>7} {epoch if epoch is not None else '-':>6} "
                     f"{value if not isinstance(value, float) else round(value, 2):>12}"
                     + ("  kept" if e is keep else ""))
    return "\n".join(lines)


def plot(path: Path, out: Path, metric: str = "score", title: str | None = None) -> Path:
    losses, evals = read_metrics(path)
    if not losses and not evals:
        raise SystemExit(f"{path}: no step or eval lines (is it a metrics.jsonl of lfcli finetune?)")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("plot_training.py needs matplotlib: pip install matplotlib") from None

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    if losses:
        left.plot([s for s, _ in losses], [v for _, v in losses], color="tab:blue", linewidth=1.2)
        left.set_yscale("log")
    left.set(title="training loss", xlabel="update", ylabel="loss (log scale)")
    left.grid(alpha=0.3)
    points = [(e["step"], e[metric]) for e in evals if isinstance(e.get(metric), (int, float))]
    if points:
        right.plot([s for s, _ in points], [v for _, v in points], marker="o", color="tab:orange")
        keep = kept(evals)
        if keep is not None and isinstance(keep.get(metric), (int, float)):
            right.scatter([keep["step"]], [keep[metric]], s=160, facecolors="none", edgecolors="black",
                          linewidths=1.5, zorder=3, label=f"kept: {keep[metric]:.1f} at update {keep['step']}")
            right.legend(loc="best")
        if len(points) <= 8:  # few evaluations: their values beside the points
            for step, value in points:
                right.annotate(f"{value:.1f}", (step, value), textcoords="offset points", xytext=(-6, 8), ha="right")
    if losses:
        right.set_xlim(left.get_xlim())
    if points:
        low, high = min(v for _, v in points), max(v for _, v in points)
        pad = max(high - low, 1.0) * 0.15
        right.set_ylim(low - pad, high + pad)
    right.set(title="validation", xlabel="update", ylabel=score_label(evals, metric))
    right.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(table(evals, metric))
    print(f"plot written to {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics", nargs="?", type=Path, help="a run's metrics.jsonl (default: the bundled models' curves)")
    p.add_argument("-o", "--output", type=Path, help="the PNG to write (default: METRICS with .png)")
    p.add_argument("--metric", default="score", help="the eval field to plot (default: score, the one that chose the kept model)")
    p.add_argument("--title", help="a title over both panels")
    args = p.parse_args(argv)
    if args.metrics is None:
        for metrics, out, title in BUNDLED_CURVES:
            plot(metrics, out, args.metric, title)
        return 0
    if not args.metrics.is_file():
        p.error(f"{args.metrics}: no such file")
    plot(args.metrics, args.output or args.metrics.with_suffix(".png"), args.metric, args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
