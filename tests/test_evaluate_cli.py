"""`lfcli evaluate TASK PRED GOLD` on small files written here: every gold format, the id
matching and missing/failed-row policy, JSON on stdout, the table on stderr, exit codes; and
LitBank and SQuAD end to end when ../shared/data is here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lfcli.cli import app
from lfcli.pipelines.io.conll import read_conll
from lfcli.pipelines.errors import InputError
from lfcli.pipelines.eval.evaluate import evaluate
from lfcli.pipelines.eval.metrics import coref_scores
from shared_data import DATA, need  # noqa: E402

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["evaluate", *map(str, args)])


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def scores_of(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------------------
# classify


def test_classify_jsonl_gold_with_missing_and_failed_rows(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "a", "label": "law"}, {"id": "b", "label": "law"}, {"id": "c", "label": "news"},
        {"id": "d", "label": "news"}, {"id": "e", "label": "medicine"},
    ])
    pred = write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "a", "label": "law", "score": 0.9}, {"id": "b", "label": "news", "score": 0.6},
        {"id": "c", "label": "news", "score": 0.7}, {"id": "d", "error": "empty document"},
        # "e" has no row at all
    ])
    r = invoke("classify", pred, gold)
    s = scores_of(r)
    assert (s["n"], s["missing"], s["errors"], s["missing_ids"]) == (5, 1, 1, ["e"])
    assert s["accuracy"] == pytest.approx(2 / 5)  # the failed and the missing rows count as wrong
    assert s["labels"] == ["law", "medicine", "news"]
    assert s["confusion_matrix"] == [[1, 0, 1], [0, 0, 0], [0, 0, 1]]
    assert s["unpredicted"] == [0, 1, 1]
    assert s["per_class"]["news"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2})
    # the table on stderr, plain text when stderr is not a terminal
    assert "accuracy" in r.stderr and "macro F1" in r.stderr and "\x1b[" not in r.stderr
    # counts of one in the singular
    assert "1 gold item without a prediction" in r.stderr and "1 error row among the predictions" in r.stderr


def test_classify_folder_gold_json_and_parquet_predictions(tmp_path):
    gold = tmp_path / "docs"
    for label, name in (("law", "a.txt"), ("law", "sub/b.txt"), ("news", "c.txt")):
        (gold / label / name).parent.mkdir(parents=True, exist_ok=True)
        (gold / label / name).write_text("text")
    (gold / "README.md").write_text("no label")  # top-level files have no label folder
    (gold / "law" / ".hidden").write_text("skipped")
    rows = [{"id": "law/a.txt", "label": "law"}, {"id": "law/sub/b.txt", "label": "news"}, {"id": "news/c.txt", "label": "news"}]
    (tmp_path / "pred.json").write_text(json.dumps(rows))
    s = scores_of(invoke("classify", tmp_path / "pred.json", gold, "--quiet"))
    assert s["gold_format"] == "folder" and s["n"] == 3 and s["accuracy"] == pytest.approx(2 / 3)
    # lfcli run over several inputs prefixes the folder: docs/law/a.txt still matches law/a.txt
    table = pa.table({"id": ["docs/" + r["id"] for r in rows], "label": [r["label"] for r in rows],
                      "error": pa.array([None] * 3, pa.string())})
    pq.write_table(table, tmp_path / "pred.parquet")
    r = invoke("classify", tmp_path / "pred.parquet", gold, "--quiet")
    assert scores_of(r)["accuracy"] == pytest.approx(2 / 3) and r.stderr == ""


def test_classify_parquet_gold_and_ids_filter(tmp_path):
    pq.write_table(pa.table({"id": ["x", "y", "z"], "label": ["p", "q", "p"]}), tmp_path / "gold.parquet")
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": i, "label": "p"} for i in ("x", "y", "z")])
    (tmp_path / "ids").write_text("x\ny\n")
    s = scores_of(invoke("classify", pred, tmp_path / "gold.parquet", "--ids", tmp_path / "ids"))
    assert (s["n"], s["ignored"], s["accuracy"]) == (2, 1, 0.5)


# ---------------------------------------------------------------------------
# qa


def test_qa_squad_gold(tmp_path):
    squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
        "context": "The Denver Broncos won Super Bowl 50 in Santa Clara.",
        "qas": [
            {"id": "q1", "question": "Who won?", "answers": [{"text": "Denver Broncos", "answer_start": 4},
                                                              {"text": "The Denver Broncos", "answer_start": 0}]},
            {"id": "q2", "question": "Where?", "answers": [{"text": "Santa Clara", "answer_start": 40}]},
            {"id": "q3", "question": "Which?", "answers": [{"text": "Super Bowl 50", "answer_start": 23}]},
        ]}]}]}
    (tmp_path / "dev.json").write_text(json.dumps(squad))
    pred = write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "q1", "question": "Who won?", "answer": "the Denver Broncos.", "start": 0, "end": 18, "score": 0.5},
        {"id": "q2", "question": "Where?", "answer": "in Santa Clara", "start": 37, "end": 51, "score": 0.4},
        {"id": "q3", "error": "the document has no tokens"},
    ])
    s = scores_of(invoke("qa", pred, tmp_path / "dev.json"))
    assert s["gold_format"] == "squad" and (s["n"], s["errors"]) == (3, 1)
    assert s["exact_match"] == pytest.approx(100 / 3)
    assert s["f1"] == pytest.approx(100 * (1 + 0.8 + 0) / 3)  # "in santa clara" vs "santa clara": P 2/3, R 1


def test_qa_jsonl_gold_answer_layouts(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "1", "answers": ["Paris", "paris, France"]},
        {"id": "2", "answers": {"text": ["blue"], "answer_start": [3]}},
        {"id": "3", "answers": [{"text": "42", "answer_start": 0}]},
    ])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "1", "answer": "Paris"}, {"id": "2", "answer": "Blue!"},
                                                 {"id": "3", "answer": None}])
    s = scores_of(invoke("qa", pred, gold))
    assert (s["exact_match"], s["f1"]) == pytest.approx((200 / 3, 200 / 3))


# ---------------------------------------------------------------------------
# corefs

GOLD_CONLL = """#begin document (tale_brat); part 0
tale_brat\t0\t0\tAnna\t(0)
tale_brat\t0\t1\tmet\t-
tale_brat\t0\t2\tthe\t(1
tale_brat\t0\t3\tbaker\t1)
tale_brat\t0\t4\t.\t-

tale_brat\t0\t0\tShe\t(0)
tale_brat\t0\t1\tthanked\t-
tale_brat\t0\t2\thim\t(1)
tale_brat\t0\t3\tin\t-
tale_brat\t0\t4\tParis\t(2)
tale_brat\t0\t5\t.\t-
#end document
"""


def _spans(text: str, *words: str) -> list[dict]:
    out, pos = [], 0
    for w in words:
        i = text.index(w, pos)
        out.append({"start": i, "end": i + len(w), "text": w})
        pos = i + len(w)
    return out


def test_corefs_conll_gold_both_singleton_variants(tmp_path):
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "tale.conll").write_text(GOLD_CONLL, encoding="utf-8")
    [doc] = read_conll(tmp_path / "gold")
    assert doc.text == "Anna met the baker .\nShe thanked him in Paris .\n"
    # predicted on the brat .txt: "Anna" and "him" wrongly together, "She" alone, no "Paris",
    # a spurious "thanked"
    text = doc.text
    clusters = [_spans(text, "Anna", "him"), _spans(text, "the baker"), _spans(text, "She"), _spans(text, "thanked")]
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "tale.txt", "clusters": clusters}])
    r = invoke("corefs", pred, tmp_path / "gold")
    s = scores_of(r)
    key = doc.clusters
    response = [[(m["start"], m["end"]) for m in c] for c in clusters]
    want_with = coref_scores([(key, response)], singletons=True)
    want_without = coref_scores([(key, response)], singletons=False)
    for variant, want in (("with_singletons", want_with), ("without_singletons", want_without)):
        for metric in ("muc", "b_cubed", "ceaf_e", "mentions"):
            assert s[variant][metric] == pytest.approx(want[metric])
        assert s[variant]["conll_f1"] == pytest.approx(want["conll_f1"])
    assert s["singletons"] is True and s["conll_f1"] == pytest.approx(want_with["conll_f1"])
    # by hand: key {Anna, She} {the baker, him} {Paris}; response {Anna, him} {the baker} {She} {thanked}
    assert s["with_singletons"]["muc"]["recall"] == 0 and s["with_singletons"]["muc"]["precision"] == 0
    b3 = s["with_singletons"]["b_cubed"]
    assert b3["recall"] == pytest.approx(100 * (1 / 2 + 1 / 2 + 1 / 2 + 1 / 2 + 0) / 5)
    assert b3["precision"] == pytest.approx(100 * (1 / 2 + 1 / 2 + 1 + 1 + 0) / 5)
    assert s["span_text_mismatches"] == 0
    assert "CoNLL F1" in r.stderr and "with singletons" in r.stderr
    r = invoke("corefs", pred, tmp_path / "gold" / "tale.conll", "--no-singletons")
    s2 = scores_of(r)
    assert s2["singletons"] is False and s2["conll_f1"] == pytest.approx(want_without["conll_f1"])
    assert s2["with_singletons"] == s["with_singletons"]  # both variants always reported


def test_corefs_jsonl_gold_parquet_predictions_and_text_mismatch_warning(tmp_path):
    text = "Anna met the baker .\nShe thanked him in Paris .\n"
    gold_clusters = [_spans(text, "Anna", "She"), _spans(text, "the baker", "him")]
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "t1", "clusters": gold_clusters}, {"id": "t2", "clusters": []}])
    mention = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])
    table = pa.table({"id": ["t1", "t2"], "clusters": pa.array([gold_clusters, None], pa.list_(pa.list_(mention))),
                      "error": pa.array([None, "boom"], pa.string())})
    pq.write_table(table, tmp_path / "pred.parquet")
    s = scores_of(invoke("corefs", tmp_path / "pred.parquet", gold))
    assert s["gold_format"] == "records" and s["errors"] == 1
    assert s["conll_f1"] == pytest.approx(100)  # t2 has no gold and nothing predicted counts

    # CoNLL gold whose text the predictions were not made on: a warning, and the count in JSON
    (tmp_path / "tale.conll").write_text(GOLD_CONLL, encoding="utf-8")
    shifted = [[dict(m, start=m["start"] + 1, end=m["end"] + 1) for m in c] for c in gold_clusters]
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "tale", "clusters": shifted}])
    r = invoke("corefs", pred, tmp_path / "tale.conll")
    assert scores_of(r)["span_text_mismatches"] == 4 and "do not match the gold text" in r.stderr


def test_corefs_gap_gold(tmp_path):
    header = "ID\tText\tPronoun\tPronoun-offset\tA\tA-offset\tA-coref\tB\tB-offset\tB-coref\tURL\n"
    t1 = "Tom Lee saw Bob Ray. He waved."
    t2 = "Ann Kim met Liz Poe. She smiled."
    rows = [f"g-1\t{t1}\tHe\t{t1.index('He')}\tTom Lee\t0\tTRUE\tBob Ray\t12\tFALSE\tu\n",
            f"g-2\t{t2}\tShe\t{t2.index('She')}\tAnn Kim\t0\tFALSE\tLiz Poe\t12\tTRUE\tu\n"]
    (tmp_path / "gap.tsv").write_text(header + "".join(rows), encoding="utf-8")
    pred = write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "g-1", "clusters": [_spans(t1, "Tom Lee", "He")]},  # A right
        {"id": "g-2", "clusters": [_spans(t2, "Ann Kim", "She")]},  # A wrong, B missed
    ])
    r = invoke("corefs", pred, tmp_path / "gap.tsv")
    s = scores_of(r)
    gap = s["gap"]
    assert s["gold_format"] == "gap" and gap["examples"] == 2
    assert {k: gap["overall"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 1, "fp": 1, "fn": 1, "tn": 1}
    assert gap["masculine"]["f1"] == pytest.approx(100) and gap["feminine"]["f1"] == 0 and gap["bias"] is None
    assert "bias (F/M)" in r.stderr


# ---------------------------------------------------------------------------
# errors and exit codes


def test_bad_input_exits_1_with_one_line(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "label": "x"}])
    cases = [
        (write_jsonl(tmp_path / "p1.jsonl", [{"id": "a", "label": "x"}, {"id": "zz", "label": "x"}]), "not in the gold data"),
        (tmp_path / "missing.jsonl", "no such file or folder"),
        (tmp_path / "p2.jsonl", "p2.jsonl:2: not valid JSON (Invalid control character at column 17)"),  # not "at at"
        (write_jsonl(tmp_path / "p3.jsonl", [{"id": "a", "answer": "x"}]), "no 'label' field"),
        (write_jsonl(tmp_path / "p4.jsonl", [{"id": "a", "label": "x"}, {"id": "a", "label": "y"}]), "appears twice"),
    ]
    (tmp_path / "p2.jsonl").write_text('{"id": "a", "label": "x"}\n{"id": "b", "lab\n')  # a torn last line
    for pred, message in cases:
        r = invoke("classify", pred, gold)
        assert r.exit_code == 1, (pred, r.output)
        assert r.stdout == "" and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    (tmp_path / "ids").write_text("a\nnope\n")
    r = invoke("classify", write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "label": "x"}]), gold, "--ids", tmp_path / "ids")
    assert r.exit_code == 1 and "1 listed id not in the gold data: 'nope'" in r.stderr


def test_bad_usage_exits_2(tmp_path):
    pred = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "label": "x"}])
    r = invoke("summarize", pred, pred)
    assert r.exit_code == 2 and "No such command 'summarize'" in r.stderr
    r = invoke("classify", pred, pred, "--no-singletons")  # corefs' own option: not classify's
    assert r.exit_code == 2 and "No such option: --no-singletons" in r.stderr
    assert invoke("classify", pred).exit_code == 2  # GOLD missing: click's usage error


def test_the_installed_command_and_python_api(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "a", "answers": ["yes"]}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "a", "answer": "Yes."}])
    r = subprocess.run([sys.executable, "-m", "lfcli", "evaluate", "qa", str(pred), str(gold)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["exact_match"] == 100.0 and "\x1b[" not in r.stderr
    assert evaluate("qa", str(pred), str(gold))["f1"] == 100.0
    with pytest.raises(InputError):
        evaluate("qa", str(pred), str(tmp_path / "nope.json"))


# ---------------------------------------------------------------------------
# real data


def test_litbank_gold_as_predictions_scores_100_and_dropping_singletons_costs_recall(tmp_path):
    conll_dir = need(DATA / "litbank" / "coref" / "conll")
    docs = read_conll(conll_dir)
    # ids as `lfcli corefs litbank/coref/brat` names them: "105_persuasion.txt"
    pred = write_jsonl(tmp_path / "pred.jsonl", [
        {"id": f"{d.id}.txt", "clusters": [[{"start": a, "end": b, "text": d.text[a:b]} for a, b in c] for c in d.clusters if len(c) > 1]}
        for d in docs])
    r = invoke("corefs", pred, conll_dir, "--ids", DATA / "litbank" / "dev.ids")
    s = scores_of(r)
    assert (s["n"], s["ignored"], s["missing"], s["span_text_mismatches"]) == (10, 80, 0, 0)
    assert s["without_singletons"]["conll_f1"] == pytest.approx(100)
    assert s["with_singletons"]["muc"]["f1"] == pytest.approx(100)  # MUC never sees singletons
    assert s["with_singletons"]["b_cubed"]["recall"] < 100 and s["with_singletons"]["b_cubed"]["precision"] == 100
    assert "80 predictions outside --ids, skipped" in r.stderr


def test_squad_gold_answers_as_predictions(tmp_path):
    path = need(DATA / "squad" / "squad-v1.1-dev-minus-xquad.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    qas = [qa for article in data["data"] for p in article["paragraphs"] for qa in p["qas"]][:500]
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": qa["id"], "answer": qa["answers"][-1]["text"]} for qa in qas])
    s = evaluate("qa", str(pred), str(path))
    # the 9,380 gold questions, 500 answered with a gold answer: the rest count as missing
    assert (s["n"], s["missing"]) == (9380, 9380 - 500)
    assert s["exact_match"] == pytest.approx(100 * 500 / 9380) and s["f1"] == pytest.approx(s["exact_match"])
