"""LoRA adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"),
saved in PEFT's file layout so that PEFT and other tools can read what lfcli trains.

A frozen linear layer W gets a trainable low-rank update: y = x W^T + b + (x A^T B^T) * alpha / r,
with A (r, in) initialised as nn.Linear initialises its weights and B (out, r) at zero, so
training starts from the base model exactly. After training the update is merged:
W' = W + (alpha / r) * B A, and inference runs the plain model at the base model's speed.

An adapter folder holds (PEFT's names):
  adapter_config.json         peft_type LORA, base_model_name_or_path, r, lora_alpha,
                              lora_dropout, target_modules, modules_to_save, task_type
  adapter_model.safetensors   `base_model.model.<module>.lora_A.weight` / `.lora_B.weight` per
                              adapted layer, and the trained head (`modules_to_save`) as
                              `base_model.model.<head>.<param>`
plus lfcli's own config.json (the task model's config, with the base pinned by sha256) and the
tokenizer files, so the folder is an ordinary `-m` model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from .heads import HEADS

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
PEFT_PREFIX = "base_model.model."
# Every linear layer of the encoder: the local and global attention projections, the
# attention output and both feed-forward layers. PEFT matches a module when its name ends
# with one of these ("output.dense" also covers "attention.output.dense").
DEFAULT_TARGETS = ("query", "key", "value", "query_global", "key_global", "value_global", "output.dense", "intermediate.dense")
class LoraLinear(nn.Module):
    """A frozen nn.Linear plus a trainable low-rank update (A, B)."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0):
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)
        self.r, self.scaling = r, alpha / r
        self.lora_A = nn.Linear(base.in_features, r, bias=False, device=base.weight.device)
        self.lora_B = nn.Linear(r, base.out_features, bias=False, device=base.weight.device)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))  # as nn.Linear, and as PEFT
        nn.init.zeros_(self.lora_B.weight)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    # The model reads .weight and .bias directly in places (the scaled query projection):
    # they are the merged values, so every such use sees the adapted layer.
    @property
    def weight(self) -> torch.Tensor:
        return self.base.weight + self.delta()

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    def delta(self) -> torch.Tensor:
        """(alpha / r) * B A: the update to the weight, (out, in)."""
        return (self.lora_B.weight @ self.lora_A.weight) * self.scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x A^T B^T costs 2 n r (in + out) FLOPs, far less than forming B A (in x out).
        return self.base(x) + self.lora_B(self.lora_A(self.dropout(x))) * self.scaling


def _matches(name: str, targets) -> bool:
    return any(name == t or name.endswith("." + t) for t in targets)


def add_lora(model: nn.Module, r: int = 16, alpha: float = 32.0, dropout: float = 0.0, targets=DEFAULT_TARGETS) -> list[str]:
    """Freeze `model` and wrap every targeted linear layer of its encoder in a LoRA layer.
    The task head (its `modules` in heads.HEADS) stays trainable. Returns the wrapped names."""
    if r < 1:
        raise ValueError("the LoRA rank must be at least 1")
    model.requires_grad_(False)
    wrapped = []
    for name, module in list(model.named_modules()):
        if ".encoder.layer." not in f".{name}" or not isinstance(module, nn.Linear) or not _matches(name, targets):
            continue
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        setattr(parent, child, LoraLinear(module, r, alpha, dropout))
        wrapped.append(name)
    for head in _head_modules(model):
        model.get_submodule(head).requires_grad_(True)
    return wrapped


@torch.no_grad()
def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every LoRA layer into its base linear layer (W += (alpha / r) B A) and put the
    plain nn.Linear back: the model is then an ordinary model again."""
    for name, module in list(model.named_modules()):
        if isinstance(module, LoraLinear):
            module.base.weight += module.delta().to(module.base.weight.dtype)
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name) if parent_name else model, child, module.base)
    return model


def _head_modules(model: nn.Module) -> tuple[str, ...]:
    """The modules of `model`'s head that LoRA trains in full and saves (none for the encoder)."""
    head = HEADS.get(type(model).__name__)
    return head.modules if head else ()


def lora_layers(model: nn.Module) -> dict[str, LoraLinear]:
    return {name: m for name, m in model.named_modules() if isinstance(m, LoraLinear)}


def adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The tensors of adapter_model.safetensors under PEFT's names: lora_A/lora_B of every
    adapted layer and every parameter of the task head."""
    state = {}
    for name, layer in lora_layers(model).items():
        state[f"{PEFT_PREFIX}{name}.lora_A.weight"] = layer.lora_A.weight
        state[f"{PEFT_PREFIX}{name}.lora_B.weight"] = layer.lora_B.weight
    for head in _head_modules(model):
        for pname, p in model.get_submodule(head).named_parameters():
            state[f"{PEFT_PREFIX}{head}.{pname}"] = p
    return {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in state.items()}


def save_adapter(model: nn.Module, folder: Path, base_model: str, r: int, alpha: float, dropout: float, targets=DEFAULT_TARGETS) -> None:
    """adapter_config.json + adapter_model.safetensors into `folder` (PEFT's layout)."""
    heads, task_type = list(_head_modules(model)), HEADS[type(model).__name__].peft_task_type
    config = {
        "peft_type": "LORA",
        "task_type": task_type,
        "base_model_name_or_path": base_model,
        "r": r,
        "lora_alpha": alpha,
        "lora_dropout": dropout,
        "target_modules": list(targets),
        "modules_to_save": heads,
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    save_file(adapter_state(model), str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})


def read_adapter(folder: Path) -> tuple[dict, dict[str, torch.Tensor]]:
    """(adapter_config, tensors) of an adapter folder."""
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    if config.get("peft_type") != "LORA":
        raise ValueError(f"{folder / ADAPTER_CONFIG}: peft_type {config.get('peft_type')!r}; lfcli reads LORA adapters")
    return config, load_file(str(folder / ADAPTER_WEIGHTS))


def load_adapter(model: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Put a saved adapter (PEFT names, as adapter_state writes them) into `model`, already
    wrapped by add_lora with the adapter's rank: training then goes on from the adapter
    instead of from zero. A layer the adapter leaves out (drop_unused_lora removes the
    updates that stayed zero) keeps its zero update; the head must be there in full."""
    expected = adapter_state(model)
    unknown = sorted(set(tensors) - set(expected))
    if unknown:
        raise ValueError(f"adapter tensor {unknown[0]!r} has no place in a {type(model).__name__} "
                         f"of LoRA rank {next(iter(lora_layers(model).values())).r}")
    heads = [k for k in expected if ".lora_" not in k]
    missing = [k for k in heads if k not in tensors]
    if missing:
        raise ValueError(f"adapter has no {missing[0][len(PEFT_PREFIX):]!r} (the head is saved whole)")
    params = dict(model.named_parameters())
    with torch.no_grad():
        for key, tensor in tensors.items():
            param = params[key[len(PEFT_PREFIX):]]
            if param.shape != tensor.shape:
                raise ValueError(f"adapter tensor {key!r} is {tuple(tensor.shape)}, the model's {tuple(param.shape)}")
            param.copy_(tensor)


def merge_into_state(state: dict[str, torch.Tensor], config: dict, tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The base model's `state` (our names, encoder under `prefix`) with the adapter merged
    in: W += (alpha / r) B A for every adapted layer, head tensors added. A new dict; the
    base tensors are not modified in place."""
    out = dict(state)
    scaling = float(config["lora_alpha"]) / int(config["r"])
    for key, tensor in tensors.items():
        if not key.startswith(PEFT_PREFIX):
            raise ValueError(f"adapter tensor {key!r} is not named {PEFT_PREFIX}...")
        name = key[len(PEFT_PREFIX):]
        if name.endswith(".lora_A.weight"):
            module = name[: -len(".lora_A.weight")]
            b = tensors.get(f"{PEFT_PREFIX}{module}.lora_B.weight")
            if b is None:
                raise ValueError(f"adapter has lora_A but no lora_B for {module}")
            weight = _base_name(module, prefix) + ".weight"
            if weight not in out:
                raise ValueError(f"adapter adapts {module}, which the base model does not have")
            base = out[weight]
            out[weight] = (base.float() + (b.float() @ tensor.float()) * scaling).to(base.dtype)
        elif name.endswith(".lora_B.weight"):
            continue
        else:
            out[name] = tensor
    return out


def _base_name(module: str, prefix: str) -> str:
    """The adapted module's name in the base state dict: the encoder's own prefix there."""
    for known in ("longformer.", "roberta.", "bert."):
        if module.startswith(known):
            return prefix + module[len(known):]
    return prefix + module


def trainable_parameters(model: nn.Module) -> tuple[int, int]:
    """(trainable, all) parameter counts."""
    params = list(model.parameters())
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)


def lora_linear_reference(x: torch.Tensor, weight, bias, lora_a, lora_b, scaling: float) -> torch.Tensor:
    """The slow obvious twin of LoraLinear.forward: the merged weight applied in one go."""
    return F.linear(x, weight + scaling * lora_b @ lora_a, bias)
