"""QA answers: which spans of a document may be answers, and how sure the model is of one.

QATask (task.py) asks the model for start and end logits per window; `best_spans` ranks the
spans a window allows (`span_rules`, `allowed_spans`) by their margin over the window's
no-answer score, and `QACandidates` turns the candidates of all windows into each answer's
`score`, the calibrated probability that it is right (`qa_calibration`: a temperature, and
terms that lower the score as a document's windows multiply);
`distinct_answers` picks the answers a user sees, and `heading_lines` the lines that are none.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch

from ...eval.metrics_qa import normalize_answer
from ...infer.tokenize import paragraph_ids
from ...progress import note


# -- QA: which spans may be answers --------------------------------------------------------------
# An answer starts and ends on a word's edge, never on punctuation, and never leaves a quotation
# mark or a bracket open or closed inside it: `the "Landlord` or `Landlord") and` are not
# answers a reader would give. A "word" is a run of characters between white space (or
# dashes and ellipses, which separate words without spaces: "city—the", "sir--Selden"); its edges are its
# first and last characters once leading and trailing punctuation is stripped (quotes,
# brackets, full stops, commas; "%" stays at the end of "50%"). Inside a word, hyphens,
# apostrophes and decimal points join its parts: an answer never starts at "operative" of
# "Co-operative" nor ends at "4" of "4.2"; a possessive is the one exception: "Elizabeth"
# may end an answer in "Elizabeth's". Nor does an answer cross a paragraph break (a blank line).
# Chinese and Japanese characters are words of their own (those scripts have no spaces).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Dashes (en, em, and the typewriter's "--" of plain-text books: "sir--Selden") and "…"
# separate words; a single hyphen joins them ("Co-operative").
_WORD = re.compile(rf"[{_CJK}]|(?:(?!--)[^\s\u2013\u2014\u2026{_CJK}])+")
_KEEP_AT_END = "%\u2030"
_BRACKETS = ("()", "[]", "{}", "\u201c\u201d", "\u00ab\u00bb")  # opener, closer
_QUOTES = '"'  # the straight double quote opens and closes: an answer holds an even number


def answer_text(text: str, start: int, end: int) -> str:
    """An answer as a reader gives it: the span's text with every run of white space (a line
    break of a hard-wrapped book: "Basil\nHallward") one space. start and end still point at
    the span in the source."""
    return " ".join(text[start:end].split())


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


@dataclass
class SpanRules:
    """Per document token: may an answer start / end there; and for every bracket pair (and
    the straight quote) the running count of its marks up to each token, so that a span's
    marks are a difference of two counts (`depth[p][t]`: marks in tokens [0, t))."""

    starts: list[bool]
    ends: list[bool]
    depth: list[list[int]]  # len(_BRACKETS) rows of opens - closes, then one row of quote counts
    paragraphs: Sequence[int]  # each token's paragraph (paragraph_ids: an int32 array)

    def window(self, s0: int, s1: int) -> "SpanRules":
        return SpanRules(self.starts[s0:s1], self.ends[s0:s1], [row[s0: s1 + 1] for row in self.depth],
                         self.paragraphs[s0:s1])


# -- QA: headings are not answers ----------------------------------------------------------------
# A heading, title or other line that is not a sentence ("CHAPTER XI.", "Chapter 3. The Pool of
# Tears", "## 2. Methods", a title on its own between blank lines) is never an answer, nor part
# of one, unless the question asks for one ("What is the title of chapter 3?"). A line (text
# between newlines) of at most HEADING_WORDS words is a heading when it is
#   - a Markdown heading ("# ...");
#   - numbered: a chapter/part/section-like word or a section number, then at most a title
#     ("CHAPTER XI.", "Part Two: The Return", "3.2 Related Work");
#   - or not a sentence, on a line of its own (a blank line, the text's edge or one of the
#     headings above on each side, so never a line of a hard-wrapped paragraph): in capitals
#     ("THE END"), every word capitalised but for small words ("Who Stole the Tarts?" under
#     "CHAPTER XI."), or without the punctuation that ends a sentence ("Harbour bridge reopens
#     after repairs"); never speech (in quotation marks or after a dash), ending in a comma,
#     colon or semicolon, with a "label: value" colon, nor in lower case and ending in a full stop.
HEADING_WORDS = 12
_HEADING_QUESTION = re.compile(r"\b(chapters?|titles?|titled|entitled|headings?|headlines?|headers?|sections?|captions?)\b",
                               re.IGNORECASE)
_SECTION_WORD = r"(?:chapter|part|book|section|act|scene|canto|volume|appendix|article|lesson|unit|stave)"
_NUMERAL = r"(?:\d+(?:\.\d+)*|[ivxlcdm]+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|[a-z])"
_NUMBERED = re.compile(rf"(?:{_SECTION_WORD}\s+{_NUMERAL}|\d+(?:\.\d+)*)\b[.:)]?(?:\s*[-\u2013\u2014:.]?\s+(?P<title>.*))?",
                       re.IGNORECASE)
_SMALL_WORDS = frozenset("a an and as at but by de del der des du en for from in into la le nor of on or "
                         "over per the to upon van via von vs with".split())
_QUOTE_MARKS = "\"'\u201c\u201d\u2018\u2019\u00ab\u00bb"
_DIALOGUE_DASHES = ("-", "\u2013", "\u2014")  # "--All in!", "\u2014Hockey!": speech, not a title


def _is_title(words: list[str]) -> bool:
    """Every word with a letter capitalised, but for small words; at least one capitalised."""
    capitalised = 0
    for word in words:
        letters = "".join(ch for ch in word if ch.isalpha())
        if not letters:
            continue
        if letters[0].isupper():
            capitalised += 1
        elif letters.lower() not in _SMALL_WORDS:
            return False
    return capitalised > 0


def _heading_kind(line: str) -> str | None:
    """'heading' (Markdown or numbered), 'title-like' (a heading between blank lines or
    headings) or None: a sentence or other text. `line` has no outer white space."""
    words = line.split()
    if not words or len(words) > HEADING_WORDS or not any(ch.isalpha() for ch in line):
        return None
    if re.match(r"#{1,6}\s", line):
        return "heading"
    numbered = _NUMBERED.fullmatch(line)
    if numbered and line[-1] not in ",;" and (not numbered["title"] or _is_title(numbered["title"].split())):
        return "heading"
    capitals = not any(ch.islower() for ch in line)
    if (line[0] in _QUOTE_MARKS or line[-1] in _QUOTE_MARKS or line.startswith(_DIALOGUE_DASHES) or line[-1] in ",;:"
            or re.search(r"\w:\s", line) or (line[-1] == "." and not capitals)):
        return None
    unended = line[-1].isalnum() and not re.search(r"[.!?]\s", line)  # no sentence ends in it
    return "title-like" if capitals or _is_title(words) or unended else None


def heading_lines(text: str) -> list[tuple[int, int]]:
    """Character ranges [start, end) of the text's heading lines (see the rules above), in
    order; none when every line is one."""
    lines = []  # (start, end, kind): kind "" for a blank line
    for m in re.finditer(r"^[^\n]*", text, re.MULTILINE):
        line = m.group().strip()
        start = m.start() + len(m.group()) - len(m.group().lstrip())
        lines.append((start, start + len(line), _heading_kind(line) if line else ""))
    out = []
    for k, (start, end, kind) in enumerate(lines):
        if kind == "title-like":
            sides = (lines[k - 1][2] if k > 0 else "", lines[k + 1][2] if k + 1 < len(lines) else "")
            kind = "heading" if all(side in ("", "heading") for side in sides) else None
        if kind == "heading":
            out.append((start, end))
    if len(out) == sum(1 for line in lines if line[2] != ""):
        return []  # a text of headings alone ("Lease term five years", a snippet) heads nothing
    return out


def asks_for_heading(question: str) -> bool:
    """Does the question ask for a heading or title ("Which chapter ...?", "What is the title ...?")."""
    return bool(_HEADING_QUESTION.search(question))


def span_rules(text: str, offsets: list[tuple[int, int]], headings: bool = False) -> SpanRules:
    """Where answers may start and end in a text of tokens with character `offsets` (see the
    rules above); with `headings` False, never in a heading line (`heading_lines`), nor
    across one."""
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
    starts = [a in starts_at for a, _ in offsets]
    ends = [z in ends_at for _, z in offsets]
    paragraphs = paragraph_ids(text, offsets)
    if not headings:
        excluded = heading_lines(text)
        edges = [x for a, z in excluded for x in (a, z)]  # a heading is a paragraph of its own
        for t, (a, _) in enumerate(offsets):
            inside = bisect.bisect_right(edges, a) % 2 == 1
            starts[t] = starts[t] and not inside
            ends[t] = ends[t] and not inside
            paragraphs[t] += bisect.bisect_right(edges, a)  # both counts grow along the text
    return SpanRules(starts, ends, depth, paragraphs)


def allowed_spans(rules: SpanRules | None, n: int, max_answer_tokens: int):
    """(n, L) bool, L = min(n, max_answer_tokens): may span (i, i + d) be an answer. Without
    rules, every span of at most max_answer_tokens tokens within the n tokens may."""
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
# error of 0.04; the old sigmoid of the margin, 0.25).
#
# Paragraphs fit T; a whole book is hundreds of windows, each adding a no-answer and 20
# candidates, so a score could drift as the windows multiply. Window terms (QACalibration),
# fitted on documents of many windows, correct it where it does: with w windows the no-answer
# mass is w ** (1 + b) instead of w (b: `window_exponent`), and the temperature T * (1 + g ln w)
# (g: `window_temperature`). With one window the terms vanish, so a paragraph scores exactly
# as before; a model whose config.json has no window terms gets b = g = h = 0, the plain
# softmax. The bundled models fit them with benchmarks/eval_book_qa.py --fit, on questions over
# whole novels and SQuAD questions asked of their whole articles, reported on other novels and
# other articles (their cards give the figures).
#
# One softmax temperature leaves the scores of a fully trained model off by 0.06-0.07 on
# average (ECE, small tier on all of SQuAD, 2,000 validation questions in two halves, each
# fitted on the other): scores near 0.5 were too low, those near 1 a little too high. So the
# score at T then goes through a logistic rescaling of its log-odds, fitted on the same
# validation answers after T (Platt's scaling): s = sigmoid(a * logit(p) + c), a =
# `score_slope`, c = `score_bias` (a > 0: the order of the answers is unchanged). Held-out ECE
# 0.044 in both halves. A model whose config.json has neither gets a = 1, c = 0: p itself.
#
# The slope fitted on paragraphs is too shallow for long documents: fitted on the small tier's
# whole articles (12-94 windows) and whole books (51-501), a came out 0.75-0.89 where
# paragraphs gave 0.40-0.60, and with the paragraphs' slope the answers of middling score
# were right less often than their scores said, the high ones more often. The third window
# term h (`window_slope`) makes the slope a * (1 + h ln w) with w windows: a paragraph's
# is a, a long document's steeper (h >= 0).
#
# The answers a user sees (`distinct_answers`) are distinct and sorted by that score: a span
# that overlaps a span of larger margin (nested in it, holding it or sharing words with it),
# or overlaps such a variant of it, is not another answer but a variant of that one, which
# stands for it with the model's own best boundaries; and the same text found twice is one
# answer, at its better score. Which spans stand for answers does not depend on the
# temperature; their scores, and so their order, do.
QA_CANDIDATES = 20  # spans each window puts into the softmax
QA_ANSWER_POOL = 200  # spans each window proposes as answers (its QA_CANDIDATES best among them); with
# their variants left out, a validation paragraph (one 256-token window) holds 1-19, median 4, distinct answers
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


@dataclass(frozen=True)
class QACalibration:
    """How candidate margins become scores (see the notes above): the temperature T fitted on
    paragraphs, and the window terms fitted on long documents, b (`window_exponent`: the
    no-answer mass of w windows is w ** (1 + b)), g (`window_temperature`: the temperature
    with w windows is T * (1 + g ln w)) and h (`window_slope`: the rescaling's slope with w
    windows is a * (1 + h ln w)). With one window, or b = g = h = 0, it is the softmax at T,
    rescaled as on paragraphs."""

    temperature: float = DEFAULT_TEMPERATURE
    window_exponent: float = 0.0
    window_temperature: float = 0.0
    window_slope: float = 0.0
    score_slope: float = 1.0  # a of the logistic rescaling of the score's log-odds (the notes above)
    score_bias: float = 0.0  # c of it
    rank_weight: float = 0.0  # r: a retrieved window of rank k (0: the best passage's) adds -r ln(1 + k) to its margins

    def rank_prior(self, rank: int | None) -> float:
        """What a window's candidates add to their margins for its retrieval rank (None: a
        whole read, which ranks nothing): -r ln(1 + rank), 0 for the best passage's window."""
        return -self.rank_weight * math.log1p(rank) if rank and self.rank_weight else 0.0

    def rescale(self, p: float, windows: int = 1) -> float:
        """The score after the logistic rescaling of its log-odds, for a document of `windows`
        windows (p itself with a = 1, c = 0 and one window or h = 0)."""
        slope = self.score_slope * (1.0 + self.window_slope * math.log(max(1, windows)))
        if slope == 1.0 and self.score_bias == 0.0:
            return p
        q = min(max(p, 1e-9), 1.0 - 1e-9)
        return 1.0 / (1.0 + math.exp(-(slope * math.log(q / (1.0 - q)) + self.score_bias)))

    def at(self, windows: int) -> tuple[float, float]:
        """(temperature, log of the no-answer mass) for a document of `windows` windows."""
        log_w = math.log(max(1, windows))
        return self.temperature * (1.0 + self.window_temperature * log_w), (1.0 + self.window_exponent) * log_w


def as_calibration(calibration: "QACalibration | float") -> QACalibration:
    """A QACalibration from itself or from a bare temperature (no window terms)."""
    return calibration if isinstance(calibration, QACalibration) else QACalibration(float(calibration))


@dataclass
class QACandidates:
    """The candidate spans of one document (document tokens, first and last, inclusive;
    distinct, best margin first) and its number of windows: what an answer's score is
    computed from, at any temperature."""

    spans: list[tuple[int, int]]
    margins: list[float]
    windows: int
    # an index, built on first use: (first token, index) sorted, the longest span, the spans as a set
    _by_first: list = field(default=None, init=False, repr=False, compare=False)
    _longest: int = field(default=0, init=False, repr=False, compare=False)
    _known: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def near(self, answer: tuple[int, int, float]) -> list[float]:
        """Margins of the candidates within NEAR_F1 of `answer` (first, last, margin), itself
        included also when it is not a candidate."""
        if self._by_first is None:  # near candidates overlap the answer: look only where they may start
            self._by_first = sorted((s[0], k) for k, s in enumerate(self.spans))
            self._longest = max((b - a for a, b in self.spans), default=0)
            self._known = frozenset(self.spans)
        first, last, margin = answer
        lo = bisect.bisect_left(self._by_first, (first - self._longest, -1))
        hi = bisect.bisect_right(self._by_first, (last, len(self.spans)))
        out = [self.margins[k] for _, k in self._by_first[lo:hi] if span_f1(self.spans[k], (first, last)) >= NEAR_F1]
        return out if (first, last) in self._known else [*out, margin]

    def probabilities(self, answers: list[tuple[int, int, float]],
                      temperature: QACalibration | float = DEFAULT_TEMPERATURE) -> list[float]:
        """The score of each answer (first token, last token, margin): the softmax mass, at
        `temperature` (a bare temperature, or a QACalibration with its window terms), of the
        candidates within NEAR_F1 of it (itself included, also when it is not among the
        candidates), beside the windows' no-answer mass (w windows: w, or w ** (1 + b))."""
        calibration = as_calibration(temperature)
        t, log_none = calibration.at(self.windows)
        log_z = _logsumexp([m / t for m in self.margins] + [log_none])  # + a no-answer per window
        return [calibration.rescale(min(1.0, math.exp(_logsumexp([m / t for m in self.near(a)]) - log_z)), self.windows)
                for a in answers]


def distinct_answers(spans: list[tuple[int, int, float]], candidates: QACandidates,
                     temperature: QACalibration | float, text_of, k: int) -> list[tuple[tuple[int, int, float], float]]:
    """Up to k distinct answers among `spans` (first token, last token, margin; from all
    windows, in any order), each with its score (`QACandidates.probabilities`), best score
    first (ties: larger margin first). Going down the spans by margin, a span that overlaps an
    answer (nested in it, holding it or sharing tokens with it), or a variant of one that is
    among the candidates, is a variant of that answer and is left out: "walked to" is no answer
    beside "Netherfield" when "walked to Netherfield" is a candidate. Of answers with the same
    text (`text_of(span)`, compared as SQuAD compares answers: case, punctuation and articles
    aside) the best scoring stays; one of articles and punctuation alone ("The") is none
    unless there is nothing else.

    The variant that stands for an answer is the one of largest margin, not of highest score: a
    long span gathers the belief in its many near variants. On the bundled model's 741
    validation paragraph questions (benchmarks/eval_qa.py, fp32, 2026-11-25) the best answer
    picked by score had EM 24.4, F1 60.1; picked so, EM 61.1, F1 73.6 (the best margin alone:
    EM 60.6, F1 73.0)."""
    known = set(candidates.spans)
    covered: set[int] = set()  # tokens of the answers so far and of their variants among the candidates
    answers = []
    for span in sorted(spans, key=lambda s: -s[2]):
        tokens = range(span[0], span[1] + 1)
        if not covered.intersection(tokens):
            answers.append(span)
        elif span[:2] not in known:
            continue
        covered.update(tokens)
    ranked = sorted(zip(answers, candidates.probabilities(answers, temperature)), key=lambda a: (-a[1], -a[0][2]))
    out, texts = [], set()
    for span, score in ranked:
        key = normalize_answer(text_of(span))
        if key and key not in texts:  # "The" alone (articles, punctuation) is no answer
            texts.add(key)
            out.append((span, score))
            if len(out) == k:
                break
    return out or ranked[:1]


def qa_temperature(config) -> float:
    """The temperature a QA model's config.json saves (lfcli.qa_calibration), else 1."""
    return qa_calibration(config).temperature


WINDOW_TERMS = ("window_exponent", "window_temperature", "window_slope")
SCORE_TERMS = ("score_slope", "score_bias")
SCORE_TERM_RANGES = {"score_slope": (0.01, 10.0), "score_bias": (-10.0, 10.0)}
# b from -1 (the no-answer mass stays one window's, w ** 0, however many windows) up; g from 0
# (the temperature never falls as windows multiply), h from 0 (a long document's scores are
# never squeezed more than a paragraph's). On 88 whole-book questions of the "fit" books the
# small tier's least log loss was once at b = -1: w windows' no-answer mass w made a whole
# book's right answers score too low (benchmarks/eval_book_qa.py).
WINDOW_TERM_RANGES = {"window_exponent": (-1.0, 10.0), "window_temperature": (0.0, 10.0), "window_slope": (0.0, 10.0)}
RANK_WEIGHT_RANGE = (0.0, 10.0)  # r of QACalibration.rank_prior


def qa_calibration(config) -> QACalibration:
    """The calibration a QA model's config.json saves (lfcli.qa_calibration: its temperature
    and, when fitted on whole books, its window terms), else temperature 1 without window
    terms. A calibration this lfcli cannot read is said on stderr and left out."""
    saved = ((getattr(config, "extra", None) or {}).get("lfcli") or {}).get("qa_calibration")
    if saved is None:
        return QACalibration()
    method = saved.get("method") if isinstance(saved, dict) else None
    t = saved.get("temperature") if isinstance(saved, dict) else None
    if method != CALIBRATION_METHOD or not _number(t) or not 0 < t < math.inf:
        note(f"the model's lfcli.qa_calibration ({method or saved!r}) is not one this lfcli reads "
             f"(method {CALIBRATION_METHOD!r}, a positive temperature); QA scores use temperature {DEFAULT_TEMPERATURE:g}")
        return QACalibration()
    calibration = QACalibration(float(t))
    for ranges, default, consequence in (
            (WINDOW_TERM_RANGES, 0.0, "QA scores leave the window terms out"),
            (SCORE_TERM_RANGES, None, "QA scores leave their rescaling out"),
            ({"rank_weight": RANK_WEIGHT_RANGE}, None, "retrieved windows are not weighted by rank")):
        calibration = replace(calibration, **_saved_numbers(saved, ranges, default, consequence))
    return calibration


def _saved_numbers(saved: dict, ranges: dict, default, consequence: str) -> dict[str, float]:
    """The saved numbers named in `ranges`, as floats, where each is a number within its range
    (a missing one is `default`; with no default, none saved is none used). Where one is not
    such a number none of them is used, and stderr says so with `consequence`."""
    if default is None and not any(name in saved for name in ranges):
        return {}
    values = {name: saved.get(name, default) for name in ranges}
    for name, v in values.items():
        lo, hi = ranges[name]
        if not _number(v) or not lo <= v <= hi:
            note(f"the model's lfcli.qa_calibration has {name} {v!r}, not a number in [{lo:g}, {hi:g}]; {consequence}")
            return {}
    return {name: float(v) for name, v in values.items()}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
