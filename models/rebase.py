"""A task model moved onto another base: its encoder becomes the new base plus the model's own
change from its old base (model - old base + new base, tensor by tensor); its head stays.

This is how a trained model follows a base trained further, e.g. by `lfcli pretrain-continue`
on the task's own documents (the coreference card's "continued MLM pretraining" variant);
`lfcli finetune TASK -m OUT` then trains on from the result. A LoRA adapter's or a delta
folder's change is the one over the base it names, its old base; the result is a full
checkpoint either way.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .bundled import resolve_model
from .checkpoint import CheckpointError, copy_tokenizer_files, is_over_base
from .config import LongformerConfig
from .heads import ARCHITECTURES
from .longformer import LongformerModel
from .model_folders import adapter_base, base_reference, tokenizer_folder


def rebase(model: str | Path, new_base: str | Path, out: str | Path, old_base: str | Path | None = None) -> Path:
    """Write to `out` the model (a bundled name or a folder: full, LoRA adapter or delta) with
    its encoder moved from `old_base` onto `new_base` (names or folders). `old_base` defaults
    to the base an adapter or delta folder names; a full checkpoint names none."""
    source, target = resolve_model(model), Path(out)
    if target.exists() and target.resolve() == source.resolve():
        raise CheckpointError(f"{out}: is the model's own folder; write the moved model to another folder")
    if old_base is None:
        if not is_over_base(source):
            raise CheckpointError(f"{model}: a full checkpoint names no base; give the base it was trained over")
        old_base, old = base_reference(source)[0], _encoder(adapter_base(source))
    else:
        old = _encoder(resolve_model(old_base))
    new = _encoder(resolve_model(new_base))
    architecture = (LongformerConfig.from_json_file(source / "config.json").extra.get("architectures") or [""])[0]
    if architecture not in ARCHITECTURES:
        raise CheckpointError(f"{model}: config.json does not name a Longformer architecture ({architecture!r})")
    cls = ARCHITECTURES[architecture]
    moved = cls.from_pretrained(source)
    encoder = getattr(moved, cls.base_model_prefix) if cls.base_model_prefix else moved
    params = dict(encoder.named_parameters())
    odd = [k for k, v in old.items() if k not in new or new[k].shape != v.shape or k not in params or params[k].shape != v.shape]
    if odd or new.keys() != old.keys():
        raise CheckpointError(f"{new_base}: the model and its two bases differ in shape ({(odd or ['their weights'])[0]}); "
                              "a model moves only between bases of its own shape")
    with torch.no_grad():
        for name, p in params.items():
            if name in old:  # in fp32: a bf16 model would round the bases' difference away
                p.copy_((p.float() + new[name].float() - old[name].float()).to(p.dtype))
    # A full checkpoint now: the adapter's or delta's block naming a base no longer holds.
    block = {k: v for k, v in (moved.config.extra.get("lfcli") or {}).items() if k not in ("adapter", "delta")}
    block["rebase"] = {"old_base": str(old_base), "new_base": str(new_base)}
    moved.config.extra["lfcli"] = block
    moved.save_pretrained(target)
    copy_tokenizer_files(tokenizer_folder(source), target)
    return target


def _encoder(folder: Path) -> dict[str, torch.Tensor]:
    """A base's encoder weights in a bare LongformerModel's names; not its pooler, which no
    task head reads and a masked-LM checkpoint lacks."""
    params = LongformerModel.from_pretrained(folder).named_parameters()
    return {k: p.detach() for k, p in params if k.startswith(("embeddings.", "encoder."))}
