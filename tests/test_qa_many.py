"""Many questions over one document, and retrieve-then-read (pipelines/tasks/qa/questions.py,
retrieve.py): the rows a user gets, the windows each question reads, the passages found once a
text, --cache, --resume, and bad input. Real (tiny, random-weight) checkpoints, no mocks."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
from typer.testing import CliRunner

from checkpoints import task_checkpoints
from lfcli.cli import app
from lfcli.pipelines.infer.runner import Pipeline
from lfcli.pipelines.io.readers import Document
from lfcli.pipelines.infer.tokenize import plan_windows
from lfcli.pipelines.tasks.qa.retrieve import TOP_WINDOWS, fused_ranking, passage_spans, plan_windows_of, window_ranks

runner = CliRunner()

LONG = " ".join(f"Chapter {k}. The court held that the contract was void, and the tenant left the house." for k in range(120))
NEEDLE = "The passkey is 7351. Remember it."


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    return task_checkpoints(tmp_path_factory.mktemp("ckpt"))


def rows_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def qa(ckpts, *args):
    return runner.invoke(app, ["qa", *map(str, args), "-m", str(ckpts["qa"]), "--retriever", str(ckpts["embed"]),
                               "--max-length", "64", "--quiet"])


# -- the parts ---------------------------------------------------------------------------------
def test_passages_cover_the_text_side_by_side():
    assert passage_spans(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert passage_spans(3, 4) == [(0, 3)]


def test_each_best_passage_picks_the_whole_reads_window_holding_most_of_it_once():
    whole = plan_windows(100, 30, 10)  # (0, 30), (20, 50), (40, 70), (60, 90), (80, 100)
    passages = passage_spans(100, 10)
    # passage 3 (30-40) lies in (20, 50) alone; passage 2 (20-30) in (0, 30) and (20, 50): the earlier;
    # passage 4 (40-50) in (20, 50) and (40, 70): the earlier, read already; passage 9 in (80, 100) alone
    assert plan_windows_of([3, 2, 4, 9], passages, whole, k=3) == [(0, 30), (20, 50), (80, 100)]
    assert plan_windows_of([3, 4, 9, 2], passages, whole, k=2) == [(20, 50), (80, 100)]
    # a passage across two windows goes to the one that holds more of it
    assert plan_windows_of([0], [(25, 33)], whole, k=1) == [(20, 50)]


def test_each_window_read_has_the_rank_of_the_best_passage_that_chose_it():
    whole = plan_windows(100, 30, 10)
    passages = passage_spans(100, 10)
    # passage 3 chose (20, 50) first, passage 2 chose (0, 30), passage 4 chose (20, 50) again
    assert window_ranks([3, 2, 4, 9], passages, whole, k=3) == {(20, 50): 0, (0, 30): 1, (80, 100): 2}
    assert sorted(window_ranks([3, 2, 4, 9], passages, whole, k=3)) == plan_windows_of([3, 2, 4, 9], passages, whole, k=3)


def test_the_rank_prior_lowers_the_margins_of_lower_ranked_windows_only():
    from lfcli.pipelines.tasks.qa.answers import QACalibration

    prior = QACalibration(rank_weight=0.5).rank_prior
    assert prior(None) == prior(0) == 0.0  # a whole read, and the best passage's window
    assert prior(3) == pytest.approx(-0.5 * math.log(4)) and prior(7) < prior(3) < prior(1) < 0
    assert QACalibration().rank_prior(5) == 0.0  # no weight saved: ranks change nothing


def test_the_saved_rank_weight_is_read_and_a_bad_one_left_out(capsys):
    from types import SimpleNamespace

    from lfcli.pipelines.tasks.qa.answers import qa_calibration

    def saved(**block):
        return SimpleNamespace(extra={"lfcli": {"qa_calibration": {"method": "candidate-softmax", "temperature": 1.1, **block}}})
    assert qa_calibration(saved(rank_weight=0.75)).rank_weight == 0.75
    assert qa_calibration(saved()).rank_weight == 0.0
    assert qa_calibration(saved(rank_weight=-1)).rank_weight == 0.0
    assert "rank_weight -1" in capsys.readouterr().err


def test_bm25_matches_a_words_other_forms():
    """Stemmed: "married" in a question finds "marries" in a passage, "horses" finds "horse"
    (unstemmed, neither question has a word the passages hold: no BM25 scores at all)."""
    from lfcli.pipelines.tasks.qa.retrieve import _bm25_index, bm25_scores

    index = _bm25_index(["The widow marries in spring.", "A horse ran to the mill.", "Rain fell all day."])
    scores = bm25_scores(index, "Who was married?")
    assert scores is not None and scores[0] > max(scores[1], scores[2])
    scores = bm25_scores(index, "Where are the horses?")
    assert scores is not None and scores[1] > max(scores[0], scores[2])


def test_fusion_puts_a_passage_both_rankings_like_first():
    dense = torch.tensor([0.9, 0.1, 0.8, 0.2, 0.3])
    assert fused_ranking(dense, None) == [0, 2, 4, 3, 1]
    # equal weights: second in both beats first in one and last in the other
    assert fused_ranking(dense, [0.0, 5.0, 4.0, 1.0, 2.0], lexical_weight=1.0)[0] == 2
    # lfcli's weights (BM25 three times): BM25's first wins
    assert fused_ranking(dense, [0.0, 5.0, 4.0, 1.0, 2.0])[0] == 1


# -- retrieve and the whole read held together ------------------------------------------------------
def test_a_one_window_document_gets_the_same_answer_either_way(ckpts):
    doc = Document("a", "The court held that the contract was void because the seller had concealed the defect.")
    rows = {read: list(Pipeline("qa", ckpts["qa"], question="Why was the contract void?", read=read,
                                retriever=ckpts["embed"]).run([doc])) for read in ("retrieve", "all")}
    assert rows["retrieve"] == rows["all"] and "error" not in rows["all"][0]


def test_a_document_within_k_windows_reads_every_window_either_way(ckpts):
    text = " ".join(LONG.split()[:120])  # a few windows of 64 tokens, at most k
    pipes = {read: Pipeline("qa", ckpts["qa"], question="Who left?", read=read, retriever=ckpts["embed"], max_length=64)
             for read in ("retrieve", "all")}
    rows = {read: list(p.run([Document("a", text)])) for read, p in pipes.items()}
    assert rows["retrieve"] == rows["all"]
    assert TOP_WINDOWS >= pipes["retrieve"].stats.windows == pipes["all"].stats.windows > 1


def test_retrieval_reads_a_subset_of_the_whole_reads_windows_and_their_candidates(ckpts):
    """Each window read proposes what it proposes in the whole read (fp32: the same logits), so
    every candidate of the retrieved read is a whole-read candidate at no higher margin, at the
    same margin where its window is read; the document's window count is the whole read's."""
    from lfcli.pipelines.tasks.qa.train import QARecord, predict_cases

    words = LONG.split()
    text = " ".join(words[: len(words) // 2] + NEEDLE.split() + words[len(words) // 2:])
    record = QARecord("a", text, "What is the passkey?", [])
    cases = {}
    for read in ("retrieve", "all"):
        # one window a batch in both reads: each window's logits are computed alike, so no near tie flips
        pipe = Pipeline("qa", ckpts["qa"], read=read, retriever=ckpts["embed"], max_length=64, dtype="fp32", batch_size=1)
        with torch.inference_mode():
            cases[read] = predict_cases(pipe.model, pipe.task, [record], pipe.model.config.pad_token_id)["a"][1]
    part, whole = cases["retrieve"], cases["all"]
    assert part.windows == whole.windows > 3 * TOP_WINDOWS
    margin = dict(zip(map(tuple, whole.spans), whole.margins))
    assert part.spans and all(tuple(s) in margin for s in part.spans)
    assert all(m <= margin[tuple(s)] + 1e-4 for s, m in zip(part.spans, part.margins))
    assert sum(abs(m - margin[tuple(s)]) < 1e-4 for s, m in zip(part.spans, part.margins)) >= len(part.spans) // 2


def test_retrieval_reads_k_windows_of_a_long_document_and_finds_the_needle(ckpts):
    words = LONG.split()
    text = " ".join(words[: len(words) // 2] + NEEDLE.split() + words[len(words) // 2:])
    pipes = {read: Pipeline("qa", ckpts["qa"], question="What is the passkey?", read=read, retriever=ckpts["embed"],
                            max_length=64) for read in ("retrieve", "all")}
    rows = {read: list(p.run([Document("a", text)]))[0] for read, p in pipes.items()}
    assert pipes["all"].stats.windows > 3 * TOP_WINDOWS
    assert pipes["retrieve"].stats.windows == TOP_WINDOWS
    # the words "passkey" only the needle's passage holds: BM25 ranks it first, so a window reads it
    task = pipes["retrieve"].task
    encoded = task.encode(text)
    budget = task.tok.content_budget(len(task.tok.encode("What is the passkey?").ids))
    whole = plan_windows(len(encoded.ids), budget, task.overlap(budget))
    spans = sorted(task.retriever.ranked_windows(text, encoded, "What is the passkey?", whole))
    assert set(spans) <= set(whole) and len(spans) == TOP_WINDOWS
    read = [text[encoded.offsets[a][0]:encoded.offsets[b - 1][1]] for a, b in spans]
    assert any("7351" in w for w in read)
    assert 0.0 <= rows["retrieve"]["score"] <= 1.0


def test_a_rank_weight_leaves_the_best_passages_window_as_it_is_and_lowers_the_others(ckpts):
    """With a rank weight, each window read proposes the same spans, its margins lowered by
    r ln(1 + its rank): the best passage's window (rank 0) not at all."""
    from lfcli.pipelines.tasks.qa.train import QARecord, predict_cases

    words = LONG.split()
    text = " ".join(words[: len(words) // 2] + NEEDLE.split() + words[len(words) // 2:])
    record = QARecord("a", text, "What is the passkey?", [])
    pipe = Pipeline("qa", ckpts["qa"], read="retrieve", retriever=ckpts["embed"], max_length=64, dtype="fp32", batch_size=1)
    prepared = pipe.task.prepare(0, Document("a", text, fields={"question": record.question}))
    ranks = sorted(item.extra["rank"] for item in prepared.items)
    assert ranks == list(range(TOP_WINDOWS))
    cases = {}
    for weight in (0.0, 2.0):
        pipe.task.calibration = replace(pipe.task.calibration, rank_weight=weight)
        with torch.inference_mode():
            cases[weight] = predict_cases(pipe.model, pipe.task, [record], pipe.model.config.pad_token_id)["a"][1]
    plain = dict(zip(map(tuple, cases[0.0].spans), cases[0.0].margins))
    weighted = dict(zip(map(tuple, cases[2.0].spans), cases[2.0].margins))
    shared = set(plain) & set(weighted)
    assert shared and all(weighted[s] <= plain[s] + 1e-4 for s in shared)
    assert any(weighted[s] < plain[s] - 1.0 for s in shared)  # some window below rank 0 lost 2 ln(1 + rank)


# -- many questions ---------------------------------------------------------------------------------
def test_several_questions_give_a_row_per_document_and_question_in_order(ckpts, tmp_path):
    (tmp_path / "a.txt").write_text(LONG)
    (tmp_path / "b.txt").write_text("The court held that the contract was void.")
    r = qa(ckpts, tmp_path, "-q", "Who left?", "-q", "What was void?")
    assert r.exit_code == 0, r.output
    rows = rows_of(r.stdout)
    assert [(x["id"], x["question_id"], x["question"]) for x in rows] == [
        ("a.txt", "q1", "Who left?"), ("a.txt", "q2", "What was void?"),
        ("b.txt", "q1", "Who left?"), ("b.txt", "q2", "What was void?")]
    one = rows_of(qa(ckpts, tmp_path / "b.txt", "-q", "What was void?").stdout)
    assert "question_id" not in one[0] and one[0]["question"] == rows[3]["question"]  # one -q: rows as ever
    # (answers are not compared across jobs: other batches, and in bf16 a near tie may flip)


def test_a_questions_file_of_lines_or_jsonl(ckpts, tmp_path):
    doc = tmp_path / "a.txt"
    doc.write_text("The court held that the contract was void.")
    (tmp_path / "q.txt").write_text("Who held it?\n\nWhat was void?\n")
    (tmp_path / "q.jsonl").write_text('{"id": "x7", "question": "Who held it?"}\n{"question": "What was void?"}\n')
    lines = rows_of(qa(ckpts, doc, "--questions", tmp_path / "q.txt").stdout)
    assert [(x["question_id"], x["question"]) for x in lines] == [("q1", "Who held it?"), ("q2", "What was void?")]
    records = rows_of(qa(ckpts, doc, "-q", "Where?", "--questions", tmp_path / "q.jsonl").stdout)
    assert [x["question_id"] for x in records] == ["q1", "x7", "q3"]
    assert [x["question"] for x in records[1:]] == [x["question"] for x in lines]


@pytest.mark.parametrize("content, code, words", [
    (None, 1, "cannot read the questions file"),
    ("\n\n", 1, "holds no question"),
    ('{"id": "1", "question": "Who?"}\n{"id": "1", "question": "What?"}\n', 1, "given twice"),
    ('{"id": "1", "question": ""}\n', 1, "no 'question'"),
    ('{"id": "1", "question": "Who?"}\nnot json\n', 1, "line 2 is not a JSON object"),
])
def test_a_bad_questions_file_is_one_line_and_exit_1(ckpts, tmp_path, content, code, words):
    doc = tmp_path / "a.txt"
    doc.write_text("The court held that the contract was void.")
    path = tmp_path / "q.txt"
    if content is not None:
        path.write_text(content)
    r = qa(ckpts, doc, "--questions", path)
    assert r.exit_code == code, r.output
    assert words in r.output and "Traceback" not in r.output and r.stdout.strip() == ""


def test_an_empty_question_is_usage(ckpts, tmp_path):
    doc = tmp_path / "a.txt"
    doc.write_text("The court held that the contract was void.")
    for args in (("-q", ""), ("-q", "Who?", "-q", "  ")):
        r = qa(ckpts, doc, *args)
        assert r.exit_code == 2 and "--question is empty" in r.output, r.output


def test_resume_finishes_the_questions_a_killed_job_left(ckpts, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(LONG)
    (docs / "b.txt").write_text("The court held that the contract was void.")
    out = tmp_path / "out.jsonl"
    args = (docs, "-q", "Who left?", "-q", "What was void?", "-q", "Where?", "-o", out)
    assert qa(ckpts, *args).exit_code == 0
    full = out.read_text().splitlines()
    out.write_text("\n".join(full[:4]) + "\n" + full[4][:20])  # killed in the middle of the fifth row
    r = qa(ckpts, *args, "--resume")
    assert r.exit_code == 0, r.output
    resumed = out.read_text().splitlines()
    assert resumed[:4] == full[:4]  # the rows written before the kill are kept as they were
    keys = [(json.loads(x)["id"], json.loads(x)["question_id"]) for x in resumed]
    assert keys == [(json.loads(x)["id"], json.loads(x)["question_id"]) for x in full]  # each once, in order


def test_a_text_is_embedded_once_a_job_and_once_with_a_cache(ckpts, tmp_path):
    text = LONG
    docs = [Document("a", text, fields={"question": "Who left?"}), Document("b", text, fields={"question": "What?"})]
    pipe = Pipeline("qa", ckpts["qa"], read="retrieve", retriever=ckpts["embed"], max_length=64, cache=str(tmp_path / "c"))
    first = list(pipe.run(docs))
    assert pipe.task.retriever.texts_embedded == 1 and len(list((tmp_path / "c").iterdir())) == 1
    again = Pipeline("qa", ckpts["qa"], read="retrieve", retriever=ckpts["embed"], max_length=64, cache=str(tmp_path / "c"))
    assert list(again.run(docs)) == first
    assert again.task.retriever.texts_embedded == 0  # read from the cache folder


def test_read_and_retriever_are_checked_before_anything_runs(ckpts, tmp_path):
    doc = tmp_path / "a.txt"
    doc.write_text("The court held.")
    r = runner.invoke(app, ["qa", str(doc), "-q", "Who?", "-m", str(ckpts["qa"]), "--read", "some"])
    assert r.exit_code == 2 and "--read 'some'" in r.output
    r = runner.invoke(app, ["qa", str(doc), "-q", "Who?", "-m", str(ckpts["qa"]), "--retriever", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "--retriever" in r.output


def test_every_entry_point_takes_strings_dicts_and_documents(ckpts):
    import lfcli

    doc = "The court held that the contract was void."
    pipe = lfcli.Pipeline("qa", str(ckpts["qa"]))
    as_dict = list(pipe.run([{"id": "d1", "text": doc, "question": "What was void?"}]))
    as_document = list(pipe.run([Document("d1", doc, fields={"question": "What was void?"})]))
    assert as_dict == as_document and as_dict[0]["id"] == "d1" and "error" not in as_dict[0]
    assert list(pipe.run([doc], on_error="skip"))[0]["id"] == "0"  # a string's id is its position (no question: error row)
    many = lfcli.qa([doc], model=str(ckpts["qa"]), question=["What was void?", "Who held it?"])
    assert [(r["id"], r["question_id"]) for r in many] == [("0", "q1"), ("0", "q2")]
    assert many[0]["question"] == "What was void?" and "error" not in many[0]


def test_retrieval_starts_inside_a_callers_inference_mode(ckpts):
    """The encoder loads on the first long text, wherever that comes: inside torch.inference_mode
    too (benchmarks/eval_book_qa.py asks from there)."""
    pipe = Pipeline("qa", ckpts["qa"], question="Who left?", read="retrieve", retriever=ckpts["embed"], max_length=64)
    with torch.inference_mode():
        rows = list(pipe.run([Document("a", LONG)]))
    assert "error" not in rows[0] and pipe.stats.windows == TOP_WINDOWS
    assert list(pipe.run([Document("a", LONG)])) == rows
