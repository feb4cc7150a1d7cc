"""`lfcli finetune TASK DATA -o DIR`: train a task model on the one trainer (pipelines/train/loop.py).

What every task shares lives here: the output folder's rules (--force, --resume), the base
model with a new head, LoRA (the default) or full fine-tuning, and how the trained model is
written so that `lfcli TASK -m DIR` loads it:

  lora   DIR holds config.json (the task model's config; the base model named and pinned by
         sha256), adapter_config.json + adapter_model.safetensors (PEFT's layout: the
         low-rank updates and the trained head), and the tokenizer files. Loading merges
         the adapter into the base weights, so inference runs at the base model's speed.
         `merge=True` writes a full transformers-layout checkpoint instead.
  full   DIR is a full transformers-layout checkpoint.

Attention-probability dropout is turned off while fine-tuning: on the CPU it forces
PyTorch's unfused attention path and costs ~40% of the step time; hidden-state dropout
(0.1) stays.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from lfcli.models import ARCHITECTURES, LongformerConfig, MissingHead
from lfcli.models.bundled import BUNDLED, DEFAULT_MODEL, base_fingerprint, resolve_model
from lfcli.models.checkpoint import (
    TOKENIZER_FILES, base_state_dict, copy_tokenizer_files, init_from_encoder, is_adapter_folder, is_over_base,
)
from lfcli.models.delta import DELTA_WEIGHTS, write_delta
from lfcli.models.heads import ENCODER
from lfcli.models.lora import (
    ADAPTER_CONFIG, ADAPTER_WEIGHTS, add_lora, load_adapter, merge_lora, read_adapter, save_adapter,
    trainable_parameters,
)
from lfcli.models.model_folders import adapter_base, base_reference, tokenizer_folder

from .. import registry
from ..errors import InputError, UsageError
from ..infer.policies import check_policy
from ..infer.runner import resolve_device
from .loop import TrainConfig, TrainingRun, train
from .setups import MIN_TRAIN_LENGTH

# What a run writes to DIR (removed by --force before a new run; nothing else there is).
MODEL_FILES = ("config.json", "model.safetensors", "adapter_config.json", "adapter_model.safetensors", DELTA_WEIGHTS,
               *TOKENIZER_FILES)
ADAPTERS = ("lora", "full")


@dataclass
class ContinuedAdapter:
    """`-m ADAPTER` with `--adapter lora`: training goes on from that adapter's LoRA updates
    and head over that adapter's own base, and the result is again an adapter over that base
    (a small file, as the adapter was), not an adapter over the adapter."""

    base_name: str  # as the adapter's config names it: a bundled name or a folder
    base_folder: Path
    base_sha256: str
    r: int
    alpha: float


def own_base(folder: Path) -> tuple[str, Path, str]:
    """(name, folder, pinned sha256) of the base an adapter or delta folder was trained over:
    a bundled name as it is, a folder as an absolute path."""
    config = LongformerConfig.from_json_file(folder / "config.json")
    name, pinned = base_reference(folder, config)
    root = adapter_base(folder, config)
    name = name if name in BUNDLED else str(root.resolve())
    return name, root, pinned or base_fingerprint(name, root)


def continued_adapter(folder: Path) -> ContinuedAdapter | None:
    """The adapter in `folder` to continue, or None when `folder` is not an adapter folder."""
    if not is_adapter_folder(folder):
        return None
    try:
        peft = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
        r, alpha = int(peft["r"]), float(peft["lora_alpha"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{folder / ADAPTER_CONFIG}: unreadable adapter config ({exc})") from None
    return ContinuedAdapter(*own_base(folder), r, alpha)


def build_model(class_name: str, base: str, folder: Path, *, adapter: str, lora_rank: int, lora_alpha: float | None,
                seed: int, config_changes: dict | None = None, say: Callable[[str], None] = lambda _: None,
                continued: ContinuedAdapter | None = None, freeze_embeddings: bool = False):
    """The task model to train: the base's encoder with a new head (or the base's own head
    when it has this task's head with the same shape), wrapped for LoRA or left whole; or,
    `continued`, the adapter's base with the adapter's updates and head loaded to go on from."""
    cls = ARCHITECTURES[class_name]
    config = LongformerConfig.from_json_file(folder / "config.json")
    for key, value in (config_changes or {}).items():
        setattr(config, key, value)
    config.attention_probs_dropout_prob = 0.0
    torch.manual_seed(seed)
    if continued is not None:
        trained = LongformerConfig.from_json_file(folder / "config.json").id2label
        wanted = (config_changes or {}).get("id2label")
        if wanted is not None and {str(k): v for k, v in (trained or {}).items()} != {str(k): v for k, v in wanted.items()}:
            raise UsageError(f"{base}: its head was trained for the labels {sorted((trained or {}).values())}, this data has "
                             f"{sorted(wanted.values())}: continue it on the same labels, or train a new head on its base")
        model = init_from_encoder(cls, continued.base_folder, config)
        add_lora(model, r=continued.r, alpha=continued.alpha)
        try:
            load_adapter(model, read_adapter(folder)[1])
        except (OSError, ValueError) as exc:
            raise InputError(f"{base}: cannot continue its adapter ({str(exc).splitlines()[0]})") from None
        say(f"{base}: continuing its LoRA adapter (rank {continued.r}) and {class_name} head over {continued.base_name}")
        trainable, total = trainable_parameters(model)
        say(f"{class_name}: {trainable:,} of {total:,} parameters trained (lora)")
        return model
    model = None
    if not config_changes or "id2label" not in config_changes:  # a new label set needs a new head
        try:
            model = cls.from_pretrained(folder)
            say(f"{base}: continuing from its trained {class_name} head")
            model.config.attention_probs_dropout_prob = 0.0
        except MissingHead:
            model = None
    if model is None:
        model = init_from_encoder(cls, folder, config)
    if adapter == "lora":
        add_lora(model, r=lora_rank, alpha=lora_alpha or 2.0 * lora_rank)
    if freeze_embeddings:  # the base's tables stay: the model differs from the base in its layers and head
        getattr(model, cls.base_model_prefix).embeddings.requires_grad_(False)
    trainable, total = trainable_parameters(model)
    say(f"{class_name} from {base}: {trainable:,} of {total:,} parameters trained ({adapter})")
    return model


def model_saver(base: str, folder: Path, *, adapter: str, lora_rank: int, lora_alpha: float | None, merge: bool,
                note: dict, continued: ContinuedAdapter | None = None, delta: bool = False) -> Callable:
    """A function (model, target folder) -> None writing the model as DIR holds it."""
    # The base the written folder names and pins, resolved before training (a wrong base fails
    # now, not at the first evaluation): a continued adapter stays over its own base, and deltas
    # are taken from -m's own base when -m is itself over one (the bundled base, not a chain).
    if continued is not None:
        base_name, base_root, pin = continued.base_name, continued.base_folder, continued.base_sha256
    elif delta and is_over_base(folder):
        base_name, base_root, pin = own_base(folder)
    else:
        base_name, base_root, pin = base if base in BUNDLED else str(Path(base).resolve()), folder, base_fingerprint(base, folder)
    over_base = "delta" if delta else "adapter" if adapter == "lora" and not merge else None
    tokenizer_source = tokenizer_folder(folder)

    def save(model, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        block = dict(model.config.extra.get("lfcli") or {})
        for stale in ("bundled", "build", "adapter", "delta"):
            block.pop(stale, None)
        block["finetune"] = note
        if note.get("default_max_length"):
            block["default_max_length"] = note["default_max_length"]
        if over_base:  # config.json names the base; the weights are changes to it
            block[over_base] = {"base": base_name, "base_sha256": pin}
            model.config.extra["lfcli"] = block
            model.config.extra["architectures"] = [type(model).__name__]
            model.config.to_json_file(target / "config.json")
        if over_base == "delta":  # fp16 differences from the base model (models/delta.py)

            prefix = f"{type(model).base_model_prefix}." if type(model).base_model_prefix else ""
            write_delta(model.state_dict(), base_state_dict(base_root, prefix), target)
        elif over_base == "adapter":
            save_adapter(model, target, base_name, lora_rank, lora_alpha or 2.0 * lora_rank, 0.0)
        else:
            model.config.extra["lfcli"] = block
            plain = merge_lora(copy.deepcopy(model)) if adapter == "lora" else model
            plain.save_pretrained(target)
        copy_tokenizer_files(tokenizer_source, target)

    return save


def merge_adapter(adapter: str, out: str, force: bool = False) -> Path:
    """`lfcli merge`: an adapter folder -> a full transformers-layout checkpoint (the adapter
    merged into its base at load, then saved whole) with the tokenizer files."""
    source, target = Path(adapter), Path(out)
    problem = not_an_adapter(source, "merge")
    if problem:
        raise InputError(problem)
    refuse_existing(target, force)
    try:
        name = json.loads((source / "config.json").read_text(encoding="utf-8"))["architectures"][0]
        cls = ARCHITECTURES[name]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        raise InputError(f"{adapter}: config.json does not name a Longformer task architecture") from None
    model = cls.from_pretrained(source)
    (model.config.extra.get("lfcli") or {}).pop("adapter", None)
    model.save_pretrained(target)
    copy_tokenizer_files(tokenizer_folder(source), target)
    return target


def refuse_existing(target: Path, force: bool) -> None:
    """`lfcli merge` and `lfcli average` write over a file or a non-empty folder only with --force."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not force:
        raise UsageError(f"{target} exists; pass --force to overwrite")


def not_an_adapter(folder: Path, command: str) -> str | None:
    """Why `lfcli COMMAND` (merge, average) cannot take `folder` as a LoRA adapter, in words
    (what is missing, and what it expects); None when it can."""
    expects = (f"`lfcli {command}` expects a folder that `lfcli finetune` wrote with a LoRA adapter "
               f"({ADAPTER_CONFIG} and {ADAPTER_WEIGHTS})")
    if not folder.exists():
        return f"{folder}: no such folder; {expects}"
    if not folder.is_dir():
        return f"{folder}: is a file; {expects}"
    full = [f for f in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin") if (folder / f).exists()]
    if full:
        return f"{folder}: already a full checkpoint ({full[0]}): nothing to {command}, use it with -m as it is"
    if not (folder / ADAPTER_CONFIG).is_file():
        return f"{folder}: no {ADAPTER_CONFIG} in it; {expects}"
    if not (folder / ADAPTER_WEIGHTS).is_file():
        return f"{folder}: no {ADAPTER_WEIGHTS} beside its {ADAPTER_CONFIG}; {expects}"
    return None


def finetune(task: str, data: list[str], output: str, *, model: str | None = None, validation: list[str] | None = None,
             validation_split: float = 0.1, adapter: str = "lora", lora_rank: int | None = None, lora_alpha: float | None = None,
             merge: bool = False, freeze_embeddings: bool = False, delta: bool = False, max_length: int | None = None, global_policy: str | None = None,
             train_config: TrainConfig | None = None, device: str = "cpu", resume: bool = False, force: bool = False,
             log: Callable[[dict], None] | None = None, progress: bool = False, **task_options) -> dict:
    """Train `task` (a registered task with a `finetune` setup) on `data`; the best model (by validation) ends in `output`."""
    # Every option before any data is read: a typo must not cost the minutes of reading a data set.
    spec = registry.get(task, "finetune")
    if adapter not in ADAPTERS:
        raise UsageError(f"--adapter {adapter!r}: choose {' or '.join(ADAPTERS)}")
    if freeze_embeddings and adapter != "full":
        raise UsageError("--freeze-embeddings goes with --adapter full (LoRA never trains the embeddings)")
    if delta and (adapter != "full" or merge):
        raise UsageError("--delta goes with --adapter full (an adapter is already small; --merge writes it whole)")
    if max_length is not None and max_length < MIN_TRAIN_LENGTH:
        raise UsageError(f"--max-length must be at least {MIN_TRAIN_LENGTH} tokens for training")
    if global_policy is not None:
        check_policy(global_policy)
    if lora_rank is not None and lora_rank < 1:
        raise UsageError("--lora-rank must be at least 1")
    if not 0 <= validation_split < 1:
        raise UsageError("--validation-split must be in [0, 1)")
    config = train_config or TrainConfig()
    config.check()
    torch_device = resolve_device(device)  # "auto": CUDA when there is a GPU, else cpu, as at inference
    out = Path(output)
    base = model or DEFAULT_MODEL
    folder = resolve_model(base)
    continued = continued_adapter(folder) if adapter == "lora" else None
    if continued is not None:
        if lora_rank not in (None, continued.r):
            raise UsageError(f"--lora-rank {lora_rank}: {base} is an adapter of rank {continued.r}, and training "
                             f"goes on from it at that rank (or pass --adapter full)")
        lora_rank, lora_alpha = continued.r, continued.alpha
    lora_rank = lora_rank or 16
    with TrainingRun("finetune", out, folder, device=str(torch_device), resume=resume, force=force, files=MODEL_FILES,
                     sink=log) as run:
        setup = spec.finetune(folder=folder, data=data, validation=validation, validation_split=validation_split,
                            max_length=max_length, global_policy=global_policy, seed=config.seed, say=run.say,
                            **task_options)
        run.clear()
        net = build_model(spec.architecture or ENCODER, base, folder, adapter=adapter, lora_rank=lora_rank, lora_alpha=lora_alpha,
                          seed=config.seed, config_changes=setup.config_changes, say=run.say, continued=continued,
                          freeze_embeddings=freeze_embeddings)
        note = {"task": task, "base_model": continued.base_name if continued else base, "data": [str(d) for d in data],
                **({"continued_from": base} if continued else {}), "adapter": adapter,
                "lora_rank": lora_rank if adapter == "lora" else None, "max_length": setup.max_length,
                **({"freeze_embeddings": True} if freeze_embeddings else {}),
                "train_examples": len(setup.task.examples), **setup.note}
        setup.task.save_fn = model_saver(base, folder, adapter=adapter, lora_rank=lora_rank, lora_alpha=lora_alpha,
                                         merge=merge, note=note, continued=continued, delta=delta)
        # What shapes the weights (the trainer adds seed, batch sizes, processes, examples, steps):
        # a --resume with other values would not end with an uninterrupted run's weights.
        fingerprint = {"task": task, "data": setup.fingerprint, "adapter": adapter, "lora_rank": lora_rank,
                       "max_length": setup.max_length, "base": base, "lr": config.lr, "global": global_policy,
                       "autocast": config.autocast, **({"freeze_embeddings": True} if freeze_embeddings else {}),
                       **({"delta": True} if delta else {}), **({"merge": True} if merge else {})}
        summary = train(net, setup.task, out, config, dist=run.dist, resume=resume, fingerprint=fingerprint, log=log,
                        progress=progress)
    return {"output": str(out), "task": task, "base_model": base, **setup.note, **summary}

