"""`lfcli average`: the mean of LoRA adapters trained on from one start (a "model soup",
Wortsman et al. 2022).

Runs that continue one adapter (`lfcli finetune -m ADAPTER`) stay near one another, and the
mean of their weights often scores better than each of them: the errors of one run are not
those of the other. The adapters must share their base, rank, alpha, layers and head; the mean
is taken tensor by tensor (the LoRA A and B matrices each, so the update is close to, not
exactly, the mean of the updates) in float32 and written as an adapter again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..errors import InputError, UsageError

# What must agree between the adapters (adapter_config.json): the same base, rank and layers.
SHARED = ("base_model_name_or_path", "r", "lora_alpha", "target_modules", "modules_to_save")


def average_adapters(folders: list[str], out: str, force: bool = False) -> Path:
    """Write to `out` the mean of the adapter folders' weights, with the first folder's
    config and tokenizer files; its config.json lists the averaged folders."""
    from safetensors.torch import load_file, save_file

    from lfcli.models.checkpoint import is_adapter_folder
    from lfcli.models.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS

    if len(folders) < 2:
        raise UsageError("lfcli average needs at least two adapter folders")
    sources, target = [Path(f) for f in folders], Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not force:
        raise UsageError(f"{out} exists; pass --force to overwrite")
    for folder in sources:  # --force must never remove an input
        if target.resolve() == folder.resolve() or target.resolve() in folder.resolve().parents:
            raise UsageError(f"-o {out} holds the adapter {folder}; write the mean to another folder")
    for folder in sources:
        if not is_adapter_folder(folder):
            raise InputError(f"{folder}: not a LoRA adapter folder ({ADAPTER_CONFIG} and {ADAPTER_WEIGHTS}); "
                             "lfcli average takes the adapters `lfcli finetune` writes")
    configs = [json.loads((f / ADAPTER_CONFIG).read_text(encoding="utf-8")) for f in sources]
    for folder, config in zip(sources[1:], configs[1:]):
        differ = [k for k in SHARED if config.get(k) != configs[0].get(k)]
        if differ:
            raise InputError(f"{folder}: its adapter differs from {sources[0]}'s in {', '.join(differ)}; "
                             "only adapters of one base, rank and layers average")
    heads = [json.loads((f / "config.json").read_text(encoding="utf-8")).get("architectures") for f in sources]
    if any(h != heads[0] for h in heads):
        raise InputError(f"the folders' heads differ ({', '.join(sorted({str(h) for h in heads}))})")
    weights = [load_file(str(f / ADAPTER_WEIGHTS)) for f in sources]
    for folder, tensors in zip(sources[1:], weights[1:]):
        if tensors.keys() != weights[0].keys() or any(tensors[k].shape != v.shape for k, v in weights[0].items()):
            raise InputError(f"{folder}: its weights are not those of {sources[0]} (other layers or shapes)")
    mean = {k: (sum(w[k].float() for w in weights) / len(weights)).to(v.dtype).contiguous()
            for k, v in weights[0].items()}

    # Replace only what this writes: the first adapter's config and tokenizer files, the mean.
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(sources[0], target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("train_state", "metrics.jsonl", "training_summary.json"))
    save_file(mean, str(target / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    config.setdefault("lfcli", {})["average"] = [str(f) for f in folders]
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return target
