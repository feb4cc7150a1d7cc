"""Training curves (pipelines/view/curves.py, `lfcli plot`, benchmarks/plot_training.py):
curve.png drawn by real tiny finetune and pretrain-continue runs beside their metrics.jsonl,
`lfcli plot` on a finished run and on one still training, metrics files a run leaves behind
(a torn last line, a resumed session's repeats, no evaluation yet, nothing at all), and
training and `lfcli plot` in a Python where matplotlib cannot be imported."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkpoints import TRAINING_TEXT, make_checkpoint
from lfcli.cli import app
from lfcli.pipelines.tasks.mlm.config import PretrainConfig
from lfcli.pipelines.tasks.mlm.pretrain import pretrain_continue
from lfcli.pipelines.train.finetune import finetune
from lfcli.pipelines.train.loop import TrainConfig
from lfcli.pipelines.view.curves import (
    CURVE_FILE,
    METRICS_FILE,
    PLOTS_HINT,
    RunCurve,
    default_metric,
    default_title,
    draw_curves,
    kept,
    read_curves,
    score_label,
)

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("one_thread")
# A Python in which `import matplotlib` fails, as where the plots extra is not installed.
NO_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None; "


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG, from its header; fails on anything that is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


def assert_drawn(path: Path) -> None:
    assert png_size(path) == (1100, 418)  # 10 x 3.8 inches at 110 dpi
    assert path.stat().st_size > 15_000  # two panels of lines and text, not a blank canvas


def write_lines(path: Path, lines: list, tail: str = "") -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines) + tail,
                    encoding="utf-8")
    return path


def step(s: int, loss: float) -> dict:
    return {"event": "step", "step": s, "max_steps": 30, "loss": loss}


def evaluation(s: int, score: float, best: bool) -> dict:
    return {"event": "eval", "step": s, "epoch": s / 10, "score": score, "macro_f1": score, "best": best}


# -- real tiny runs ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("base"), "LongformerModel", max_tokens=128, attention_window=16)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> Path:
    lines = [line for line in TRAINING_TEXT.splitlines() if line.strip()]
    path = tmp_path_factory.mktemp("data") / "train.jsonl"
    rows = [{"id": f"d{i}", "text": f"{lines[i % 7]} {lines[(i + 3) % 7]}", "label": "even" if i % 2 else "odd"}
            for i in range(24)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def finished(base, labelled, tmp_path_factory) -> Path:
    """A finished classify run: 6 updates, an evaluation every 2."""
    out = tmp_path_factory.mktemp("runs") / "cls"
    messages = []
    config = TrainConfig(max_steps=6, lr=1e-3, batch_tokens=200, eval_every=2, log_every=1, patience=None)
    finetune("classify", [str(labelled)], str(out), model=str(base), train_config=config, lora_rank=2,
             log=lambda r: messages.append(r["message"]) if r["event"] == "message" else None)
    assert not [m for m in messages if CURVE_FILE in m]  # matplotlib is here: no hint, no failure
    return out


def test_finetune_draws_curve_png_beside_metrics(finished):
    assert (finished / METRICS_FILE).is_file()
    assert_drawn(finished / CURVE_FILE)
    curves = read_curves(finished / METRICS_FILE)
    assert [s for s, _ in curves.losses] == [1, 2, 3, 4, 5, 6] and [e["step"] for e in curves.evals] == [2, 4, 6]
    assert curves.max_steps == 6 and default_metric(curves.evals) == "score"
    assert score_label(curves.evals, "score") == "validation macro-F1"
    assert not list(finished.glob(".*.tmp"))  # the image was written aside and moved in place


def test_curve_png_is_redrawn_after_each_evaluation(base, labelled, tmp_path):
    seen = {}

    def log(record):  # the trainer's record is written before the log hears of it
        if record["event"] in ("eval", "checkpoint"):
            seen[(record["event"], record["step"])] = (tmp_path / "run" / CURVE_FILE).stat().st_mtime_ns \
                if (tmp_path / "run" / CURVE_FILE).exists() else None

    config = TrainConfig(max_steps=4, lr=1e-3, batch_tokens=200, eval_every=2, log_every=1, patience=None)
    finetune("classify", [str(labelled)], str(tmp_path / "run"), model=str(base), train_config=config, lora_rank=2, log=log)
    assert seen[("eval", 2)] is None  # the eval line is written, then the curve drawn from it
    assert seen[("checkpoint", 2)] is not None and seen[("checkpoint", 4)] > seen[("checkpoint", 2)]


def test_pretrain_continue_draws_bits_per_token(tmp_path):
    tiny = make_checkpoint(tmp_path / "tiny", "LongformerModel", max_tokens=64, attention_window=16)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = [line for line in TRAINING_TEXT.splitlines() if line.strip()]
    for i in range(8):
        (corpus / f"doc{i}.txt").write_text(" ".join(lines[(i + k) % 7] for k in range(12)), encoding="utf-8")
    out = tmp_path / "mlm"
    pretrain_continue([str(corpus)], str(tiny), str(out), PretrainConfig(
        max_steps=4, warmup_steps=1, grad_accum=1, batch_size=2, save_every=2, eval_fraction=0.2, seed=3))
    assert_drawn(out / CURVE_FILE)
    evals = read_curves(out / METRICS_FILE).evals
    assert [e["step"] for e in evals] == [0, 2, 4]  # the baseline before the first update, then every 2
    assert default_metric(evals) == "bpt" and score_label(evals, "bpt") == "held-out bits per token"
    assert kept(evals)["bpt"] == min(e["bpt"] for e in evals[1:])  # the kept model has the lowest loss


def test_a_resumed_run_reads_as_one_run(base, labelled, tmp_path):
    """Stopped at update 7 (its last checkpoint at 4) and resumed: while the resumed session
    is at update 5, the first session's updates 6 and 7 and its evaluation at 6 are not shown."""
    out, seen = tmp_path / "run", {}
    config = dict(max_steps=8, lr=1e-3, batch_tokens=200, eval_every=2, save_every=4, log_every=1, patience=None)

    def stop_at_7(record):
        if record["event"] == "step" and record["step"] == 7:
            raise KeyboardInterrupt

    def look_at_5(record):
        if record["event"] == "step" and record["step"] == 5:
            seen["at 5"] = read_curves(out / METRICS_FILE)

    with pytest.raises(KeyboardInterrupt):
        finetune("classify", [str(labelled)], str(out), model=str(base), train_config=TrainConfig(**config),
                 lora_rank=2, log=stop_at_7)
    finetune("classify", [str(labelled)], str(out), model=str(base), train_config=TrainConfig(**config), lora_rank=2,
             log=look_at_5, resume=True)
    mid = seen["at 5"]
    assert [s for s, _ in mid.losses] == [1, 2, 3, 4, 5] and [e["step"] for e in mid.evals] == [2, 4]
    end = read_curves(out / METRICS_FILE)
    assert [s for s, _ in end.losses] == list(range(1, 9)) and [e["step"] for e in end.evals] == [2, 4, 6, 8]
    assert_drawn(out / CURVE_FILE)


def test_force_removes_the_earlier_runs_curve(base, labelled, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / CURVE_FILE).write_bytes(b"an earlier run's picture")
    at_start = []
    config = TrainConfig(max_steps=1, lr=1e-3, batch_tokens=200, patience=None)
    finetune("classify", [str(labelled)], str(out), model=str(base), train_config=config, lora_rank=2, force=True,
             log=lambda r: at_start.append((out / CURVE_FILE).exists()) if r["event"] == "start" else None)
    assert at_start == [False]  # gone before this run's first update
    assert_drawn(out / CURVE_FILE)


def test_lfcli_plot_on_a_finished_run(finished, tmp_path):
    (finished / CURVE_FILE).unlink()
    result = runner.invoke(app, ["plot", str(finished)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # the image is the output; the table and the path are for the eye
    assert f"lfcli: wrote {finished / CURVE_FILE} (6 loss points, 3 evaluations, update 6 of 6)" in result.stderr
    assert result.stderr.splitlines()[0].split() == ["update", "epoch", "score"] and "kept" in result.stderr
    assert_drawn(finished / CURVE_FILE)
    # RUN_DIR's own curve.png is derived: redrawn without --force. Its metrics.jsonl works as RUN_DIR.
    assert runner.invoke(app, ["plot", str(finished / METRICS_FILE), "--quiet"]).exit_code == 0
    # An explicit -o is the user's file: kept unless --force, as every lfcli output.
    mine = tmp_path / "mine.png"
    assert runner.invoke(app, ["plot", str(finished), "-o", str(mine), "--metric", "accuracy"]).exit_code == 0
    assert_drawn(mine)
    again = runner.invoke(app, ["plot", str(finished), "-o", str(mine)])
    assert again.exit_code == 2 and again.stderr.strip() == f"lfcli: error: {mine} exists; pass --force to overwrite"
    assert runner.invoke(app, ["plot", str(finished), "-o", str(mine), "--force"]).exit_code == 0
    copy = tmp_path / "cls_metrics.jsonl"  # a run's log kept under another name: NAME.png, the user's file
    copy.write_bytes((finished / METRICS_FILE).read_bytes())
    assert runner.invoke(app, ["plot", str(copy)]).exit_code == 0
    assert_drawn(tmp_path / "cls_metrics.png")
    assert runner.invoke(app, ["plot", str(copy)]).exit_code == 2
    svg = tmp_path / "curve.svg"
    assert runner.invoke(app, ["plot", str(finished), "-o", str(svg)]).exit_code == 0
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_lfcli_plot_on_a_run_still_training(base, labelled, tmp_path):
    out = tmp_path / "running"
    results = []

    def log(record):  # mid-run, from the trainer's own log: the metrics file is as it is now
        if record["event"] == "step" and record["step"] == 3:
            results.append(runner.invoke(app, ["plot", str(out), "-o", str(tmp_path / "mid.png")]))

    config = TrainConfig(max_steps=6, lr=1e-3, batch_tokens=200, eval_every=2, log_every=1, patience=None)
    finetune("classify", [str(labelled)], str(out), model=str(base), train_config=config, lora_rank=2, log=log)
    (result,) = results
    assert result.exit_code == 0, result.output
    assert "(3 loss points, 1 evaluation, update 3 of 6)" in result.stderr
    assert_drawn(tmp_path / "mid.png")


def test_lfcli_plot_reads_a_torn_last_line(finished, tmp_path):
    """A copy of the finished run's log cut in the middle of a line: what a reader meets while
    the trainer is writing."""
    text = (finished / METRICS_FILE).read_text(encoding="utf-8")
    cut = text.index('"event": "eval", "step": 4')
    run = tmp_path / "cut"
    run.mkdir()
    (run / METRICS_FILE).write_text(text[:cut], encoding="utf-8")
    result = runner.invoke(app, ["plot", str(run)])
    assert result.exit_code == 0, result.output
    assert "(4 loss points, 1 evaluation, update 4 of 6)" in result.stderr
    assert "not JSON" not in result.stderr  # a torn last line is normal, not worth a note
    assert_drawn(run / CURVE_FILE)


# -- metrics files by hand: what runs leave behind ---------------------------------------------
def test_torn_blank_and_broken_lines(tmp_path):
    path = write_lines(tmp_path / METRICS_FILE, [{"event": "start", "max_steps": 30}, step(10, 2.0), "", "   ",
                                                 "{not json", [1, 2], step(20, 1.0), evaluation(20, 0.5, True)],
                       tail='{"event": "step", "step": 30, "lo')
    curves = read_curves(path)
    assert curves.losses == [(10, 2.0), (20, 1.0)] and [e["step"] for e in curves.evals] == [20]
    assert curves.unreadable == 2 and curves.max_steps == 30 and curves.last_step == 20
    # A last line complete but for its newline is read.
    path.write_text(path.read_text().rpartition("\n")[0] + "\n" + json.dumps(step(30, 0.5)), encoding="utf-8")
    assert read_curves(path).losses[-1] == (30, 0.5)


def test_a_resumed_run_replaces_what_it_repeats(tmp_path):
    # The first session logged up to update 25 and evaluated at 10 and 20, was stopped, and
    # resumed from its checkpoint at update 20: its lines from update 21 on are replaced.
    first = [{"event": "start", "max_steps": 30}, step(5, 2.0), step(10, 1.0), evaluation(10, 0.3, True), step(15, 0.9),
             step(20, 0.8), evaluation(20, 0.4, True), step(25, 0.7)]
    second = [{"event": "start", "max_steps": 30}, {"event": "message", "message": "resuming at update 20 of 30"},
              step(21, 9.0), step(22, 8.0)]
    path = write_lines(tmp_path / METRICS_FILE, first + second)
    curves = read_curves(path)
    assert [s for s, _ in curves.losses] == [5, 10, 15, 20, 21, 22] and curves.losses[-1] == (22, 8.0)
    assert [e["step"] for e in curves.evals] == [10, 20] and curves.last_step == 22
    # Lines out of update order within one session (a file put together by hand) are all kept.
    write_lines(path, [step(10, 1.0), step(20, 0.5), evaluation(10, 0.3, True), evaluation(20, 0.4, True)])
    curves = read_curves(path)
    assert curves.losses == [(10, 1.0), (20, 0.5)] and [e["step"] for e in curves.evals] == [10, 20]
    # At the same update the later line wins.
    write_lines(path, [step(10, 1.0), evaluation(10, 0.3, True), step(10, 2.0), evaluation(10, 0.6, False)])
    curves = read_curves(path)
    assert curves.losses == [(10, 2.0)] and curves.evals[0]["score"] == 0.6 and kept(curves.evals) is None


def test_no_evaluation_yet_draws_the_loss_alone(tmp_path):
    run = tmp_path / "early"
    run.mkdir()
    write_lines(run / METRICS_FILE, [{"event": "start", "max_steps": 100}] + [step(s, 5.0 - s / 10) for s in (10, 20, 30)])
    result = runner.invoke(app, ["plot", str(run)])
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == f"lfcli: wrote {run / CURVE_FILE} (3 loss points, 0 evaluations, update 30 of 100)"
    assert_drawn(run / CURVE_FILE)


@pytest.mark.parametrize("lines", [[], [{"event": "start", "max_steps": 100}], ["", "{broken"]],
                         ids=["empty", "started", "broken"])
def test_nothing_to_draw_yet_is_one_line_and_exit_1(tmp_path, lines):
    path = write_lines(tmp_path / METRICS_FILE, lines)
    assert read_curves(path).empty
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"lfcli: error: {path}: nothing to draw yet") and result.stderr.count("\n") == 1
    assert not (tmp_path / CURVE_FILE).exists()


def test_plot_errors_are_one_line(finished, tmp_path):
    def error(*args):
        result = runner.invoke(app, ["plot", *map(str, args)])
        assert result.stderr.startswith("lfcli: error: ") and result.stderr.count("\n") == 1, result.output
        return result.exit_code, result.stderr

    assert error(tmp_path) == (1, f"lfcli: error: {tmp_path}: no metrics.jsonl there (lfcli finetune and "
                                   "pretrain-continue write it into their -o folder when training starts)\n")
    assert error(tmp_path / "missing")[0] == 1
    assert error(finished, "-o", tmp_path / "no-such-folder" / "c.png")[0] == 1
    assert error(finished, "-o", tmp_path / "curve.jpg")[0] == 2
    code, message = error(finished, "--metric", "bleu")
    assert code == 2 and "accuracy" in message and "macro_f1" in message


def test_a_curve_that_cannot_be_drawn_never_stops_training(tmp_path):
    write_lines(tmp_path / METRICS_FILE, [step(1, 1.0), evaluation(1, 0.5, True)])
    (tmp_path / CURVE_FILE).mkdir()  # the image cannot take its place
    said = []
    curve = RunCurve(tmp_path, said.append)
    curve.redraw()
    curve.redraw()
    assert len(said) == 1 and said[0].startswith(f"{CURVE_FILE} not drawn: ")
    RunCurve(tmp_path / "other", said.append, enabled=False).redraw()  # not the main process: nothing
    assert len(said) == 1


def test_title_and_labels(tmp_path):
    path = write_lines(tmp_path / METRICS_FILE, [{"event": "start", "max_steps": 30}, step(10, 1.0)])
    assert default_title("qa", read_curves(path)) == "qa: update 10 of 30"
    coref = [{"event": "eval", "step": 1, "score": 50.0, "conll_f1": 50.0}]
    assert score_label(coref, "score") == "validation CoNLL F1" and score_label(coref, "muc_f1") == "validation muc_f1"
    assert score_label(coref + [{"step": 2, "gap_f1": 1.0}], "score") == "validation: mean of CoNLL F1 and GAP F1"
    out = draw_curves(read_curves(path), tmp_path / "c.png", title="a title")
    assert_drawn(out)


# -- without matplotlib --------------------------------------------------------------------------
def run_python(code: str, matplotlib: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LFCLI_DEBUG"}
    prelude = "import sys; " if matplotlib else NO_MATPLOTLIB
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_without_matplotlib_plot_is_the_pip_hint_and_exit_1(finished):
    proc = run_python(f"""
        from lfcli.cli import main
        sys.argv = ["lfcli", "plot", {str(finished)!r}]
        main()
    """)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"lfcli: error: drawing curves needs matplotlib: {PLOTS_HINT}\n"


def test_without_matplotlib_training_finishes_with_one_hint(base, labelled, tmp_path):
    out = tmp_path / "run"
    proc = run_python(f"""
        import torch
        torch.set_num_threads(1)
        from lfcli.cli import main
        sys.argv = ["lfcli", "finetune", "classify", {str(labelled)!r}, "-o", {str(out)!r}, "-m", {str(base)!r},
                    "--max-steps", "12", "--batch-tokens", "200", "--lora-rank", "2", "--patience", "9"]
        main()
    """)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["updates"] == 12
    assert proc.stderr.count("lfcli: eval at update") >= 2  # more evaluations than hints
    hints = [line for line in proc.stderr.splitlines() if CURVE_FILE in line]
    assert hints == [f"lfcli: no {CURVE_FILE}: {PLOTS_HINT} to draw training curves"]
    assert "Traceback" not in proc.stderr and not (out / CURVE_FILE).exists()
    assert (out / "adapter_model.safetensors").is_file() and (out / "training_summary.json").is_file()


def test_lfcli_help_imports_no_matplotlib():
    proc = run_python("""
        from lfcli.cli import main
        sys.argv = ["lfcli", "plot", "--help"]
        try:
            main()
        except SystemExit:
            pass
        print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'torch')))
    """, matplotlib=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]" and "RUN_DIR" in proc.stdout


# -- the benchmark script is a caller of the same code ------------------------------------------
def test_plot_training_draws_through_curves(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import plot_training
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from lfcli.pipelines.view import curves

    assert plot_training.kept is curves.kept and plot_training.score_label is curves.score_label
    path = write_lines(tmp_path / "m.jsonl", [step(10, 2.0), evaluation(10, 0.4, True), step(20, 1.0),
                                              evaluation(20, 0.3, False), {"event": "start"}, step(11, 1.5)])
    assert plot_training.read_metrics(path) == ([(10, 2.0), (11, 1.5)], [evaluation(10, 0.4, True)])
    assert plot_training.main([str(path), "-o", str(tmp_path / "m.png"), "--title", "t"]) == 0
    assert_drawn(tmp_path / "m.png")
    printed = capsys.readouterr().out
    assert "kept" in printed and f"plot written to {tmp_path / 'm.png'}" in printed
