"""`lfcli show OUTPUT --text INPUTS -o NAME.html`: a task's output drawn over its documents."""

from __future__ import annotations

import os

import typer
from typing_extensions import Annotated

from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.wording import plural

from .app import app, guarded
from .options import Encoding, EncodingErrors, Glob, IdColumn, InputFormat, OverwriteFile, Page, Quiet, TextColumn, Texts

Shown = Annotated[str, typer.Argument(metavar="OUTPUT", show_default=False,
                                      help="Output of classify, qa or corefs: .jsonl, .json, .parquet (or a Parquet folder).")]


@app.command()
@guarded
def show(
    output_file: Shown,
    text: Texts = None,
    output: Page = None,
    text_column: TextColumn = "text", id_column: IdColumn = None, glob: Glob = None,
    encoding_errors: EncodingErrors = "strict", encoding: Encoding = "utf-8", input_format: InputFormat = "auto",
    force: OverwriteFile = False, quiet: Quiet = False,
):
    """Draw an output of classify, qa or corefs over its documents as one page (-o NAME.html,
    required) that opens from disk with no network: chains in colour, answers in their
    passages, labels in a sortable table. Documents are matched to rows by id."""
    # lazy: the readers and the pages (50 ms) are not for --help
    from lfcli.pipelines.view.show import (  # lazy: pyarrow, not for --help
        document_texts, job_folder, read_output, recorded_inputs, render, task_of, write_page,
    )

    if output is None or output == "-":
        raise UsageError("show writes a page: give -o NAME.html")
    if not output.lower().endswith(".html"):
        raise UsageError(f"{output}: the page must be a .html file")
    if os.path.lexists(output) and not force:
        raise UsageError(f"{output} exists; pass --force to overwrite")
    folder = os.path.dirname(output)
    if folder and not os.path.isdir(folder):
        raise InputError(f"output folder {folder} does not exist")
    rows, record = read_output(output_file)
    task = task_of(rows, record)
    if text:
        inputs = list(text)
        read = dict(text_column=text_column, id_column=id_column, glob=glob, encoding_errors=encoding_errors,
                    input_format=input_format, encoding=encoding)
    else:
        recorded = recorded_inputs(record)
        if recorded is None:
            raise UsageError(f"{output_file}: its job record names no inputs that are still here; pass --text "
                             "with the job's inputs")
        inputs, read = recorded
    ids = [str(r["id"]) for r in rows if r.get("id") is not None and not r.get("error")]
    texts = document_texts(inputs, ids, base=job_folder(record), **read)
    if ids and not any(texts.get(i) is not None for i in ids):
        raise InputError(f"no document of {output_file} was found in {' '.join(inputs)} (a page without "
                         "its texts is not written): give --text the job's inputs")
    write_page(output, render(task, rows, texts, title=f"lfcli {task}: {os.path.basename(output_file)}", record=record))
    if not quiet:
        missing = sum(1 for i in ids if texts.get(i) is None)
        note = (f"; {plural(missing, 'document')} not found in {' '.join(inputs)} (ids must match: give --text "
                "the inputs as the job was given them)") if missing else ""
        typer.echo(f"lfcli: wrote {output}: {plural(len(rows), 'row')}{note}", err=True)
