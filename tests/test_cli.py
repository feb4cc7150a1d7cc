"""End to end: the `lfcli` command as a user runs it, on small real checkpoints and files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from checkpoints import make_checkpoint
from typer.testing import CliRunner

from lfcli.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    base = tmp_path_factory.mktemp("ckpt")
    return {
        "embed": make_checkpoint(base / "enc", "LongformerModel"),
        "classify": make_checkpoint(base / "cls", "LongformerForSequenceClassification", labels=["law", "medicine", "news"]),
        "qa": make_checkpoint(base / "qa", "LongformerForQuestionAnswering"),
        "corefs": make_checkpoint(base / "coref", "LongformerForCoreference"),
    }


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("docs")
    (folder / "sub").mkdir()
    (folder / "a.txt").write_text("The court held that the contract was void. " * 30)
    (folder / "b.md").write_text("Patients who received the treatment recovered faster.")
    (folder / "sub" / "c.txt").write_text("It was a bright cold day in April. She said he would come back.")
    return folder


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def rows_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def lfcli(*args, env=None, **kw):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "lfcli", *map(str, args)], capture_output=True, text=True, env=full_env, **kw)


def test_embed_folder(ckpts, docs):
    r = invoke("embed", docs, "-m", ckpts["embed"], "--quiet")
    assert r.exit_code == 0, r.output
    rows = rows_of(r.stdout)
    assert [x["id"] for x in rows] == ["a.txt", "b.md", "sub/c.txt"]
    assert all(len(x["embedding"]) == 32 and x["n_tokens"] > 0 for x in rows)
    assert abs(sum(v * v for v in rows[0]["embedding"]) - 1) < 1e-4  # normalised by default


def test_classify_with_head_and_zero_shot(ckpts, docs):
    r = invoke("classify", docs, "-m", ckpts["classify"], "--quiet")
    assert r.exit_code == 0, r.output
    for row in rows_of(r.stdout):
        assert row["label"] in ("law", "medicine", "news")
        assert abs(sum(row["scores"].values()) - 1) < 1e-5 and row["score"] == row["scores"][row["label"]]
    r = invoke("classify", docs, "-m", ckpts["embed"], "--labels", "sports,politics", "--quiet")
    assert r.exit_code == 0, r.output
    assert all(set(x["scores"]) == {"sports", "politics"} for x in rows_of(r.stdout))


def test_qa_offsets_point_into_the_text(ckpts, docs, tmp_path):
    r = invoke("qa", docs, "-m", ckpts["qa"], "-q", "What was void?", "--top-k", "2", "--quiet")
    assert r.exit_code == 0, r.output
    texts = {p.relative_to(docs).as_posix(): p.read_text() for p in docs.rglob("*") if p.is_file()}
    for row in rows_of(r.stdout):
        assert row["question"] == "What was void?"
        assert texts[row["id"]][row["start"]: row["end"]] == row["answer"]
        assert len(row["answers"]) <= 2
    records = tmp_path / "q.jsonl"
    records.write_text(
        json.dumps({"id": "x", "text": "Paris is the capital of France.", "question": "What is the capital?"}) + "\n"
        + json.dumps({"id": "y", "text": "The court held that the contract was void."}) + "\n"
    )
    r = invoke("qa", records, "-m", ckpts["qa"], "--quiet")
    rows = rows_of(r.stdout)
    assert rows[0]["question"] == "What is the capital?" and "error" not in rows[0]
    assert "no question" in rows[1]["error"]


def test_corefs_rows(ckpts, docs):
    r = invoke("corefs", docs, "-m", ckpts["corefs"], "--quiet")
    assert r.exit_code == 0, r.output
    text = (docs / "a.txt").read_text()
    row = rows_of(r.stdout)[0]
    assert isinstance(row["clusters"], list)
    for cluster in row["clusters"]:
        assert len(cluster) >= 2
        assert all(text[m["start"]: m["end"]] == m["text"] for m in cluster)


def test_parquet_with_good_and_bad_rows(ckpts, tmp_path):
    src = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"doc_id": ["g1", "bad", "g2", "blank"], "body": ["The court held that.", None, "She came back.", "  "]}), src
    )
    out = tmp_path / "out.parquet"
    r = invoke("embed", src, "--text-column", "body", "--id-column", "doc_id", "-m", ckpts["embed"], "-o", out, "--quiet")
    assert r.exit_code == 0, r.output
    table = pq.read_table(out).to_pylist()
    assert [x["id"] for x in table] == ["g1", "bad", "g2", "blank"]
    assert table[0]["error"] is None and len(table[0]["embedding"]) == 32
    assert table[1]["error"] and table[1]["embedding"] is None
    assert table[3]["error"]
    r = invoke("embed", src, "--text-column", "nope", "-m", ckpts["embed"], "--quiet")
    assert r.exit_code == 1 and "nope" in r.output and "body" in r.output


def test_bad_input_and_usage_exit_codes(ckpts, docs, tmp_path):
    enc = ckpts["embed"]
    assert invoke("embed", tmp_path / "missing.txt", "-m", enc).exit_code == 1
    r = invoke("qa", docs, "-m", enc, "-q", "why?")  # no QA head in an encoder checkpoint
    assert r.exit_code == 1 and "question-answering head" in r.output
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in ("config.json", "tokenizer.json"):
        (broken / f).write_bytes((enc / f).read_bytes())
    (broken / "model.safetensors").write_bytes((enc / "model.safetensors").read_bytes()[:300])
    r = invoke("embed", docs, "-m", broken)
    assert r.exit_code == 1 and "corrupt" in r.output
    r = invoke("embed", docs, "-m", enc, "-o", tmp_path / "nowhere" / "out.jsonl")
    assert r.exit_code == 1 and "nowhere" in r.output
    existing = tmp_path / "exists.jsonl"
    existing.write_text("")
    r = invoke("embed", docs, "-m", enc, "-o", existing)
    assert r.exit_code == 2 and "--force" in r.output
    assert invoke("embed", docs, "-m", enc, "-o", existing, "--force", "--quiet").exit_code == 0
    assert invoke("embed", docs, "-m", enc, "--global", "sentences").exit_code == 2
    assert invoke("embed", docs, "--no-such-option").exit_code == 2
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "ok.txt").write_text("fine text")
    (bad / "z.txt").write_bytes(b"caf\xe9 au lait")
    r = invoke("embed", bad, "-m", enc, "--quiet")
    rows = rows_of(r.stdout)
    assert r.exit_code == 0 and rows[0]["id"] == "ok.txt" and "UTF-8" in rows[1]["error"]
    r = invoke("embed", bad, "-m", enc, "--on-error", "fail")
    assert r.exit_code == 1 and "z.txt" in r.output
    r = invoke("embed", bad, "-m", enc, "--encoding-errors", "replace", "--quiet")
    assert all("error" not in x for x in rows_of(r.stdout))


def test_subprocess_manners(ckpts, docs):
    """Real process: one-line errors without traceback, LFCLI_DEBUG shows it, stdin works,
    no progress bar when stderr is not a terminal."""
    r = lfcli("embed", "/definitely/missing", "-m", ckpts["embed"])
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = lfcli("embed", "/definitely/missing", "-m", ckpts["embed"], env={"LFCLI_DEBUG": "1"})
    assert r.returncode == 1 and "Traceback" in r.stderr
    r = lfcli("embed", "-", "-m", ckpts["embed"], input="Text from a pipe.")
    assert r.returncode == 0, r.stderr
    assert rows_of(r.stdout)[0]["n_tokens"] > 0
    assert "docs/s" in r.stderr and "\r" not in r.stderr  # a summary line, no live progress
    t0 = time.perf_counter()
    assert lfcli("--help").returncode == 0
    assert time.perf_counter() - t0 < 5  # torch is not imported for --help


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_resume_after_sigkill(ckpts, tmp_path, suffix):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(120):
        (folder / f"doc{i:03d}.txt").write_text(f"Document number {i}. " + "The court held that the contract was void. " * (i % 7 + 1))
    out = tmp_path / f"out{suffix}"
    args = [sys.executable, "-m", "lfcli", "embed", folder, "-m", ckpts["embed"], "-o", out, "-b", "1", "--row-group-size", "4", "--quiet"]
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    progress_file = out if suffix == ".jsonl" else Path(str(out) + ".parts")
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if progress_file.exists() and (progress_file.is_dir() and any(progress_file.iterdir()) or progress_file.is_file() and progress_file.stat().st_size > 0):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the job finished before it could be killed; make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    r = lfcli("embed", folder, "-m", ckpts["embed"], "-o", out, "--resume", "--quiet")
    assert r.returncode == 0, r.stderr
    ids = [x["id"] for x in (rows_of(out.read_text()) if suffix == ".jsonl" else pq.read_table(out).to_pylist())]
    assert sorted(ids) == sorted(f"doc{i:03d}.txt" for i in range(120))
    assert len(ids) == len(set(ids))
