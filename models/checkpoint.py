"""Reading and writing checkpoints in the transformers layout (config.json + safetensors).

Loading is a name match: our modules carry the checkpoint's names. The only adaptations,
kept here in one place:
  * the encoder prefix differs by source (`longformer.`, `roberta.`, `bert.` or none) and by
    what we build (a bare `LongformerModel` has none, the task models use `longformer.`);
  * a bert/roberta checkpoint has no global projections: they start as copies of the local
    ones (the paper's recipe), so the model computes what the short model computes;
  * tied or derived entries (lm_head.decoder.*, embeddings.position_ids) are skipped.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import shutil
from pathlib import Path
from typing import Callable

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from .config import ConfigError, LongformerConfig
from .delta import DELTA_WEIGHTS, apply_delta, is_delta_folder, read_delta
from .fast_paths import apply_fast_paths
from .heads import HEADS
from .longformer import set_checkpoint_io
from .lora import ADAPTER_CONFIG, merge_into_state, read_adapter

ENCODER_PARTS = ("embeddings.", "encoder.", "pooler.")
SOURCE_PREFIXES = ("longformer.", "roberta.", "bert.", "mpnet.")
SKIPPED = ("embeddings.position_ids", "lm_head.decoder.weight", "lm_head.decoder.bias")
# Each local attention projection and the global one that starts as its copy (the paper's recipe).
GLOBAL_PROJECTIONS = {"query": "query_global", "key": "key_global", "value": "value_global"}
# The tokenizer files a checkpoint folder carries along, whichever tokenizer it has.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "sentencepiece.bpe.model",
    "spiece.model",
    "tokenizer.model",
)

class CheckpointError(ValueError):
    """A checkpoint folder lfcli cannot load; the message says what is wrong and where."""


class MissingHead(CheckpointError):
    """The checkpoint has an encoder but not the head the task needs."""


def read_state_dict(folder: Path) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint folder: model.safetensors (or its sharded index), else
    pytorch_model.bin loaded with weights_only=True."""
    single, index, legacy = folder / "model.safetensors", folder / "model.safetensors.index.json", folder / "pytorch_model.bin"
    try:
        if single.exists():
            return load_file(str(single))
        if index.exists():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            state: dict[str, torch.Tensor] = {}
            for shard in shards:
                state.update(load_file(str(folder / shard)))
            return state
        if legacy.exists():
            state = torch.load(str(legacy), map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
                raise ValueError("pytorch_model.bin does not hold a dict of tensors")
            return state
    except (SafetensorError, OSError, RuntimeError, ValueError, KeyError, EOFError,
            pickle.UnpicklingError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{folder}: the weights file is corrupt or unreadable ({exc})") from None
    raise CheckpointError(f"{folder}: no weights file (expected model.safetensors or pytorch_model.bin)")


def is_adapter_folder(folder: Path) -> bool:
    """A LoRA adapter folder (PEFT layout) without full weights of its own."""
    has_weights = any((folder / f).exists() for f in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"))
    return (folder / ADAPTER_CONFIG).is_file() and not has_weights


# An adapter folder names the base model it was trained on: a folder, or a bundled model's
# name, which may have to be built first. Naming models is model_folders.py's work, a layer above
# this file's reading and writing; it installs its resolver here when lfcli.models is imported
# (models/__init__.py), so that the loader below takes adapter folders as it takes full ones.
_adapter_base_resolver: Callable[[Path, LongformerConfig | None], Path] | None = None


def set_adapter_base_resolver(resolver: Callable[[Path, LongformerConfig | None], Path]) -> None:
    """Install `resolver(adapter folder, its config or None) -> the base model's folder`."""
    global _adapter_base_resolver
    _adapter_base_resolver = resolver


def _adapter_base(folder: Path, config: LongformerConfig | None) -> Path:
    """The base model folder of the adapter in `folder`, found by the installed resolver."""
    if _adapter_base_resolver is None:
        raise CheckpointError(f"{folder}: no resolver for adapter bases (import lfcli.models, which installs it)")
    return _adapter_base_resolver(folder, config)


def is_over_base(folder: Path) -> bool:
    """A folder whose weights are changes to a base model's: a LoRA adapter or fp16 deltas."""
    return is_adapter_folder(folder) or is_delta_folder(folder)


def base_state_dict(folder: Path, prefix: str) -> dict[str, torch.Tensor]:
    """A full checkpoint folder's weights, in our names under `prefix`."""
    try:
        config = LongformerConfig.from_json_file(folder / "config.json")
    except ConfigError as exc:
        raise CheckpointError(f"{folder}: {exc}") from None
    return to_model_names(read_state_dict(folder), prefix, short_model=config.model_type != "longformer")


def state_dict_of(folder: Path, config: LongformerConfig, prefix: str) -> dict[str, torch.Tensor]:
    """Any model folder's weights in our names: a full checkpoint's own; an adapter's base
    with the adapter merged in; a delta folder's base with the differences added."""
    if not is_over_base(folder):
        return base_state_dict(folder, prefix)
    base = _adapter_base(folder, config)
    try:
        base_config = LongformerConfig.from_json_file(base / "config.json")
    except ConfigError as exc:
        raise CheckpointError(f"{base}: {exc}") from None
    state = state_dict_of(base, base_config, prefix)  # the base may itself be a delta folder
    kind = "adapter" if is_adapter_folder(folder) else "fp16 deltas"
    try:
        if is_adapter_folder(folder):
            adapter_config, tensors = read_adapter(folder)
            return merge_into_state(state, adapter_config, tensors, prefix)
        return apply_delta(state, read_delta(folder))
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise CheckpointError(f"{folder}: cannot apply the {kind} ({str(exc).splitlines()[0]})") from None


def init_from_encoder(cls, path, config: LongformerConfig | None = None, fast_paths=None):
    """A new `cls` whose encoder comes from the checkpoint at `path` and whose head is
    freshly initialised (as transformers initialises it; seed torch first for a
    reproducible head): the start of fine-tuning a task the checkpoint has no head for.
    With the fast paths `fast_paths` (default: all; () gives the plain model), as
    load_pretrained."""
    folder = Path(path)
    if config is None:
        config = LongformerConfig.from_json_file(folder / "config.json")
    model = cls(config)
    prefix = f"{cls.base_model_prefix}." if cls.base_model_prefix else ""
    source = LongformerConfig.from_json_file(folder / "config.json")
    state = state_dict_of(folder, source, prefix)
    encoder = {k: v for k, v in state.items() if k.startswith(prefix + "embeddings.") or k.startswith(prefix + "encoder.")}
    expected = {k for k in model.state_dict() if k.startswith(prefix + "embeddings.") or k.startswith(prefix + "encoder.")}
    missing = sorted(expected - set(encoder))
    if missing:
        raise CheckpointError(f"{folder}: encoder weights missing from the checkpoint: {_names(missing)}")
    model.load_state_dict(encoder, strict=False)
    model.tie_weights()
    return apply_fast_paths(model, fast_paths)


def split_prefix(name: str) -> tuple[bool, str]:
    """(is an encoder weight, name without the source's encoder prefix)."""
    for prefix in SOURCE_PREFIXES:
        if name.startswith(prefix):
            return True, name[len(prefix):]
    return name.startswith(ENCODER_PARTS), name


def to_model_names(
    state: dict[str, torch.Tensor], encoder_prefix: str, short_model: bool = False
) -> dict[str, torch.Tensor]:
    """Rename a checkpoint's tensors to the names of the model we build. For a short model
    (bert/roberta) the missing global projections start as copies of the local ones."""
    out: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        is_encoder, bare = split_prefix(name)
        if bare in SKIPPED or name in SKIPPED:
            continue
        out[encoder_prefix + bare if is_encoder else name] = tensor
    if short_model:
        out.update(global_from_local(out))
    return out


def global_from_local(state: dict[str, torch.Tensor], only_missing: bool = True) -> dict[str, torch.Tensor]:
    """Copies of the local query/key/value projections of every attention layer in `state`,
    under the names of the global ones (the paper's recipe: a short model has no global
    projections, and with copies the long model computes what the short one computes);
    `only_missing`: only the global tensors `state` does not have yet."""
    copies = {}
    for name, tensor in state.items():
        for local, glob in GLOBAL_PROJECTIONS.items():
            target = name.replace(f".attention.self.{local}.", f".attention.self.{glob}.")
            if target != name and not (only_missing and target in state):
                copies[target] = tensor.clone()
    return copies


def load_pretrained(cls, path, dtype: torch.dtype | None = None, device=None, fast_paths=None):
    """Build `cls` (a Longformer model or head class) from a checkpoint folder, with the
    speed tricks of models/fast_paths.py named in `fast_paths` (default: all of FAST_PATHS;
    () gives the plain reference model)."""
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: not a checkpoint folder (expected config.json and model.safetensors)")
    try:
        config = LongformerConfig.from_json_file(folder / "config.json")
    except ConfigError as exc:
        raise CheckpointError(f"{folder}: {exc}") from None
    over_base = is_over_base(folder)
    if not over_base:
        state = read_state_dict(folder)  # an unreadable file fails before the model is built
    # Build on the meta device and fill from the checkpoint: no time spent on a random
    # initialisation that the weights would overwrite anyway.
    with torch.device("meta"), _initialisation_skipped():
        model = cls(config)
    prefix = f"{cls.base_model_prefix}." if cls.base_model_prefix else ""
    if over_base:
        state = state_dict_of(folder, config, prefix)
    else:
        state = to_model_names(state, prefix, short_model=config.model_type != "longformer")
    expected = model.state_dict()
    tied = {"lm_head.decoder.weight"}

    head = HEADS.get(cls.__name__)
    if head and not any(k.startswith(head.marker) for k in state):
        raise MissingHead(f"{folder}: this checkpoint has no {head.what} ({head.marker.rstrip('.')})")
    missing = sorted(k for k in expected if k not in state and k not in tied and not k.startswith("pooler."))
    if missing:
        raise CheckpointError(f"{folder}: weights missing from the checkpoint: {_names(missing)}")
    # Head weights of another task are fine to ignore (e.g. the bare encoder of a QA model);
    # unknown encoder weights are not.
    unexpected = sorted(k for k in state if k not in expected and (k.startswith(prefix + "encoder.") or k.startswith(prefix + "embeddings.")))
    if unexpected:
        raise CheckpointError(f"{folder}: weights this model does not have: {_names(unexpected)}")
    mismatched = [
        f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}"
        for k, v in expected.items()
        if k in state and state[k].shape != v.shape
    ]
    if mismatched:
        raise CheckpointError(f"{folder}: shapes differ from config.json: {_names(mismatched)}")
    _materialise(model)
    model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    for name, module in model.named_modules():
        # The pooler is the one part a checkpoint may lack (task models have none); it is
        # unused by the heads, but give it a proper initialisation rather than junk memory.
        if name.endswith("pooler") or name == "pooler":
            if not any(k.startswith(name + ".") for k in state):
                module.apply(model._init_weights)
    model.tie_weights()
    apply_fast_paths(model, fast_paths)
    model.eval()
    if device is not None:
        model.to(device=device)
    if dtype is not None:
        model.set_inference_dtype(dtype)
    return model


def _materialise(model) -> None:
    """Every meta parameter and buffer made a real, empty CPU tensor of its shape, for the
    checkpoint to fill. What `Module.to_empty` does, but through torch.empty: to_empty's
    empty_like runs through torch._refs, whose first use imports the symbolic-shapes machinery,
    0.8 s of a CLI start-up that never needs it."""
    shared: dict[int, torch.nn.Parameter] = {}  # a parameter two modules hold stays one
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None and p.is_meta:
                if id(p) not in shared:
                    shared[id(p)] = torch.nn.Parameter(torch.empty(p.shape, dtype=p.dtype), p.requires_grad)
                module._parameters[name] = shared[id(p)]
        for name, b in list(module._buffers.items()):
            if b is not None and b.is_meta:
                module._buffers[name] = torch.empty(b.shape, dtype=b.dtype)


@contextlib.contextmanager
def _initialisation_skipped():
    """torch.nn.init's functions do nothing inside: the modules' constructors and post_init
    would only initialise meta tensors. Not merely wasted work: on the meta device normal_
    runs through torch._refs, whose first use imports torch._dynamo, 1.2 s of a CLI start-up
    that otherwise never needs it."""
    names = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "kaiming_uniform_",
             "kaiming_normal_", "xavier_uniform_", "xavier_normal_")
    saved = {name: getattr(torch.nn.init, name) for name in names}
    try:
        for name in names:
            setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch.nn.init, name, fn)


def _names(items: list[str], most: int = 8) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def save_pretrained(model, path) -> None:
    """Write config.json and model.safetensors that transformers (and lfcli) load back."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    config = model.config
    config.extra["architectures"] = [type(model).__name__]
    # lfcli's own fields (attention_dilation, attention_backend) are written too:
    # transformers keeps unknown config keys and ignores them.
    config.to_json_file(folder / "config.json")
    state = {
        k: v.detach().to("cpu").contiguous()
        for k, v in model.state_dict().items()
        if k != "lm_head.decoder.weight"  # tied to the word embeddings, as transformers saves it
    }
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def copy_tokenizer_files(source: Path, target: Path) -> None:
    """Copy the tokenizer files `source` has (TOKENIZER_FILES) into the model folder `target`."""
    for name in TOKENIZER_FILES:
        if (Path(source) / name).is_file():
            shutil.copy2(Path(source) / name, Path(target) / name)


def available_heads(path) -> list[str]:
    """The task models a checkpoint folder can build, read from its tensor names only."""
    folder = Path(path)
    single = folder / "model.safetensors"
    if is_adapter_folder(folder):
        _, tensors = read_adapter(folder)
        names = [k[len("base_model.model."):] for k in tensors]
    elif is_delta_folder(folder):
        with safe_open(str(folder / DELTA_WEIGHTS), "pt") as f:
            names = list(f.keys())
    elif single.exists():
        with safe_open(str(single), "pt") as f:
            names = list(f.keys())
    else:
        names = list(read_state_dict(folder))
    found = ["LongformerModel"]
    for head in HEADS.values():
        if any(split_prefix(n)[1].startswith(head.marker) for n in names):
            found.append(head.architecture)
    return found


set_checkpoint_io(load_pretrained, save_pretrained)  # the models' from_pretrained / save_pretrained
