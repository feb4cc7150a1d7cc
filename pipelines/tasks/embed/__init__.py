"""embed: a vector per document. Its home: task.py (windows, pooling); this module's SPEC is
what the registry holds. A SPEC module stays free of torch (it names its task's code with
registry.lazy), so that `lfcli --help` lists the tasks at once.
"""

from __future__ import annotations

from ...errors import UsageError
from ...registry import Option, TaskSpec, lazy

POOLINGS = ("mean", "cls")
OPTIONS = (
    Option("pooling", ("--pooling",), str, None, "mean or cls (default: the model's, else mean)."),
    Option("normalize", ("--normalize/--no-normalize",), bool, None, "L2-normalise (default: the model's, else yes)."),
)


def check(options: dict) -> None:
    pooling = options.get("pooling")
    if pooling is not None and pooling not in POOLINGS:
        raise UsageError(f"--pooling {pooling!r}: choose mean or cls")


SPEC = TaskSpec(
    name="embed",
    summary="Document vectors: id, embedding, n_tokens.",
    runner=lazy(__name__ + ".task", "runner"),
    global_policy="cls",
    options=OPTIONS,
    check=check,
    no_page="embed rows are vectors",
    row_fields=("embedding",),
)
