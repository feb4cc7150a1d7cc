"""Tokenising documents into model inputs: windows with the checkpoint's special tokens.

Documents are encoded once without special tokens (keeping each token's character span),
then cut into windows that fit the model; each window gets the tokenizer's own template
([CLS] x [SEP] for BERT vocabularies, <s> x </s> for RoBERTa ones; pairs for QA), read off
the tokenizer itself so any checkpoint's convention is followed.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path

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


@dataclass
class Encoded:
    """A text's tokens without special tokens, with character spans (end exclusive)."""

    ids: list[int]
    offsets: list[tuple[int, int]]


@dataclass
class Window:
    """One model input: [prefix] (question [middle]) content[start:end] [suffix]."""

    input_ids: list[int]
    token_type_ids: list[int]
    content_start: int  # position of the first content token in input_ids
    span: tuple[int, int]  # which content tokens of the document [start, end)
    question_span: tuple[int, int] = (0, 0)  # positions of the question tokens in input_ids


class DocumentTokenizer:
    def __init__(self, tokenizer, max_length: int):
        self.tokenizer = tokenizer
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.max_length = max_length
        self.single = self._template(pair=False)
        self.pair = self._template(pair=True)

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
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        return Encoded(list(enc.ids), [tuple(o) for o in enc.offsets])

    def content_budget(self, question_tokens: int = 0) -> int:
        """How many content tokens fit in one window."""
        t = self.pair if question_tokens else self.single
        special = len(t.prefix) + len(t.middle) + len(t.suffix)
        return self.max_length - special - question_tokens

    def window(self, content: list[int], span: tuple[int, int], question: list[int] | None = None) -> Window:
        s, e = span
        body = content[s:e]
        if question:
            t = self.pair
            q_start = len(t.prefix)
            ids = [*t.prefix, *question, *t.middle, *body, *t.suffix]
            types = [*t.prefix_types, *[t.first_type] * len(question), *t.middle_types,
                     *[t.second_type] * len(body), *t.suffix_types]
            content_start = q_start + len(question) + len(t.middle)
            return Window(ids, types, content_start, span, (q_start, q_start + len(question)))
        t = self.single
        ids = [*t.prefix, *body, *t.suffix]
        types = [*t.prefix_types, *[t.first_type] * len(body), *t.suffix_types]
        return Window(ids, types, len(t.prefix), span)


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


def paragraph_ids(text: str, offsets: list[tuple[int, int]]) -> list[int]:
    """The paragraph (counted from 0, a blank line ends one) of each token, by its first
    character. No mention crosses a paragraph break: a reader never sees one do so, and
    without the rule the model joined a title to the sentence under it."""
    breaks = [m.end() for m in PARAGRAPH_BREAK.finditer(text)]
    return [bisect.bisect_right(breaks, a) for a, _ in offsets]
