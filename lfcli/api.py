"""The Python API: the CLI's tasks as functions returning rows (dicts).

    import lfcli
    texts = ["first document ...", "second ..."]
    rows = lfcli.embed(texts)                                            # bundled model
    rows = lfcli.classify(texts, labels=["sports", "politics"])          # zero-shot, two labels or more
    rows = lfcli.qa(texts, question="Who signed the contract?")          # the bundled QA model

Documents can be strings (ids "0", "1", ...: their positions), dicts with "text" (and "id",
"question"), or `lfcli.Document`s, for every entry point: the task functions and
`Pipeline(...).run(...)` alike. For large jobs, `lfcli.Pipeline(task, model=...)` loads the model once
and `pipeline.run(documents)` streams rows; `lfcli.read_documents(paths)` streams documents
from files, folders, JSONL and Parquet like the CLI does.
"""

from __future__ import annotations

from lfcli.pipelines import registry


def Pipeline(task: str, model: str | None = None, **options):
    """A loaded model for one task; `.run(documents)` yields rows in input order.
    Options are the CLI's: device ("auto": CUDA when there is a GPU), dtype ("auto": bf16 on a
    CPU with native bf16, else float32),
    attention_backend, max_length, batch_size, max_tokens, global_policy, labels,
    temperature, question (one, or a list of several), questions (a file, or a list), read, top_k,
    pooling, normalize; fast_paths (False: the plain reference
    model, without the speed swaps); and chunk_docs, chunk_chars (how
    many documents, and about how many characters, between one burst of rows and the
    next; counted, not timed, so one input gives the same rows on every run). Bad options raise lfcli.pipelines.errors.UsageError before the model loads."""
    from lfcli.pipelines.infer.runner import Pipeline as _Pipeline  # lazy: torch, not for `import lfcli`

    return _Pipeline(task, model, **options)


def _run(task: str, docs, model, on_error: str = "skip", **options) -> list[dict]:
    pipeline = Pipeline(task, model, **options)
    return list(pipeline.run(docs, on_error=on_error))


def _task_function(spec: registry.TaskSpec):
    """`lfcli.<task>(docs, model=None, **options) -> rows`: a function for each task that runs
    on documents, from its home's spec (its summary, options and document fields)."""

    def run(docs, model: str | None = None, **options) -> list[dict]:
        return _run(spec.name, docs, model, **options)

    own = ", ".join(o.name for o in spec.options if o.flags)
    fields = f" (and 'id', {', '.join(repr(f) for f in spec.fields)})" if spec.fields else " (and 'id')"
    run.__name__ = run.__qualname__ = spec.name.replace("-", "_")
    run.__doc__ = (f"{spec.summary}\n\nRows as `lfcli {spec.name}` writes them, in input order. Documents: strings, "
                   f"dicts with 'text'{fields}, or lfcli.Documents. Options: its own"
                   f"{f' ({own})' if own else ' (none)'} and Pipeline's.")
    return run


def task_function(name: str):
    """`lfcli.<name>`: the function of the registered task that runs on documents called `name`
    (a hyphen in a task's name is an underscore here), or None."""
    for task in registry.tasks("infer"):
        if task.replace("-", "_") == name:
            return _task_function(registry.get(task))
    return None


def task_functions() -> list[str]:
    """The names of the task functions (embed, classify, qa, corefs and any task registered later)."""
    return [task.replace("-", "_") for task in registry.tasks("infer")]


def __getattr__(name: str):  # lfcli.api.qa and such: looked up in the registry when asked for
    found = task_function(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found


def read_documents(paths: list[str], **options):
    """Stream documents from files, folders, .jsonl, .parquet or "-" (stdin), as the CLI does;
    records keep every task's document fields (qa's question) unless `fields=` says which."""
    from lfcli.pipelines.io.readers import iter_documents  # lazy: pyarrow

    options.setdefault("fields", registry.document_fields())
    return iter_documents(list(paths), **options)


def show(rows: list[dict], texts=None) -> str:
    """The HTML page (one self-contained file, as `-o NAME.html` writes) of classify, qa or
    corefs rows over their documents' texts: a dict id -> text, or the texts in the rows' order.

    >>> docs = ["Teodor lit the lamp. He watched the ships."]
    >>> open("chains.html", "w").write(lfcli.show(lfcli.corefs(docs), docs))"""
    from lfcli.pipelines.view.show import show_rows  # lazy: pyarrow

    return show_rows(rows, texts)
