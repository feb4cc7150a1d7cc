"""The benchmark scripts run (tiny shapes) and write their results; no timing is asserted.

Each script's main() is called in-process with --tiny (the attention script also spawns its
peak-memory subprocess), plus one real command line. FlexAttention compilation is slow, so the
flex case runs only with LFCLI_SLOW_TESTS=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import attention  # noqa: E402
import cli_folder  # noqa: E402
import infer_breakdown  # noqa: E402
import common  # noqa: E402
import dtype  # noqa: E402
import encoder  # noqa: E402
import run_all  # noqa: E402
import scaling  # noqa: E402
import short_docs  # noqa: E402

slow = pytest.mark.slow  # skipped unless LFCLI_SLOW_TESTS=1 (conftest.py)


def _plot_ok(path: Path, printed: str) -> bool:
    return path.exists() or "matplotlib is not installed" in printed


def test_attention_tiny(tmp_path, capsys):
    out = tmp_path / "attention.json"
    res = attention.main(["--tiny", "--sizes", "128", "--impls", "lfcli,transformers,sdpa_dense",
                          "--memory", "targets", "--json", str(out), "--plot", str(tmp_path / "a.png")])
    printed = capsys.readouterr().out
    assert json.loads(out.read_text())["benchmark"] == "attention"
    cases = {c["impl"]: c for c in res["cases"]}
    assert set(cases) == {"lfcli", "transformers", "sdpa_dense"}
    for c in cases.values():
        assert "error" not in c, c
        assert c["median_s"] > 0
    # Global projections are copies of the local ones, so all implementations agree.
    assert cases["transformers"]["max_abs_diff"] < 1e-4
    assert cases["sdpa_dense"]["max_abs_diff"] < 1e-4
    # peak memory measured in a fresh subprocess for lfcli and transformers
    assert "peak_mb" in cases["lfcli"] and "peak_mb" in cases["transformers"], cases
    assert "roofline" in printed and "3*2*n*h*h" in printed
    assert _plot_ok(tmp_path / "a.png", printed)


def test_attention_targets_and_failures_are_reported():
    rates = {"fp32": 100.0}  # the matmul rate timed in each case's rounds
    flops = common.attention_flops(4096, 768, 12, 512)
    cases = [
        {"impl": "lfcli", "n": 4096, "dtype": "fp32", "flops": flops, "median_s": 0.1, "peak_mb": 100.0},
        {"impl": "transformers", "n": 4096, "dtype": "fp32", "flops": flops, "median_s": 1.0, "peak_mb": 400.0},
        {"impl": "lfcli", "n": 16384, "dtype": "fp32", "flops": 4 * flops, "median_s": 0.4, "peak_mb": 500.0},
        {"impl": "flex", "n": 4096, "dtype": "fp32", "flops": flops, "error": "BackendCompilerFailed: boom"},
    ]
    for c in cases:
        c["matmul_gflops"] = rates
    targets = {t["name"]: t["pass"] for t in attention.evaluate_targets(cases, ["fp32"])}
    assert targets == {
        "attention fp32 n=4k time lfcli/transformers": True,
        "attention fp32 n=4k time / fp32 roofline": flops / 100e9 * 1.5 >= 0.1,
        "attention fp32 n=4k peak memory lfcli/transformers": True,
        "attention fp32 lfcli peak memory 16k/4k": False,
    }
    rows = attention.table_rows(cases, ["fp32"], [4096], ["lfcli", "transformers", "flex"])
    assert any("ERROR: BackendCompilerFailed" in str(cell) for row in rows for cell in row)


def test_bench_rounds_interleaves_and_respects_the_budget():
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in ("a", "b", "c")}
    res = common.bench_rounds(fns, torch.device("cpu"), warmup=1, repeats=3)
    assert calls == ["a", "b", "c"] + ["a", "b", "c"] * 3  # warm-up, then whole rounds in turn
    assert all(r["repeats"] == 3 and r["min_s"] <= r["median_s"] <= r["max_s"] for r in res.values())
    slow = {"slow": lambda: time.sleep(0.05)}
    assert common.bench_rounds(slow, torch.device("cpu"), warmup=1, repeats=50, budget_s=0.2, min_repeats=2)["slow"]["repeats"] < 50


def test_flex_block_mask_matches_create_block_mask():
    from torch.nn.attention.flex_attention import create_block_mask

    for n, w1 in ((384, 64), (300, 100), (1024, 256)):
        mine = attention.band_block_mask(n, w1, "cpu")
        ref = create_block_mask(attention.allowed_mask_mod(w1), None, None, n, n, device="cpu")
        assert torch.equal(mine.to_dense(), ref.to_dense()), (n, w1)


@slow
def test_attention_flex_tiny(tmp_path):
    res = attention.main(["--tiny", "--sizes", "128", "--impls", "lfcli,flex", "--memory", "none"])
    flex = next(c for c in res["cases"] if c["impl"] == "flex")
    assert "error" in flex or flex["max_abs_diff"] < 1e-4


def test_encoder_tiny(tmp_path):
    out = tmp_path / "encoder.json"
    res = encoder.main(["--tiny", "--json", str(out)])
    assert set(res["results"]) == {"lfcli", "transformers"}
    assert res["max_abs_diff"] < 1e-4  # same weights through save_pretrained / from_pretrained
    assert json.loads(out.read_text())["benchmark"] == "encoder"


def test_cli_folder_tiny(tmp_path):
    """The CLI on a folder of LitBank excerpts (real data from ../shared), and the same
    folder through the Pipeline: same documents, same token counts, FLOPs counted."""
    novels = common.shared_data_dir() / "litbank" / "original"
    if not any(novels.glob("*.txt")):
        pytest.skip(f"{novels} has no LitBank originals: the shared data folder (../shared/data or $LFCLI_SHARED) is not here")
    if bundled_available(DEFAULT_MODEL) is not None:
        pytest.skip(f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}")
    res = cli_folder.main(["--tiny", "--json", str(tmp_path / "c.json")])
    assert set(res["results"]) == {"cli", "pipeline"}
    assert res["docs"] == 2 and res["tokens"] > 1000  # 3,000 characters each: windowed at 512
    assert res["windows"] > res["docs"] and res["flops"] > 0
    assert res["results"]["cli"]["median_s"] > res["results"]["pipeline"]["median_s"]  # + start-up and load


def test_infer_breakdown_tiny(tmp_path):
    """Each task over a LitBank novel's opening, stage by stage: the stages add up to the wall
    time, and the windows' tokens are counted (the quarter overlap shows for qa and corefs)."""
    novels = common.shared_data_dir() / "litbank" / "original"
    if not any(novels.glob("*.txt")):
        pytest.skip(f"{novels} has no LitBank originals: the shared data folder (../shared/data or $LFCLI_SHARED) is not here")
    if bundled_available(DEFAULT_MODEL) is not None:
        pytest.skip(f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}")
    res = infer_breakdown.main(["--tiny", "--tasks", "embed,corefs", "--json", str(tmp_path / "b.json")])
    for task, r in res["results"].items():
        assert abs(sum(r["stages"].values()) - r["wall_s"]) < 1e-6 and r["stages"]["encode"] > 0, task
        assert r["tokens"] > 1000 and r["x_roofline"] > 0
    assert res["results"]["corefs"]["window_overhead"] > 1.2  # 512-token windows overlapping by a quarter


def test_cli_folder_skips_without_the_shared_data(tmp_path):
    """A fresh clone has no ../shared: the data-dependent benchmark test skips with a reason."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", f"{__file__}::test_cli_folder_tiny"],
        capture_output=True, text=True, env={**os.environ, "LFCLI_SHARED": str(tmp_path)}, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 0 and "1 skipped" in proc.stdout, proc.stdout[-2000:]
    assert "no LitBank originals" in proc.stdout


def test_short_docs_tiny(tmp_path):
    res = short_docs.main(["--tiny", "--docs", "8", "--batch-size", "4", "--json", str(tmp_path / "s.json")])
    assert res["cosine_min"] > 0.999
    assert set(res["results"]) == {"lfcli", "sentence-transformers"}


def test_scaling_tiny_command_line(tmp_path):
    out = tmp_path / "scaling.json"
    proc = subprocess.run([sys.executable, str(BENCH / "scaling.py"), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "us/token" in proc.stdout
    res = json.loads(out.read_text())
    assert [c["n"] for c in res["cases"]] == list(scaling.TINY_SIZES)


def test_run_all_tiny(tmp_path, capsys):
    res = run_all.main(["--tiny", "--only", "scaling", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "error" not in res["benchmarks"]["scaling"]
    assert (tmp_path / "results.json").exists() and (tmp_path / "report.txt").exists()
    assert (tmp_path / "scaling.json").exists()
    assert "Triton banded kernel" in printed
    assert "Summary of targets" in (tmp_path / "report.txt").read_text()


def test_dtype_tiny(tmp_path):
    """fp32 vs bf16: both dtypes where the CPU has native bf16 (only fp32 elsewhere), every
    part with its anchor, each row against its own dtype's matmul rate."""
    if bundled_available(DEFAULT_MODEL) is not None:
        pytest.skip(f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}")
    res = dtype.main(["--tiny", "--json", str(tmp_path / "d.json")])
    expected = {"fp32", "bf16"} if res["native_bf16"] else {"fp32"}
    assert {r["dtype"] for r in res["rows"]} == expected
    parts = {r["part"].split()[0] for r in res["rows"]}
    assert parts == {"attention", "encoder", "bundled"}
    assert {r["impl"] for r in res["rows"]} == {"lfcli", "transformers", "sentence-transformers"}
    for r in res["rows"]:
        assert r["x_roof"] > 0 and r["matmul_gflops"] > 0
        if r["impl"] == "lfcli" and r["dtype"] == "bf16":
            assert r["min_cosine_to_fp32"] > 0.99
    assert all(t["pass"] is None for t in res["targets"])  # --tiny judges nothing


@pytest.mark.parametrize("script", ["eval_qa", "eval_coref", "eval_zeroshot", "eval_retrieval", "cv_classify", "dtype"])
def test_every_script_takes_quick(script):
    """`run_all.py --quick` runs them all with --quick (and --json)."""
    proc = subprocess.run([sys.executable, str(BENCH / f"{script}.py"), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--quick" in proc.stdout and "--json" in proc.stdout
    assert script in run_all.BENCHMARKS + run_all.EVALUATIONS


def test_train_profile_tiny(tmp_path):
    """Every part of the step is found in the profile: the band's region, the linear layers,
    lfcli's dropout and the optimizer, forward and backward, under both band backwards."""
    import train_profile

    for band_grad in ("fused", "autograd"):
        os.environ["LFCLI_BAND_GRAD"] = band_grad
        try:
            res = train_profile.main(["--tiny", "--cases", "128", "--dtypes", "fp32", "--modes", "full",
                                      "--json", str(tmp_path / "p.json")])
        finally:
            os.environ.pop("LFCLI_BAND_GRAD")
        (rec,) = res["records"]
        for part in ("linear fwd", "linear bwd", "band fwd", "band bwd", "dropout", "optimizer"):
            assert rec["parts"].get(part, 0) > 0, (band_grad, part, rec["parts"])
        assert json.loads((tmp_path / "p.json").read_text())["band_grad"] == band_grad


def test_train_memory_tiny(tmp_path):
    import train_memory

    res = train_memory.main(["--tiny", "--variants", "lfcli", "--json", str(tmp_path / "m.json")])
    rss = res["variants"]["lfcli"]["rss_mb"]
    assert len(rss) == 12 and all(r > 0 for r in rss)


def test_micro_batches_quick(tmp_path):
    """The step of each micro-batch size runs the QA model the trainer builds and reports its
    CPU time split into user and system."""
    import micro_batches

    res = micro_batches.main(["--quick", "--threads", "1", "--json", str(tmp_path / "m.json")])
    assert [r["micro_tokens"] for r in res["rows"]] == [1024, 256]
    assert [r["windows"] for r in res["rows"]] == [16, 4]
    assert all(r["tokens_per_s"] > 0 and r["user_s"] >= 0 and r["system_s"] >= 0 for r in res["rows"])
    assert json.loads((tmp_path / "m.json").read_text())["model"] == "minilm-l6-long"


HELPERS = ("common.py", "gpu_profile.py")  # modules the scripts import, not scripts


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPERS))
def test_every_benchmark_answers_help_and_takes_quick(script):
    """Each script says how to run it, and takes --quick (run_all.py --quick is the smoke test
    of them all: each such run takes a few minutes at most)."""
    r = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "--quick" in r.stdout, f"{script}: no --quick in its --help"


def test_run_all_skips_the_gpu_check_without_a_gpu_saying_why(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: the GPU check would run")
    res = run_all.main(["--only", "gpu_check", "--out", str(tmp_path)])
    assert res["benchmarks"]["gpu_check"] == {"skipped": "no CUDA GPU on this machine"}
    assert "gpu_check: skipped: no CUDA GPU" in capsys.readouterr().out


def test_infer_breakdown_sorts_profiled_ops_by_kind():
    """--ops: the profiler's ops summed by kind (a matmul is a matmul, a layer norm a layer norm)."""
    import infer_breakdown
    from torch.profiler import ProfilerActivity, profile

    assert infer_breakdown.op_kind("aten::addmm") == "matmul"
    assert infer_breakdown.op_kind("mkldnn::_linear_pointwise") == "matmul"
    assert infer_breakdown.op_kind("aten::native_layer_norm") == "layer norm"
    assert infer_breakdown.op_kind("aten::something_new") == "other ops"
    x, w = torch.randn(256, 256), torch.randn(256, 256)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            y = torch.nn.functional.layer_norm(x @ w, (256,))
    kinds = infer_breakdown.ops_by_kind(prof)
    assert kinds["matmul"] > 0 and kinds["layer norm"] > 0 and y.shape == x.shape
