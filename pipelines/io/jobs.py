"""What made an output: the job record that `--resume` compares before it continues.

A resumed job must be the job that wrote the output: `lfcli qa -o out.parquet --resume` on
`lfcli embed`'s output would rewrite it in the QA schema and lose the embeddings (and mix two
schemas in a JSONL file). So every output records its job:

  command   the task (embed, classify, qa, corefs)
  model     the name -m gave (or the task's default) and a cheap fingerprint of its weights and
            config (`model_fingerprint`)
  options   the options that change rows: reading (--text-column, --id-column, --glob,
            --encoding-errors, --input-format), windows and numbers (--max-length, --global,
            --dtype) and the task's own (--labels, --temperature, --question, --top-k,
            --pooling, --normalize, --singletons); not those that change only speed or
            progress (--batch-size, --device, --quiet, ...)
  inputs    the input paths as given (and the ids derive from them), with
  folder    the working folder the job ran in, against which they resolve: `lfcli show` finds
            the inputs from any folder

Where it is kept: Parquet outputs in their schema's key-value metadata (JOB_KEY), in every
part and in the finished file; JSONL and JSON outputs in a sidecar `OUT.lfcli-job.json`
written when the job starts (pipelines/io/writers.py); `--engine ray` in its manifest's header
(pipelines/infer/ray_engine.py). `check_same_job` refuses, as a usage error naming what differs,
a resume whose job differs, and an output without a record: an older lfcli wrote it, and
nothing says which job, so continuing it could mix two jobs' rows.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import registry
from ..errors import InputError, UsageError

JOB_KEY = "lfcli.job"  # Parquet schema metadata key
SIDECAR_SUFFIX = ".lfcli-job.json"  # JSONL / JSON outputs: OUT + this
#: The Pipeline's shared options that change rows, and the flags users know them by; every one
#: of a task's own options (its home's OPTIONS) changes rows too.
ROW_OPTIONS = {"max_length": "--max-length", "global_policy": "--global", "dtype": "--dtype"}
READ_OPTIONS = {"text_column": "--text-column", "id_column": "--id-column", "glob": "--glob",
                "encoding_errors": "--encoding-errors", "input_format": "--input-format", "encoding": "--encoding"}


def model_fingerprint(name: str) -> str | None:
    """What identifies a model's weights and config without reading the weights: for a
    bundled base model its pinned source sha256 and build (models.bundled.base_fingerprint);
    for a folder (a checkpoint, a trained adapter, a bundled task model) a hash of its
    config.json and of the name, size and modification time of each weight file. None when
    the folder is not here (the job then fails on loading it)."""
    from lfcli.models.bundled import BUNDLED, TASK_MODELS, base_fingerprint, bundled_path, task_model_path  # lazy: torch; writers and pages need no model

    if name in BUNDLED:
        return base_fingerprint(name, bundled_path(name))
    folder = task_model_path(name) if name in TASK_MODELS else Path(name).expanduser()
    try:
        digest = hashlib.sha256((folder / "config.json").read_bytes())
        for f in sorted(folder.iterdir()):
            if f.suffix in (".safetensors", ".bin"):
                stat = f.stat()
                digest.update(f"\x1f{f.name}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}".encode())
    except OSError:
        return None
    return digest.hexdigest()[:16]


def job_record(task: str, name: str, inputs: list[str], read: dict, pipe_opts: dict) -> dict:
    """The record of a job (see the module doc) running model `name` (infer.runner.model_name:
    -m or the task's default), as JSON would give it back."""
    from importlib.metadata import version  # the installed lfcli's (lfcli.__version__ is the layer above)

    options = {flag: read.get(key) for key, flag in READ_OPTIONS.items()
               if key != "encoding" or read.get(key) not in (None, "utf-8")}  # as jobs before --encoding recorded
    options.update({flag: pipe_opts[key] for key, flag in ROW_OPTIONS.items() if key in pipe_opts})
    spec = registry.get(task)
    options.update({o.flags[0].split("/")[0]: pipe_opts[o.name] for o in spec.options if o.name in pipe_opts})
    record = {"command": task, "model": name, "model_fingerprint": model_fingerprint(name), "options": options,
              "inputs": [str(p) for p in inputs], "folder": os.getcwd(), "written_by": f"lfcli {version('lfcli')}"}
    if spec.row_form != 1:  # the form of its rows, when not the first: another form is never resumed
        record["row_form"] = spec.row_form
    return json.loads(json.dumps(record))  # labels' tuples as lists, as a stored record has them


def _value(flag: str, value) -> str:
    if value is None:
        return f"{flag} (not given)"
    if flag == "--labels":
        return "--labels " + ",".join(f"{name}: {desc}" if desc else name for name, desc in value)
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    return f"{flag} {value!r}" if isinstance(value, str) and " " in value else f"{flag} {value}"


def _what_differs(recorded: dict, current: dict) -> tuple[str, str] | None:
    """(what the recorded job had, what this one has), for the first kind of difference; None
    when they are the same job (the lfcli version that wrote it does not matter)."""
    if recorded.get("command") != current["command"]:
        return f"(model {recorded.get('model')})", f"this is `lfcli {current['command']}`"

    if recorded.get("model") != current["model"]:
        return f"with model {recorded.get('model')}", f"this run has model {current['model']}"
    if recorded.get("model_fingerprint") != current["model_fingerprint"]:
        return (f"with model {current['model']} as it was then",
                "its weights or config have changed since (or it cannot be found)")
    old, new = recorded.get("options") or {}, current["options"]
    flags = [f for f in dict.fromkeys([*new, *old]) if old.get(f) != new.get(f)]
    had = [_value(f, old.get(f)) for f in flags]
    has = [_value(f, new.get(f)) for f in flags]
    if recorded.get("inputs") != current["inputs"]:
        had.append("inputs " + " ".join(recorded.get("inputs") or []))
        has.append("inputs " + " ".join(current["inputs"]))
    if not had:
        return None
    return f"(model {current['model']}) with {', '.join(had)}", f"this run has {', '.join(has)}"


def check_same_job(output: str, recorded: dict | None, current: dict) -> None:
    """Refuse (UsageError, one line) to resume `output` with a job other than the one that
    wrote it, or when it has no record of its job."""
    if recorded is None:
        raise UsageError(f"{output} has no record of the job that wrote it (an older lfcli wrote it), so --resume "
                         "cannot check that this is the same job: use --force to start over")
    if recorded.get("command") == current["command"] and recorded.get("row_form", 1) != current.get("row_form", 1):
        raise UsageError(f"{output} holds `lfcli {current['command']}` rows of an older form (form "
                         f"{recorded.get('row_form', 1)}; this lfcli writes form {current.get('row_form', 1)}, see the "
                         "README's output schemas), and one file never mixes the two: use --force to start over")
    differs = _what_differs(recorded, current)
    if differs is None:
        return
    had, has = differs
    raise UsageError(f"{output} was written by `lfcli {recorded.get('command')}` {had}; {has}: "
                     "resume with the same command or use --force")


def read_sidecar(path: str) -> dict | None:
    """The job record next to a JSONL / JSON output, None when there is none."""
    try:
        with open(path + SIDECAR_SUFFIX, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise InputError(f"{path + SIDECAR_SUFFIX}: not a readable job record; use --force to start over") from None
