"""Fine-tuned weights kept as fp16 differences from their base model: a small folder that
loads as the whole model.

A full fine-tune of the bundled base changes every layer, but a model whose embedding tables
stayed the base's (`lfcli finetune --adapter full --freeze-embeddings`) differs from the base
in its layers and head only. A delta folder stores just that:

  config.json               the task model's config; `lfcli.delta` names the base (a bundled
                            name or a folder) and pins it by sha256, as an adapter does
  delta_model.safetensors   for each weight the base has and the model changed: the
                            difference (model - base) in fp16; for each weight the base lacks
                            (the head): the weight itself, in fp32. Unchanged weights are
                            left out and come from the base.
  the tokenizer files

Loading adds the differences back onto the base's weights in fp32 (checkpoint.py). The
differences are small next to the weights, so fp16's 11-bit mantissa leaves an error of
about 1e-3 of a difference: far below what bf16 inference rounds away anyway.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

DELTA_WEIGHTS = "delta_model.safetensors"
DELTA_FORMAT = "lfcli-delta-fp16/1"
FULL_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def is_delta_folder(folder: Path) -> bool:
    """A delta folder without full weights of its own."""
    folder = Path(folder)
    return (folder / DELTA_WEIGHTS).is_file() and not any((folder / f).exists() for f in FULL_WEIGHTS)


def delta_of(state: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """What a delta file holds for `state` over `base` (both in our names): fp16 differences
    of the changed weights the base has, fp32 copies of the weights it lacks."""
    out = {}
    for name, tensor in state.items():
        value = tensor.detach().to("cpu", torch.float32)
        if name not in base:
            out[name] = value.contiguous()
            continue
        if base[name].shape != value.shape:
            raise ValueError(f"{name}: {tuple(value.shape)} here, {tuple(base[name].shape)} in the base")
        difference = value - base[name].float()
        if bool(difference.any()):
            out[name] = difference.half().contiguous()
    return out


def apply_delta(base: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The base's weights with a delta file's tensors added (a new dict; the base is not
    changed in place): base + difference for the weights the base has, the stored weight for
    the others, in fp32 (the loader casts to the dtype asked for)."""
    out = dict(base)
    for name, tensor in tensors.items():
        if name in base:
            if base[name].shape != tensor.shape:
                raise ValueError(f"{name}: {tuple(tensor.shape)} in the delta, {tuple(base[name].shape)} in the base")
            out[name] = base[name].float() + tensor.float()  # fp32: a bf16 base would round the difference away
        else:
            out[name] = tensor.float()
    return out


def write_delta(state: dict[str, torch.Tensor], base: dict[str, torch.Tensor], folder: Path) -> None:
    """delta_model.safetensors of `state` over `base` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(delta_of(state, base), str(folder / DELTA_WEIGHTS), metadata={"format": "pt", "lfcli": DELTA_FORMAT})


def read_delta(folder: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(folder / DELTA_WEIGHTS), "pt") as f:
        if (f.metadata() or {}).get("lfcli") != DELTA_FORMAT:
            raise ValueError(f"{folder / DELTA_WEIGHTS}: not an lfcli delta file ({DELTA_FORMAT})")
        return {name: f.get_tensor(name) for name in f.keys()}
