"""What models there are, and making long ones: the pipelines' view of lfcli.models."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import registry
from ..errors import InputError, UsageError

# How long building the bundled model from its source weights takes (measured: 4-5 s).
BUILD_SECONDS = 5


def tasks_of_class(architecture: str) -> list[str]:
    """The commands a checkpoint class serves, as the tasks' homes say (the bare encoder:
    embed, and classify zero-shot)."""
    from lfcli.models.heads import ENCODER  # lazy: torch, not for --help

    specs = [registry.get(name) for name in registry.tasks("infer")]
    if architecture == ENCODER:
        return [s.name for s in specs if s.architecture is None] + [s.zero_shot for s in specs if s.zero_shot]
    return [s.name for s in specs if s.architecture == architecture]


def list_models() -> list[dict]:
    """The bundled models: name, description, whether usable here (`available`: None or why
    not), whether already built into the cache, and their tasks."""
    from lfcli.models.bundled import (  # lazy: torch, not for --help
        BUNDLED, DEFAULT_MODEL, TASK_MODELS, bundled_available, default_model, is_built, task_model_path,
    )

    out = []
    for name, entry in BUNDLED.items():
        heads = getattr(entry, "heads", None) or ["LongformerModel"]
        tasks = [t for h in heads for t in tasks_of_class(h)]
        out.append(
            {
                "name": name,
                "tier": entry.tier,
                "build_seconds": entry.build_seconds,
                "default": ", ".join(tasks) if name == DEFAULT_MODEL else "",  # the tasks it serves
                "description": entry.description,
                "available": bundled_available(name),
                "built": is_built(name),
                "tasks": tasks,
                "scores": entry.scores,
            }
        )
    for name, entry in TASK_MODELS.items():
        present = (task_model_path(name) / "config.json").is_file()
        tasks = list(registry.serving(name))
        out.append(
            {
                "name": name,
                "tier": BUNDLED[entry.base].tier,
                "default": ", ".join(t for t in tasks if default_model(registry.get(t).models) == name),
                "description": entry.description,
                "available": None if present else f"its files are missing from this installation ({task_model_path(name)})",
                "built": True,  # package data over the bundled base; the base builds on first use
                "tasks": tasks,
                "trained_on": entry.trained_on,
                "scores": entry.scores,
            }
        )
    return out


def announce_build(name: str) -> None:
    """One line on stderr before a bundled model is built into the cache (its first use), so
    the first run's pause is explained."""
    from lfcli.models.bundled import BUNDLED, bundled_available, bundled_path, is_built  # lazy: torch, not for --help

    if name in BUNDLED and not is_built(name) and bundled_available(name) is None:
        print(f"lfcli: building the bundled model {name} into {bundled_path(name)} "
              f"(once, about {BUNDLED[name].build_seconds} s)", file=sys.stderr, flush=True)


def convert_checkpoint(src: str, out: str, *, max_positions: int, attention_window: int, force: bool) -> Path:
    """`lfcli convert`: a BERT/RoBERTa/Longformer checkpoint -> a long Longformer checkpoint."""
    from lfcli.models import CheckpointError  # lazy: torch, not for --help
    from lfcli.models.convert import convert_to_long  # lazy: torch

    target = Path(out)
    if target.exists() and any(target.iterdir()) if target.is_dir() else target.exists():
        if not force:
            raise UsageError(f"{out} exists; pass --force to overwrite")
    if attention_window <= 0 or attention_window % 2:
        raise UsageError(f"--attention-window must be a positive even number, got {attention_window}")
    if max_positions <= 0:
        raise UsageError(f"--max-positions must be positive, got {max_positions}")
    try:
        return convert_to_long(
            src, out, max_positions, attention_window, overwrite=force,
            on_note=lambda msg: print(f"lfcli: note: {msg}", file=sys.stderr),
        )
    except CheckpointError as exc:
        raise InputError(str(exc)) from None


# The ratio of an end-to-end `lfcli embed` on long documents to the matmul roofline, by dtype
# (benchmarks/README.md, "inference stage by stage": 1.70x for the small tier in fp32; bf16's
# faster matmuls leave more of the time to the rest): what `lfcli models` multiplies this CPU's
# matmul rate by to say about how fast each tier runs here.
ROOFLINE_RATIO = {"float32": 1.8, "bfloat16": 2.5}


def tier_sizes() -> dict[str, dict]:
    """{tier: {"layers", "hidden", "parameters", "flops_per_token"}} from the tiers' shapes:
    forward FLOPs a token at window 512, L x [2(4h^2 + 2hi) + 4h(w + 1)] (projections, FFN and
    the band's two products)."""
    shapes = {"small": (6, 384, 1536, 30522), "base": (12, 768, 3072, 30527)}
    out = {}
    for tier, (layers, h, i, vocab) in shapes.items():
        params = layers * (4 * h * h + 2 * h * i + 9 * h) + vocab * h + 514 * h
        out[tier] = {"layers": layers, "hidden": h, "parameters": params,
                     "flops_per_token": layers * (2 * (4 * h * h + 2 * h * i) + 4 * h * 513)}
    return out


def matmul_gflops(dtype: str = "float32") -> float:
    """This machine's matmul rate in `dtype` (GFLOP/s, best of 3 1024^3 products, about 0.1 s)."""
    import torch  # lazy: not for --help

    a, b = torch.randn(1024, 1024, dtype=getattr(torch, dtype)), torch.randn(1024, 1024, dtype=getattr(torch, dtype))
    best = float("inf")
    for _ in range(4):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * 1024 ** 3 / best / 1e9
