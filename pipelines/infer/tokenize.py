"""Tokenising documents into model inputs: windows with the checkpoint's special tokens.

Documents are encoded once without special tokens (keeping each token's character span),
then cut into windows that fit the model; each window gets the tokenizer's own template
([CLS] x [SEP] for BERT vocabularies, <s> x </s> for RoBERTa ones; pairs for QA), read off
the tokenizer itself so any checkpoint's convention is followed.

A book is a million tokens, so its ids and character spans are kept as 32-bit arrays (4 and
8 bytes a token, where Python lists of ints and tuples take ~36 and ~120), and it is encoded
in stretches of paragraphs, so that the tokenizer's own record of every token (its string,
word, span and masks) never exists for the whole book at once. A stretch ends before a run of
white space holding a line break: for whitespace-splitting tokenizers (BERT's WordPiece,
RoBERTa's byte-level BPE) no token crosses such a run, so the stretches give the very tokens
of the whole text; a tokenizer that fails that check on a probe text is run on the whole
text in one piece (`DocumentTokenizer.stretch_safe`).
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from ..errors import InputError


@dataclass(frozen=True)
class Template:
    """Special tokens around one or two segments, as the tokenizer's post-processor adds them."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]  # between question and context (pairs only)
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...]
    middle_types: tuple[int, ...]
    suffix_types: tuple[int, ...]
    first_type: int
    second_type: int


class Offsets(Sequence):
    """Each token's character span (start, end exclusive), as a sequence of tuples stored in
    one int32 array of starts and ends side by side."""

    __slots__ = ("flat",)

    def __init__(self, flat: array | None = None):
        self.flat = flat if flat is not None else array("i")

    def __len__(self) -> int:
        return len(self.flat) // 2

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("token index out of range")
        return self.flat[2 * i], self.flat[2 * i + 1]

    def __iter__(self):
        flat = self.flat
        return zip(flat[0::2], flat[1::2])

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


@dataclass
class Encoded:
    """A text's tokens without special tokens, with character spans (end exclusive)."""

    ids: array  # int32
    offsets: Offsets


@dataclass
class Window:
    """One model input: [prefix] (question [middle]) content[start:end] [suffix]."""

    input_ids: array  # int32
    token_type_ids: array
    content_start: int  # position of the first content token in input_ids
    span: tuple[int, int]  # which content tokens of the document [start, end)
    question_span: tuple[int, int] = (0, 0)  # positions of the question tokens in input_ids


STRETCH_CHARS = 100_000  # characters encoded at a time: ~25k tokens, a few MB of the tokenizer's records
STRETCHES_AT_ONCE = 16  # stretches handed to the batch encoder together (its threads share them)


def _flat_offsets(offsets: list[tuple[int, int]], shift: int) -> array:
    """[(start, end), ...] -> int32 [start0, end0, start1, ...], each moved by `shift`."""
    if not shift:  # a short text's few spans: numpy's set-up would cost more than it saves
        return array("i", chain.from_iterable(offsets))
    flat = np.asarray(offsets, dtype=np.int32).reshape(-1) + shift
    return array("i", flat.tobytes())
# A probe for `stretch_safe`: breaks between words, after punctuation, before indented and
# spaced lines, and a word split over the run.
PROBE = "One, two.\n\nThree four\n  five-six\n\n\tSeven. \n Eight nine.\r\nTen\n\n\n eleven"


class DocumentTokenizer:
    def __init__(self, tokenizer, max_length: int, stretch_chars: int = STRETCH_CHARS):
        self.tokenizer = tokenizer
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.max_length = max_length
        self.single = self._template(pair=False)
        self.pair = self._template(pair=True)
        self.stretch_chars = stretch_chars
        self.stretch_safe = self._encode_stretches(PROBE, 1).ids == self._encode_whole(PROBE).ids

    @classmethod
    def from_folder(cls, folder: str | Path, max_length: int) -> "DocumentTokenizer":
        path = Path(folder) / "tokenizer.json"
        if not path.exists():
            raise InputError(f"{folder}: no tokenizer.json in the checkpoint folder")
        try:
            return cls(Tokenizer.from_file(str(path)), max_length)
        except Exception as exc:  # the tokenizers library raises plain Exceptions
            raise InputError(f"{path}: cannot read the tokenizer ({exc})") from None

    def _template(self, pair: bool) -> Template:
        # Encode a one-token text (and pair); whatever surrounds it is the template.
        probe = self.tokenizer.encode("a", add_special_tokens=False).ids
        enc = self.tokenizer.encode("a", "a", add_special_tokens=True) if pair else self.tokenizer.encode("a")
        ids, types, seq = enc.ids, enc.type_ids, enc.sequence_ids
        first = [i for i, s in enumerate(seq) if s == 0]
        second = [i for i, s in enumerate(seq) if s == 1]
        assert first and len(first) == len(probe), "tokenizer template not understood"
        a0, a1 = first[0], first[-1] + 1
        if pair:
            b0, b1 = second[0], second[-1] + 1
            return Template(
                tuple(ids[:a0]), tuple(ids[a1:b0]), tuple(ids[b1:]),
                tuple(types[:a0]), tuple(types[a1:b0]), tuple(types[b1:]),
                types[a0], types[b0],
            )
        return Template(tuple(ids[:a0]), (), tuple(ids[a1:]), tuple(types[:a0]), (), tuple(types[a1:]), types[a0], types[a0])

    def encode(self, text: str) -> Encoded:
        """`text`'s tokens and character spans, in stretches when it is long (module doc)."""
        if len(text) <= self.stretch_chars or not self.stretch_safe:
            return self._encode_whole(text)
        return self._encode_stretches(text, self.stretch_chars)

    def parts(self, text: str) -> list[tuple[int, int]]:
        """The [start, end) stretches `encode` reads `text` in (the whole text when short)."""
        if len(text) <= self.stretch_chars or not self.stretch_safe:
            return [(0, len(text))]
        return stretches(text, self.stretch_chars)

    def _encode_whole(self, text: str) -> Encoded:
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        return Encoded(array("i", enc.ids), Offsets(_flat_offsets(enc.offsets, 0)))

    def _encode_stretches(self, text: str, size: int) -> Encoded:
        """The stretches STRETCHES_AT_ONCE at a time through the tokenizer's batch encoder,
        which spreads them over the cores in Rust, outside Python's lock (an H200 host's
        16 cores: one thread took 2.1 s of a 3.8 s embed of four novels); the group bounds
        the tokenizer's records held at once."""
        ids, flat = array("i"), array("i")
        spans = stretches(text, size)
        for g in range(0, len(spans), STRETCHES_AT_ONCE):
            group = spans[g:g + STRETCHES_AT_ONCE]
            parts = self.tokenizer.encode_batch([text[a:b] for a, b in group], add_special_tokens=False)
            for (start, _), part in zip(group, parts):
                ids.extend(part.ids)
                flat.extend(_flat_offsets(part.offsets, start))
        return Encoded(ids, Offsets(flat))

    def content_budget(self, question_tokens: int = 0) -> int:
        """How many content tokens fit in one window."""
        t = self.pair if question_tokens else self.single
        special = len(t.prefix) + len(t.middle) + len(t.suffix)
        return self.max_length - special - question_tokens

    def window(self, content: Sequence[int], span: tuple[int, int], question: Sequence[int] | None = None) -> Window:
        s, e = span
        body = array("i", content[s:e])
        if question:
            t = self.pair
            q_start = len(t.prefix)
            ids = array("i", [*t.prefix, *question, *t.middle]) + body + array("i", t.suffix)
            types = array("i", [*t.prefix_types, *[t.first_type] * len(question), *t.middle_types,
                                *[t.second_type] * len(body), *t.suffix_types])
            content_start = q_start + len(question) + len(t.middle)
            return Window(ids, types, content_start, span, (q_start, q_start + len(question)))
        t = self.single
        ids = array("i", t.prefix) + body + array("i", t.suffix)
        types = array("i", [*t.prefix_types, *[t.first_type] * len(body), *t.suffix_types])
        return Window(ids, types, len(t.prefix), span)


LINE_BREAK_RUN = re.compile(r"\s*\n\s*")


def stretches(text: str, size: int) -> list[tuple[int, int]]:
    """Cut `text` into [start, end) stretches of about `size` characters, each ending right
    before a run of white space that holds a line break (the run opens the next stretch); a
    stretch is longer when no line break comes sooner."""
    out, start = [], 0
    while len(text) - start > size:
        cut = None
        for m in LINE_BREAK_RUN.finditer(text, start + size // 2):
            at = m.start()
            while at > start and text[at - 1].isspace():  # the whole run opens the next stretch
                at -= 1
            if at <= start:
                continue
            if at >= start + size and cut is not None:
                break  # the last break before `size` it is
            cut = at
            if at >= start + size:
                break  # none before `size`: the first after it
        if cut is None:
            break
        out.append((start, cut))
        start = cut
    out.append((start, len(text)))
    return out


def plan_windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Cover content tokens [0, n) with windows of at most `size` tokens that overlap by
    `overlap`. One window when the document fits; never an empty list (an empty document
    gets one empty window, so the caller can still decide what to do with it)."""
    if size <= 0:
        raise InputError("the model's positions leave no room for document tokens (question too long?)")
    if n <= size:
        return [(0, n)]
    overlap = min(overlap, size // 2)
    step = size - overlap
    spans, start = [], 0
    while True:
        end = min(start + size, n)
        spans.append((start, end))
        if end == n:
            return spans
        start += step


def owned_ranges(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """For overlapping windows, the content tokens each window is responsible for: each
    token goes to the window where it is furthest from an edge (the overlap is split in the
    middle). The ranges partition [0, n), so every token is counted exactly once."""
    out = []
    for i, (s, e) in enumerate(spans):
        lo = s if i == 0 else (s + spans[i - 1][1]) // 2
        hi = e if i == len(spans) - 1 else (spans[i + 1][0] + e) // 2
        out.append((lo, hi))
    return out


def token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """First and last token (inclusive) overlapping characters [start, end): where a gold
    answer or mention lies in an encoded text (Encoded.offsets); None when no token does."""
    ends = [b for _, b in offsets]
    first = bisect.bisect_right(ends, start)  # first token ending after `start`
    last = first
    while last + 1 < len(offsets) and offsets[last + 1][0] < end:
        last += 1
    if first >= len(offsets) or offsets[first][0] >= end:
        return None
    return first, last


PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")


def paragraph_ids(text: str, offsets: list[tuple[int, int]]) -> array:
    """The paragraph (counted from 0, a blank line ends one) of each token, by its first
    character (an array: 4 bytes a token of a book). No mention crosses a paragraph break: a
    reader never sees one do so, and without the rule the model joined a title to the
    sentence under it."""
    breaks = [m.end() for m in PARAGRAPH_BREAK.finditer(text)]
    return array("i", (bisect.bisect_right(breaks, a) for a, _ in offsets))
