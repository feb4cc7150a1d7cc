"""`lfcli models [NAME]`, `lfcli convert SRC OUT` and `lfcli pretrain-continue PATH... -o DIR`:
the bundled models and their cards, making a long model from a short one, and continuing its
masked-LM pretraining.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

import typer
from typing_extensions import Annotated

from .app import Backend, Device, EncodingErrors, Glob, IdColumn, MaxLength, Model, Quiet, TextColumn, app, guarded, machine_line


@app.command()
@guarded
def models(
    name: Annotated[Optional[str], typer.Argument(metavar="NAME", help="A bundled model's name: print its model card (what it does, its data, scores, speed and failure modes).", show_default=False)] = None,
):
    """List the bundled models and the task heads each has; with NAME, print that model's card."""
    if name is not None:
        _print_card(name)
        return
    from lfcli.pipelines.infer.catalog import BUILD_SECONDS, list_models

    for m in list_models():
        if m["available"] is not None:
            status = f"unavailable: {m['available']}"
        else:
            status = "ready" if m["built"] else f"builds on first use (about {BUILD_SECONDS} s)"
        default = f" (default for {m['default']})" if m["default"] else ""
        typer.echo(f"{m['name']}{default}\t{m['description']}")
        typer.echo(f"    tasks: {', '.join(m['tasks'])}")
        for key in ("trained_on", "scores"):
            if m.get(key):
                typer.echo(f"    {key.replace('_', ' ')}: {m[key]}")
        typer.echo(f"    {status}")
        typer.echo(f"    card: lfcli models {m['name']}")
    typer.echo(machine_line())


def _print_card(name: str) -> None:
    """`lfcli models NAME`: the model's card, rendered on a terminal, as Markdown text otherwise."""
    from lfcli.models.bundled import card_path, model_names, read_card
    from lfcli.pipelines.errors import InputError, UsageError

    names = model_names()
    if name not in names:
        raise UsageError(f"unknown model {name!r}; usage: lfcli models [NAME], NAME one of: {', '.join(names)}")
    try:
        text = read_card(name)
    except OSError:
        raise InputError(f"the card of {name} is missing from this installation ({card_path(name)})") from None
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        typer.echo(text.rstrip("\n"))


@app.command()
@guarded
def convert(
    src: Annotated[str, typer.Argument(metavar="SRC", help="A BERT, RoBERTa or Longformer checkpoint folder (transformers layout).")],
    out: Annotated[str, typer.Argument(metavar="OUT", help="The folder to write the Longformer checkpoint to.")],
    max_positions: Annotated[int, typer.Option("--max-positions", help="Tokens the long model takes.")] = 4096,
    attention_window: Annotated[int, typer.Option("--attention-window", help="Full window (even).")] = 512,
    force: Annotated[bool, typer.Option("--force", "-F", help="Write over an existing, non-empty OUT folder.")] = False,
):
    """Make a long model from a short one (the paper's recipe): tiled positions, global
    projections copied from the local ones."""
    from lfcli.pipelines.infer.catalog import convert_checkpoint

    path = convert_checkpoint(src, out, max_positions=max_positions, attention_window=attention_window, force=force)
    typer.echo(f"lfcli: wrote {path}", err=True)


@app.command("pretrain-continue")
@guarded
def pretrain_continue(
    corpus: Annotated[List[str], typer.Argument(metavar="PATH", help="Files, folders, .jsonl or .parquet of long documents.", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Folder for the best model so far, its resume state (train_state/) and metrics.jsonl.")],
    model: Model = None,
    max_length: MaxLength = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Sequences per step and process.")] = 1,
    grad_accum: Annotated[int, typer.Option("--grad-accum", help="Steps of gradient accumulation per update.")] = 8,
    lr: Annotated[float, typer.Option("--lr", help="Peak learning rate (the paper: 3e-5).")] = 3e-5,
    warmup_steps: Annotated[Optional[int], typer.Option("--warmup-steps", help="Linear warm-up updates, then power-3 polynomial decay (default: 6% of --max-steps, at most 500).")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Optimizer updates in all.")] = 1000,
    weight_decay: Annotated[float, typer.Option("--weight-decay")] = 0.01,
    mask_prob: Annotated[float, typer.Option("--mask-prob", help="Share of tokens masked (80% [MASK], 10% random, 10% kept).")] = 0.15,
    max_grad_norm: Annotated[float, typer.Option("--max-grad-norm", help="Gradient clipping (0 turns it off).")] = 1.0,
    save_every: Annotated[int, typer.Option("--save-every", help="Score the held-out set, keep the best model and rewrite the resume state every N updates (0: at the end only).")] = 200,
    max_eval_sequences: Annotated[int, typer.Option("--max-eval-sequences", help="Cap on held-out sequences (CPU time).")] = 256,
    eval_fraction: Annotated[float, typer.Option("--eval-fraction", help="Share of documents held out for MLM loss / bits per token.")] = 0.05,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    gradient_checkpointing: Annotated[bool, typer.Option("--gradient-checkpointing", help="Recompute activations in the backward pass to save memory.")] = False,
    freeze_embeddings: Annotated[bool, typer.Option("--freeze-embeddings", help="Keep the base's embedding tables (and the output layer tied to them) as they are: the layers learn, and a fine-tune over the result stored with --delta needs no embedding table.")] = False,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    device: Device = "auto", attention_backend: Backend = None,
    force: Annotated[bool, typer.Option("--force", "-F", help="Start over: remove what an earlier run wrote to the output folder (model, train_state/, metrics), nothing else there.")] = False,
    resume: Annotated[bool, typer.Option("--resume", "-r", help="Continue from the output folder's resume state, ending with the weights of an uninterrupted run; refused if the corpus or data options differ.")] = False,
    quiet: Quiet = False,
    encoding_errors: EncodingErrors = "strict",
):
    """Continue masked-LM pretraining on long documents (the paper's recipe); works under torchrun."""
    import json

    from lfcli.pipelines.infer.catalog import announce_build
    from lfcli.pipelines.train.pretrain import pretrain_continue as run
    from lfcli.pipelines.progress import record_line
    from lfcli.pipelines.infer.runner import check_backend, resolve_device
    from lfcli.pipelines.wording import plural

    torch_device = resolve_device(device)
    check_backend(attention_backend, torch_device)
    announce_build(model or "minilm-l6-long")

    def log(record: dict) -> None:  # plain lines on stderr when there is no live bar
        line = record_line(record, mlm=True) if record["event"] != "step" or record["step"] % 10 == 0 else None
        if line is not None:
            typer.echo(line, err=True)

    live = sys.stderr.isatty() and not quiet
    summary = run(
        corpus, model or "minilm-l6-long", output, max_length=max_length, batch_size=batch_size,
        grad_accum=grad_accum, lr=lr, warmup_steps=warmup_steps, max_steps=max_steps,
        weight_decay=weight_decay, mask_prob=mask_prob, save_every=save_every, eval_fraction=eval_fraction,
        seed=seed, gradient_checkpointing=gradient_checkpointing, freeze_embeddings=freeze_embeddings, device=str(torch_device),
        attention_backend=attention_backend, resume=resume, force=force, text_column=text_column,
        id_column=id_column, glob=glob, encoding_errors=encoding_errors, progress=live,
        log=None if live or quiet else log, max_grad_norm=max_grad_norm or None,
        max_eval_sequences=max_eval_sequences,
    )
    if os.environ.get("RANK", "0") == "0":
        typer.echo(json.dumps(summary, default=str))  # the run's summary is this command's data
    if not quiet and summary:
        before, after = summary.get("eval_loss_before"), summary.get("eval_loss_after")
        line = f"lfcli: wrote {output} after {plural(summary.get('steps', 0), 'update')}"
        if before is not None and after is not None:
            line += (f"; held-out MLM loss {before:.3f} -> {after:.3f}"
                     f" ({summary['eval_bpt_before']:.3f} -> {summary['eval_bpt_after']:.3f} bits/token)")
        typer.echo(line, err=True)
