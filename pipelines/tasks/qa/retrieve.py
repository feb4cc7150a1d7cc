"""qa's retrieval: over a long document, a question reads only the windows around the
passages most like it, not the whole text (retrieve, then read).

A document of more windows than a question reads (`top_windows`) is cut into passages of
`passage_tokens` of the reader's tokens. Each passage gets a vector once per text, from the
reader's own sentence encoder (the QA adapter's base: the bundled embedding model of its
tier), and a BM25 index of its stemmed words (bm25s, PyStemmer). A question's vector and
words rank the passages by reciprocal-rank fusion of the two rankings (Cormack et al. 2009:
1 / (RRF_K + rank), summed), and the reader reads, of the whole read's windows, the one that
holds most of each of the best passages, with the question in it and global attention on
it. The read is a subset of the whole read's, so wherever the whole read's best window is
among those read, both give the same answer; the answers of those windows compete as every
window's do (answers.py). (Windows centred on each passage instead agreed with the whole
read on 101 of the 184 book questions, these on 135; top-1 52.2% and 52.7%, the whole read
55.4%: small tier, fp32, 2026-11-27.)

Each window read keeps its retrieval rank (`window_ranks`: 0 for the best passage's window). A
model may save a rank weight r (lfcli.qa_calibration's `rank_weight`, answers.QACalibration):
then a window of rank k adds -r ln(1 + k) to its candidates' margins, so that where two windows
propose answers of about equal margin, the one retrieval put first wins, as a retriever's score
joins a reader's in BERTserini (Yang et al. 2019). r = 0, or a whole read, changes nothing.

The passages of a text are kept for the job (`Retriever.kept`, a few texts in memory), so many
questions of one book, or rows that repeat a text, embed it once; with a cache folder
(`--cache DIR`) they are also kept on disk, keyed by the text's sha256 and the encoder's and
the reader tokenizer's fingerprints, so a second job over the same book skips embedding it.

`--read all` reads every window instead: the slow, obviously correct twin. Where a document
has no more windows than a question reads, both read the same windows (the same answer).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

from lfcli.models import ARCHITECTURES
from lfcli.models.bundled import DEFAULT_MODEL, base_fingerprint, resolve_model
from lfcli.models.heads import ENCODER
from lfcli.models.model_folders import tokenizer_folder

from ...errors import InputError
from ...infer.tasks import predict_rows
from ...infer.tokenize import DocumentTokenizer
from ...io.readers import Document
from ...progress import note
from ..embed.task import EmbedTask

READS = ("retrieve", "all")
# Chosen on benchmarks/book_qa.json's "fit" works (benchmarks/eval_book_qa.py --retrieval-curve):
# the answer's window among those read, and the reader's top-1, against k and the passage size.
PASSAGE_TOKENS = 128
# The small reader trained on all of SQuAD, top-1 right on the fit works (88 questions) at k =
# 4, 8, 10, 12, 16: 63.6%, 67.0%, 68.2%, 68.2%, 67.0%: the fewest windows with the best figure.
# On all 184: 59.2% at 10, the whole read 58.7% (fp32, 2026-11-28; the small model's card).
TOP_WINDOWS = 10
RRF_K = 60  # reciprocal-rank fusion's constant (the paper's)
# BM25's ranks count three times the dense ranks': on the fit works' 88 questions the answer is in
# the 8 windows read for 92.0% of them (dense alone 76.1%, BM25 alone 89.8%, equal weights 87.5%;
# centred windows, words unstemmed). With the whole read's windows and stemmed words: 93.2% (x2:
# 93.2%, x4: 92.0%; unstemmed x3: 90.9%), the report works 90.6% (unstemmed 88.5%).
LEXICAL_WEIGHT = 3.0
ENCODER_MAX_LENGTH = 512  # a passage and its special tokens fit in one window of the encoder
KEPT_TEXTS = 8  # texts whose passages a job keeps in memory
CACHE_VERSION = 1


@dataclass
class Passages:
    """A text's passages: token spans [a, b) of the reader's encoding, one unit vector each
    (rows of `vectors`), and their BM25 index (None without words)."""

    spans: list[tuple[int, int]]
    vectors: torch.Tensor
    bm25: object | None


def passage_spans(n_tokens: int, size: int) -> list[tuple[int, int]]:
    """Side-by-side token spans of `size` tokens (the last one shorter) over `n_tokens`."""
    return [(a, min(n_tokens, a + size)) for a in range(0, n_tokens, size)]


def plan_windows_of(ranked: list[int], passages: list[tuple[int, int]], whole: list[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    """At most `k` of the whole read's windows (`whole`, content spans in text order): for
    each of the best passages (`ranked`, best first), the window holding most of it (the
    earlier on a tie), unless chosen already; in text order. The read is then a subset of
    the whole read's, so wherever the whole read's best window is among them, both give the
    same answer."""
    return sorted(window_ranks(ranked, passages, whole, k))


def window_ranks(ranked: list[int], passages: list[tuple[int, int]], whole: list[tuple[int, int]], k: int) -> dict[tuple[int, int], int]:
    """`plan_windows_of`'s windows, each with its rank: 0 for the window of the best passage,
    1 for the next window chosen, and so on."""
    starts, ends = [s for s, _ in whole], [e for _, e in whole]  # both increasing: windows in text order
    chosen: dict[int, int] = {}  # window -> its rank
    for p in ranked:
        a, b = passages[p]
        first = bisect.bisect_right(ends, a)  # the windows that overlap [a, b): first ... last - 1
        last = max(bisect.bisect_left(starts, b), first + 1)
        best = max(range(first, last), key=lambda w: (min(b, whole[w][1]) - max(a, whole[w][0]), -w))
        chosen.setdefault(best, len(chosen))
        if len(chosen) == k:
            break
    return {whole[w]: rank for w, rank in chosen.items()}


def fused_ranking(dense: torch.Tensor, lexical, rrf_k: int = RRF_K, lexical_weight: float = LEXICAL_WEIGHT) -> list[int]:
    """Passage indices, best first, by reciprocal-rank fusion of the dense similarities and
    the BM25 scores (`lexical`, None: dense alone; its terms weighted `lexical_weight`); ties
    by position in the text. A passage without any of the question's words has no BM25 rank
    (its zero says nothing)."""
    n = dense.numel()
    score = [0.0] * n
    similarity = dense.tolist()
    for rank, p in enumerate(sorted(range(n), key=lambda i: (-similarity[i], i))):
        score[p] += 1.0 / (rrf_k + rank + 1)
    if lexical is not None:
        words = [float(x) for x in lexical]
        for rank, p in enumerate(sorted((i for i in range(n) if words[i] > 0), key=lambda i: (-words[i], i))):
            score[p] += lexical_weight / (rrf_k + rank + 1)
    return sorted(range(n), key=lambda i: (-score[i], i))


@functools.lru_cache(maxsize=1)
def _stemmer():
    """Snowball's English stemmer (PyStemmer): BM25 matches "marry", "married" and "marries";
    made once a process."""
    import Stemmer  # lazy: as bm25s

    return Stemmer.Stemmer("english")


def _words(texts: list[str], **options):
    import bm25s  # lazy: numpy and bm25s load only for a document that retrieval reads

    return bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False, **options)


def _bm25_index(texts: list[str]):
    """A BM25 index of the passages' stemmed words (bm25s; English stop words left out), or
    None when no passage has a word it indexes."""
    import bm25s  # lazy: as _words

    tokens = _words(texts)
    if not tokens.vocab:
        return None
    index = bm25s.BM25()
    index.index(tokens, show_progress=False)
    return index


def bm25_scores(index, question: str):
    known = [w for w in _words([question], return_ids=False)[0] if w in index.vocab_dict]
    return index.get_scores(known) if known else None


class Retriever:
    """The passages of texts and the ranking of a question's passages (module doc). The
    encoder loads on the first text long enough to need it, on the reader's device and dtype."""

    def __init__(self, encoder: str, reader_tokenizer: DocumentTokenizer, *, device, dtype,
                 passage_tokens: int = PASSAGE_TOKENS, top_windows: int = TOP_WINDOWS, cache_dir: str | None = None,
                 reader_fingerprint: str = ""):
        self.encoder_name, self.reader_tok = encoder, reader_tokenizer
        self.device, self.dtype = device, dtype
        # a passage is at most half a window, so the whole read's window holding most of it holds
        # at least half of it, or all of it where neighbours overlap by more than half a passage
        self.passage_tokens, self.top_windows = min(passage_tokens, reader_tokenizer.max_length // 2), top_windows
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.reader_fingerprint = reader_fingerprint
        self.kept: OrderedDict[str, Passages] = OrderedDict()  # text -> its passages, the last KEPT_TEXTS
        self.model = self.embedder = None
        self.texts_embedded = 0  # texts whose passages this job embedded (not found kept or cached)

    def _load(self) -> None:
        folder = resolve_model(self.encoder_name)
        # Outside inference mode, wherever the first long text comes (a caller's inference_mode
        # would make the weights inference tensors, which the fast paths' checks cannot read).
        with torch.inference_mode(False):
            self.model = ARCHITECTURES[ENCODER].from_pretrained(folder, dtype=self.dtype, device=self.device)
        self.model.eval()
        tok = DocumentTokenizer.from_folder(tokenizer_folder(folder), min(ENCODER_MAX_LENGTH, self.model.config.max_tokens))
        meta = self.model.config.extra.get("lfcli") or {}
        self.embedder = EmbedTask(tok, "cls", pooling=meta.get("pooling", "mean"), normalize=True)
        self.embedder.setup(self.model, None)
        self.fingerprint = base_fingerprint(self.encoder_name, folder)

    def vectors(self, texts: list[str]) -> torch.Tensor:
        """Unit vectors of `texts` (n, hidden), float32 on the CPU."""
        if self.model is None:
            self._load()
        docs = [Document(str(i), t if t.strip() else ".") for i, t in enumerate(texts)]
        with torch.inference_mode():
            rows = predict_rows(self.model, self.embedder, docs, self.model.config.pad_token_id)
        return torch.tensor([row["embedding"] for row in rows], dtype=torch.float32)

    def passages(self, text: str, encoded) -> Passages:
        """The text's passages: kept from an earlier question, read from the cache folder, or
        embedded now (and kept, and written to the cache folder)."""
        if text in self.kept:  # a text's next question: no hash of the whole book again
            self.kept.move_to_end(text)
            return self.kept[text]
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()  # the cache folder's name
        offsets, n = encoded.offsets, len(encoded.ids)
        spans = passage_spans(n, self.passage_tokens)
        texts = [text[offsets[a][0]:offsets[b - 1][1]] for a, b in spans]
        vectors = self._from_cache(key, spans)
        if vectors is None:
            if n > 50_000:
                note(f"embedding {len(spans):,} passages of a {n:,}-token document for retrieval "
                     f"(once a text{'; kept in ' + str(self.cache_dir) if self.cache_dir else '; --cache DIR keeps them for later jobs'})")
            vectors = self.vectors(texts)
            self.texts_embedded += 1
            self._to_cache(key, spans, vectors)
        found = Passages(spans, vectors, _bm25_index(texts))
        self.kept[text] = found
        while len(self.kept) > KEPT_TEXTS:
            self.kept.popitem(last=False)
        return found

    def ranked_windows(self, text: str, encoded, question: str, whole: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
        """The content spans a question reads of a text, each with its retrieval rank
        (`window_ranks`): the whole read's `whole` where it has no more than `top_windows`
        windows, each of rank 0 (no window is preferred), else those of them that hold the
        question's best passages."""
        if len(whole) <= self.top_windows:
            return dict.fromkeys(whole, 0)
        found = self.passages(text, encoded)
        q = self.vectors([question])[0]
        ranked = fused_ranking(found.vectors @ q, None if found.bm25 is None else bm25_scores(found.bm25, question),
                               lexical_weight=LEXICAL_WEIGHT)
        return window_ranks(ranked, found.spans, whole, self.top_windows)

    # -- the cache folder -------------------------------------------------------------------------
    def _cache_path(self, key: str) -> Path | None:
        if self.cache_dir is None:
            return None
        if self.model is None:
            self._load()
        tag = hashlib.sha256(json.dumps([CACHE_VERSION, self.fingerprint, self.reader_fingerprint, self.passage_tokens,
                                         str(self.dtype)]).encode()).hexdigest()[:16]
        return self.cache_dir / f"{key}-{tag}.safetensors"

    def _from_cache(self, key: str, spans: list[tuple[int, int]]) -> torch.Tensor | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        from safetensors.torch import load_file  # lazy: only with --cache

        try:
            saved = load_file(str(path))
        except Exception:  # a torn or foreign file: embed again, and write it anew
            return None
        if saved.get("spans") is None or saved["spans"].tolist() != [list(s) for s in spans]:
            return None
        return saved["vectors"].float()

    def _to_cache(self, key: str, spans, vectors: torch.Tensor) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        from safetensors.torch import save_file  # lazy: only with --cache

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            save_file({"spans": torch.tensor(spans, dtype=torch.int64).reshape(-1, 2), "vectors": vectors.contiguous()},
                      str(tmp))
            os.replace(tmp, path)  # whole or not at all: a killed job leaves no torn file
        except OSError as exc:
            raise InputError(f"--cache {self.cache_dir}: cannot write the passage vectors ({exc})") from None


def reader_fingerprint(tok: DocumentTokenizer) -> str:
    """The reader's tokenizer, as the passages' token spans depend on it."""
    return hashlib.sha256(tok.tokenizer.to_str().encode("utf-8")).hexdigest()[:16]


def encoder_of(config) -> str:
    """The sentence encoder retrieval uses for a QA model: its adapter's (or delta's) base, the
    bundled embedding model of its tier; else the bundled default embedding model."""
    block = config.extra.get("lfcli") or {}
    base = (block.get("adapter") or {}).get("base") or (block.get("delta") or {}).get("base")
    return base or DEFAULT_MODEL
