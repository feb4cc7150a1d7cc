"""Shared helpers for the engine tests: tiny configs, random weights, cached checkpoints, batches.

Checkpoints are written once per session (tmp_path_factory) and reused by every test that asks
for the same (architecture, config) pair, so the parity grid does not pay for save/load again.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

# Without a GPU the Triton kernels are checked in Triton's interpreter. The variable must be
# set before anything imports triton (transformers and torch._dynamo can do so), and
# `import torch` alone does not.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# hidden 32, 4 heads of 8, 3 layers: big enough to exercise every code path, small enough that a
# forward pass takes a millisecond. Dropout stays at its default so that a model left in train
# mode would show up as a mismatch.
TINY = dict(
    vocab_size=64,
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=160,  # 158 tokens for RoBERTa-style positions
    type_vocab_size=1,
    attention_window=4,
)

# Token ids the random batches never draw: transformers' QA head counts separators, and the
# position ids depend on where the pad token is.
PAD, BOS, SEP = 1, 0, 2
FIRST_ORDINARY_ID = 3


def tiny_config(**overrides) -> dict:
    """A transformers-style config.json dict (tiny sizes) with `overrides` applied."""
    cfg = dict(TINY)
    cfg.update(overrides)
    if "num_labels" in cfg:  # classification heads: give the labels names, as checkpoints do
        cfg["id2label"] = {i: f"LABEL_{i}" for i in range(cfg.pop("num_labels"))}
    return cfg


def randomize_(model: torch.nn.Module, seed: int, std: float = 0.2) -> torch.nn.Module:
    """Overwrite every parameter with random values, biases and LayerNorm included.

    The libraries' own inits zero the biases and set LayerNorm to identity, which would hide
    any mistake in how a bias or a norm is applied (e.g. key_global's bias in the folded
    global rows). std 0.2 on hidden 32 gives attention scores of order 1, so the softmax is
    far from uniform and a wrong mask changes the numbers.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied parameters appear once
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if "LayerNorm.weight" in name or "layer_norm.weight" in name:
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(std * noise)
    return model


def _key(arch: str, cfg: dict) -> str:
    return arch + json.dumps(cfg, sort_keys=True, default=str)


@pytest.fixture(scope="session")
def hf_checkpoint(tmp_path_factory):
    """`make(arch, **config) -> (folder, transformers model in eval mode)`, cached per session.

    arch is a transformers class name: one of HF_CLASSES, "BertModel" or "RobertaModel".
    The model gets random weights (see `randomize_`) and is saved with `save_pretrained`.
    """
    transformers = pytest.importorskip("transformers")
    cache: dict[str, tuple] = {}

    def make(arch: str, **overrides):
        cfg = tiny_config(**overrides)
        key = _key(arch, cfg)
        if key not in cache:
            if arch == "BertModel":
                config_cls = transformers.BertConfig
            elif arch == "RobertaModel":
                config_cls = transformers.RobertaConfig
            else:
                config_cls = transformers.LongformerConfig
            hf_cfg = dict(cfg)
            if arch in ("BertModel", "RobertaModel"):
                hf_cfg.pop("attention_window", None)
            torch.manual_seed(0)
            model = getattr(transformers, arch)(config_cls(**hf_cfg))
            randomize_(model, seed=len(cache) + 1)
            model.eval()
            folder = tmp_path_factory.mktemp(arch)
            model.save_pretrained(folder)
            cache[key] = (folder, model)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def lfcli_checkpoint(tmp_path_factory):
    """`make(arch, **config) -> (folder, lfcli model in eval mode)`, cached per session.

    The lfcli model is built from a LongformerConfig with random weights and written with
    lfcli's own `save_pretrained`; it runs the fast paths, as a loaded model does (the plain
    model against them: tests/test_fast_paths.py).
    """
    from lfcli.models import ARCHITECTURES, LongformerConfig, apply_fast_paths

    cache: dict[str, tuple] = {}

    def make(arch: str, **overrides):
        cfg = tiny_config(**overrides)
        key = _key(arch, cfg)
        if key not in cache:
            torch.manual_seed(0)
            model = apply_fast_paths(ARCHITECTURES[arch](LongformerConfig.from_dict(cfg)))
            randomize_(model, seed=100 + len(cache))
            model.eval()
            folder = tmp_path_factory.mktemp("lfcli_" + arch)
            model.save_pretrained(folder)
            cache[key] = (folder, model)
        return cache[key]

    return make


def make_batch(
    lengths: list[int],
    n: int | None = None,
    vocab_size: int = TINY["vocab_size"],
    globals_: list[list[int]] | None = None,
    seed: int = 0,
    pad_token_id: int = PAD,
):
    """Right-padded input_ids, attention_mask and (optional) global_attention_mask.

    lengths: real tokens per sample; n: padded length (default max(lengths)).
    globals_: positions with global attention per sample (may point at padding on purpose).
    Random ids never hit the pad/bos/sep ids.
    """
    n = n or max(lengths)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(FIRST_ORDINARY_ID, vocab_size, (len(lengths), n), generator=gen)
    mask = torch.zeros(len(lengths), n, dtype=torch.long)
    for b, length in enumerate(lengths):
        mask[b, :length] = 1
        ids[b, length:] = pad_token_id
    glob = None
    if globals_ is not None:
        glob = torch.zeros(len(lengths), n, dtype=torch.long)
        for b, positions in enumerate(globals_):
            glob[b, list(positions)] = 1
    return ids, mask, glob


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0



@pytest.fixture
def one_thread():
    """One intra-op thread, for the training tests (`pytestmark = pytest.mark.usefixtures(
    "one_thread")`): their models are small, and on a shared 2-core machine a second OpenMP
    thread waiting for a busy core makes a step several times slower, not faster."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_collection_modifyitems(config, items):
    """The `slow` marker (pyproject.toml): large cases, skipped unless LFCLI_SLOW_TESTS=1."""
    if os.environ.get("LFCLI_SLOW_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="a large case: set LFCLI_SLOW_TESTS=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
