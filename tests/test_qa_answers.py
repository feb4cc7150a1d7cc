"""`lfcli qa --top-k` lists answers a person can use: sorted by the score shown, distinct (a span
nested in or overlapping a better one, or the same text again, is not another answer), and
never a heading, title or other non-sentence line unless the question asks for one. Small
documents made here; hand-made logits through the real QATask, a tiny real checkpoint, and
the bundled QA model where it can be built."""

from __future__ import annotations

import pytest
import torch

from checkpoints import make_checkpoint
from lfcli import Pipeline
from lfcli.models.bundled import DEFAULT_MODEL, bundled_available
from lfcli.pipelines.eval.metrics import normalize_answer
from lfcli.pipelines.tasks.qa.answers import (
    QA_ANSWER_POOL,
    QACandidates,
    allowed_spans,
    asks_for_heading,
    best_spans,
    distinct_answers,
    heading_lines,
    answer_text,
    span_rules,
)
from lfcli.pipelines.io.readers import Document
from test_qa_calibration import spans_of, tokens

pytestmark = pytest.mark.usefixtures("one_thread")

QA_MODEL = "minilm-l6-long-squad"


def check_usable(text: str, answers: list[dict], question: str = "") -> None:
    """The --top-k list a person can use: best score first, no two answers overlapping, no
    text twice, none in (or across) a heading unless the question asks for one."""
    scores = [a["score"] for a in answers]
    assert scores == sorted(scores, reverse=True), scores
    spans = sorted((a["start"], a["end"]) for a in answers)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:])), spans
    texts = [normalize_answer(a["answer"]) or a["answer"].lower() for a in answers]
    assert len(set(texts)) == len(texts), texts
    for a in answers:
        span = text[a["start"]:a["end"]]
        assert span == span.strip() and " ".join(span.split()) == a["answer"]
        if not asks_for_heading(question):
            assert not any(a["start"] < end and start < a["end"] for start, end in heading_lines(text)), a


# -- which lines are headings ---------------------------------------------------------------------
DOCUMENT = """ALICE'S ADVENTURES IN WONDERLAND

CHAPTER XI.
Who Stole the Tarts?


The King and Queen of Hearts were seated on their throne when they
arrived, with a great crowd assembled about them. The Knave Of Hearts
Was Standing Before Them

Chapter 3. The Pool of Tears

"Alice!"

--Off With Her Head!

Diagnosis: Pneumonia

A report on the trial of the Knave

Yes, said Alice.

## 2. Methods
1. PREMISES. The Landlord lets the unit at 14 Canal Row to the Tenant, who
pays the rent.
THE END"""


def test_heading_lines_of_a_made_up_document():
    got = [DOCUMENT[a:b] for a, b in heading_lines(DOCUMENT)]
    assert got == [
        "ALICE'S ADVENTURES IN WONDERLAND",  # in capitals, between blank lines
        "CHAPTER XI.",  # numbered
        "Who Stole the Tarts?",  # a title under a heading
        "Chapter 3. The Pool of Tears",
        "A report on the trial of the Knave",  # a paragraph of its own that no sentence ends
        "## 2. Methods",
    ]
    # never a heading: the lines of a hard-wrapped paragraph (though one is title-case), speech,
    # a "label: value" line, a sentence, a numbered clause that goes on, capitals under text
    for line in ("Was Standing Before Them", '"Alice!"', "--Off With Her Head!", "Diagnosis: Pneumonia",
                 "Yes, said Alice.", "1. PREMISES.", "THE END"):
        assert not any(line in g for g in got), line
    assert heading_lines("") == [] and heading_lines("It rained.\n\nIt rained again.") == []


def test_questions_that_ask_for_a_heading():
    for q in ("What is the title of chapter 3?", "Which section covers rent?", "What is the book's heading?",
              "What is chapter XI called?"):
        assert asks_for_heading(q), q
    for q in ("Who stole the tarts?", "What was the Caterpillar smoking?", "Where did Alice go?"):
        assert not asks_for_heading(q), q


def test_answers_never_start_end_or_cross_a_heading_unless_asked():
    text = "CHAPTER XI.\nWho Stole the Tarts?\n\nThe Knave of Hearts stole them.\nChapter 12\nAlice spoke."
    offsets = tokens(text)
    ok = allowed_spans(span_rules(text, offsets), len(offsets), 30)
    spans = spans_of(text, offsets, ok)
    assert "Knave of Hearts" in spans and "Alice" in spans and "Knave of Hearts stole them" in spans
    for bad in ("CHAPTER XI", "XI", "Tarts", "Who Stole the Tarts", "Chapter 12", "12", "them.\nChapter 12\nAlice",
                "12\nAlice"):
        assert bad not in spans, bad
    asked = spans_of(text, offsets, allowed_spans(span_rules(text, offsets, headings=True), len(offsets), 30))
    assert {"CHAPTER XI", "Tarts", "Who Stole the Tarts", "Chapter 12"} <= asked


# -- distinct answers, best score first -------------------------------------------------------------
def test_distinct_answers_by_hand():
    # tokens:     0 a, 1 long, 2 hookah | 5 Knave, 6 of, 7 Hearts | 9 long, 10 hookah
    words = {0: "a", 1: "long", 2: "hookah", 5: "Knave", 6: "of", 7: "Hearts", 9: "long", 10: "hookah"}
    candidates = QACandidates(spans=[(5, 7), (1, 2), (0, 2), (2, 2), (9, 10), (6, 7), (0, 0)],
                              margins=[3.0, 2.9, 2.8, 2.7, 2.5, 1.0, 0.5], windows=1)
    spans = [(*s, m) for s, m in zip(candidates.spans, candidates.margins)]

    def text_of(span):
        return " ".join(words[t] for t in range(span[0], span[1] + 1))

    got = distinct_answers(spans, candidates, 1.0, text_of, k=5)
    # "long hookah" (2.9) stands for "a long hookah" and "hookah", whose belief it shares, so it
    # scores above "Knave of Hearts" though its margin is lower; "long hookah" again (tokens
    # 9-10) is the same text; "of Hearts" is nested in "Knave of Hearts"; "a" alone is no answer
    assert [text_of(s) for s, _ in got] == ["long hookah", "Knave of Hearts"]
    assert [s for s, _ in got] == [(1, 2, 2.9), (5, 7, 3.0)]
    scores = [p for _, p in got]
    assert scores == candidates.probabilities([s for s, _ in got]) and scores[0] > scores[1]
    assert distinct_answers(spans, candidates, 1.0, text_of, k=1) == got[:1]
    # the temperature may reorder the answers, never change which they are
    hot = distinct_answers(spans, candidates, 50.0, text_of, k=5)
    assert sorted(text_of(s) for s, _ in hot) == sorted(text_of(s) for s, _ in got)
    assert [p for _, p in hot] == sorted((p for _, p in hot), reverse=True)
    # with nothing but "a" to say, the answer is "a"
    only = QACandidates(spans=[(0, 0)], margins=[0.5], windows=1)
    assert [s for s, _ in distinct_answers([(0, 0, 0.5)], only, 1.0, text_of, k=3)] == [(0, 0, 0.5)]


# -- through QATask: hand-made logits on a made-up document -------------------------------------------
@pytest.fixture(scope="module")
def qa_folder(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("qa"), "LongformerForQuestionAnswering", max_tokens=128,
                           attention_window=16)


NOVEL = ("NETHERFIELD PARK\n\n"
         "Chapter 1. Netherfield\n\n"
         "Elizabeth walked to Netherfield alone, and Jane stayed home.\n\n"
         "Jane stayed at Netherfield for a week.\n\n"
         "The committee will meet on Tuesday.")


def planted_answers(folder, question: str, top_k: int = 5) -> list[dict]:
    """The answers QATask gives when the model's start and end logits point at "Netherfield":
    highest in the title, then the chapter heading, then the two sentences (and "walked" may
    start an answer, "alone" end one: variants of the first sentence's)."""
    pipe = Pipeline("qa", str(folder), dtype="float32", top_k=top_k)
    doc = Document("novel", NOVEL, fields={"question": question})
    prepared = pipe.task.prepare(0, doc)
    places = [NOVEL.index("NETHERFIELD"), NOVEL.index("Netherfield"), NOVEL.index("Netherfield alone"),
              NOVEL.index("Netherfield for")]
    start_at = {a: s for a, s in zip(places, (10.0, 9.0, 7.0, 6.0))} | {NOVEL.index("walked"): 6.5}
    end_at = {a: s for a, s in zip(places, (10.0, 9.0, 7.0, 6.0))} | {NOVEL.index("alone"): 6.8}
    results = []
    for item in prepared.items:
        s0, s1 = item.window.span
        first = [prepared.encoded.offsets[t][0] for t in range(s0, s1)]
        start = torch.tensor([start_at.get(a, 0.0) for a in first])
        end = torch.tensor([end_at.get(a, 0.0) for a in first])
        spans = best_spans(start, end, 0.0, 30, QA_ANSWER_POOL, item.extra["span_rules"])  # as QATask.forward
        results.append([(margin, s0 + i, s0 + j) for margin, i, j in spans])
    return pipe.task.answers(doc, prepared, results)


def test_no_heading_no_variant_and_no_text_twice(qa_folder):
    question = "Where did Elizabeth walk?"
    answers = planted_answers(qa_folder, question)
    check_usable(NOVEL, answers, question)
    best = answers[0]
    assert (best["answer"], best["start"]) == ("Netherfield", NOVEL.index("Netherfield alone"))
    assert [a["answer"] for a in answers].count("Netherfield") == 1  # the second sentence's is the same text
    # nor its variants ("walked to Netherfield", "Netherfield alone") or their leftovers ("walked to")
    assert not any("walked" in a["answer"] or "alone" in a["answer"] for a in answers), answers
    assert len(answers) >= 3


def test_a_question_that_asks_for_a_title_may_get_one(qa_folder):
    question = "What is the title of the book?"
    answers = planted_answers(qa_folder, question)
    check_usable(NOVEL, answers, question)
    assert (answers[0]["answer"], answers[0]["start"]) == ("NETHERFIELD", 0)


# -- a real checkpoint: the list holds whatever the model ------------------------------------------------
STORY = ("THE TRIAL\n\n"
         "CHAPTER XI.\nWho Stole the Tarts?\n\n"
         "The King and Queen of Hearts were seated on their throne when they arrived, with a great crowd "
         "about them. The Knave of Hearts was standing before them, in chains. The White Rabbit read the "
         "accusation: the Knave of Hearts had stolen the tarts.\n\n"
         "CHAPTER V.\nAdvice from a Caterpillar\n\n"
         "The Caterpillar sat on the top of a mushroom, quietly smoking a long hookah.")
QUESTIONS = ["Who stole the tarts?", "What was the Caterpillar smoking?", "Who was seated on the throne?"]


def test_a_tiny_checkpoints_answers_are_usable(qa_folder):
    docs = [Document(f"q{k}", STORY, fields={"question": q}) for k, q in enumerate(QUESTIONS)]
    ten = list(Pipeline("qa", str(qa_folder), dtype="float32", top_k=10).run(docs))
    one = list(Pipeline("qa", str(qa_folder), dtype="float32").run(docs))
    for row, best, q in zip(ten, one, QUESTIONS):
        assert "error" not in row, row
        check_usable(STORY, row["answers"], q)
        assert {k: row[k] for k in ("answer", "start", "end", "score")} == row["answers"][0]
        assert (best["start"], best["end"], best["score"]) == (row["start"], row["end"], row["score"])


def test_the_bundled_models_answers_are_usable():
    why = bundled_available(DEFAULT_MODEL)  # the QA model's base
    if why is not None:
        pytest.skip(f"the bundled QA model's base cannot be built here: {why}")
    docs = [Document(f"q{k}", STORY, fields={"question": q}) for k, q in enumerate(QUESTIONS)]
    rows = list(Pipeline("qa", QA_MODEL, dtype="float32", top_k=5).run(docs))
    for row, q in zip(rows, QUESTIONS):
        check_usable(STORY, row["answers"], q)
    assert "Knave of Hearts" in rows[0]["answer"] and "hookah" in rows[1]["answer"]


def test_a_double_hyphen_separates_words_and_an_answer_reads_on_one_line():
    """Plain-text books join words with "--" ("sir--Selden"): an answer may start or end at
    either word, as at an em dash. An answer's text has each run of white space as one space
    ("Basil\nHallward"), its start and end still pointing at the span in the source."""
    text = "It was the convict, sir--Selden, the Notting Hill murderer. Basil\nHallward painted him."
    offsets = tokens(text)
    spans = spans_of(text, offsets, allowed_spans(span_rules(text, offsets), len(offsets), 30))
    assert "Selden" in spans and "sir" in spans and "Notting Hill murderer" in spans
    assert not any(s.startswith("-") or s.endswith("-") for s in spans)
    start = text.index("Basil")
    end = start + len("Basil\nHallward")
    assert answer_text(text, start, end) == "Basil Hallward" and text[start:end] == "Basil\nHallward"
    assert answer_text("a  \n\n b\tc", 0, 10) == "a b c"
