"""The batch job: documents in, rows out, in input order, with bounded memory.

Documents are read as a stream and handled in chunks of at most `chunk_docs` documents and
about `chunk_chars` characters (the first chunk is one document), so finished rows come out
every few seconds however long the documents are, and a killed job loses little. The chunks
are cut by counts, never by the clock: which windows share a batch (and so, in bf16, the last
bits of a vector) is the same on every run of one input. Within a chunk every document is
tokenised into windows, the windows are sorted by length and packed into batches under a
token budget (`max_tokens` = longest window x batch size, so padding stays small), run
through the model, and the rows are emitted in the documents' input order. A document that
fails (unreadable, empty, no question, ...) gets a row with `error` and the others go on;
with on_error="fail" the first failure stops the job instead.

Options are checked (`check_options`) before the model loads, as UsageErrors.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import torch

from lfcli.models import ARCHITECTURES, BACKEND_ENV_VAR, BackendUnavailable, MissingHead, resolve_backend
from lfcli.models.cuda_graphs import graphs_wanted, use_cuda_graphs
from lfcli.models.bundled import DEFAULT_MODEL, TIERS, default_model, resolve_model
from lfcli.models.heads import ENCODER
from lfcli.models.model_folders import tokenizer_folder

from .. import registry
from ..errors import InputError, UsageError
from ..io.document import as_documents
from ..io.pdf_reader import with_pages
from ..io.readers import Document
from ..job_defaults import JOB
from ..progress import note
from ..registry import TaskSpec
from ..wording import plural
from .catalog import announce_build
from .heap import HeapKeeper
from .policies import check_policy
from .precision import DTYPES, resolve_dtype
from .read_ahead import read_ahead
from .results import results_to_host
from .tasks import Item, Prepared, Task, batch_tensors
from .tokenize import DocumentTokenizer

# Windows shorter than this are legal but slow: a long document becomes thousands of calls.
SHORT_WINDOW = 64
# Characters in a chunk of the job (after its first document): 200,000 are about 4 s of the
# small tier's work in bf16 on 2 cores (50,000 characters/s) and 12 s of the base tier's.
CHUNK_CHARS = 200_000


def resolve_device(device: str):
    """"auto" -> cuda when torch has a GPU, else cpu; any other name is checked against this
    machine, so a missing GPU is a usage error before anything loads."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise UsageError(f"--device {device!r} is not a device torch knows (auto, cpu, cuda, cuda:1, ...)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch is built without CUDA" if torch.version.cuda is None else "torch finds no GPU"
            raise UsageError(f"--device {device}: {why}; use --device cpu (or auto)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise UsageError(f"--device {device}: this machine has {plural(torch.cuda.device_count(), 'CUDA device')}")
    elif dev.type != "cpu":
        raise UsageError(f"--device {device}: lfcli runs on cpu or cuda")
    return dev


def batch_budget(device, batch_size: int | None = None, max_tokens: int | None = None) -> tuple[int, int]:
    """(windows a batch, tokens a batch): the options where given, else the device's defaults.
    A CPU runs best on one 4,096-token window at a time (its caches; JOB.max_tokens); a GPU
    needs many windows in flight to fill its cores (JOB.cuda_max_tokens)."""
    cuda = torch.device(device).type == "cuda"
    default_batch = JOB.cuda_batch_size if cuda else JOB.batch_size
    default_tokens = JOB.cuda_max_tokens if cuda else JOB.max_tokens
    return (default_batch if batch_size is None else batch_size,
            default_tokens if max_tokens is None else max_tokens)


def check_backend(attention_backend: str | None, device) -> None:
    """Refuse an unknown or impossible attention backend (the option's, else the environment
    variable's) as a usage error; a checkpoint's own setting is checked once it is read."""
    chosen = attention_backend or os.environ.get(BACKEND_ENV_VAR)
    if not chosen:
        return
    where = "--attention-backend" if attention_backend else BACKEND_ENV_VAR
    try:
        resolve_backend(chosen, None, device)
    except (BackendUnavailable, ValueError) as exc:
        raise UsageError(f"{where} {chosen}: {exc}") from None


def check_options(
    task: str,
    *,
    device: str = JOB.device,
    dtype: str = JOB.dtype,
    attention_backend: str | None = None,
    max_length: int | None = None,
    batch_size: int | None = None,
    max_tokens: int | None = None,
    global_policy: str | None = None,
    fast_paths: bool = JOB.fast_paths,
    **options,
):
    """Every option a Pipeline takes, checked without loading anything big: the shared ones
    here, the task's own (`options`) by its home's `check`; returns the torch device. The CLI
    calls it before reading inputs, Pipeline before loading the model."""
    spec = registry.get(task, "infer")
    unknown = sorted(set(options) - {o.name for o in spec.options})
    if unknown:
        raise UsageError(f"{task} takes no option {unknown[0]!r}")
    if (batch_size is not None and batch_size < 1) or (max_tokens is not None and max_tokens < 1):
        raise UsageError("--batch-size and --max-tokens must be positive")
    if max_length is not None and max_length < 1:
        raise UsageError("--max-length must be positive")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose auto, float32, bfloat16 or float16")
    spec.check(options)
    if global_policy is not None:
        check_policy(global_policy)
    torch_device = resolve_device(device)
    check_backend(attention_backend, torch_device)
    return torch_device


def _check_room(tok: DocumentTokenizer, spec: TaskSpec, pair_texts: list[str] | None) -> None:
    """Refuse a window length (tok.max_length) with no room for document tokens beside the
    task's special tokens and (a task whose windows hold a pair field: qa's question) the
    pair text, which may fill at most half a window."""
    paired = spec.pair is not None
    template = tok.pair if paired else tok.single
    special = len(template.prefix) + len(template.middle) + len(template.suffix)
    q = max((len(tok.encode(t).ids) for t in pair_texts or () if t), default=0) if paired else 0
    need = max(special + max(q, int(paired)) + 1, 2 * q)
    if tok.max_length < need:
        what = plural(special, "special token") + (
            f" and a {q}-token {spec.pair} (at most half a window)" if q else f" and a {spec.pair}" if paired else "")
        if q and 2 * q >= need:  # the pair text itself is too long: longer windows are a poor cure
            raise UsageError(f"the {spec.pair} has {q} tokens, more than half of a {tok.max_length}-token window; "
                             f"shorten it (to at most {tok.max_length // 2} tokens). --max-length {need} would "
                             f"fit it, but a model trained on {tok.max_length}-token windows answers worse in longer "
                             "ones (its card says how much)")
        raise UsageError(f"windows of {plural(tok.max_length, 'token')} leave no room for the document beside {what}; "
                         f"use --max-length {need} or more")


def model_name(task: str, model: str | None, options: dict | None = None) -> str:
    """The model a job runs: -m (a tier, `small` or `base`, names that tier's model for the
    task), else the task's bundled trained model, else the bundled base (embed; and zero-shot
    classify, which runs the base's bare encoder)."""
    if model in TIERS:
        encoder = TIERS[model]
        if model_class(task, options or {}) == ENCODER:  # embed, zero-shot classify: the encoder itself
            return encoder
        trained = default_model(registry.get(task).models, encoder)
        if trained == encoder:
            raise UsageError(f"-m {model}: the {model} tier has no trained model for {task} in this installation "
                             f"(see `lfcli models`)")
        return trained
    if model:
        return model
    spec = registry.get(task)
    return DEFAULT_MODEL if spec.bare_encoder(options or {}) else default_model(spec.models)


def model_class(task: str, options: dict) -> str:
    """The checkpoint class a job loads: the one with the task's head (none: the bare
    encoder), or the bare encoder when the task says so for these options."""
    spec = registry.get(task)
    return ENCODER if spec.bare_encoder(options) or spec.architecture is None else spec.architecture


def window_tokenizer(task: str, name: str, max_length: int | None, pair_texts: list[str] | None):
    """(model folder, its tokenizer for windows of max_length, 0 until the model's positions
    are known). A max_length too short for the task's special tokens and pair text is refused
    (UsageError) from the tokenizer alone: before the weights load, and in the CLI before any
    input is read."""
    announce_build(name)
    folder = resolve_model(name)
    tokenizer = DocumentTokenizer.from_folder(tokenizer_folder(folder), max_length or 0)
    if max_length is not None:
        _check_room(tokenizer, registry.get(task), pair_texts)
    return folder, tokenizer


def check_pair(spec: TaskSpec, given: list[str] | None, inputs_have_it: bool) -> None:
    """Refuse a job of a task with a pair field (qa's question) that no document can have, or
    whose asked pair texts (`given`) hold an empty one (UsageError: one message, not an error
    row per document)."""
    if given is not None and not all(isinstance(t, str) and t.strip() for t in given):
        raise UsageError(f"--{spec.pair} is empty")
    if given is None and not inputs_have_it:
        raise UsageError(f"{spec.pair_missing or f'lfcli {spec.name} needs a {spec.pair}'}; no input has one")


class ModelCalls:
    """What a task's setup and begin may ask of the loaded model: one document's window
    results (`calls(i, doc)`), or several documents' with their windows batched together
    (`calls.many(docs)`: a list, None where a document cannot be read or run)."""

    def __init__(self, runner: "Pipeline"):
        self.runner = runner

    def __call__(self, doc_index: int, doc: Document) -> list[Any]:
        return self.runner._run_one(doc_index, doc)

    def many(self, docs: list[Document]) -> list[list[Any] | None]:
        return self.runner._run_many(docs)


@dataclass
class Stats:
    docs: int = 0
    tokens: int = 0
    errors: int = 0
    started: float = 0.0
    # Within documents, for a progress line while a long one runs: windows run so far, windows
    # of the documents handed to the model so far, document tokens the windows run speak for.
    windows: int = 0
    windows_queued: int = 0
    tokens_run: int = 0
    unit: str = "doc"  # what a row is, for the progress line: a document (qa with several questions: a question)


# Most of a batch's tokens that may be padding before a new batch starts, once it holds
# PADDING_FREE_BATCH windows (smaller batches cost more in per-call overhead than in padding).
PADDING_SHARE = 0.2
PADDING_FREE_BATCH = 8


class Pipeline:
    """Load a model once, then stream documents through one task.

    >>> pipe = Pipeline("embed")                       # the bundled default model
    >>> rows = list(pipe.run([Document("a", "Some long text ...")]))
    """

    def __init__(
        self,
        task: str,
        model: str | None = None,
        *,
        device: str = JOB.device,
        dtype: str = JOB.dtype,
        attention_backend: str | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,  # None: the device's default (batch_budget)
        max_tokens: int | None = None,
        global_policy: str | None = None,
        # A chunk's windows are sorted by length before batching: the more short rows a chunk
        # holds, the less padding (1,000 SQuAD paragraphs: 7.5% padding at 64, 3.7% at 256).
        chunk_docs: int = 256,
        chunk_chars: int = CHUNK_CHARS,
        fast_paths: bool = JOB.fast_paths,  # False: the plain reference model, without models/fast_paths.py's swaps
        read_ahead: bool | None = None,  # tokenise the next chunk in a thread; None: on CUDA only
        **options,  # the task's own (its home's OPTIONS): labels, question, top_k, pooling, ...
    ):
        spec = registry.get(task)
        options = spec.parse(options)  # as the command line's: e.g. classify's labels given as a list of names
        torch_device = check_options(
            task, device=device, dtype=dtype, attention_backend=attention_backend, max_length=max_length,
            batch_size=batch_size, max_tokens=max_tokens, global_policy=global_policy, **options,
        )
        pair_texts = spec.asked(options)  # asked of every document
        self.folder, tokenizer = window_tokenizer(task, model_name(task, model, options), max_length, pair_texts)
        class_name = model_class(task, options)
        try:
            self.model = ARCHITECTURES[class_name].from_pretrained(
                self.folder, dtype=resolve_dtype(dtype, torch_device), device=torch_device,
                fast_paths=None if fast_paths else (),
            )
        except MissingHead as exc:
            raise InputError(f"{exc}. {spec.missing_head}" if spec.missing_head else str(exc)) from None
        self.model.attention_backend = attention_backend
        if graphs_wanted(torch_device):  # LFCLI_CUDA_GRAPHS=1 (models/cuda_graphs.py)
            use_cuda_graphs(self.model)
        # The checkpoint's own backend setting, now that it is known.
        resolve_backend(attention_backend, self.model.config.attention_backend, torch_device)
        self.device = torch_device
        config = self.model.config
        limit = config.max_tokens
        if max_length is not None and max_length > limit:
            note(f"--max-length {max_length} is more than the model's {limit} positions: windows of {limit} tokens")
        # A trained model may name the window length it works best with (measured on its
        # validation data); --max-length overrides it.
        preferred = (config.extra.get("lfcli") or {}).get("default_max_length")
        self.max_length = min(max_length or preferred or limit, limit)
        self.tokenizer = DocumentTokenizer(tokenizer.tokenizer, self.max_length)
        _check_room(self.tokenizer, spec, pair_texts)
        if self.max_length < SHORT_WINDOW:
            note(f"windows of {self.max_length} tokens (the model takes {limit}): a long document becomes "
                 "many small model calls, which is slow")
        self.task: Task = spec.runner(self.tokenizer, global_policy or spec.global_policy, config, options)
        self.batch_size, self.max_tokens = batch_budget(torch_device, batch_size, max_tokens)
        self.chunk_docs, self.chunk_chars = chunk_docs, chunk_chars
        # On a CPU the model and the tokenizer share the same two cores: reading ahead buys
        # nothing there, so only a GPU's job reads ahead unless asked.
        self.read_ahead = torch_device.type == "cuda" if read_ahead is None else read_ahead
        self.stats = Stats()
        self.last_encoded = None  # the last row's tokens (Prepared.encoded), counted in stats.tokens
        self.heap = HeapKeeper()  # a long job's memory stays flat (heap.py)
        self.calls = ModelCalls(self)
        self.task.setup(self.model, self.calls)

    # -- model calls ----------------------------------------------------------------------
    def _tensors(self, items: list[Item]) -> dict:
        return batch_tensors(items, self.model.config.pad_token_id, self.device, pin=self.device.type == "cuda")

    def _forward(self, items: list[Item]) -> list[Any]:
        with torch.inference_mode():
            results = self.task.forward(self.model, self._tensors(items), items)
        results = results_to_host(results)
        self.heap.after_batch()
        return results

    def _batches(self, items: list[Item]) -> Iterator[list[Item]]:
        """Longest first; a batch grows while batch_size and the token budget allow, and while
        padding (every window is padded to the batch's longest) stays under PADDING_SHARE of
        its tokens past PADDING_FREE_BATCH windows: with short documents of mixed lengths a large --batch-size otherwise
        spends most of its matmuls on padding (measured: -b 64 took 1.8x the time of -b 8 on
        sentences of 10-80 tokens)."""
        batch: list[Item] = []
        real = 0
        for item in sorted(items, key=len, reverse=True):
            longest = len(batch[0]) if batch else len(item)
            padded = longest * (len(batch) + 1)
            too_padded = len(batch) >= PADDING_FREE_BATCH and padded - real - len(item) > PADDING_SHARE * padded
            if batch and (len(batch) == self.batch_size or padded > self.max_tokens or too_padded):
                yield batch
                batch, real = [], 0
            batch.append(item)
            real += len(item)
        if batch:
            yield batch

    def _run_one(self, doc_index: int, doc: Document) -> list[Any]:
        """All window results of one document, in window order (for a task's setup, e.g.
        embedding zero-shot labels)."""
        prepared = self.task.prepare(doc_index, doc)
        out: dict[int, Any] = {}
        for batch in self._batches(prepared.items):
            out.update(zip(map(id, batch), self._forward(batch)))
        return [out[id(it)] for it in prepared.items]

    def _run_many(self, docs: list[Document]) -> list[list[Any] | None]:
        """Each document's window results (None where it cannot be read or run), the windows
        of several documents batched together, in chunks as a job runs them (for a task's
        look-ahead, e.g. zero-shot label priors)."""
        out: list[list[Any] | None] = []
        for chunk in self._chunks(docs, frozenset()):
            _, prepared, _ = self._prepare_chunk(chunk)
            items = [it for p in prepared.values() for it in p.items]
            results: dict[int, Any] = {}
            try:
                for batch in self._batches(items):
                    results.update(zip(map(id, batch), self._forward(batch)))
            except (ValueError, RuntimeError):  # one document breaks a batch: each alone
                results = {}
                for i in prepared:
                    try:
                        results.update(zip(map(id, prepared[i].items), self._run_one(i, chunk[i])))
                    except (ValueError, RuntimeError):
                        pass
            out += [[results[id(it)] for it in prepared[i].items]
                    if i in prepared and all(id(it) in results for it in prepared[i].items) else None
                    for i in range(len(chunk))]
        return out

    # -- the job --------------------------------------------------------------------------
    def run(
        self,
        documents: Iterable[Document],
        skip_ids: set[str] | frozenset = frozenset(),
        on_error: str = "skip",
        progress: Callable[[Stats], None] | None = None,
    ) -> Iterator[dict]:
        """Yield one row per document (skipping ids in skip_ids), in input order. Documents:
        Documents, strings (ids "0", "1", ...) or dicts with "text" (io.document.as_documents)."""
        if on_error not in ("skip", "fail"):
            raise UsageError("--on-error must be skip or fail")
        documents = as_documents(documents)
        self.stats = Stats(started=time.perf_counter(), unit=self.task.row_unit)
        self.last_encoded = None
        documents = self.task.begin(documents, self.calls)  # before any row: a task's look-ahead
        prepared = (self._prepare_chunk(chunk) for chunk in self._chunks(documents, skip_ids))
        if self.read_ahead:
            prepared = read_ahead(prepared, depth=2)
        for chunk in prepared:
            yield from self._run_chunk(*chunk, on_error, progress)

    def _chunks(self, documents: Iterable[Document], skip_ids) -> Iterator[list[Document]]:
        """The documents in chunks: the first one alone (its row comes out at once), then at
        most chunk_docs documents and about chunk_chars characters."""
        chunk: list[Document] = []
        chars, first = 0, True
        for doc in documents:
            if skip_ids and self.task.key(doc) in skip_ids:
                continue
            chunk.append(doc)
            chars += len(doc.text or "")
            if first or len(chunk) == self.chunk_docs or chars >= self.chunk_chars:
                yield chunk
                chunk, chars, first = [], 0, False
        if chunk:
            yield chunk

    def _prepare_chunk(self, docs: list[Document]) -> tuple[list[Document], dict[int, Prepared], dict[int, str]]:
        """Each document's windows (tokenised), or why it failed: the host's work on a chunk,
        which `read_ahead` does while the model runs the chunk before."""
        prepared: dict[int, Prepared] = {}
        failed: dict[int, str] = {}
        for i, doc in enumerate(docs):
            if doc.error is not None:
                failed[i] = doc.error
                continue
            try:
                prepared[i] = self.task.prepare(i, doc)
            except InputError as exc:
                failed[i] = str(exc)
        return docs, prepared, failed

    def _fail(self, doc: Document, message: str, on_error: str) -> dict:
        if on_error == "fail":  # the message may name the document already (a reader's "PATH: ...")
            named = ": " in message and message.split(": ", 1)[0].endswith(doc.id)
            raise InputError(message if named else f"{doc.id}: {message}")
        self.stats.errors += 1
        return self.task.error_row(doc, message)

    def _run_chunk(self, docs: list[Document], prepared: dict[int, Prepared], failed: dict[int, str], on_error: str,
                   progress) -> Iterator[dict]:
        results: dict[int, dict[int, Any]] = {i: {} for i in prepared}
        items = [it for p in prepared.values() for it in p.items]
        position = {id(it): k for p in prepared.values() for k, it in enumerate(p.items)}
        self.stats.windows_queued += len(items)
        for batch in self._batches(items):
            try:
                outputs = self._forward(batch)
            except (ValueError, RuntimeError) as exc:  # isolate the document that breaks a batch
                outputs = []
                for it in batch:
                    try:
                        outputs += self._forward([it])
                    except (ValueError, RuntimeError) as one:
                        failed[it.doc] = str(one).splitlines()[0] if str(one) else type(one).__name__
                        outputs.append(None)
                del exc
            for it, out in zip(batch, outputs):
                if it.doc in results:
                    results[it.doc][position[id(it)]] = out
            self.stats.windows += len(batch)
            self.stats.tokens_run += sum(it.owned[1] - it.owned[0] for it in batch)
            if progress is not None:  # a long document's progress, before its row is out
                progress(self.stats)
        for i, doc in enumerate(docs):
            if i in failed:
                row = self._fail(doc, failed[i], on_error)
            else:
                window_results = [results[i][k] for k in range(len(prepared[i].items))]
                row = self.task.finish(doc, prepared[i], window_results)
                if doc.pages:  # a PDF: the page of every offset the row gives
                    row = with_pages(row, doc.pages)
                if prepared[i].encoded is not self.last_encoded:  # one text's questions count its tokens once
                    self.stats.tokens += len(prepared[i].encoded.ids)
                    self.last_encoded = prepared[i].encoded
            self.stats.docs += 1
            if progress is not None:
                progress(self.stats)
            yield row
