"""Attention backends for lfcli's Longformer encoder (import as `lfcli.kernels`).

`banded_attention` is the entry point; `reference.py` is the slow twin every fast path is
tested against. See attention.py for how a backend is chosen.
"""

from .attention import (
    BACKENDS,
    ENV_VAR,
    BackendUnavailable,
    banded_attention,
    dilation_per_head,
    resolve_backend,
    triton_status,
)
from .reference import reference_attention, reference_global_rows

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "BackendUnavailable",
    "banded_attention",
    "dilation_per_head",
    "reference_attention",
    "reference_global_rows",
    "resolve_backend",
    "triton_status",
]
