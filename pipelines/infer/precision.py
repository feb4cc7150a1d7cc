"""Which floating-point path a job runs in: `--dtype auto` for inference, bf16 autocast for
training.

bf16 pays only where the CPU multiplies it in hardware (AVX512_BF16, or AMX on Sapphire
Rapids and later): there a bf16 matmul runs 2-6x faster than fp32 and the encoder about 2x.
Elsewhere (AVX2-only CPUs) PyTorch emulates bf16 by converting to fp32 and back, which is
slower than fp32 itself. And a CPU may say it has AVX512_BF16 and still multiply bf16 at half
fp32's rate (an Intel Xeon whose AMX a hypervisor hides: 82 against 155 GFLOP/s, one core,
2026-11-27). So `auto` means bf16 where the CPU has native bf16 *and* a bf16 matmul measured
on it beats fp32's by BF16_MARGIN (`bf16_pays`: measured once a machine, in a few
milliseconds, and kept in lfcli's cache folder, so every job of a machine takes the same
path), and fp32 on every other CPU. On a CUDA GPU with bf16 (Ampere and later) `auto` means
bf16: the Triton kernels' tests pass there in bf16, and a novel's vector in bf16 on an H200
matched the CPU's fp32 one to cosine 0.999998 (benchmarks/gpu_check.py, 2026-11-28).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import platform
import time
from contextlib import nullcontext
from functools import lru_cache
from pathlib import Path

import torch

from ..errors import UsageError

DTYPES = {"auto": "auto", "float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float16": "float16", "fp16": "float16"}
AUTOCAST_MODES = ("auto", "bf16", "none")  # training's --autocast (see autocast_for)
# oneDNN does the bf16 matmuls; when it is capped below AVX-512 (ONEDNN_MAX_CPU_ISA), it has
# no native bf16 whatever the CPU has.
_ONEDNN_WITHOUT_BF16 = ("sse41", "avx", "avx2", "avx2_vnni", "avx2_vnni_2", "avx512_core", "avx512_core_vnni")


def _cpuinfo(field: str) -> str | None:
    """The first value of `field` in /proc/cpuinfo (None off Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.split(":", 1)[0].strip() == field:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_flags() -> set[str]:
    return set((_cpuinfo("flags") or "").split())


def cpu_name() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_has_native_bf16() -> bool:
    """True when this CPU multiplies bf16 in hardware (AVX512_BF16 or AMX), as PyTorch itself
    sees it (its CPU capability query), else as /proc/cpuinfo says."""
    if os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip().lower() in _ONEDNN_WITHOUT_BF16:
        return False

    query = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)
    if query is not None:
        try:
            return bool(query() or (amx is not None and amx()))
        except RuntimeError:
            pass
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16"})


BF16_MARGIN = 1.2  # bf16's matmul rate over fp32's from which bf16 pays (casts and the rest cost too)
_PROBE = 512  # the square matmul bf16_pays times: ~3 ms a dtype on one core


def _matmul_rate(dtype: torch.dtype, n: int = _PROBE, repeats: int = 5) -> float:
    """FLOP/s of an n x n matmul in `dtype` on this CPU: the best of `repeats`, after a warm-up."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / max(best, 1e-9)


def bf16_record_path():
    from lfcli.models.bundled import cache_dir  # lazy: the bundled models' module, only when measuring

    machine = json.dumps([cpu_name(), sorted(_cpu_flags()), torch.__version__, os.environ.get("ONEDNN_MAX_CPU_ISA", "")])
    return cache_dir() / "cpu" / f"bf16-{hashlib.sha256(machine.encode()).hexdigest()[:16]}.json"


def bf16_pays() -> bool:
    """True when this CPU has native bf16 and multiplies bf16 at least BF16_MARGIN times faster
    than fp32, as measured once on this machine (kept in lfcli's cache folder, cpu/)."""
    return cpu_has_native_bf16() and bf16_measured_faster(str(bf16_record_path()))


@lru_cache(maxsize=4)
def bf16_measured_faster(record: str) -> bool:
    """Whether bf16 matmuls beat fp32's by BF16_MARGIN here: the machine's kept record at
    `record`, else measured now and kept there."""
    path = Path(record)
    try:
        return bool(json.loads(path.read_text(encoding="utf-8"))["bf16_pays"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    fp32, bf16 = _matmul_rate(torch.float32), _matmul_rate(torch.bfloat16)
    pays = bf16 >= BF16_MARGIN * fp32
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"cpu": cpu_name(), "torch": torch.__version__, "fp32_gflops": round(fp32 / 1e9, 1),
                                    "bf16_gflops": round(bf16 / 1e9, 1), "bf16_pays": pays}) + "\n", encoding="utf-8")
    except OSError:  # a read-only cache: measured again next time
        pass
    return pays


def cpu_has_native_fp16() -> bool:
    """True when this CPU multiplies fp16 in hardware for oneDNN's matmuls (AMX-FP16). Elsewhere
    (AVX512_FP16 included, which oneDNN's matmuls do not use) fp16 is converted on every use."""
    return "amx_fp16" in _cpu_flags()


def native_dtypes() -> list[str]:
    """The dtypes this CPU multiplies natively, for `lfcli --version --verbose`."""
    return ["float32"] + (["bfloat16"] if cpu_has_native_bf16() else []) + (["float16"] if cpu_has_native_fp16() else [])


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """The torch dtype of a `--dtype` value on this device ("auto": see the module doc). An
    fp16 job on a CPU without fp16 matmuls gets one line on stderr: it runs, but several times
    slower than the default (803 against about 5,000 tokens/s on a whole novel, 2-core AMD EPYC)."""
    if name not in DTYPES:
        raise UsageError(f"--dtype {name!r}: choose auto, float32, bfloat16 or float16")
    name = DTYPES[name]
    if name == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
        return torch.bfloat16 if device.type == "cpu" and bf16_pays() else torch.float32
    if name == "float16" and device.type == "cpu" and not cpu_has_native_fp16():
        fast = "auto (bfloat16 here)" if bf16_pays() else "auto (float32 here)"
        print(f"lfcli: note: --dtype float16 is slow on this CPU (no fp16 matmuls: emulated); --dtype {fast} "
              "is the fast choice", file=sys.stderr, flush=True)
    return getattr(torch, name)


def describe_auto() -> str:
    """Lines for `lfcli --version --verbose`: the dtypes this CPU runs natively and the path
    `--dtype auto` takes here."""
    native = f"native dtypes on this CPU: {', '.join(native_dtypes())}\n"
    if bf16_pays():
        return native + "--dtype auto: bfloat16 on this CPU (native bf16: AVX512_BF16/AMX); training uses bf16 autocast"
    if cpu_has_native_bf16():
        return native + ("--dtype auto: float32 on this CPU (its bf16 matmuls, measured, are no faster than fp32's); "
                         "training uses fp32")
    return native + "--dtype auto: float32 on this CPU (no native bf16, where bf16 would be emulated and slower)"


def check_autocast(mode: str) -> None:
    """Refuse an unknown --autocast (a UsageError), before a training run reads its data."""
    if mode not in AUTOCAST_MODES:
        raise UsageError(f"--autocast {mode!r}: choose {', '.join(AUTOCAST_MODES)}")


def autocast_for(device: torch.device, mode: str = "auto"):
    """A context factory for training: bf16 autocast on CUDA and on CPUs with native bf16
    ("auto"), or as asked ("bf16" / "none"). Returns (factory, uses_bf16)."""
    check_autocast(mode)
    use = mode == "bf16" or (mode == "auto" and (device.type == "cuda" or bf16_pays()))
    if not use:
        return nullcontext, False
    return (lambda: torch.autocast(device.type, dtype=torch.bfloat16)), True
