"""The GPU check: everything issue #55 measures, in one command of at most 6 minutes.

A GPU is lent only at times and for minutes, so this script is kept ready to measure all of it
in one short run, with nothing downloaded: random weights in both tiers' shapes, built on the
GPU machine from the configs and real tokenizers that `--prepare` copies into `.gpu-check/`
(git-ignored; carried to the GPU machine beside the checkout), with four LitBank novels.

    python benchmarks/gpu_check.py --prepare            # here: fill .gpu-check/ (needs both tiers built)
    python benchmarks/gpu_check.py --json $OUT/gpu_check.json   # on the GPU machine

Steps (each one timed, limited and isolated: a failing step is reported and the rest go on):
  tests       tests/test_triton.py and tests/test_gpu_plans.py with the kernels compiled
              (LFCLI_TRITON_GPU=1), in parallel shards, every test run to the end
  sync        one forward of each tier's shape under torch.cuda.set_sync_debug_mode("error"):
              any device-to-host wait in the forward fails it; kernel launches per layer
  attention   one layer at 4k and 16k tokens in bf16: lfcli, dense SDPA and FlexAttention's
              sliding window (benchmarks/attention.py; compile time apart)
  encoder     both shapes, batch 1 and 8 x 4,096 tokens, bf16 and fp32, against transformers
  train       a bf16 training step in the base shape (benchmarks/train_speed.py)
  embed, corefs  `lfcli embed` / `lfcli corefs` end to end on the novels, both shapes
  start       a process that embeds one short text: seconds to its row, and where they go
  cosine      GPU bf16 against CPU fp32 vectors of the same random model on one novel
  profile     `lfcli embed`'s small shape in-process under cProfile, with the model's own GPU time
  graphs      CUDA graphs (LFCLI_CUDA_GRAPHS=1) against the eager forward: times, differences, an embed
Every figure stands beside the bf16 and fp32 matmul rates measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gpu_profile  # the profile and graphs steps (benchmarks/gpu_profile.py)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".gpu-check"
NOVELS = ("105_persuasion.txt", "1260_jane_eyre_an_autobiography.txt", "2852_the_hound_of_the_baskervilles.txt",
          "768_wuthering_heights.txt")
TIERS = {"small": ("minilm-l6-long", "minilm-l6-long-litbank-coref"),
         "base": ("mpnet-base-long", "mpnet-base-long-litbank-coref")}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
N = 4096
MISSING_THERE = ("nicknames==1.0.1", "nameparser==2.6.0")


def wheels() -> None:
    """Install the carried wheels (prepare) into /tmp/site where their packages are missing,
    for this process and the ones it starts."""
    import importlib.util

    if all(importlib.util.find_spec(p.split("==")[0]) is not None for p in MISSING_THERE) or not (DATA / "whl").is_dir():
        return
    site = "/tmp/lfcli-site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", site,
                    *map(str, (DATA / "whl").glob("*.whl"))], check=True)
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = site + os.pathsep + os.environ.get("PYTHONPATH", "")


# -- here: what the GPU machine needs ------------------------------------------------------------


def prepare(shared: Path) -> None:
    """Copy the tiers' configs and tokenizers (a few MB; weights are never carried) and four
    novels into .gpu-check/."""
    from lfcli.models.bundled import resolve_model

    DATA.mkdir(exist_ok=True)
    for tier, (encoder, coref) in TIERS.items():
        out = DATA / tier
        out.mkdir(exist_ok=True)
        folder = Path(resolve_model(encoder))
        for name in TOKENIZER_FILES + ("config.json",):
            if (folder / name).exists():
                shutil.copy(folder / name, out / name)
        config = json.loads((ROOT / "lfcli" / "data" / "models" / coref / "config.json").read_text())
        config.get("lfcli", {}).pop("adapter", None)  # a whole model here, not an adapter over the base
        (out / "coref_config.json").write_text(json.dumps(config, indent=1))
    novels = DATA / "novels"
    novels.mkdir(exist_ok=True)
    for name in NOVELS:
        shutil.copy(shared / "litbank" / "original" / name, novels / name)
    # lfcli's dependencies the GPU machine's image lacks (it has torch, triton, transformers,
    # pyarrow, typer, rich, tokenizers, pytest): pure-Python wheels, installed there by `wheels()`
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "-d", str(DATA / "whl"), *MISSING_THERE], check=True)
    print(f"prepared {DATA} ({sum(f.stat().st_size for f in DATA.rglob('*') if f.is_file()) / 1e6:.1f} MB)")


# -- there: the steps ----------------------------------------------------------------------------


def random_models(tmp: Path) -> dict[str, dict[str, Path]]:
    """Per tier, an encoder and a coreference model with random weights in the tier's shape,
    saved with the tier's tokenizer."""
    import torch

    from lfcli.models import LongformerConfig, LongformerModel
    from lfcli.models.heads import LongformerForCoreference

    out = {}
    for tier in TIERS:
        src = DATA / tier
        made = {}
        for kind, config_file, cls in (("encoder", "config.json", LongformerModel),
                                       ("corefs", "coref_config.json", LongformerForCoreference)):
            folder = tmp / f"{tier}-{kind}"
            folder.mkdir()
            torch.manual_seed(0)
            model = cls(LongformerConfig.from_json_file(src / config_file))
            model.save_pretrained(folder)
            for name in TOKENIZER_FILES:
                if (src / name).exists():
                    shutil.copy(src / name, folder / name)
            made[kind] = folder
        out[tier] = made
    return out


def matmul_rates(device) -> dict:
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import common

    rates = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        fn, flops = common.matmul_case(device, dtype, 8192)
        rates[name] = flops / common.bench(fn, device, warmup=2, repeats=5)["median_s"] / 1e12
    return rates  # TFLOP/s


def step_tests(limit: float) -> dict:
    """The kernel tests compiled on the GPU, in shards run side by side (compiling is CPU work)."""
    files = ["tests/test_triton.py", "tests/test_gpu_plans.py", "tests/test_cuda_graphs.py"]
    env = dict(os.environ, LFCLI_TRITON_GPU="1")
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *files], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120).stdout.splitlines()
    ids = [line for line in listed if "::" in line]
    shards = min(8, max(1, os.cpu_count() or 1))
    procs = []
    for s in range(shards):
        part = ids[s::shards]
        if part:
            procs.append(subprocess.Popen([sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider", *part],
                                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    passed = failed = skipped = 0
    failures, details = [], []
    deadline = time.monotonic() + limit
    for p in procs:
        try:
            text = p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
        except subprocess.TimeoutExpired:
            p.kill()
            text = p.communicate()[0] + "\nTIMED OUT"
            failures.append("a shard ran out of time")
        for line in text.splitlines():
            if line.startswith("FAILED") or line.startswith("ERROR"):
                failures.append(line[:300])
        if "FAILED" in text or "ERROR" in text or "TIMED OUT" in text:
            details.append(text[-4000:])  # the short tracebacks: a failure's cause comes back with it
        tail = [line for line in text.splitlines() if " passed" in line or " failed" in line]
        if tail:
            words = tail[-1].replace(",", " ").split()
            for count, word in zip(words, words[1:]):
                if count.isdigit():
                    passed += int(count) * (word == "passed")
                    failed += int(count) * (word in ("failed", "errors", "error"))
                    skipped += int(count) * (word == "skipped")
    return {"collected": len(ids), "passed": passed, "failed": failed, "skipped": skipped, "failures": failures[:20],
            "details": details[:4]}


def step_sync(models: dict, device) -> dict:
    """No device-to-host wait in a forward; kernel launches per layer."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from lfcli.models import LongformerModel

    out = {}
    for tier, made in models.items():
        model = LongformerModel.from_pretrained(made["encoder"], dtype=torch.bfloat16, device=device).eval()
        ids, mask, glob = gpu_profile.encoder_inputs(model.config.vocab_size, 2, N, device)
        mask[1, N - 700:] = 0  # padding in one sample
        glob[1, [0, 9, 300]] = 1  # and more globals in it
        with torch.inference_mode():
            model(ids, mask, glob)  # compiles, tunes
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
            try:
                model(ids, mask, glob)
                verdict = "no sync"
            except RuntimeError as exc:
                verdict = f"syncs: {str(exc).splitlines()[0][:200]}"
            finally:
                torch.cuda.set_sync_debug_mode(0)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                model(ids, mask, glob)
                torch.cuda.synchronize()
        kernels = sum(e.count for e in prof.key_averages() if e.device_type.name == "CUDA")
        out[tier] = {"forward": verdict, "kernels": kernels, "layers": model.config.num_hidden_layers,
                     "kernels_per_layer": round(kernels / model.config.num_hidden_layers, 1)}
    return out


def step_attention(json_path: Path, limit: float) -> dict:
    return run_benchmark(["benchmarks/attention.py", "--device", "cuda", "--sizes", "4096,16384", "--dtypes", "bf16",
                          "--impls", "lfcli,sdpa_dense,flex", "--memory", "none"], json_path, limit)


def run_benchmark(args: list[str], json_path: Path, limit: float) -> dict:
    """One of the repository's benchmark scripts in a process of its own: its exit code, the
    end of its output and the JSON it wrote."""
    run = subprocess.run([sys.executable, *args, "--json", str(json_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=limit)
    result = json.loads(json_path.read_text()) if json_path.exists() else {}
    return {"returncode": run.returncode, "tail": run.stdout[-2500:], "stderr": run.stderr[-800:], "json": result}


def step_encoder(models: dict, device, limit: float) -> dict:
    """lfcli in both shapes (the base one with MPNet's bias, as the base tier runs) and
    transformers' Longformer in the same sizes (no bias: it has none), 4,096 tokens."""
    import torch
    import transformers

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import common

    from lfcli.models import LongformerModel

    started = time.monotonic()
    rows = []
    for tier, made in models.items():
        for dtype_name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
            lf = LongformerModel.from_pretrained(made["encoder"], dtype=dtype, device=device).eval()
            cfg = lf.config
            hf_config = transformers.LongformerConfig(
                vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_hidden_layers,
                num_attention_heads=cfg.num_attention_heads, intermediate_size=cfg.intermediate_size,
                attention_window=512, max_position_embeddings=N + 2, pad_token_id=cfg.pad_token_id)
            hf = transformers.LongformerModel(hf_config).to(device=device, dtype=dtype).eval()
            for batch in (1, 8):
                if time.monotonic() - started > limit:
                    rows.append({"tier": tier, "dtype": dtype_name, "batch": batch, "skipped": "out of time"})
                    continue
                ids, mask, glob = gpu_profile.encoder_inputs(cfg.vocab_size, batch, N, device)
                glob_dev = glob.to(device)
                fns = {"lfcli": lambda: lf(ids, mask, glob),
                       "transformers": lambda: hf(input_ids=ids, attention_mask=mask, global_attention_mask=glob_dev)}
                timed = common.bench_rounds(fns, device, warmup=2, repeats=5)
                flops = sum(common.encoder_layer_flops(N, cfg.hidden_size, cfg.num_attention_heads, w,
                                                       cfg.intermediate_size) for w in cfg.attention_windows) * batch
                row = {"tier": tier, "dtype": dtype_name, "batch": batch, "tokens": batch * N, "flops": flops}
                for name in fns:
                    row[f"{name}_s"] = timed[name]["median_s"]
                    row[f"{name}_tokens_per_s"] = batch * N / timed[name]["median_s"]
                row["lfcli_tflops"] = flops / row["lfcli_s"] / 1e12
                row["lfcli_over_transformers"] = row["transformers_s"] / row["lfcli_s"]
                rows.append(row)
            del lf, hf
            torch.cuda.empty_cache()
    return {"rows": rows}


def step_train(json_path: Path, limit: float) -> dict:
    return run_benchmark(["benchmarks/train_speed.py", "--device", "cuda", "--models", "base", "--dtypes", "bf16",
                          "--modes", "full", "--cases", "4096x1,512x8"], json_path, limit)


def lfcli_run(args: list[str], limit: float, env_extra: dict | None = None, python_flags: tuple = ()) -> dict:
    env = dict(os.environ, LFCLI_DEBUG="1", **(env_extra or {}))
    t = time.perf_counter()
    run = subprocess.run([sys.executable, *python_flags, "-m", "lfcli", *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=limit)
    return {"returncode": run.returncode, "seconds": time.perf_counter() - t, "stderr": run.stderr[-1500:],
            "stderr_all": run.stderr}


def slowest_imports(importtime_stderr: str, top: int = 25) -> list[str]:
    """`python -X importtime`'s lines with the largest cumulative microseconds."""
    rows = []
    for line in importtime_stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return [f"{us / 1e6:6.2f} s {name}" for us, name in sorted(rows, reverse=True)[:top]]


def step_end_to_end(task: str, models: dict, tmp: Path, limit: float) -> dict:
    """`lfcli TASK novels/` per shape, defaults (the GPU's budget), and the tokens it ran."""
    from tokenizers import Tokenizer

    out = {}
    for tier, made in models.items():
        folder = made["encoder" if task == "embed" else "corefs"]
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokens = sum(len(tok.encode(p.read_text(encoding="utf-8")).ids) for p in sorted((DATA / "novels").iterdir()))
        target = tmp / f"{task}-{tier}.jsonl"
        res = lfcli_run([task, str(DATA / "novels"), "-m", str(folder), "--device", "cuda", "-o", str(target), "-F"],
                        limit / len(models))
        res.update(tokens=tokens, tokens_per_s=tokens / res["seconds"])
        out[tier] = res
    return out


def step_start(models: dict, tmp: Path) -> dict:
    """A process that embeds one short text on the GPU: wall seconds to its row, three times:
    as the image is (where no bytecode can be written, every process compiles torch's sources
    again), then twice with PYTHONPYCACHEPREFIX (a first process writes the bytecode, the next
    starts as an installed torch does); the last one with -X importtime, its slowest imports."""
    short = tmp / "short.txt"
    short.write_text("A short note about the lease of the bakery on Mill Street.")
    folder = models["small"]["encoder"]
    args = ["embed", str(short), "-m", str(folder), "--device", "cuda", "-o", str(tmp / "short.jsonl"), "-F"]
    timed = lfcli_run(args, 120)
    bytecode = {"PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
    first = lfcli_run(args, 120, bytecode)
    warm = lfcli_run(args, 120, bytecode, ("-X", "importtime"))
    plain_warm = lfcli_run(args, 120, bytecode)
    return {"process_s": timed["seconds"], "returncode": timed["returncode"], "stderr": timed["stderr"],
            "bytecode_writing_s": first["seconds"], "with_bytecode_s": plain_warm["seconds"],
            "with_bytecode_importtime_s": warm["seconds"],
            "slowest_imports": slowest_imports(warm["stderr_all"])}


def step_cosine(models: dict, device) -> dict:
    """The same random small-shape model on the GPU (bf16) and the CPU (fp32), one novel."""
    import torch

    from lfcli.pipelines.infer.runner import Pipeline
    from lfcli.pipelines.io.readers import Document

    text = (DATA / "novels" / NOVELS[2]).read_text(encoding="utf-8")[:200_000]
    folder = str(models["small"]["encoder"])
    vecs = {}
    for name, dev, dtype in (("gpu", "cuda", "bfloat16"), ("cpu", "cpu", "float32")):
        pipe = Pipeline("embed", folder, device=dev, dtype=dtype)
        vecs[name] = torch.tensor(list(pipe.run([Document("a", text)]))[0]["embedding"])
    return {"cosine": float(torch.nn.functional.cosine_similarity(vecs["gpu"], vecs["cpu"], dim=0))}


# -- the report --------------------------------------------------------------------------------


def summary(results: dict) -> list[str]:
    lines = []
    rates = results.get("matmul_tflops", {})
    lines.append(f"matmul: bf16 {rates.get('bf16', 0):.0f} TFLOP/s, fp32 {rates.get('fp32', 0):.0f} TFLOP/s (same run)")
    t = results.get("tests", {})
    if "passed" in t:
        lines.append(f"tests compiled: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped of "
                     f"{t['collected']}")
    for tier, s in results.get("sync", {}).items():
        if isinstance(s, dict):
            lines.append(f"sync {tier}: {s['forward']}; {s['kernels_per_layer']} kernels a layer")
    for row in results.get("encoder", {}).get("rows", []):
        if "lfcli_s" in row:
            share = row["lfcli_tflops"] / rates.get(row["dtype"], float("nan"))
            lines.append(f"encoder {row['tier']} {row['dtype']} {row['batch']}x{N}: lfcli "
                         f"{row['lfcli_tokens_per_s'] / 1e3:,.0f}k tokens/s ({share:.0%} of the matmul rate), "
                         f"transformers {row['transformers_tokens_per_s'] / 1e3:,.0f}k ({row['lfcli_over_transformers']:.2f}x)")
    engine = {row["tier"]: row["lfcli_tokens_per_s"] for row in results.get("encoder", {}).get("rows", [])
              if row.get("dtype") == "bf16" and row.get("batch") == 8 and "lfcli_tokens_per_s" in row}
    for task in ("embed", "corefs"):
        for tier, r in results.get(task, {}).items():
            if isinstance(r, dict) and "tokens_per_s" in r:
                share = (f"; {r['tokens_per_s'] / engine[tier]:.2f}x the engine's bf16 8 x 4,096 rate"
                         if task == "embed" and tier in engine else "")
                lines.append(f"lfcli {task} {tier}: {r['tokens_per_s'] / 1e3:,.1f}k tokens/s end to end "
                             f"({r['tokens']:,} tokens, {r['seconds']:.1f} s, exit {r['returncode']}{share})")
    s = results.get("start", {})
    if "process_s" in s:
        lines.append(f"process start to its row: {s['process_s']:.1f} s as the image is; with bytecode kept "
                     f"(PYTHONPYCACHEPREFIX): {s.get('with_bytecode_s', float('nan')):.1f} s")
    pr = results.get("profile", {})
    if "wall_s" in pr:
        rate = pr["tokens"] / pr["wall_s"]
        share = f"; {rate / engine['small']:.2f}x the engine's bf16 8 x 4,096 rate" if "small" in engine else ""
        lines.append(f"embed small in-process: {rate / 1e3:,.0f}k tokens/s, the model's GPU time "
                     f"{pr['model_gpu_s']:.2f} s of {pr['wall_s']:.2f} s ({pr['model_calls']} calls){share}")
    g = results.get("graphs", {})
    for row in g.get("rows", []):
        lines.append(f"graphs {row['tier']} {row['batch']}x{row['n']}: eager {row['eager_s'] * 1e3:.2f} ms, graphed "
                     f"{row['graphed_s'] * 1e3:.2f} ms ({row['eager_s'] / row['graphed_s']:.2f}x), max diff "
                     f"{row['max_diff']:.1e}{'' if row['enabled'] else ', CAPTURE FAILED'}")
    if "embed_graphed_s" in g:
        lines.append(f"graphs, embed of the four novels in-process: eager {g['embed_eager_s']:.2f} s, graphed "
                     f"{g['embed_graphed_s']:.2f} s, min cosine {g['embed_min_cosine']:.6f}")
    c = results.get("cosine", {})
    if "cosine" in c:
        lines.append(f"GPU bf16 vs CPU fp32 cosine: {c['cosine']:.6f}")
    for name, value in results.items():
        if isinstance(value, dict) and "error" in value:
            lines.append(f"{name}: FAILED {value['error']}")
    return lines


STEPS = ("tests", "sync", "attention", "encoder", "train", "embed", "corefs", "start", "cosine", "profile", "graphs")
QUICK_STEPS = ("sync", "start", "cosine")
LIMITS = {"tests": 110, "attention": 60, "encoder": 70, "train": 50, "embed": 70, "corefs": 80}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prepare", action="store_true", help="fill .gpu-check/ here (needs ../shared and both tiers)")
    p.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--json", default=None, help="write every figure here")
    p.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated subset of {','.join(STEPS)}")
    p.add_argument("--quick", action="store_true", help=f"the steps {','.join(QUICK_STEPS)} only (about a minute)")
    args = p.parse_args(argv)
    if args.quick:
        args.steps = ",".join(QUICK_STEPS)
    if args.prepare:
        prepare(Path(args.shared))
        return {}
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device here (run --prepare here, the check on the GPU machine)")
    if not DATA.is_dir():
        raise SystemExit(f"gpu_check: {DATA} is missing: run `python benchmarks/gpu_check.py --prepare` and carry it")
    wheels()
    device = torch.device("cuda")
    wanted = args.steps.split(",")
    results: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                     "date": time.strftime("%Y-%m-%d"), "command": " ".join(["python", *sys.argv])}
    import triton

    results["triton"] = triton.__version__
    results["matmul_tflops"] = matmul_rates(device)

    def save():
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))

    with tempfile.TemporaryDirectory(prefix="lfcli-gpu-") as tmp_name:
        tmp = Path(tmp_name)
        models = random_models(tmp)
        calls = {
            "tests": lambda: step_tests(LIMITS["tests"]),
            "sync": lambda: step_sync(models, device),
            "attention": lambda: step_attention(tmp / "attention.json", LIMITS["attention"]),
            "encoder": lambda: step_encoder(models, device, LIMITS["encoder"]),
            "train": lambda: step_train(tmp / "train.json", LIMITS["train"]),
            "embed": lambda: step_end_to_end("embed", models, tmp, LIMITS["embed"]),
            "corefs": lambda: step_end_to_end("corefs", models, tmp, LIMITS["corefs"]),
            "start": lambda: step_start(models, tmp),
            "cosine": lambda: step_cosine(models, device),
            "profile": lambda: gpu_profile.step_profile(models, device, DATA / "novels"),
            "graphs": lambda: gpu_profile.step_graphs(models, device, DATA / "novels", N),
        }
        for name in STEPS:
            if name not in wanted:
                continue
            t = time.perf_counter()
            try:
                results[name] = calls[name]()
            except Exception as exc:  # noqa: BLE001 - one step's failure is reported, the rest run
                results[name] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
            results.setdefault("step_seconds", {})[name] = round(time.perf_counter() - t, 1)
            print(f"gpu_check: {name} done in {results['step_seconds'][name]:.0f} s", flush=True)
            save()
    print("\n".join(summary(results)))
    save()
    return results


if __name__ == "__main__":
    main()
