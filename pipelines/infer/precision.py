"""Which floating-point path a job runs in: `--dtype auto` for inference, bf16 autocast for
training.

bf16 pays only where the CPU multiplies it in hardware (AVX512_BF16, or AMX on Sapphire
Rapids and later): there a bf16 matmul runs 2-6x faster than fp32 and the encoder about 2x.
Elsewhere (AVX2-only CPUs) PyTorch emulates bf16 by converting to fp32 and back, which is
slower than fp32 itself. So `auto` means bf16 on a CPU with native bf16 and fp32 everywhere
else, CUDA included (there `--dtype bfloat16` is the user's explicit choice: the Triton path
is tested in bf16 on GPUs only).
"""

from __future__ import annotations

import os
import sys
import platform
from contextlib import nullcontext

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
        return torch.bfloat16 if device.type == "cpu" and cpu_has_native_bf16() else torch.float32
    if name == "float16" and device.type == "cpu" and not cpu_has_native_fp16():
        fast = "auto (bfloat16 here)" if cpu_has_native_bf16() else "auto (float32 here)"
        print(f"lfcli: note: --dtype float16 is slow on this CPU (no fp16 matmuls: emulated); --dtype {fast} "
              "is the fast choice", file=sys.stderr, flush=True)
    return getattr(torch, name)


def describe_auto() -> str:
    """Lines for `lfcli --version --verbose`: the dtypes this CPU runs natively and the path
    `--dtype auto` takes here."""
    native = f"native dtypes on this CPU: {', '.join(native_dtypes())}\n"
    if cpu_has_native_bf16():
        return native + "--dtype auto: bfloat16 on this CPU (native bf16: AVX512_BF16/AMX); training uses bf16 autocast"
    return native + "--dtype auto: float32 on this CPU (no native bf16, where bf16 would be emulated and slower)"


def check_autocast(mode: str) -> None:
    """Refuse an unknown --autocast (a UsageError), before a training run reads its data."""
    if mode not in AUTOCAST_MODES:
        raise UsageError(f"--autocast {mode!r}: choose {', '.join(AUTOCAST_MODES)}")


def autocast_for(device: torch.device, mode: str = "auto"):
    """A context factory for training: bf16 autocast on CUDA and on CPUs with native bf16
    ("auto"), or as asked ("bf16" / "none"). Returns (factory, uses_bf16)."""
    check_autocast(mode)
    use = mode == "bf16" or (mode == "auto" and (device.type == "cuda" or cpu_has_native_bf16()))
    if not use:
        return nullcontext, False
    return (lambda: torch.autocast(device.type, dtype=torch.bfloat16)), True
