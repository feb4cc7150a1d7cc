"""Which folder a model is: adapters and the base models they were trained on.

The layers of lfcli.models, from the top: this module (an adapter's base, a model folder's
tokenizer) -> bundled.py (bundled names: built into the cache on first use, or shipped) ->
convert.py (short model -> long) -> checkpoint.py (reading and writing one folder). The
low-level loader knows no names: loading an adapter folder asks this module for its base
through the resolver installed below, when lfcli.models is imported.
"""

from __future__ import annotations

import json
from pathlib import Path

from .bundled import base_fingerprint, resolve_model
from .checkpoint import CheckpointError, is_over_base, set_adapter_base_resolver
from .config import LongformerConfig
from .lora import ADAPTER_CONFIG


def base_reference(folder: Path, config: LongformerConfig | None = None) -> tuple[str, str | None]:
    """(the base model as an adapter or delta folder names it, the sha256 pinned for it or None)."""
    if config is None and not (folder / ADAPTER_CONFIG).is_file():  # a delta folder names its base in config.json
        config = LongformerConfig.from_json_file(folder / "config.json")
    block = (config.extra.get("lfcli") or {}) if config else {}
    if (folder / ADAPTER_CONFIG).is_file():
        try:
            name = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))["base_model_name_or_path"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{folder / ADAPTER_CONFIG}: unreadable adapter config ({exc})") from None
        return str(name), (block.get("adapter") or {}).get("base_sha256")
    name = (block.get("delta") or {}).get("base")
    if not name:
        raise CheckpointError(f"{folder}: config.json names no base model (lfcli.delta.base)")
    return str(name), (block.get("delta") or {}).get("base_sha256")


def adapter_base(folder: Path, config: LongformerConfig | None = None) -> Path:
    """The base model folder an adapter (or a delta folder) was trained on: a bundled name
    (built on first use) or a folder, relative to the adapter folder when it is there.
    Checked against the sha256 pinned in the folder's config.json when one is."""
    name, pinned = base_reference(folder, config)
    local = folder / str(name)
    base = resolve_model(local if local.is_dir() and not str(name) in ("", ".") else name)
    if pinned:
        found = base_fingerprint(name, base)
        if found != pinned:
            raise CheckpointError(
                f"{folder}: the model was trained on base model {name!r} with sha256 {pinned[:12]}..., "
                f"but that base is now {found[:12]}...; use the base it was trained on"
            )
    return base


def tokenizer_folder(folder: Path) -> Path:
    """Where a model folder's tokenizer files are: the folder, or its adapter's base."""
    folder = Path(folder)
    if (folder / "tokenizer.json").is_file() or not is_over_base(folder):
        return folder
    return adapter_base(folder)


set_adapter_base_resolver(adapter_base)
