"""QA scores over many windows (answers.QACalibration): terms fitted on whole books lower the
score as a document's windows multiply, and leave a one-window document (a paragraph) as it
scored before. Hand-made candidates, and a tiny real checkpoint (tests/checkpoints.py)."""

from __future__ import annotations

import json
import math
import random

import pytest

from test_qa_calibration import qa_folder, with_calibration  # noqa: F401 (a fixture)
from lfcli import Pipeline
from lfcli.models import LongformerConfig
from lfcli.pipelines.io.readers import Document
from lfcli.pipelines.tasks.qa.answers import CALIBRATION_METHOD, QACalibration, QACandidates, qa_calibration
from lfcli.pipelines.tasks.qa.calibration import calibrate, fit_window_terms, save_window_terms

pytestmark = pytest.mark.usefixtures("one_thread")

SPANS, MARGINS = [(0, 1), (0, 0), (5, 6)], [2.0, 1.0, 0.0]
ANSWERS = [(0, 1, 2.0), (5, 6, 0.0)]


def test_one_window_scores_as_the_temperature_alone_whatever_the_window_terms():
    one = QACandidates(SPANS, MARGINS, windows=1)
    for t in (0.5, 1.0, 2.0):
        plain = one.probabilities(ANSWERS, t)
        for b, g in ((0.0, 0.0), (1.5, 0.0), (0.0, 2.0), (3.0, 0.7)):
            assert one.probabilities(ANSWERS, QACalibration(t, b, g)) == pytest.approx(plain, abs=1e-12)
    assert QACalibration(1.3).at(1) == (1.3, 0.0)


def test_window_terms_by_hand():
    t, b, g, w = 1.2, 0.5, 0.25, 50
    c = QACandidates(SPANS, MARGINS, windows=w)
    tw = t * (1 + g * math.log(w))  # the temperature with w windows
    z = sum(math.exp(m / tw) for m in MARGINS) + w ** (1 + b)  # the no-answer mass: w ** (1 + b)
    a, other = c.probabilities(ANSWERS, QACalibration(t, b, g))
    assert a == pytest.approx((math.exp(2 / tw) + math.exp(1 / tw)) / z)
    assert other == pytest.approx(1 / z)
    # without window terms: the softmax at t beside one no-answer a window, as before
    z0 = sum(math.exp(m / t) for m in MARGINS) + w
    assert c.probabilities(ANSWERS[:1], QACalibration(t))[0] == pytest.approx((math.exp(2 / t) + math.exp(1 / t)) / z0)
    assert c.probabilities(ANSWERS[:1], t) == c.probabilities(ANSWERS[:1], QACalibration(t))


def test_the_no_answer_term_lowers_a_sure_answer_more_as_the_windows_multiply():
    cal = QACalibration(1.0, 1.5, 0.0)  # 1000 windows: a no-answer mass of 1000 ** 2.5
    scores = [QACandidates(SPANS, [12.0, 11.0, 0.0], windows=w).probabilities(ANSWERS[:1], cal)[0]
              for w in (1, 10, 100, 1000)]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0.99 and scores[-1] < 0.01
    plain = QACandidates(SPANS, [12.0, 11.0, 0.0], windows=1000).probabilities(ANSWERS[:1], 1.0)[0]
    assert plain > 0.99  # what a paragraph's calibration said of a whole book


def config_with(calibration) -> LongformerConfig:
    config = LongformerConfig()
    config.extra = {"lfcli": {"qa_calibration": calibration}}
    return config


def test_the_saved_window_terms_are_read_and_bad_ones_left_out(capsys):
    saved = {"method": CALIBRATION_METHOD, "temperature": 0.9, "window_exponent": 0.8, "window_temperature": 0.3}
    assert qa_calibration(config_with(saved)) == QACalibration(0.9, 0.8, 0.3)
    older = {"method": CALIBRATION_METHOD, "temperature": 0.9}  # a model calibrated on paragraphs only
    assert qa_calibration(config_with(older)) == QACalibration(0.9)
    capsys.readouterr()
    # b may go down to -1 (the no-answer mass stays one window's), g not below 0
    assert qa_calibration(config_with({**saved, "window_exponent": -1.0})) == QACalibration(0.9, -1.0, 0.3)
    for bad in (-1.5, "1", True, float("nan"), 1e6):
        assert qa_calibration(config_with({**saved, "window_exponent": bad})) == QACalibration(0.9)
        assert "window_exponent" in capsys.readouterr().err
    assert qa_calibration(config_with({**saved, "window_temperature": -0.1})) == QACalibration(0.9)
    assert "window_temperature" in capsys.readouterr().err
    assert qa_calibration(config_with({"method": "isotonic"})) == QACalibration()
    # the slope's window term: read where saved, 0 where not (older models), never below 0
    assert qa_calibration(config_with({**saved, "window_slope": 0.12})) == QACalibration(0.9, 0.8, 0.3, 0.12)
    assert qa_calibration(config_with({**saved, "window_slope": -0.1})) == QACalibration(0.9)
    assert "window_slope" in capsys.readouterr().err


def test_the_slope_term_steepens_a_long_documents_rescaling_and_leaves_one_window_alone():
    t, a, c, h = 1.2, 0.6, 0.7, 0.15
    with_h, without = QACalibration(t, 0.0, 0.0, h, a, c), QACalibration(t, score_slope=a, score_bias=c)
    one = QACandidates(SPANS, MARGINS, windows=1)
    assert one.probabilities(ANSWERS, with_h) == one.probabilities(ANSWERS, without)
    w = 40
    many = QACandidates(SPANS, MARGINS, windows=w)
    p = many.probabilities(ANSWERS[:1], t)[0]  # the softmax mass at t, before any rescaling
    slope = a * (1 + h * math.log(w))
    assert many.probabilities(ANSWERS[:1], with_h)[0] == pytest.approx(1 / (1 + math.exp(-(slope * math.log(p / (1 - p)) + c))))
    assert many.probabilities(ANSWERS[:1], without)[0] == pytest.approx(1 / (1 + math.exp(-(a * math.log(p / (1 - p)) + c))))


def synthetic_books(terms: QACalibration, n: int = 1500, seed: int = 0):
    """Cases over 1 to 400 windows whose answers are right with the probability `terms` gives."""
    rng = random.Random(seed)
    cases, right = [], []
    for _ in range(n):
        windows = rng.choice((1, 3, 20, 100, 400))
        k = rng.randint(2, 6)
        spans = [(4 * j, 4 * j + rng.randint(0, 2)) for j in range(k)]  # apart: no near variants
        margins = sorted((rng.gauss(6.0, 4.0) for _ in range(k)), reverse=True)
        c = QACandidates(spans, margins, windows)
        answer = (*spans[0], margins[0])
        cases.append((c, answer))
        right.append(rng.random() < c.probabilities([answer], terms)[0])
    return cases, right


def test_fit_window_terms_recovers_known_terms_and_keeps_the_temperature():
    true = QACalibration(1.0, 1.0, 0.2)
    cases, right = synthetic_books(true)
    fitted = fit_window_terms(cases, right, temperature=1.0)
    assert fitted.temperature == 1.0
    assert fitted.window_exponent == pytest.approx(1.0, abs=0.35)
    assert fitted.window_temperature == pytest.approx(0.2, abs=0.15)
    # none needed: data made without window terms fits (near) none
    cases, right = synthetic_books(QACalibration(1.0), seed=1)
    none = fit_window_terms(cases, right, temperature=1.0)
    assert abs(none.window_exponent) < 0.3 and none.window_temperature < 0.1
    # a no-answer mass that stays one window's (b = -1) is found too
    cases, right = synthetic_books(QACalibration(1.0, -1.0, 0.0), seed=2)
    flat = fit_window_terms(cases, right, temperature=1.0)
    assert flat.window_exponent == pytest.approx(-1.0, abs=0.3) and flat.window_temperature < 0.1
    # too few questions, or nothing to tell apart: no terms
    assert fit_window_terms(cases[:10], right[:10], temperature=0.9) == QACalibration(0.9)
    assert fit_window_terms(cases, [False] * len(cases), temperature=0.9) == QACalibration(0.9)


def test_save_window_terms_keeps_the_paragraph_calibration(tmp_path):
    paragraph = {"method": CALIBRATION_METHOD, "temperature": 1.04, "ece": 0.03, "questions": 741}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "longformer", "lfcli": {"qa_calibration": paragraph}}))
    save_window_terms(tmp_path, QACalibration(1.04, 0.7, 0.1), "test books")
    saved = json.loads((tmp_path / "config.json").read_text())["lfcli"]["qa_calibration"]
    assert saved == {**paragraph, "window_exponent": 0.7, "window_temperature": 0.1, "window_slope": 0.0,
                     "windows_fitted_on": "test books"}


def test_fit_window_terms_recovers_a_known_slope_term():
    paragraphs = QACalibration(1.0, score_slope=0.6, score_bias=0.5)
    true = QACalibration(1.0, 0.0, 0.0, 0.3, score_slope=0.6, score_bias=0.5)
    cases, right = synthetic_books(true, n=2000, seed=4)
    fitted = fit_window_terms(cases, right, paragraphs)
    assert fitted.window_slope == pytest.approx(0.3, abs=0.12)
    assert (fitted.temperature, fitted.score_slope, fitted.score_bias) == (1.0, 0.6, 0.5)
    # made without it: (near) none found
    cases, right = synthetic_books(paragraphs, n=2000, seed=5)
    assert fit_window_terms(cases, right, paragraphs).window_slope < 0.1


def test_fit_window_terms_keeps_the_paragraphs_rescaling():
    cases, right = synthetic_books(QACalibration(1.0), n=200, seed=3)
    fitted = fit_window_terms(cases, right, QACalibration(0.9, score_slope=0.7, score_bias=0.2))
    assert (fitted.temperature, fitted.score_slope, fitted.score_bias) == (0.9, 0.7, 0.2)


def test_calibrate_on_paragraphs_is_unchanged_by_window_terms():
    # lfcli finetune qa fits the temperature alone; its record has no window terms
    cases, right = synthetic_books(QACalibration(1.0), n=200, seed=2)
    cal = calibrate(cases, right)
    assert cal["method"] == CALIBRATION_METHOD and "window_exponent" not in cal


# -- on a real checkpoint ------------------------------------------------------------------------------
LONG = " ".join(["The committee will meet on Tuesday to discuss the budget and the new hiring policy."] * 30
                + ["It was a bright cold day in April, and the clocks were striking thirteen."])
SHORT = "It was a bright cold day in April, and the clocks were striking thirteen."
QUESTION = "When were the clocks striking thirteen?"



def test_a_checkpoint_with_window_terms_scores_paragraphs_as_before_and_long_documents_lower(qa_folder, tmp_path):
    plain = with_calibration(qa_folder, tmp_path / "plain", {"method": CALIBRATION_METHOD, "temperature": 1.0})
    terms = with_calibration(qa_folder, tmp_path / "terms", {"method": CALIBRATION_METHOD, "temperature": 1.0,
                                                             "window_exponent": 1.0, "window_temperature": 0.0})
    docs = [Document("short", SHORT, fields={"question": QUESTION}), Document("long", LONG, fields={"question": QUESTION})]
    rows = {}
    for name, folder in (("plain", plain), ("terms", terms)):
        pipe = Pipeline("qa", str(folder), dtype="float32", top_k=100)
        rows[name] = {row["id"]: row for row in pipe.run(docs)}
        if name == "terms":
            assert pipe.task.calibration == QACalibration(1.0, 1.0, 0.0) and pipe.task.temperature == 1.0
            windows = len(pipe.task.prepare(1, docs[1]).items)
            assert windows > 1 and len(pipe.task.prepare(0, docs[0]).items) == 1
    short_plain, short_terms = rows["plain"]["short"], rows["terms"]["short"]
    assert short_terms["answers"] == short_plain["answers"]  # one window: exactly as before
    long_plain, long_terms = rows["plain"]["long"], rows["terms"]["long"]
    assert sorted(a["answer"] for a in long_terms["answers"]) == sorted(a["answer"] for a in long_plain["answers"])
    by_answer = {a["answer"]: a["score"] for a in long_plain["answers"]}
    # a larger no-answer mass (windows ** 2 instead of windows): every answer scores lower
    assert all(a["score"] < by_answer[a["answer"]] for a in long_terms["answers"])
