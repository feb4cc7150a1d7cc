"""The GPU check's diagnostic steps (benchmarks/gpu_check.py runs them): where an embed's time
goes on the GPU (`profile`), and CUDA graphs against the eager forward (`graphs`)."""

from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import time
from pathlib import Path


def encoder_inputs(vocab_size: int, batch: int, n: int, device):
    """Random ids, a full attention mask, and a host global mask with the first token global."""
    import torch

    g = torch.Generator().manual_seed(2)
    ids = torch.randint(5, vocab_size, (batch, n), generator=g)
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    return ids.to(device), torch.ones_like(ids).to(device), glob


def step_profile(models: dict, device, novels: Path) -> dict:
    """Where `lfcli embed`'s time goes on the GPU, in this process: one novel first (compiles,
    tunes), then the four under cProfile, with the seconds the GPU spent in the model."""
    import torch

    from lfcli.pipelines.infer.runner import Pipeline
    from lfcli.pipelines.io.readers import Document

    docs = [Document(p.name, p.read_text(encoding="utf-8")) for p in sorted(novels.iterdir())]
    pipe = Pipeline("embed", str(models["small"]["encoder"]), device=str(device))
    list(pipe.run(docs[:1]))
    gpu_seconds = []
    forward = pipe.model.forward

    def timed_forward(*a, **k):  # CUDA events around each model call: the GPU's own time
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = forward(*a, **k)
        end.record()
        gpu_seconds.append((start, end))
        return out

    pipe.model.forward = timed_forward
    profiler = cProfile.Profile()
    torch.cuda.synchronize()
    t = time.perf_counter()
    profiler.enable()
    rows = list(pipe.run(docs))
    profiler.disable()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t
    tokens = pipe.stats.tokens  # before the kernels' pass below starts a new count
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(30)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:  # the kernels' share
        list(pipe.run(docs[1:2]))
        torch.cuda.synchronize()
    kernels = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=60)
    return {"wall_s": wall, "rows": len(rows), "model_gpu_s": sum(s.elapsed_time(e) for s, e in gpu_seconds) / 1000,
            "model_calls": len(gpu_seconds), "dtype": str(next(pipe.model.parameters()).dtype),
            "tokens": tokens, "profile": text.getvalue()[-14000:], "kernels": kernels[-9000:]}


def step_graphs(models: dict, device, novels: Path, n_long: int) -> dict:
    """CUDA graphs (models/cuda_graphs.py) against the eager forward: per shape and batch, bf16,
    the time of each and the largest difference; then the small shape's in-process embed of
    the four novels with LFCLI_CUDA_GRAPHS=1, its wall time and its vectors against eager's."""
    import torch

    import common

    from lfcli.models import LongformerModel
    from lfcli.models.cuda_graphs import use_cuda_graphs
    from lfcli.pipelines.infer.runner import Pipeline
    from lfcli.pipelines.io.readers import Document

    rows = []
    for tier, made in models.items():
        model = LongformerModel.from_pretrained(made["encoder"], dtype=torch.bfloat16, device=device).eval()
        eager = model.forward
        graphed = use_cuda_graphs(model, replay_after=1)
        for batch, n in ((8, n_long), (1, n_long), (16, 512)):
            ids, mask, glob = encoder_inputs(model.config.vocab_size, batch, n, device)
            glob = glob.pin_memory()
            with torch.inference_mode():
                want = eager(ids, mask, glob)
                model(ids, mask, glob), model(ids, mask, glob)  # eager once, then captured
                got = model(ids, mask, glob)
                timed = common.bench_rounds({"eager": lambda: eager(ids, mask, glob),
                                             "graphed": lambda: model(ids, mask, glob)}, device, warmup=2, repeats=10)
            rows.append({"tier": tier, "batch": batch, "n": n, "eager_s": timed["eager"]["median_s"],
                         "graphed_s": timed["graphed"]["median_s"], "enabled": graphed.enabled,
                         "max_diff": float((got.float() - want.float()).abs().max())})
        del model, eager, graphed
        gc.collect()  # the model and its graphed forward refer to each other
        torch.cuda.empty_cache()
    docs = [Document(p.name, p.read_text(encoding="utf-8")) for p in sorted(novels.iterdir())]
    embed = {}
    for name, flag in (("eager", "0"), ("graphed", "1")):
        os.environ["LFCLI_CUDA_GRAPHS"] = flag
        pipe = Pipeline("embed", str(models["small"]["encoder"]), device=str(device))
        list(pipe.run(docs[:1]))  # compiles, tunes (and captures the full windows' shape)
        torch.cuda.synchronize()
        t = time.perf_counter()
        vectors = [row["embedding"] for row in pipe.run(docs)]
        torch.cuda.synchronize()
        embed[name] = {"wall_s": time.perf_counter() - t, "vectors": vectors}
    os.environ.pop("LFCLI_CUDA_GRAPHS", None)
    cos = min(float(torch.nn.functional.cosine_similarity(torch.tensor(a), torch.tensor(b), dim=0))
              for a, b in zip(embed["eager"]["vectors"], embed["graphed"]["vectors"]))
    return {"rows": rows, "embed_eager_s": embed["eager"]["wall_s"], "embed_graphed_s": embed["graphed"]["wall_s"],
            "embed_min_cosine": cos}
