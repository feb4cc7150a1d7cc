"""QA scores as probabilities: fitting lfcli.qa_calibration on validation answers.

The score of an answer (answers.QACandidates.probabilities) is a softmax over the candidate
spans at a temperature T, with window terms for documents of many windows and a logistic
rescaling of its log-odds (answers.py's notes say why each). Here they are fitted: T by the
least log loss of "right" on paragraphs (`fit_temperature`), then the rescaling on the scores
at T (`fit_score_scale`), both in `calibrate`, which `lfcli finetune qa` runs at each
evaluation; the window terms on whole books and articles (`fit_window_terms`,
benchmarks/eval_book_qa.py).
With the figures that say how far a score can be trusted: ECE and AUROC.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from .answers import (CALIBRATION_METHOD, DEFAULT_TEMPERATURE, SCORE_TERM_RANGES, WINDOW_TERM_RANGES, WINDOW_TERMS,
                      QACalibration, QACandidates, as_calibration)

CALIBRATION_BINS = 10
MIN_CALIBRATION_QUESTIONS = 20  # fewer, or all right, or all wrong: no temperature is fitted
TEMPERATURE_RANGE = (0.05, 20.0)


def expected_calibration_error(scores: list[float], right: list[bool], bins: int = CALIBRATION_BINS) -> float:
    """Expected calibration error: over `bins` equal-width bins of the score ([0, 0.1), ...,
    [0.9, 1]), the mean |fraction right - mean score| of a bin, weighted by its share of
    the answers."""
    if not scores:
        return 0.0
    totals = [[0, 0.0, 0.0] for _ in range(bins)]  # answers, scores, right
    for p, y in zip(scores, right):
        t = totals[min(int(p * bins), bins - 1)]
        t[0], t[1], t[2] = t[0] + 1, t[1] + p, t[2] + bool(y)
    return sum(abs(s - r) for _, s, r in totals) / len(scores)


def auroc(scores: list[float], right: list[bool]) -> float | None:
    """The chance that a right answer scores above a wrong one (ties count half): the area
    under the ROC curve. None without both right and wrong answers."""
    pairs = sorted(zip(scores, right))
    n_right = sum(1 for _, y in pairs if y)
    n_wrong = len(pairs) - n_right
    if not n_right or not n_wrong:
        return None
    rank_sum, k = 0.0, 0  # the right answers' ranks (1-based, ties at their mean rank)
    while k < len(pairs):
        e = k
        while e < len(pairs) and pairs[e][0] == pairs[k][0]:
            e += 1
        rank_sum += (k + 1 + e) / 2 * sum(1 for _, y in pairs[k:e] if y)
        k = e
    return (rank_sum - n_right * (n_right + 1) / 2) / (n_right * n_wrong)


def _log_loss(cases, right, temperature: QACalibration | float) -> float:
    """Mean log loss of "right" under the top answers' scores at `temperature` (a bare
    temperature or a QACalibration)."""
    total = 0.0
    for (candidates, answer), y in zip(cases, right):
        p = min(max(candidates.probabilities([answer], temperature)[0], 1e-12), 1 - 1e-12)
        total -= math.log(p if y else 1.0 - p)
    return total / max(1, len(cases))


def _golden(f, lo: float, hi: float, tol: float = 1e-3) -> tuple[float, float]:
    """(x, f(x)) at the least f on [lo, hi] by golden-section search (f unimodal there)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(a), f(b)
    while hi - lo > tol:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(b)
    x = (lo + hi) / 2
    return x, f(x)


WINDOW_GRID = (-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def without_window_terms(calibration: QACalibration | float) -> QACalibration:
    """The paragraph calibration alone: `calibration` with b = g = h = 0."""
    return replace(as_calibration(calibration), **dict.fromkeys(WINDOW_TERMS, 0.0))


def fit_window_terms(cases: list[tuple[QACandidates, tuple[int, int, float]]], right: list[bool],
                     temperature: QACalibration | float = DEFAULT_TEMPERATURE) -> QACalibration:
    """The window terms (answers.QACalibration: window_exponent b, window_temperature g,
    window_slope h, each within its answers.WINDOW_TERM_RANGES) whose scores of the answers
    `cases` give the least log loss of `right`, the one-window temperature (and the scores'
    rescaling, where `temperature` is a QACalibration that has one) kept as fitted on
    paragraphs: the best point of a grid over b and g (h = 0), then golden-section searches
    along each term in turn until none moves. Fit on documents of many windows (whole books,
    whole articles): with one window the terms change nothing. With fewer than
    MIN_CALIBRATION_QUESTIONS questions, or without both right and wrong answers, no terms
    (b = g = h = 0)."""
    paragraphs = without_window_terms(temperature)
    if len(cases) < MIN_CALIBRATION_QUESTIONS or all(right) or not any(right):
        return paragraphs

    def loss(terms: dict) -> float:
        return _log_loss(cases, right, replace(paragraphs, **terms))

    ranges = WINDOW_TERM_RANGES
    (b_lo, b_hi), (g_lo, g_hi) = ranges["window_exponent"], ranges["window_temperature"]
    grid = [{"window_exponent": b, "window_temperature": g, "window_slope": 0.0}
            for b in WINDOW_GRID if b_lo <= b <= b_hi for g in WINDOW_GRID if g_lo <= g <= g_hi]
    value, terms = min(((loss(t), t) for t in grid), key=lambda vt: vt[0])
    for _ in range(6):
        moved = False
        for name in WINDOW_TERMS:
            lo, hi = ranges[name]
            x, value_x = _golden(lambda v: loss({**terms, name: v}), max(lo, terms[name] - 2.0), min(hi, terms[name] + 2.0))
            if value_x < value - 1e-9:
                terms, value, moved = {**terms, name: x}, value_x, True
        if not moved:
            break
    return replace(paragraphs, **{name: round(v, 4) for name, v in terms.items()})


def save_window_terms(folder: Path, calibration: QACalibration, fitted_on: str, rank_weight: float | None = None) -> Path:
    """Write `calibration`'s window terms (and `rank_weight`, where given) into
    folder/config.json's lfcli.qa_calibration (its temperature and other keys untouched;
    written as LongformerConfig writes it)."""
    path = Path(folder) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    block = config.setdefault("lfcli", {}).setdefault("qa_calibration", {"method": CALIBRATION_METHOD,
                                                                          "temperature": calibration.temperature})
    block.update({**{name: getattr(calibration, name) for name in WINDOW_TERMS}, "windows_fitted_on": fitted_on})
    if rank_weight is not None:
        block["rank_weight"] = rank_weight
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def fit_temperature(cases: list[tuple[QACandidates, tuple[int, int, float]]], right: list[bool],
                    bounds: tuple[float, float] = TEMPERATURE_RANGE) -> float:
    """The temperature (within `bounds`) whose scores of the answers `cases` (a document's
    candidates, its answer's first token, last token and margin) give the least log loss of
    `right`: golden-section search over log T."""
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = _log_loss(cases, right, math.exp(a)), _log_loss(cases, right, math.exp(b))
    while hi - lo > 1e-4:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = _log_loss(cases, right, math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = _log_loss(cases, right, math.exp(b))
    return math.exp((lo + hi) / 2)


def calibration_figures(cases, right, temperature: QACalibration | float) -> dict:
    scores = [c.probabilities([a], temperature)[0] for c, a in cases]
    return {"ece": expected_calibration_error(scores, right), "auroc": auroc(scores, right)}


def fit_score_scale(scores: list[float], right: list[bool]) -> tuple[float, float]:
    """(a, c) of the logistic rescaling sigmoid(a * logit(p) + c) of `scores` with the least
    log loss of `right` (answers.QACalibration.rescale): Newton's method on the two terms,
    a kept within its SCORE_TERM_RANGES; (1, 0), no rescaling, where it does not converge."""
    z = [math.log(min(max(p, 1e-9), 1 - 1e-9) / (1 - min(max(p, 1e-9), 1 - 1e-9))) for p in scores]
    a, c = 1.0, 0.0
    for _ in range(100):
        ga = gc = haa = hac = hcc = 0.0
        for zi, y in zip(z, right):
            s = 1.0 / (1.0 + math.exp(-(a * zi + c)))
            d, w = s - bool(y), s * (1.0 - s)
            ga, gc, haa, hac, hcc = ga + d * zi, gc + d, haa + w * zi * zi, hac + w * zi, hcc + w
        det = haa * hcc - hac * hac
        if det <= 1e-12:
            return 1.0, 0.0
        step_a, step_c = (hcc * ga - hac * gc) / det, (haa * gc - hac * ga) / det
        a, c = a - step_a, c - step_c
        if abs(step_a) < 1e-7 and abs(step_c) < 1e-7:
            break
    low, high = SCORE_TERM_RANGES["score_slope"]
    if not (math.isfinite(a) and math.isfinite(c) and low <= a <= high and abs(c) <= SCORE_TERM_RANGES["score_bias"][1]):
        return 1.0, 0.0
    return a, c


def calibrate(cases: list[tuple[QACandidates, tuple[int, int, float]]], right: list[bool]) -> dict | None:
    """lfcli.qa_calibration for a model from its validation answers: the fitted temperature and
    the logistic rescaling of the scores at it (answers.py's notes), with the expected
    calibration error and AUROC of the scores so calibrated, at the temperature alone and at
    the default temperature 1 (all on these same questions). None with fewer than
    MIN_CALIBRATION_QUESTIONS questions or without both right and wrong answers."""
    if len(cases) < MIN_CALIBRATION_QUESTIONS or all(right) or not any(right):
        return None
    t = fit_temperature(cases, right)
    at_t = [cand.probabilities([ans], t)[0] for cand, ans in cases]
    a, c = fit_score_scale(at_t, right)
    calibration = QACalibration(t, score_slope=round(a, 4), score_bias=round(c, 4))
    scaled = [calibration.rescale(p) for p in at_t]  # the scores at T, rescaled: no second softmax
    fitted = {"ece": expected_calibration_error(scaled, right), "auroc": auroc(scaled, right)}
    at_t = {"ece": expected_calibration_error(at_t, right)}
    default = calibration_figures(cases, right, DEFAULT_TEMPERATURE)
    return {"method": CALIBRATION_METHOD, "temperature": round(t, 4), "score_slope": calibration.score_slope,
            "score_bias": calibration.score_bias, "questions": len(cases), "right": round(sum(right) / len(right), 4),
            "ece": round(fitted["ece"], 4), "auroc": round(fitted["auroc"], 4), "ece_at_t": round(at_t["ece"], 4),
            "ece_at_t1": round(default["ece"], 4), "auroc_at_t1": round(default["auroc"], 4)}
