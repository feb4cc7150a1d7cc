"""`lfcli finetune classify|qa|corefs`: train a task head (LoRA adapter or full) on the shared trainer."""

from __future__ import annotations

from .cli import app  # noqa: F401  (commands are registered on the one app)
