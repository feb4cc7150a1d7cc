"""benchmarks/train_speed.py runs (tiny shapes) and writes its results; no timing is asserted.
Its FLOP counts are checked against hand-worked values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import train_speed  # noqa: E402


def test_band_keys_are_clipped_at_the_sequence_ends():
    # w1 = 256: a query sees 2*w1 + 1 = 513 keys, minus the ones beyond either end.
    assert train_speed.band_key_count(512, 512) == 512 * 513 - 256 * 257
    assert train_speed.band_key_count(4096, 512) == 4096 * 513 - 256 * 257
    assert train_speed.band_key_count(8, 512) == 64  # shorter than the window: dense


def test_flop_counts():
    cfg = dict(num_hidden_layers=2, hidden_size=8, intermediate_size=32, attention_window=4)
    n, B, r = 10, 3, 2
    f = train_speed.flop_counts(n, B, cfg, rank=r)
    lin = B * 2 * 2 * n * (4 * 64 + 2 * 8 * 32)
    band = B * 2 * 4 * 8 * train_speed.band_key_count(n, 4)
    adapters = B * 2 * 2 * n * r * (10 * 8 + 2 * 32)
    assert f["forward"] == lin + band and f["full"] == 3 * (lin + band)
    assert f["lora"] == (lin + band) + lin - B * 3 * 2 * n * 64 + 2 * band + 3 * adapters
    for cfg in train_speed.MODELS.values():  # at the real sizes LoRA's step is a little over 2x the forward
        for n, B in train_speed.FULL_CASES:
            f = train_speed.flop_counts(n, B, cfg)
            assert 2.1 * f["forward"] < f["lora"] < 2.4 * f["forward"]


def test_train_speed_tiny(tmp_path, capsys):
    out = tmp_path / "train_speed.json"
    res = train_speed.main(["--tiny", "--json", str(out), "--plot", str(tmp_path / "t.png")])
    printed = capsys.readouterr().out
    assert json.loads(out.read_text())["benchmark"] == "train_speed"
    assert res["machine"].get("cpu", "") in printed  # the CPU model name is in the header
    dtypes = ["fp32", "bf16"] if res["machine"]["native_bf16"] else ["fp32"]
    assert res["dtypes"] == dtypes
    keys = {(r["model"], r["n"], r["batch"], r["dtype"], r["mode"]) for r in res["results"]}
    assert keys == {(m, n, b, d, mode) for m in ("bundled", "base") for n, b in train_speed.TINY_CASES
                    for d in dtypes for mode in ("full", "lora")}
    for r in res["results"]:
        assert r["lfcli_s"] > 0 and r["transformers_s"] > 0 and r["update_s"] > 0 and r["roofline_s"] > 0
        assert r["pass"] is None  # --tiny gives no verdict
    # Same weights, same adapters: both sides compute the same loss and gradients.
    for model, check in res["same_function"].items():
        for mode in ("full", "lora"):
            assert check[mode]["loss_diff"] < 1e-5 and check[mode]["grad_rel_diff"] < 1e-4, (model, mode, check)
            assert check[mode]["params_compared"] == check[mode]["params_lfcli"]
    assert all(t["pass"] is None for t in res["targets"]) and res["targets"]
    assert "x roof" in printed and "3*2*n*h*h" in printed
    assert (tmp_path / "t.png").exists() or "matplotlib is not installed" in printed


def test_train_speed_one_mode_without_transformers(tmp_path):
    res = train_speed.main(["--tiny", "--models", "bundled", "--cases", "128x1", "--dtypes", "fp32",
                            "--modes", "lora", "--impls", "lfcli", "--no-update"])
    (r,) = res["results"]
    assert r["mode"] == "lora" and "transformers_s" not in r and "update_s" not in r
    assert r["lfcli_x_roof"] > 0 and res["same_function"] == {}


def test_each_dtype_is_judged_against_its_own_target():
    assert train_speed.target_of("bf16") == 5.0 and train_speed.target_of("fp32") == 1.5
