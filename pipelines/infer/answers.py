"""QA answers: which spans of a document may be answers, and how sure the model is of one.

QATask (tasks.py) asks the model for start and end logits per window; `best_spans` ranks the
spans a window allows (`span_rules`, `allowed_spans`) by their margin over the window's
no-answer score, and `QACandidates` turns the candidates of all windows into each answer's
`score`, the calibrated probability that it is right (temperature: `qa_temperature`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .tokenize import paragraph_ids

# -- QA: which spans may be answers --------------------------------------------------------------
# An answer starts and ends on a word's edge, never on punctuation, and never leaves a quotation
# mark or a bracket open or closed inside it: `the "Landlord` or `Landlord") and` are not
# answers a reader would give. A "word" is a run of characters between white space (or
# dashes and ellipses, which separate words without spaces: "city—the"); its edges are its
# first and last characters once leading and trailing punctuation is stripped (quotes,
# brackets, full stops, commas; "%" stays at the end of "50%"). Inside a word, hyphens,
# apostrophes and decimal points join its parts: an answer never starts at "operative" of
# "Co-operative" nor ends at "4" of "4.2"; a possessive is the one exception: "Elizabeth"
# may end an answer in "Elizabeth's". Nor does an answer cross a paragraph break (a blank line).
# Chinese and Japanese characters are words of their own (those scripts have no spaces).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\s\u2013\u2014\u2026{_CJK}]+")  # dashes (en, em) and "…" separate words
_KEEP_AT_END = "%\u2030"
_BRACKETS = ("()", "[]", "{}", "\u201c\u201d", "\u00ab\u00bb")  # opener, closer
_QUOTES = '"'  # the straight double quote opens and closes: an answer holds an even number


def _is_punct(ch: str) -> bool:
    import unicodedata

    return unicodedata.category(ch).startswith("P")


@dataclass
class SpanRules:
    """Per document token: may an answer start / end there; and for every bracket pair (and
    the straight quote) the running count of its marks up to each token, so that a span's
    marks are a difference of two counts (`depth[p][t]`: marks in tokens [0, t))."""

    starts: list[bool]
    ends: list[bool]
    depth: list[list[int]]  # len(_BRACKETS) rows of opens - closes, then one row of quote counts
    paragraphs: list[int]  # each token's paragraph (paragraph_ids)

    def window(self, s0: int, s1: int) -> "SpanRules":
        return SpanRules(self.starts[s0:s1], self.ends[s0:s1], [row[s0: s1 + 1] for row in self.depth],
                         self.paragraphs[s0:s1])


def span_rules(text: str, offsets: list[tuple[int, int]]) -> SpanRules:
    """Where answers may start and end in a text of tokens with character `offsets` (see the
    rules above)."""
    import itertools

    starts_at, ends_at = set(), set()
    for m in _WORD.finditer(text):
        a, b = m.start(), m.end()
        while a < b and _is_punct(text[a]):
            a += 1
        while b > a and _is_punct(text[b - 1]) and text[b - 1] not in _KEEP_AT_END:
            b -= 1
        if a == b:
            continue  # punctuation only
        starts_at.add(a)
        ends_at.add(b)
        if b - a > 2 and text[b - 2] in "'\u2019" and text[b - 1] in "sS":  # possessive: Elizabeth's
            ends_at.add(b - 2)
    depth = []
    for opener, closer in _BRACKETS:
        marks = (text.count(opener, a, z) - text.count(closer, a, z) for a, z in offsets)
        depth.append(list(itertools.accumulate(marks, initial=0)))
    depth.append(list(itertools.accumulate((text.count(_QUOTES, a, z) for a, z in offsets), initial=0)))
    return SpanRules([a in starts_at for a, _ in offsets], [z in ends_at for _, z in offsets], depth,
                     paragraph_ids(text, offsets))


def allowed_spans(rules: SpanRules | None, n: int, max_answer_tokens: int):
    """(n, L) bool, L = min(n, max_answer_tokens): may span (i, i + d) be an answer. Without
    rules, every span of at most max_answer_tokens tokens within the n tokens may."""
    import torch

    L = min(n, max_answer_tokens)
    i = torch.arange(n)[:, None]
    j = i + torch.arange(L)[None, :]
    ok = j < n
    if rules is None:
        return ok
    jc = j.clamp(max=n - 1)
    starts, ends = torch.tensor(rules.starts, dtype=torch.bool), torch.tensor(rules.ends, dtype=torch.bool)
    paragraphs = torch.tensor(rules.paragraphs, dtype=torch.long)
    ok = ok & starts[:, None] & ends[jc] & (paragraphs[:, None] == paragraphs[jc])
    depth = torch.tensor(rules.depth, dtype=torch.long)  # (P, n + 1)
    inside = depth[:, jc + 1] - depth[:, i]  # (P, n, L): marks in tokens i..j
    brackets = inside[:-1]
    # every closer has its opener in the span (the running count never dips below 0) and
    # every opener its closer (it ends at 0); an even number of straight quotes
    ok = ok & (brackets.cummin(dim=2).values >= 0).all(0) & (brackets == 0).all(0) & (inside[-1] % 2 == 0)
    return ok


def best_spans(start_logits, end_logits, null_logit: float, max_answer_tokens: int, k: int,
               rules: SpanRules | None = None) -> list[tuple[float, int, int]]:
    """The k best spans (margin, first token, last token) of one window's context tokens.

    margin = start_logit[i] + end_logit[j] - null_logit, for i <= j < i + max_answer_tokens
    and spans the window's `rules` allow (`span_rules`; when they allow none, e.g. a window
    of punctuation, every span is a candidate), where null_logit is the window's no-answer
    score (start and end logits of its first token, the target of windows without the
    answer in training). Margins of different windows are on one scale, so the best answer
    over many windows of a long document is the span with the largest margin;
    softmax-normalising each window alone would make every window look confident."""
    import torch

    n = start_logits.shape[0]
    ok = allowed_spans(rules, n, max_answer_tokens)
    if rules is not None and not bool(ok.any()):
        ok = allowed_spans(None, n, max_answer_tokens)
    L = ok.shape[1]
    jc = (torch.arange(n)[:, None] + torch.arange(L)[None, :]).clamp(max=n - 1)
    scores = start_logits.float()[:, None] + end_logits.float()[jc] - null_logit
    scores = scores.masked_fill(~ok, float("-inf")).flatten()
    best, flat = scores.topk(min(k, scores.numel()))
    return [(float(sc), int(f) // L, int(f) // L + int(f) % L) for sc, f in zip(best, flat) if math.isfinite(float(sc))]


# -- QA: how sure the model is of an answer -----------------------------------------------------
# `score` is the model's probability that an answer is right (overlaps the truth with token
# F1 >= 0.5, SQuAD's sense of a right-enough answer). Every window proposes its
# QA_CANDIDATES best spans, each with its margin over the window's no-answer score
# (`best_spans`); a softmax at temperature T runs over those candidates of all windows (a
# span two windows propose counts once, at its best margin) and one no-answer per window
# (margin 0). An answer's score is the probability there of the candidates that overlap it
# with token F1 >= 0.5: the model's belief in the answer and its near variants ("five (5)
# years" and "five (5)"), which a single span's probability splits among them.
#
# T is fitted on validation questions (`lfcli finetune qa` fits it at each evaluation and
# the saved model keeps its own: train.qa.calibrate) and saved in the model's config.json under
# lfcli.qa_calibration; a model without one gets T = 1, the model's own softmax (on the
# bundled SQuAD model's validation questions T = 1 already had an expected calibration
# error of 0.04; the old sigmoid of the margin, 0.25). The temperature never changes which
# span is the best: answers are ranked by margin, as before. Near variants share their
# belief, so an answer further down a --top-k list may score as high as one above it.
QA_CANDIDATES = 20  # spans each window puts into the softmax
NEAR_F1 = 0.5  # token F1 at which a candidate counts towards an answer
CALIBRATION_METHOD = "candidate-softmax"  # what lfcli.qa_calibration's temperature is for
DEFAULT_TEMPERATURE = 1.0


def _logsumexp(xs: list[float]) -> float:
    top = max(xs)
    return top + math.log(sum(math.exp(x - top) for x in xs)) if math.isfinite(top) else top


def span_f1(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Token F1 of two spans (first, last token; inclusive)."""
    overlap = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return 0.0 if overlap <= 0 else 2.0 * overlap / (a[1] - a[0] + b[1] - b[0] + 2)


@dataclass
class QACandidates:
    """The candidate spans of one document (document tokens, first and last, inclusive;
    distinct, best margin first) and its number of windows: what an answer's score is
    computed from, at any temperature."""

    spans: list[tuple[int, int]]
    margins: list[float]
    windows: int

    def near(self, answer: tuple[int, int, float]) -> list[float]:
        """Margins of the candidates within NEAR_F1 of `answer` (first, last, margin), itself
        included also when it is not a candidate."""
        first, last, margin = answer
        out = [m for s, m in zip(self.spans, self.margins) if span_f1(s, (first, last)) >= NEAR_F1]
        return out if (first, last) in self.spans else [*out, margin]

    def probabilities(self, answers: list[tuple[int, int, float]], temperature: float = DEFAULT_TEMPERATURE) -> list[float]:
        """The score of each answer (first token, last token, margin): the softmax mass, at
        `temperature`, of the candidates within NEAR_F1 of it (itself included, also when
        it is not among the candidates)."""
        t = temperature
        log_z = _logsumexp([m / t for m in self.margins] + [math.log(max(1, self.windows))])  # + a no-answer per window
        return [min(1.0, math.exp(_logsumexp([m / t for m in self.near(a)]) - log_z)) for a in answers]


def qa_temperature(config) -> float:
    """The temperature a QA model's config.json saves (lfcli.qa_calibration), else 1."""
    saved = ((getattr(config, "extra", None) or {}).get("lfcli") or {}).get("qa_calibration")
    if saved is None:
        return DEFAULT_TEMPERATURE
    method = saved.get("method") if isinstance(saved, dict) else None
    t = saved.get("temperature") if isinstance(saved, dict) else None
    if method != CALIBRATION_METHOD or isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < math.inf:
        from ..progress import note

        note(f"the model's lfcli.qa_calibration ({method or saved!r}) is not one this lfcli reads "
             f"(method {CALIBRATION_METHOD!r}, a positive temperature); QA scores use temperature {DEFAULT_TEMPERATURE:g}")
        return DEFAULT_TEMPERATURE
    return float(t)
