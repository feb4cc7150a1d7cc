"""lfcli: Longformer over long documents from the shell and from Python.

Importing lfcli is cheap: torch loads when a task runs. See lfcli.api for the functions.
"""

__version__ = "0.1.0"

import os as _os

# oneDNN, behind PyTorch's bf16 matmuls on the CPU, keeps a compiled kernel for every matrix
# shape it meets, in two caches of 1,024 entries by default (oneDNN's primitive cache and
# ideep's LRU cache). Documents of mixed lengths bring new shapes all the time, so a bf16
# training run grew by gigabytes (about 0.7 MB a shape at the bundled model's size, measured:
# benchmarks/train_memory.py). 256 entries hold every shape a training step reuses; a value the
# user sets wins. Read when oneDNN first builds a kernel, so this must run before any matmul.
for _name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY"):
    _os.environ.setdefault(_name, "256")

from lfcli.pipelines.io.document import Document  # noqa: E402

from .api import Pipeline, read_documents, show, task_function, task_functions  # noqa: E402


def __getattr__(name: str):
    """lfcli.embed, lfcli.classify, lfcli.qa, lfcli.corefs, ...: a function per registered task
    that runs on documents, made from its home's spec (lfcli.api)."""
    found = task_function(name)
    if found is None:
        raise AttributeError(f"module 'lfcli' has no attribute {name!r}")
    return found


def __dir__() -> list[str]:
    return sorted([*globals(), *task_functions()])


__all__ = ["Document", "Pipeline", *task_functions(), "read_documents", "show", "__version__"]
