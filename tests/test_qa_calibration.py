"""QA scores a user can trust: `score` is a calibrated probability that the answer is right
(a temperature saved with the model, fitted by `lfcli finetune qa` on its validation
questions), and answers start and end on words, never on punctuation, with their quotes and
brackets balanced. Tiny real checkpoints (tests/checkpoints.py), hand-made logits and offsets."""

from __future__ import annotations

import json
import math
import random
import re

import pytest
import torch

from checkpoints import make_checkpoint
from lfcli import Pipeline
from lfcli.pipelines.io.readers import Document
from lfcli.pipelines.tasks.qa.answers import (
    CALIBRATION_METHOD,
    DEFAULT_TEMPERATURE,
    QACandidates,
    allowed_spans,
    best_spans,
    span_f1,
    span_rules,
)
from lfcli.pipelines.tasks.qa.calibration import auroc, calibrate, expected_calibration_error, fit_temperature

pytestmark = pytest.mark.usefixtures("one_thread")

CONTEXTS = [
    'This Lease is made between Hollis Property Holdings Ltd (the "Landlord") and Brightwater Bakery '
    'Co-operative (the "Tenant"). The term of this Lease is five (5) years.',
    "The court held that the contract was void because the seller had concealed the defect.",
    "Paris is the capital and largest city of France. The committee will meet on Tuesday.\n\n"
    "It was a bright cold day in April, and the clocks were striking thirteen.",
]
QUESTIONS = ["Who is the tenant?", "Why was the contract void?", "When were the clocks striking thirteen?"]


@pytest.fixture(scope="module")
def qa_folder(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("qa"), "LongformerForQuestionAnswering", max_tokens=128,
                           attention_window=16)


def with_calibration(folder, target, calibration):
    """A copy of the checkpoint `folder` whose config.json holds lfcli.qa_calibration."""
    import shutil

    shutil.copytree(folder, target)
    config = json.loads((target / "config.json").read_text())
    config.setdefault("lfcli", {})["qa_calibration"] = calibration
    (target / "config.json").write_text(json.dumps(config))
    return target


def docs():
    return [Document(f"d{k}", text, fields={"question": q}) for k, (text, q) in enumerate(zip(CONTEXTS, QUESTIONS))]


def run(folder, **options):
    return list(Pipeline("qa", str(folder), dtype="float32", **options).run(docs()))


# -- scores on a real checkpoint ---------------------------------------------------------------------
def test_scores_are_probabilities_without_a_saved_calibration(qa_folder):
    pipe = Pipeline("qa", str(qa_folder), dtype="float32", top_k=4)
    assert pipe.task.temperature == DEFAULT_TEMPERATURE  # the checkpoint has no qa_calibration
    for doc, row in zip(docs(), pipe.run(docs())):
        assert "error" not in row, row
        assert doc.text[row["start"]:row["end"]] == row["answer"]
        assert all(0.0 <= a["score"] <= 1.0 for a in row["answers"])
        assert row["score"] == row["answers"][0]["score"]


def test_the_saved_temperature_is_read_and_applied(qa_folder, tmp_path):
    folder = with_calibration(qa_folder, tmp_path / "calibrated", {"method": CALIBRATION_METHOD, "temperature": 3.0})
    pipe = Pipeline("qa", str(folder), dtype="float32", top_k=3)
    assert pipe.task.temperature == 3.0
    for doc, row in zip(docs(), pipe.run(docs())):
        prepared = pipe.task.prepare(0, doc)
        results = pipe._run_one(0, doc)
        ranked = pipe.task.ranked(prepared, results)
        candidates = pipe.task.candidates(results)
        assert [a["score"] for a in row["answers"]] == pytest.approx(candidates.probabilities(ranked, 3.0))
        assert [a["score"] for a in row["answers"]] != pytest.approx(candidates.probabilities(ranked, 1.0))


def test_calibration_never_changes_which_answers_are_listed(qa_folder, tmp_path):
    # the list is sorted by the calibrated score, so the temperature may reorder it
    plain = run(qa_folder, top_k=100)
    for t in (0.2, 5.0):
        folder = with_calibration(qa_folder, tmp_path / f"t{t}", {"method": CALIBRATION_METHOD, "temperature": t})
        for a, b in zip(plain, run(folder, top_k=100)):
            assert sorted(x["answer"] for x in a["answers"]) == sorted(x["answer"] for x in b["answers"])
            assert [x["score"] for x in b["answers"]] == sorted((x["score"] for x in b["answers"]), reverse=True)


def test_top_k_does_not_change_the_best_answer_or_its_score(qa_folder):
    for one, five in zip(run(qa_folder), run(qa_folder, top_k=5)):
        assert (one["start"], one["end"], one["score"]) == (five["start"], five["end"], five["score"])


def test_a_calibration_this_lfcli_cannot_read_falls_back_with_a_note(qa_folder, tmp_path, capsys):
    folder = with_calibration(qa_folder, tmp_path / "odd", {"method": "isotonic", "table": [0.1, 0.9]})
    pipe = Pipeline("qa", str(folder), dtype="float32")
    assert pipe.task.temperature == DEFAULT_TEMPERATURE
    assert "qa_calibration" in capsys.readouterr().err
    assert all(0 <= row["score"] <= 1 for row in pipe.run(docs()))


# -- the softmax over candidates ------------------------------------------------------------------
def test_candidate_probabilities_by_hand():
    # one window: "a" (tokens 0-1, margin 2), its near variant (0-0, margin 1), "b" (5-6, margin 0)
    c = QACandidates(spans=[(0, 1), (0, 0), (5, 6)], margins=[2.0, 1.0, 0.0], windows=1)
    z = math.exp(2) + math.exp(1) + math.exp(0) + 1  # + the window's no-answer, margin 0
    assert span_f1((0, 1), (0, 0)) == pytest.approx(2 / 3) and span_f1((0, 1), (5, 6)) == 0
    a, b = c.probabilities([(0, 1, 2.0), (5, 6, 0.0)])
    assert a == pytest.approx((math.exp(2) + math.exp(1)) / z)  # the answer and its near variant
    assert b == pytest.approx(1 / z)
    t = 2.0
    z2 = math.exp(1) + math.exp(0.5) + math.exp(0) + 2  # two windows: two no-answers
    two = QACandidates(spans=c.spans, margins=c.margins, windows=2)
    assert two.probabilities([(0, 1, 2.0)], t)[0] == pytest.approx((math.exp(1) + math.exp(0.5)) / z2)
    # an answer below the candidates (--top-k past QA_CANDIDATES) still counts itself
    assert c.probabilities([(9, 9, -1.0)])[0] == pytest.approx(math.exp(-1) / z)


def test_fit_temperature_recovers_a_known_temperature():
    rng = random.Random(0)
    true_t = 2.5
    cases, right = [], []
    for _ in range(3000):
        n = rng.randint(2, 8)
        spans = [(4 * k, 4 * k + rng.randint(0, 2)) for k in range(n)]  # apart: no near variants
        margins = sorted((rng.gauss(2.0, 4.0) for _ in range(n)), reverse=True)
        c = QACandidates(spans, margins, windows=rng.randint(1, 3))
        answer = (*spans[0], margins[0])
        cases.append((c, answer))
        right.append(rng.random() < c.probabilities([answer], true_t)[0])
    fitted = fit_temperature(cases, right)
    assert fitted == pytest.approx(true_t, rel=0.1)
    cal = calibrate(cases, right)
    assert cal["method"] == CALIBRATION_METHOD and cal["temperature"] == pytest.approx(fitted, abs=1e-3)
    assert cal["ece"] < 0.05 and cal["questions"] == 3000
    assert calibrate(cases[:10], right[:10]) is None  # too few questions to fit
    assert calibrate(cases, [True] * len(cases)) is None  # nothing wrong to tell apart


def test_the_scores_rescaling_is_monotone_and_off_by_default():
    from lfcli.pipelines.tasks.qa.answers import QACalibration

    plain, scaled = QACalibration(1.3), QACalibration(1.3, score_slope=0.6, score_bias=0.8)
    assert [plain.rescale(p) for p in (0.0, 0.2, 0.9, 1.0)] == [0.0, 0.2, 0.9, 1.0]
    ps = [0.01, 0.2, 0.5, 0.8, 0.99]
    out = [scaled.rescale(p) for p in ps]
    assert out == sorted(out) and all(0 < x < 1 for x in out)
    assert scaled.rescale(0.5) == pytest.approx(1 / (1 + math.exp(-0.8)))  # logit 0: the bias alone
    c = QACandidates(spans=[(0, 1), (5, 6)], margins=[2.0, 0.0], windows=1)
    at_t = c.probabilities([(0, 1, 2.0), (5, 6, 0.0)], 1.3)
    assert c.probabilities([(0, 1, 2.0), (5, 6, 0.0)], scaled) == pytest.approx([scaled.rescale(p) for p in at_t])


def test_calibrate_fits_the_rescaling_where_one_temperature_cannot():
    """Answers right more often than their softmax says in the middle and less at the top (what a
    fully trained model shows): the temperature alone leaves ECE high, the rescaling brings it down."""
    from lfcli.pipelines.tasks.qa.calibration import fit_score_scale

    rng = random.Random(1)
    cases, right = [], []
    for _ in range(4000):
        n = rng.randint(2, 6)
        spans = [(4 * k, 4 * k + 1) for k in range(n)]
        margins = sorted((rng.gauss(1.5, 3.0) for _ in range(n)), reverse=True)
        c = QACandidates(spans, margins, windows=1)
        answer = (*spans[0], margins[0])
        p = c.probabilities([answer], 1.0)[0]
        truth = 1 / (1 + math.exp(-(0.5 * math.log(max(p, 1e-9) / max(1 - p, 1e-9)) + 0.9)))
        cases.append((c, answer))
        right.append(rng.random() < truth)
    cal = calibrate(cases, right)
    assert cal["score_slope"] == pytest.approx(0.5, abs=0.15) and cal["score_bias"] == pytest.approx(0.9, abs=0.3)
    assert cal["ece"] < 0.03 < cal["ece_at_t"]
    assert fit_score_scale([0.5] * 30, [True] * 15 + [False] * 15) == (1.0, 0.0)  # no spread: no rescaling


def test_the_saved_rescaling_is_read_and_a_bad_one_left_out(qa_folder, tmp_path, capsys):
    from lfcli.pipelines.tasks.qa.answers import QACalibration

    saved = {"method": CALIBRATION_METHOD, "temperature": 1.2, "score_slope": 0.6, "score_bias": 0.8}
    pipe = Pipeline("qa", str(with_calibration(qa_folder, tmp_path / "scaled", saved)), dtype="float32")
    assert pipe.task.calibration == QACalibration(1.2, score_slope=0.6, score_bias=0.8)
    bad = Pipeline("qa", str(with_calibration(qa_folder, tmp_path / "bad", {**saved, "score_slope": -1})), dtype="float32")
    assert bad.task.calibration == QACalibration(1.2) and "score_slope" in capsys.readouterr().err
    rows = list(pipe.run(docs()))
    assert all(0 < row["score"] < 1 for row in rows)


# -- the measures --------------------------------------------------------------------------------------
def test_expected_calibration_error_by_hand():
    # bin [0.1, 0.2): scores 0.1, 0.1, half right (|0.5 - 0.1| over 2 of 4); bin [0.9, 1]: 0.9 and 1.0, both right
    assert expected_calibration_error([0.1, 0.1, 0.9, 1.0], [False, True, True, True]) == pytest.approx(
        0.4 * 2 / 4 + 0.05 * 2 / 4)
    assert expected_calibration_error([0.75] * 4, [True, True, True, False]) == pytest.approx(0.0)
    assert expected_calibration_error([0.0, 1.0], [False, True]) == 0.0
    assert expected_calibration_error([0.95, 0.95], [False, False]) == pytest.approx(0.95)


def test_auroc_by_hand():
    assert auroc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert auroc([0.5, 0.5], [True, False]) == pytest.approx(0.5)  # a tie counts half
    assert auroc([0.9, 0.1], [True, False]) == 1.0 and auroc([0.1, 0.9], [True, False]) == 0.0
    assert auroc([0.2, 0.3], [True, True]) is None
    rng = random.Random(1)
    scores = [round(rng.random(), 1) for _ in range(200)]  # many ties
    right = [rng.random() < s for s in scores]
    pairs = [(p, q) for p, y in zip(scores, right) if y for q, z in zip(scores, right) if not z]
    assert auroc(scores, right) == pytest.approx(sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in pairs) / len(pairs))


# -- where answers may start and end --------------------------------------------------------------
def tokens(text: str) -> list[tuple[int, int]]:
    """Offsets as a BERT pre-tokenizer makes them: words, and each punctuation mark alone."""
    return [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]


def spans_of(text, offsets, ok):
    n = len(offsets)
    return {text[offsets[i][0]:offsets[i + d][1]] for i in range(n) for d in range(ok.shape[1]) if i + d < n and ok[i, d]}


def test_answers_start_and_end_on_words_not_punctuation():
    text = 'Ltd (the "Landlord") and Co-operative, 4.2 million; 50% of Elizabeth\'s rent.'
    offsets = tokens(text)
    rules = span_rules(text, offsets)
    words = [text[a:z] for a, z in offsets]
    starts = {w for w, s in zip(words, rules.starts) if s}
    ends = {w for w, e in zip(words, rules.ends) if e}
    assert starts == {"Ltd", "the", "Landlord", "and", "Co", "4", "million", "50", "of", "Elizabeth", "rent"}
    assert ends == {"Ltd", "the", "Landlord", "and", "operative", "2", "million", "%", "Elizabeth", "s", "of", "rent"}
    spans = spans_of(text, offsets, allowed_spans(rules, len(offsets), 30))
    for good in ("Landlord", 'Ltd (the "Landlord") and Co-operative', "Co-operative", "4.2 million", "50%",
                 "Elizabeth", "Elizabeth's", "Elizabeth's rent"):
        assert good in spans, good
    for bad in ('the "Landlord', 'Landlord")', '"Landlord"', 'the "Landlord"', 'Ltd (the "Landlord")', "(the",
                "operative", "Co-", "4.", "2 million",
                "million;", "Elizabeth'", "rent.", 'Landlord") and Co', "50"):
        assert bad not in spans, bad


def test_brackets_must_close_in_order_and_paragraphs_are_not_crossed():
    text = "a) (b and [c] d\n\ne f"
    offsets = tokens(text)
    spans = spans_of(text, offsets, allowed_spans(span_rules(text, offsets), len(offsets), 30))
    assert "[c]" not in spans and "b and [c] d" in spans and "and [c] d" in spans
    assert "a) (b" not in spans  # as many openers as closers, but the closer comes first
    assert "d\n\ne" not in spans and "e f" in spans


def test_best_spans_skips_the_spans_the_rules_forbid():
    text = 'between Hollis Ltd (the "Landlord") and Brightwater Bakery'
    offsets = tokens(text)
    words = [text[a:z] for a, z in offsets]
    start, end = torch.zeros(len(words)), torch.zeros(len(words))
    start[words.index("the")], end[words.index("Landlord")] = 5.0, 5.0  # the model wants `the "Landlord`
    start[words.index("Brightwater")], end[words.index("Bakery")] = 4.0, 4.0
    plain = best_spans(start, end, 0.0, 30, 1)
    assert text[offsets[plain[0][1]][0]:offsets[plain[0][2]][1]] == 'the "Landlord'
    ruled = best_spans(start, end, 0.0, 30, 3, span_rules(text, offsets))
    got = [text[offsets[i][0]:offsets[j][1]] for _, i, j in ruled]
    assert got[0] == "Brightwater Bakery" and 'the "Landlord' not in got
    # a window the rules allow nothing in (punctuation only) still proposes spans
    dots = "... !"
    assert best_spans(torch.zeros(4), torch.zeros(4), 0.0, 30, 1, span_rules(dots, tokens(dots)))


def test_answers_of_a_real_checkpoint_follow_the_rules(qa_folder):
    for doc, row in zip(docs(), run(qa_folder, top_k=10)):
        for a in row["answers"]:
            text = a["answer"]
            assert text == text.strip() and text[0].isalnum() and (text[-1].isalnum() or text[-1] == "%"), text
            assert text.count('"') % 2 == 0 and text.count("(") == text.count(")") and "\n\n" not in text, text


# -- lfcli finetune qa fits and saves the temperature ---------------------------------------------------
def test_finetune_qa_fits_the_temperature_and_saves_it(tmp_path):
    from lfcli.pipelines.train.finetune import finetune
    from lfcli.pipelines.train.loop import TrainConfig

    base = make_checkpoint(tmp_path / "base", "LongformerModel", max_tokens=128, attention_window=16)

    def squad(path, questions):
        data = [{"title": f"a{k}", "paragraphs": [{"context": c, "qas": [
            {"id": f"{path.stem}{k}", "question": q, "answers": [{"text": a, "answer_start": c.index(a)}]}]}]}
            for k, (c, q, a) in enumerate(questions)]
        path.write_text(json.dumps({"data": data}), encoding="utf-8")
        return path

    train = squad(tmp_path / "train.json", [(CONTEXTS[1], QUESTIONS[1], "the seller had concealed the defect")] * 4)
    # one-word contexts: every answer is right; long ones: mostly wrong. Both kinds, >= 20 questions.
    val = [(w, "What is it?", w) for w in ("Paris", "France", "April", "Tuesday", "Netherfield", "Elizabeth")] * 2
    val += [(CONTEXTS[k % 3], QUESTIONS[k % 3], "the") for k in range(12)]
    valid = squad(tmp_path / "val.json", [(c, q, a) for c, q, a in val])
    out = tmp_path / "qa"
    finetune("qa", [str(train)], str(out), model=str(base), validation=[str(valid)], lora_rank=2, max_length=64,
             train_config=TrainConfig(max_steps=2, batch_tokens=128, eval_every=1, patience=None))
    saved = json.loads((out / "config.json").read_text())["lfcli"]["qa_calibration"]
    assert saved["method"] == CALIBRATION_METHOD and saved["questions"] == 24
    assert 0 < saved["temperature"] and 0 <= saved["ece"] <= 1 and 0 <= saved["auroc"] <= 1
    evals = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [e for e in evals if e["event"] == "eval"]
    assert evals and all({"ece", "auroc", "temperature"} <= set(e) for e in evals)
    best = [e for e in evals if e["best"]][-1]
    assert best["temperature"] == saved["temperature"]  # the saved model's own fit
    pipe = Pipeline("qa", str(out), dtype="float32")
    assert pipe.task.temperature == saved["temperature"]
