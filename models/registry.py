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
from .checkpoint import CheckpointError, is_adapter_folder, set_adapter_base_resolver
from .config import LongformerConfig
from .lora import ADAPTER_CONFIG


def adapter_base(folder: Path, config: LongformerConfig | None = None) -> Path:
    """The base model folder an adapter was trained on: a bundled name (built on first use)
    or a folder, relative to the adapter folder when it is there. Checked against the
    sha256 pinned in the adapter's config.json when one is."""
    try:
        name = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))["base_model_name_or_path"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{folder / ADAPTER_CONFIG}: unreadable adapter config ({exc})") from None
    local = folder / str(name)
    base = resolve_model(local if local.is_dir() and not str(name) in ("", ".") else name)
    pinned = ((config.extra.get("lfcli") or {}).get("adapter") or {}).get("base_sha256") if config else None
    if pinned:
        found = base_fingerprint(name, base)
        if found != pinned:
            raise CheckpointError(
                f"{folder}: the adapter was trained on base model {name!r} with sha256 {pinned[:12]}..., "
                f"but that base is now {found[:12]}...; use the base it was trained on"
            )
    return base


def tokenizer_folder(folder: Path) -> Path:
    """Where a model folder's tokenizer files are: the folder, or its adapter's base."""
    folder = Path(folder)
    if (folder / "tokenizer.json").is_file() or not is_adapter_folder(folder):
        return folder
    return adapter_base(folder)


set_adapter_base_resolver(adapter_base)
