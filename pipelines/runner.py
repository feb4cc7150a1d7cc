"""The batch job: documents in, rows out, in input order, with bounded memory.

Documents are read as a stream and handled in chunks of `chunk_docs`. Within a chunk every
document is tokenised into windows, the windows are sorted by length and packed into
batches under a token budget (`max_tokens` = longest window x batch size, so padding stays
small), run through the model, and the rows are emitted in the documents' input order. A
document that fails (unreadable, empty, no question, ...) gets a row with `error` and the
others go on; with on_error="fail" the first failure stops the job instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from .errors import InputError, UsageError
from .policies import TASK_DEFAULTS, check_policy
from .readers import Document
from .tasks import ClassifyTask, CorefTask, EmbedTask, Item, Prepared, QATask, Task, ZeroShotClassifyTask
from .tokenize import DocumentTokenizer

TASKS = ("classify", "qa", "embed", "corefs")
HEAD_ADVICE = {
    "classify": "Without a trained head, classify zero-shot with --labels 'label1,label2,...'",
    "qa": "Pass -m with a question-answering checkpoint (transformers layout); `lfcli convert` "
    "turns a short SQuAD-trained BERT/RoBERTa into a long one",
    "corefs": "Pass -m with a coreference checkpoint (an lfcli LongformerForCoreference)",
    "embed": "",
}
DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}


@dataclass
class Stats:
    docs: int = 0
    tokens: int = 0
    errors: int = 0
    started: float = 0.0


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
        device: str = "cpu",
        dtype: str = "float32",
        attention_backend: str | None = None,
        max_length: int | None = None,
        batch_size: int = 8,
        max_tokens: int = 16384,
        global_policy: str | None = None,
        chunk_docs: int = 64,
        labels: list[tuple[str, str]] | None = None,
        temperature: float = 0.05,
        question: str | None = None,
        top_k: int = 1,
        pooling: str | None = None,
        normalize: bool | None = None,
    ):
        import torch

        from lfcli.kernels import resolve_backend
        from lfcli.models import ARCHITECTURES, MissingHead
        from lfcli.models.bundled import DEFAULT_MODEL, resolve_model

        if task not in TASKS:
            raise UsageError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
        if batch_size < 1 or max_tokens < 1:
            raise UsageError("--batch-size and --max-tokens must be positive")
        if dtype not in DTYPES:
            raise UsageError(f"--dtype {dtype!r}: choose float32, bfloat16 or float16")
        self.folder = resolve_model(model or DEFAULT_MODEL)
        zero_shot = task == "classify" and labels is not None
        class_name = "LongformerModel" if zero_shot else {
            "classify": "LongformerForSequenceClassification",
            "qa": "LongformerForQuestionAnswering",
            "embed": "LongformerModel",
            "corefs": "LongformerForCoreference",
        }[task]
        try:
            torch_device = torch.device(device)
        except RuntimeError:
            raise UsageError(f"--device {device!r} is not a device torch knows") from None
        try:
            self.model = ARCHITECTURES[class_name].from_pretrained(
                self.folder, dtype=getattr(torch, DTYPES[dtype]), device=torch_device
            )
        except MissingHead as exc:
            raise InputError(f"{exc}. {HEAD_ADVICE[task]}") from None
        self.model.attention_backend = attention_backend
        # Refuse an impossible backend now, not after reading the first documents.
        resolve_backend(attention_backend, self.model.config.attention_backend, torch_device)
        self.device = torch_device
        config = self.model.config
        limit = config.max_tokens
        if max_length is not None and max_length < 8:
            raise UsageError("--max-length must be at least 8 tokens")
        self.max_length = min(max_length or limit, limit)
        self.tokenizer = DocumentTokenizer.from_folder(self.folder, self.max_length)
        policy = check_policy(global_policy or TASK_DEFAULTS[task])
        lfcli_meta = config.extra.get("lfcli", {})
        embed_opts = {
            "pooling": pooling or lfcli_meta.get("pooling", "mean"),
            "normalize": lfcli_meta.get("normalize", True) if normalize is None else normalize,
        }
        if zero_shot:
            if not labels:
                raise UsageError("--labels needs at least one label")
            self.task: Task = ZeroShotClassifyTask(self.tokenizer, policy, labels, temperature, **embed_opts)
        elif task == "classify":
            self.task = ClassifyTask(self.tokenizer, policy)
        elif task == "embed":
            self.task = EmbedTask(self.tokenizer, policy, **embed_opts)
        elif task == "qa":
            self.task = QATask(self.tokenizer, policy, question=question, top_k=top_k)
        else:
            self.task = CorefTask(self.tokenizer, policy)
        self.batch_size, self.max_tokens, self.chunk_docs = batch_size, max_tokens, chunk_docs
        self.stats = Stats()
        self.task.setup(self.model, self._run_one)

    # -- model calls ----------------------------------------------------------------------
    def _tensors(self, items: list[Item]) -> dict:
        import torch

        n = max(len(it) for it in items)
        pad = self.model.config.pad_token_id
        ids = torch.full((len(items), n), pad, dtype=torch.long)
        types = torch.zeros((len(items), n), dtype=torch.long)
        mask = torch.zeros((len(items), n), dtype=torch.long)
        glob = torch.zeros((len(items), n), dtype=torch.long)
        for b, it in enumerate(items):
            m = len(it)
            ids[b, :m] = torch.tensor(it.window.input_ids)
            types[b, :m] = torch.tensor(it.window.token_type_ids)
            mask[b, :m] = 1
            glob[b, it.global_positions] = 1
        d = self.device
        return {
            "input_ids": ids.to(d),
            "attention_mask": mask.to(d),
            "global_attention_mask": glob.to(d),
            "token_type_ids": types.to(d),
        }

    def _forward(self, items: list[Item]) -> list[Any]:
        import torch

        with torch.inference_mode():
            results = self.task.forward(self.model, self._tensors(items), items)
        return [self._to_cpu(r) for r in results]

    @staticmethod
    def _to_cpu(result):
        if hasattr(result, "cpu"):
            return result.cpu()
        if isinstance(result, (list, tuple)):
            return type(result)(Pipeline._to_cpu(r) for r in result)
        return result

    def _batches(self, items: list[Item]) -> Iterator[list[Item]]:
        """Longest first; a batch grows while batch_size and the token budget allow."""
        batch: list[Item] = []
        for item in sorted(items, key=len, reverse=True):
            longest = len(batch[0]) if batch else len(item)
            if batch and (len(batch) == self.batch_size or longest * (len(batch) + 1) > self.max_tokens):
                yield batch
                batch = []
            batch.append(item)
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

    # -- the job --------------------------------------------------------------------------
    def run(
        self,
        documents: Iterable[Document],
        skip_ids: set[str] | frozenset = frozenset(),
        on_error: str = "skip",
        progress: Callable[[Stats], None] | None = None,
    ) -> Iterator[dict]:
        """Yield one row per document (skipping ids in skip_ids), in input order."""
        if on_error not in ("skip", "fail"):
            raise UsageError("--on-error must be skip or fail")
        self.stats = Stats(started=time.perf_counter())
        chunk: list[Document] = []
        for doc in documents:
            if doc.id in skip_ids:
                continue
            chunk.append(doc)
            if len(chunk) == self.chunk_docs:
                yield from self._run_chunk(chunk, on_error, progress)
                chunk = []
        if chunk:
            yield from self._run_chunk(chunk, on_error, progress)

    def _fail(self, doc: Document, message: str, on_error: str) -> dict:
        if on_error == "fail":
            raise InputError(f"{doc.id}: {message}")
        self.stats.errors += 1
        return Task.error_row(doc, message)

    def _run_chunk(self, docs: list[Document], on_error: str, progress) -> Iterator[dict]:
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
        results: dict[int, dict[int, Any]] = {i: {} for i in prepared}
        items = [it for p in prepared.values() for it in p.items]
        position = {id(it): k for p in prepared.values() for k, it in enumerate(p.items)}
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
        for i, doc in enumerate(docs):
            if i in failed:
                row = self._fail(doc, failed[i], on_error)
            else:
                window_results = [results[i][k] for k in range(len(prepared[i].items))]
                row = self.task.finish(doc, prepared[i], window_results)
                self.stats.tokens += len(prepared[i].encoded.ids)
            self.stats.docs += 1
            if progress is not None:
                progress(self.stats)
            yield row
