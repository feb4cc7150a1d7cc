"""The Python API and the README's main job on the bundled model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checkpoints import make_checkpoint

import lfcli
from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

ROOT = Path(__file__).resolve().parents[1]
needs_bundled = pytest.mark.skipif(
    bundled_available(DEFAULT_MODEL) is not None, reason=f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}"
)


def test_import_is_light():
    code = "import sys, lfcli; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_api_rows(tmp_path):
    enc = make_checkpoint(tmp_path / "enc", "LongformerModel")
    rows = lfcli.embed(["The court held that.", {"id": "x", "text": "She came back."}, " "], model=str(enc))
    assert [r["id"] for r in rows] == ["0", "x", "2"]
    assert len(rows[0]["embedding"]) == 32 and rows[2]["error"]
    rows = lfcli.classify(["The court held that."], model=str(enc), labels=["law", ("medicine", "doctors")])
    assert set(rows[0]["scores"]) == {"law", "medicine"}
    pipe = lfcli.Pipeline("embed", model=str(enc), batch_size=2)
    docs = list(lfcli.read_documents([str(ROOT / "examples" / "docs")]))
    assert [r["id"] for r in pipe.run(docs)] == [d.id for d in docs]


def test_show_draws_rows_over_their_texts(tmp_path):
    enc = make_checkpoint(tmp_path / "enc", "LongformerModel")
    texts = ["The court held <b>that</b>.", "Rates rose."]
    rows = lfcli.classify(texts, model=str(enc), labels=["law", "markets"])
    page = lfcli.show(rows, texts)
    assert page.startswith("<!DOCTYPE html>") and "http" not in page
    assert "&lt;b&gt;that&lt;/b&gt;" in page and "<b>that</b>" not in page
    assert lfcli.show(rows, {"1": "Rates rose."}).count("Rates rose.") == page.count("Rates rose.")


def test_bad_options_raise_usage_errors_before_the_model_loads():
    from lfcli.pipelines.errors import UsageError

    with pytest.raises(UsageError, match="two labels or more"):
        lfcli.classify(["The court held that."], model="/missing/model", labels=["law"])
    with pytest.raises(UsageError, match="--dtype"):
        lfcli.embed(["The court held that."], model="/missing/model", dtype="float64")
    with pytest.raises(UsageError, match="--device"):
        lfcli.Pipeline("embed", model="/missing/model", device="cuda:99")


@needs_bundled
def test_readme_main_job_on_the_examples(tmp_path):
    """The README's first command: the bundled model over examples/docs."""
    out = tmp_path / "embeddings.jsonl"
    r = subprocess.run(
        [sys.executable, "-m", "lfcli", "embed", str(ROOT / "examples" / "docs"), "-o", str(out)],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    names = sorted(p.name for p in (ROOT / "examples" / "docs").iterdir())
    assert [r["id"] for r in rows] == names
    assert all(len(r["embedding"]) == 384 for r in rows)


@needs_bundled
def test_zero_shot_on_the_examples_is_sensible():
    """The bundled model tells a lease from a discharge summary without any training."""
    docs = list(lfcli.read_documents([str(ROOT / "examples" / "docs")]))
    rows = lfcli.classify(docs, labels=[("law", "a legal contract or lease"), ("medicine", "a hospital medical report"),
                                        ("news", "a newspaper news report"), ("fiction", "a story or novel")])
    by_id = {r["id"]: r["label"] for r in rows}
    assert by_id["lease_agreement_excerpt.txt"] == "law"
    assert by_id["discharge_summary.txt"] == "medicine"
