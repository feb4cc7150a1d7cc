"""`lfcli models [NAME]`, `lfcli convert SRC OUT` and `lfcli pretrain-continue PATH... -o DIR`:
the bundled models and their cards, making a long model from a short one, and continuing its
masked-LM pretraining.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.markdown import Markdown
from typing_extensions import Annotated

from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.infer.catalog import (
    BUILD_SECONDS, ROOFLINE_RATIO, announce_build, convert_checkpoint, list_models, matmul_gflops, tier_sizes,
)
from lfcli.pipelines import registry
from lfcli.pipelines.progress import record_line
from lfcli.pipelines.tasks.mlm.config import PretrainConfig
from lfcli.pipelines.wording import plural

from .app import app, guarded, machine_line
from .options import (
    AttentionWindow, Backend, Corpus, Device, EncodingErrors, EvalFraction, Glob, GradAccum, GradientCheckpointing,
    IdColumn, MaskProb, MaxEvalSequences, MaxGradNorm, MaxLength, MaxPositions, MaxSteps, Model, OverwriteFolder,
    PretrainFreezeEmbeddings, PretrainLr, Quiet, ResumeRun, RunFolder, SaveEvery, Seed, SequencesPerStep, StartOver,
    TextColumn, WarmupSteps, WeightDecay,
)


@app.command()
@guarded
def models(
    name: Annotated[Optional[str], typer.Argument(metavar="NAME", help="A bundled model's name: print its model card (what it does, its data, scores, speed and failure modes).", show_default=False)] = None,
):
    """List the bundled models and the task heads each has; with NAME, print that model's card."""
    if name is not None:
        _print_card(name)
        return
    from lfcli.pipelines.infer.precision import cpu_has_native_bf16  # lazy: torch, not for --help

    dtype = "bfloat16" if cpu_has_native_bf16() else "float32"  # what --dtype auto runs here
    sizes, rate = tier_sizes(), matmul_gflops(dtype)
    for m in list_models():
        if m["available"] is not None:
            status = f"unavailable: {m['available']}"
        else:
            status = "ready" if m["built"] else f"builds on first use (about {m.get('build_seconds', BUILD_SECONDS)} s)"
        default = f" (default for {m['default']})" if m["default"] else ""
        typer.echo(f"{m['name']}{default}\t{m['description']}")
        typer.echo(f"    tasks: {', '.join(m['tasks'])}")
        size = sizes[m["tier"]]
        speed = rate * 1e9 / (size["flops_per_token"] * ROOFLINE_RATIO[dtype])
        typer.echo(f"    tier: {m['tier']} (-m {m['tier']}): {size['layers']} layers x {size['hidden']}, "
                   f"{size['parameters'] / 1e6:.0f}M parameters; embed about {speed:,.0f} tokens/s on this CPU in "
                   f"{dtype} (its matmul rate, {rate:.0f} GFLOP/s, over the encoder's FLOPs per token, "
                   f"x{ROOFLINE_RATIO[dtype]})")
        for key in ("trained_on", "scores"):
            if m.get(key):
                typer.echo(f"    {key.replace('_', ' ')}: {m[key]}")
        typer.echo(f"    {status}")
        typer.echo(f"    card: lfcli models {m['name']}")
    typer.echo(machine_line())


def _print_card(name: str) -> None:
    """`lfcli models NAME`: the model's card, rendered on a terminal, as Markdown text otherwise."""
    from lfcli.models.bundled import card_path, model_names, read_card  # lazy: torch, not for --help

    names = model_names()
    if name not in names:
        raise UsageError(f"unknown model {name!r}; usage: lfcli models [NAME], NAME one of: {', '.join(names)}")
    try:
        text = read_card(name)
    except OSError:
        raise InputError(f"the card of {name} is missing from this installation ({card_path(name)})") from None
    if sys.stdout.isatty():
        Console().print(Markdown(text))
    else:
        typer.echo(text.rstrip("\n"))


@app.command()
@guarded
def convert(
    src: Annotated[str, typer.Argument(metavar="SRC", help="A BERT, RoBERTa or Longformer checkpoint folder (transformers layout).")],
    out: Annotated[str, typer.Argument(metavar="OUT", help="The folder to write the Longformer checkpoint to.")],
    max_positions: MaxPositions = 4096, attention_window: AttentionWindow = 512, force: OverwriteFolder = False,
):
    """Make a long model from a short one (the paper's recipe): tiled positions, global
    projections copied from the local ones."""
    path = convert_checkpoint(src, out, max_positions=max_positions, attention_window=attention_window, force=force)
    typer.echo(f"lfcli: wrote {path}", err=True)


@app.command("pretrain-continue")
@guarded
def pretrain_continue(
    corpus: Corpus, output: RunFolder, model: Model = None, max_length: MaxLength = PretrainConfig.max_length,
    batch_size: SequencesPerStep = PretrainConfig.batch_size, grad_accum: GradAccum = PretrainConfig.grad_accum,
    lr: PretrainLr = PretrainConfig.lr, warmup_steps: WarmupSteps = PretrainConfig.warmup_steps,
    max_steps: MaxSteps = PretrainConfig.max_steps, weight_decay: WeightDecay = PretrainConfig.weight_decay,
    mask_prob: MaskProb = PretrainConfig.mask_prob, max_grad_norm: MaxGradNorm = PretrainConfig.max_grad_norm,
    save_every: SaveEvery = PretrainConfig.save_every,
    max_eval_sequences: MaxEvalSequences = PretrainConfig.max_eval_sequences,
    eval_fraction: EvalFraction = PretrainConfig.eval_fraction, seed: Seed = PretrainConfig.seed,
    gradient_checkpointing: GradientCheckpointing = PretrainConfig.gradient_checkpointing,
    freeze_embeddings: PretrainFreezeEmbeddings = PretrainConfig.freeze_embeddings,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    device: Device = "auto", attention_backend: Backend = None,
    force: StartOver = False, resume: ResumeRun = False, quiet: Quiet = False, encoding_errors: EncodingErrors = "strict",
):
    """Continue masked-LM pretraining on long documents (the paper's recipe); works under torchrun."""
    from lfcli.models.bundled import DEFAULT_MODEL  # lazy: torch, not for --help
    from lfcli.pipelines.infer.runner import check_backend, resolve_device  # lazy: torch

    run = registry.get("mlm", "pretrain").pretrain
    torch_device = resolve_device(device)
    check_backend(attention_backend, torch_device)
    model = model or DEFAULT_MODEL
    announce_build(model)

    def log(record: dict) -> None:  # plain lines on stderr when there is no live bar
        line = record_line(record, mlm=True) if record["event"] != "step" or record["step"] % 10 == 0 else None
        if line is not None:
            typer.echo(line, err=True)

    config = PretrainConfig(
        max_length=max_length, batch_size=batch_size, grad_accum=grad_accum, lr=lr, warmup_steps=warmup_steps,
        max_steps=max_steps, weight_decay=weight_decay, max_grad_norm=max_grad_norm, mask_prob=mask_prob,
        save_every=save_every, eval_fraction=eval_fraction, max_eval_sequences=max_eval_sequences, seed=seed,
        gradient_checkpointing=gradient_checkpointing, freeze_embeddings=freeze_embeddings,
    )
    read = dict(text_column=text_column, id_column=id_column, glob=glob, encoding_errors=encoding_errors)
    live = sys.stderr.isatty() and not quiet
    summary = run(corpus, model, output, config, device=str(torch_device), attention_backend=attention_backend,
                  resume=resume, force=force, read=read, progress=live, log=None if live or quiet else log)
    if os.environ.get("RANK", "0") == "0":
        typer.echo(json.dumps(summary, default=str))  # the run's summary is this command's data
    if not quiet and summary:
        before, after = summary.get("eval_loss_before"), summary.get("eval_loss_after")
        line = f"lfcli: wrote {output} after {plural(summary.get('steps', 0), 'update')}"
        if before is not None and after is not None:
            line += (f"; held-out MLM loss {before:.3f} -> {after:.3f}"
                     f" ({summary['eval_bpt_before']:.3f} -> {summary['eval_bpt_after']:.3f} bits/token)")
        typer.echo(line, err=True)
