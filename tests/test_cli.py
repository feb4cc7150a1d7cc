"""End to end: the `lfcli` command as a user runs it, on small real checkpoints and files."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from checkpoints import task_checkpoints
from typer.testing import CliRunner

from lfcli.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    return task_checkpoints(tmp_path_factory.mktemp("ckpt"))


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
    assert isinstance(row["chains"], list)
    for chain in row["chains"]:
        assert len(chain["mentions"]) >= 2
        assert all(text[m["start"]: m["end"]] == m["text"] for m in chain["mentions"])
        assert chain["name"] is None or chain["name"] in {m["text"] for m in chain["mentions"]} | {
            m["text"][:-2] for m in chain["mentions"]}
    # biggest first, ties in text order
    order = [(-len(c["mentions"]), c["mentions"][0]["start"]) for c in row["chains"]]
    assert len(order) > 1 and order == sorted(order)


def test_no_fast_paths_runs_the_plain_model_to_the_same_rows(ckpts, docs):
    """--no-fast-paths loads the plain reference model (no swaps) and gives the same rows."""
    fast = rows_of(invoke("embed", docs, "-m", ckpts["embed"], "--dtype", "float32", "--quiet").stdout)
    r = invoke("embed", docs, "-m", ckpts["embed"], "--dtype", "float32", "--quiet", "--no-fast-paths")
    assert r.exit_code == 0, r.output
    plain = rows_of(r.stdout)
    assert [row["id"] for row in plain] == [row["id"] for row in fast]
    # float32 sums taken in two orders: about u * sqrt(K) apart for sums of K = tokens * hidden
    # terms (the mean over tokens of hidden-wide products), 8x for the few chains behind a value
    hidden = json.loads((Path(ckpts["embed"]) / "config.json").read_text())["hidden_size"]
    for a, b in zip(fast, plain):
        tol = 8 * torch.finfo(torch.float32).eps / 2 * (a["n_tokens"] * hidden) ** 0.5
        scale = max(1.0, max(abs(y) for y in b["embedding"]))
        assert max(abs(x - y) for x, y in zip(a["embedding"], b["embedding"])) <= tol * scale
    from lfcli.models.fast_paths import fast_paths_of
    from lfcli.pipelines.infer.runner import Pipeline

    swaps = lambda pipe: {n for m in pipe.model.modules() for n in fast_paths_of(m)}  # noqa: E731
    assert swaps(Pipeline("embed", ckpts["embed"], dtype="float32", fast_paths=False)) == set()
    fast_pipe = Pipeline("embed", ckpts["embed"], dtype="float32")
    assert "query_scale_fold" in swaps(fast_pipe) and "fast paths: query_scale_fold" in repr(fast_pipe.model)


def test_the_cast_is_the_biggest_chains_named_or_not_each_titled_top_15_of_the_first_documents():
    from lfcli.pipelines.tasks.corefs.cast import CastReport

    def chain(name, n, text="x", at=0):
        return {"name": name, "mentions": [{"start": at + i, "end": at + i + 1, "text": text} for i in range(n)]}

    report = CastReport()
    report.add({"id": "book.txt", "quotes": [], "chains": [chain("Darcy", 30), chain("Elizabeth", 40),
                                                           chain(None, 50, "I", at=100)]
                + [chain(f"P{i:02}", 2, at=900 - i) for i in range(20)]})  # ties: by first mention
    report.add({"id": "bad.txt", "error": "empty document"})
    report.add({"id": "pronouns.txt", "chains": [chain(None, 3, "she"), chain(None, 4, "we")]})
    for k in range(3):
        report.add({"id": f"more{k}.txt", "chains": [chain("Anna", 2)]})
    lines = report.lines()
    assert lines[0] == "the cast of book.txt (the 15 biggest of 23 chains, by mentions):"
    assert lines[1].split() == ["50", "I", "(narrator)"]  # the narrator no name was found for leads
    assert lines[2].split() == ["40", "Elizabeth"] and lines[3].split() == ["30", "Darcy"]
    assert [line.split()[1] for line in lines[4:16]] == [f"P{i:02}" for i in range(19, 7, -1)]
    assert lines[16:19] == ["the cast of pronouns.txt (2 chains, by mentions):", "       4  we", "       3  she (unnamed)"]
    assert lines[19] == "the cast of more0.txt (1 chain, by mentions):"
    assert lines[-1].startswith("and 2 more documents with chains")


def test_corefs_says_the_cast_on_a_terminal_only(ckpts, tmp_path):
    """On a terminal a corefs run ends with each document's named chains, biggest first; piped
    (here CliRunner's stderr), it does not. stderr is a real pty for the first run."""
    import pty

    doc = tmp_path / "story.txt"
    doc.write_text("Anna met Bruno in the garden. Anna said that Bruno was late, and Bruno laughed. " * 12)
    controller, terminal = pty.openpty()
    run = subprocess.run([sys.executable, "-m", "lfcli", "corefs", doc, "-m", ckpts["corefs"], "-o", tmp_path / "out.jsonl"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal, timeout=300)
    os.close(terminal)
    said = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the pty is closed once the child has gone
            break
        if not chunk:
            break
        said += chunk
    os.close(controller)
    assert run.returncode == 0, said.decode(errors="replace")
    said = said.decode(errors="replace")
    assert f"lfcli: the cast of {doc} (" in said and " chain" in said, said[-3000:]  # the id: the path given
    piped = invoke("corefs", doc, "-m", ckpts["corefs"])
    assert piped.exit_code == 0 and "the cast of" not in piped.output


def test_parquet_with_good_and_bad_rows(ckpts, tmp_path):
    src = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"doc_id": ["g1", "bad", "g2", "blank"], "body": ["The court held that.", None, "She came back.", "  "]}), src
    )
    out = tmp_path / "out.parquet"
    r = invoke("embed", src, "--text-column", "body", "--id-column", "doc_id", "-m", ckpts["embed"], "-o", out, "--quiet",
               "--partial-ok")  # some rows are bad on purpose: without --partial-ok the job exits 1
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
    r = invoke("qa", docs, "-m", enc, "-q", "why?")  # no QA head in an encoder checkpoint: usage
    assert r.exit_code == 2 and "question-answering head" in r.output
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
    # a document failed: exit 1 (a script sees it), every row written all the same
    assert r.exit_code == 1 and rows[0]["id"] == "ok.txt" and "UTF-8" in rows[1]["error"]
    r = invoke("embed", bad, "-m", enc)
    assert r.exit_code == 1 and "1 of 2 documents failed" in r.stderr and "--partial-ok" in r.stderr
    r = invoke("embed", bad, "-m", enc, "--quiet", "--partial-ok")
    assert r.exit_code == 0 and rows_of(r.stdout) == rows
    r = invoke("embed", bad, "-m", enc, "--on-error", "fail")
    assert r.exit_code == 1 and r.output.count("z.txt") == 1, r.output  # the path said once
    r = invoke("embed", bad, "-m", enc, "--encoding-errors", "replace", "--quiet")
    assert all("error" not in x for x in rows_of(r.stdout))


def test_an_unknown_model_or_a_missing_head_is_usage_naming_what_m_takes(ckpts, docs, tmp_path):
    """-m naming nothing is bad usage (2), its one line naming the tiers and the task's bundled
    models; a missing folder is bad input (1); a model without the task's head (classify with
    no --labels on an encoder) is usage too. Each is said before any output is opened."""
    out = tmp_path / "out.jsonl"
    r = invoke("corefs", docs / "a.txt", "-m", "huge", "-o", out)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
    assert all(w in r.stderr for w in ("small, base", "minilm-l6-long-litbank-coref", "mpnet-base-long-litbank-coref",
                                       "checkpoint folder")), r.stderr
    r = invoke("embed", docs, "-m", tmp_path / "no" / "such")
    assert r.exit_code == 1 and "no such checkpoint folder" in r.stderr
    r = invoke("classify", docs, "-m", ckpts["embed"], "-o", out)
    assert r.exit_code == 2 and "sequence-classification head" in r.stderr and "--labels" in r.stderr, r.output
    assert not out.exists()
    assert invoke("classify", docs, "-m", ckpts["embed"], "--labels", "law,news", "--quiet").exit_code == 0
    from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

    if bundled_available(DEFAULT_MODEL) is None:  # no -m, no --labels: the default encoder has no head
        r = invoke("classify", docs / "a.txt")
        assert r.exit_code == 2 and "the default model" in r.stderr and "--labels" in r.stderr, r.output
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"text": f"text {i}", "label": "ab"[i % 2]}) + "\n" for i in range(4)))
    r = invoke("finetune", "qa", data, "-m", "huge", "-o", tmp_path / "run")
    assert r.exit_code == 2 and "minilm-l6-long-squad" in r.stderr and not (tmp_path / "run").exists()
    r = invoke("finetune", "classify", data, "-m", "small", "-o", tmp_path / "run")
    assert r.exit_code == 2 and "not a tier" in r.stderr and "minilm-l6-long" in r.stderr
    r = invoke("pretrain-continue", docs, "-m", "huge", "-o", tmp_path / "run")
    assert r.exit_code == 2 and "unknown model" in r.stderr and not (tmp_path / "run").exists()


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
    assert lfcli("--help").returncode == 0
    # --help answers at once because it imports no torch
    code = ("import sys; sys.argv = ['lfcli', '--help']; from lfcli.cli import main\n"
            "try: main()\nexcept SystemExit: pass\nprint('torch' in sys.modules, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_resume_after_sigkill(ckpts, tmp_path, suffix):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(120):  # 430,000 characters: a job of several chunks (CHUNK_CHARS), so rows reach the output midway
        (folder / f"doc{i:03d}.txt").write_text(f"Document number {i}. " + "The court held that the contract was void. " * (i % 7 + 1) * 20)
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


# -- issue #15: options checked first, no quiet failures, help that tells the truth ------------
@pytest.mark.parametrize("option", [
    ["--dtype", "foo"], ["--global", "foo"], ["--pooling", "foo"], ["--max-length", "0"], ["--batch-size", "0"],
    ["--attention-backend", "foo"], ["--device", "tpu"], ["--device", "cuda:99"], ["--on-error", "maybe"],
])
def test_options_are_usage_errors_before_inputs_and_model(option):
    """A bad option is exit 2 with one line, before the (missing) input or the (missing)
    model would have failed with exit 1."""
    r = invoke("embed", "/missing/input.txt", "-m", "/missing/model", *option)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("lfcli: error: ") and option[0] in r.stderr


def test_device_and_backend_this_machine_lacks_are_usage_errors(monkeypatch):
    import torch

    r = invoke("embed", "/missing/input.txt", "--device", "auto")
    assert r.exit_code == 1 and "no such file" in r.stderr  # auto is a device: on to the input
    if not torch.cuda.is_available():
        r = invoke("embed", "/missing/input.txt", "--device", "cuda")
        assert r.exit_code == 2 and "--device cuda" in r.stderr and "--device cpu" in r.stderr
        # without TRITON_INTERPRET (which the test session sets) the CPU cannot run triton
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
        r = invoke("embed", "/missing/input.txt", "--attention-backend", "triton")
        assert r.exit_code == 2 and r.stderr.startswith("lfcli: error: --attention-backend triton: ")
        monkeypatch.setenv("LFCLI_ATTENTION_BACKEND", "triton")
        r = invoke("embed", "/missing/input.txt")
        assert r.exit_code == 2 and "LFCLI_ATTENTION_BACKEND triton" in r.stderr


def test_zero_shot_needs_two_labels(ckpts, docs):
    for labels in (["--labels", "law"], ["--labels", " , "], ["--labels", "law,law"]):
        r = invoke("classify", "/missing/input.txt", "-m", ckpts["embed"], *labels)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
    assert "two labels or more" in invoke("classify", docs, "-m", ckpts["embed"], "--labels", "law").stderr


def test_max_length_is_capped_aloud_and_too_short_refused(ckpts, docs, tmp_path):
    r = invoke("embed", docs, "-m", ckpts["embed"], "--max-length", "100000")
    assert r.exit_code == 0
    assert "lfcli: note: --max-length 100000 is more than the model's 128 positions: windows of 128 tokens" in r.stderr
    r = invoke("embed", docs, "-m", ckpts["embed"], "--max-length", "2", "--quiet")
    assert r.exit_code == 2 and "no room for the document beside 2 special tokens; use --max-length 3" in r.stderr
    r = invoke("embed", docs, "-m", ckpts["embed"], "--max-length", "16", "--quiet")
    assert r.exit_code == 0 and "windows of 16 tokens" in r.stderr and "slow" in r.stderr
    question = "Why did the court hold that the contract was void?"
    r = invoke("qa", docs, "-m", ckpts["qa"], "-q", question, "--max-length", "20")
    assert r.exit_code == 2 and "more than half of a 20-token window; shorten it" in r.stderr, r.stderr
    assert "answers worse in longer ones" in r.stderr  # --max-length is no free cure: said so
    # refused before the weights load: a checkpoint with corrupt weights does not get that far
    broken = tmp_path / "broken"
    shutil.copytree(ckpts["embed"], broken)
    (broken / "model.safetensors").write_bytes(b"not weights")
    assert invoke("embed", docs, "-m", broken, "--max-length", "2").exit_code == 2
    assert invoke("embed", docs, "-m", broken).exit_code == 1


def test_failures_are_reported_first_without_their_throughput(ckpts, tmp_path):
    folder = tmp_path / "empties"
    folder.mkdir()
    (folder / "a.txt").write_text("")
    (folder / "b.txt").write_text("   ")
    # no document succeeded: exit 1, one line, the error rows written all the same (--quiet too)
    for quiet in ([], ["--quiet"]):
        r = invoke("embed", folder, "-m", ckpts["embed"], *quiet)
        assert r.exit_code == 1 and [x["id"] for x in rows_of(r.stdout)] == ["a.txt", "b.txt"]
        assert r.stderr == (f"lfcli: error: all 2 documents failed, each with an error row "
                            f"(first: {folder / 'a.txt'}: empty document)\n")
    out = tmp_path / "out.parquet"
    assert invoke("embed", folder, "-m", ckpts["embed"], "-o", out).exit_code == 1
    assert [x["id"] for x in pq.read_table(out).to_pylist()] == ["a.txt", "b.txt"]  # a finished, readable file
    (folder / "c.txt").write_text("The court held that the contract was void.")
    lines = invoke("embed", folder, "-m", ckpts["embed"]).stderr.splitlines()
    assert lines[0].startswith("lfcli: 2 of 3 documents failed") and lines[1].startswith("lfcli: 1 document done in ")


def test_jsonl_without_the_text_field_is_a_whole_input_error(ckpts, tmp_path):
    records = tmp_path / "r.jsonl"
    records.write_text("".join(json.dumps({"id": i, "body": "text"}) + "\n" for i in range(3)))
    r = invoke("embed", records, "-m", ckpts["embed"])
    assert r.exit_code == 1 and r.stdout == ""
    assert "no 'text' field in its first 3 records (fields: id, body)" in r.stderr
    assert invoke("embed", records, "-m", ckpts["embed"], "--text-column", "body", "--quiet").exit_code == 0


def test_stdin_id_and_jsonl_detection(ckpts):
    r = runner.invoke(app, ["embed", "-", "-m", str(ckpts["embed"]), "--quiet"], input="Text from a pipe.\n")
    assert [x["id"] for x in rows_of(r.stdout)] == ["-"]  # as the README says
    jsonl = '{"id": "a", "text": "One."}\n{"id": "b", "text": "Two."}\n'
    r = runner.invoke(app, ["embed", "-", "-m", str(ckpts["embed"]), "--quiet"], input=jsonl)
    assert [x["id"] for x in rows_of(r.stdout)] == ["a", "b"] and "standard input is JSONL" in r.stderr
    r = runner.invoke(app, ["embed", "-", "-m", str(ckpts["embed"]), "--quiet", "--input-format", "text"], input=jsonl)
    assert [x["id"] for x in rows_of(r.stdout)] == ["-"]


def test_models_says_when_the_bundled_model_is_built(monkeypatch, tmp_path):
    from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))
    if bundled_available(DEFAULT_MODEL) is not None:
        pytest.skip(f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}")
    assert "builds on first use (about 5 s)" in invoke("models").stdout
    r = runner.invoke(app, ["embed", "-", "--quiet"], input="A first run builds the model.")
    assert r.exit_code == 0, r.output
    assert r.stderr.count(f"lfcli: building the bundled model {DEFAULT_MODEL} into {tmp_path}") == 1
    assert "    ready" in invoke("models").stdout
    r = runner.invoke(app, ["embed", "-", "--quiet"], input="The second run does not.")
    assert "building" not in r.stderr


def test_models_gives_each_model_its_own_tasks_speed():
    """`lfcli models`: an encoder's line gives embed's speed, a QA or coreference model's its own
    task's (a different figure: its task's cost over embed's), not the embed speed of its tier."""
    out = invoke("models").stdout
    speeds = {}
    for block in re.split(r"\n(?=\S)", out):
        tier = re.search(r"^    tier: (\w+) .*?; (\w+) about ([\d,]+) tokens/s", block, re.M)
        if tier:
            speeds[block.split("\t")[0].split()[0]] = (tier[1], tier[2], int(tier[3].replace(",", "")))
    assert speeds["minilm-l6-long"][1] == speeds["mpnet-base-long"][1] == "embed"
    assert speeds["minilm-l6-long-squad"][1] == speeds["mpnet-base-long-squad"][1] == "qa"
    assert speeds["minilm-l6-long-litbank-coref"][1] == speeds["mpnet-base-long-litbank-coref"][1] == "corefs"
    embed = {tier: rate for tier, task, rate in speeds.values() if task == "embed"}
    assert all(rate != embed[tier] for tier, task, rate in speeds.values() if task != "embed"), speeds
    assert all(rate < embed[tier] for tier, task, rate in speeds.values() if task == "corefs")


def _all_commands():
    """The argument paths of the app and of every command and subcommand on it."""
    import typer.main

    stack = [([], typer.main.get_command(app))]
    while stack:
        path, cmd = stack.pop()
        yield path
        stack.extend((path + [name], sub) for name, sub in getattr(cmd, "commands", {}).items())


def _help_words(*path) -> str:
    """A command's help as one line of words, without the panels' borders."""
    return " ".join(invoke(*path, "--help").stdout.replace("│", " ").split())


def test_help_shows_plain_metavars_and_each_commands_own_words():
    for path in _all_commands():
        text = invoke(*path, "--help").stdout
        assert not re.search(r"<(bool|str|int|float|path|list\[\w+\])>", text, re.I), (path, text)
        assert "Show this message and exit." in _help_words(*path)  # rich may wrap it
    help_embed = invoke("embed", "--help").stdout
    assert "PATH" in help_embed and "INT" in help_embed and "TEXT" in help_embed
    force = [line for line in help_embed.splitlines() if "--force" in line][0]
    assert force.split("-F")[1].split()[0] == "Overwrite"  # a flag: no type between it and its help
    pretrain = _help_words("pretrain-continue")
    assert "Overwrite an existing output file" not in pretrain and "skip their ids" not in pretrain
    assert "resume state" in pretrain.split("--resume")[1][:200] and "earlier run" in pretrain.split("--force")[1][:200]
    assert "every 5 s or every row group" in _help_words("embed")


def test_a_killed_job_keeps_rows_finished_seconds_ago(ckpts, tmp_path):
    """Parquet rows reach the output every 5 s (FLUSH_SECONDS) even when a row group (256
    here) is far from full, so SIGKILL in the first minute still leaves finished rows."""
    folder = tmp_path / "long"
    folder.mkdir()
    # Long enough (~a minute on one core) that the first flush at 5 s comes well before the end;
    # the test kills it right after that flush, so its length costs nothing.
    for i in range(400):
        (folder / f"doc{i:03d}.txt").write_text(f"Document number {i}. " + "The court held that the contract was void. " * 600)
    out = tmp_path / "out.parquet"
    args = [sys.executable, "-m", "lfcli", "embed", folder, "-m", ckpts["embed"], "-o", out, "-b", "1", "--quiet"]
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    parts = Path(str(out) + ".parts")
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not (parts.is_dir() and any(parts.glob("*.parquet"))):
        time.sleep(0.05)
    assert proc.poll() is None, "the job finished before it could be killed; make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = [x["id"] for p in sorted(parts.glob("*.parquet")) for x in pq.read_table(p).to_pylist()]
    assert 0 < len(saved) < 400 and saved == [f"doc{i:03d}.txt" for i in range(len(saved))]


def test_merge_says_what_is_missing_and_what_it_expects(ckpts, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = invoke("merge", empty, tmp_path / "out")
    assert r.exit_code == 1 and r.stderr.count("\n") == 1
    assert (f"{empty}: no adapter_config.json in it; `lfcli merge` expects a folder that `lfcli finetune` wrote "
            "with a LoRA adapter (adapter_config.json and adapter_model.safetensors)") in r.stderr
    r = invoke("merge", ckpts["embed"], tmp_path / "out")
    assert r.exit_code == 1 and "already a full checkpoint (model.safetensors): nothing to merge" in r.stderr
    r = invoke("merge", tmp_path / "missing", tmp_path / "out")
    assert r.exit_code == 1 and "missing: no such folder; `lfcli merge` expects" in r.stderr
    assert not (tmp_path / "out").exists()


def test_square_brackets_in_help_survive_rich_markup():
    """rich reads "[ray]" as a style tag and drops it: every bracketed word of a help text
    shows in --help (escaped as "\\[" in the source)."""
    import typer.main

    assert "pip install 'lfcli[ray]'" in _help_words("embed")
    for path in _all_commands():
        command = typer.main.get_command(app)
        for name in path:
            command = command.commands[name]
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        words = _help_words(*path)
        for text in texts:
            for bracketed in re.findall(r"\S*\[[^\]\s]*\]\S*", text.replace("\\[", "[")):
                assert bracketed in words, (path, bracketed)


def test_qa_without_any_question_is_a_usage_error(ckpts, docs, tmp_path):
    """No -q and no input with a 'question' field: one line saying how to give questions,
    before the model loads, instead of an error row per document."""
    records = tmp_path / "r.jsonl"
    records.write_text("".join(json.dumps({"id": i, "text": "The court held."}) + "\n" for i in range(3)))
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["a"], "text": ["The court held."]}), table)
    for source in (docs, records, table):
        r = invoke("qa", source, "-m", ckpts["qa"], "-o", tmp_path / "out.jsonl")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and r.stdout == "", r.output
        assert "pass -q/--question 'QUESTION'" in r.stderr and "'question' field" in r.stderr
        assert not (tmp_path / "out.jsonl").exists()
    r = invoke("qa", docs, "-m", ckpts["qa"], "-q", " ")
    assert r.exit_code == 2 and "--question is empty" in r.stderr
    # a folder holding one JSONL file with questions is fine: its records are asked
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.txt").write_text("The court held that the contract was void.")
    (mixed / "q.jsonl").write_text(json.dumps({"id": "q", "text": "Paris is in France.", "question": "Where is Paris?"}) + "\n")
    r = invoke("qa", mixed, "-m", ckpts["qa"], "--quiet", "--partial-ok")
    rows = rows_of(r.stdout)
    assert r.exit_code == 0 and "no question" in rows[0]["error"] and rows[1]["question"] == "Where is Paris?"


def test_qa_windows_too_short_for_any_question_are_refused_before_the_inputs(ckpts, tmp_path):
    """Per-record questions: a window that cannot hold the 3 special tokens, one question
    token and one document token is refused (exit 2) before the inputs are read; one that can
    runs, and a question too long for it is that record's error row."""
    r = invoke("qa", tmp_path / "missing.jsonl", "-m", ckpts["qa"], "--max-length", "4")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "windows of 4 tokens leave no room for the document beside 3 special tokens and a question; " \
           "use --max-length 5 or more" in r.stderr
    records = tmp_path / "q.jsonl"
    records.write_text(json.dumps({"id": "long", "text": "Paris is the capital of France.",
                                   "question": "What is the capital and largest city of France?"}) + "\n")
    r = invoke("qa", records, "-m", ckpts["qa"], "--max-length", "5")
    assert r.exit_code == 1 and "the question has" in rows_of(r.stdout)[0]["error"]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_resume_onto_another_jobs_output_is_refused(ckpts, docs, tmp_path, suffix):
    """`lfcli embed -o OUT` then `lfcli qa -o OUT --resume` used to rewrite OUT in the QA
    schema (Parquet) or mix two schemas (JSONL): now exit 2, one line, OUT untouched."""
    out = tmp_path / f"out{suffix}"
    assert invoke("embed", docs, "-m", ckpts["embed"], "-o", out, "--quiet").exit_code == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    r = invoke("qa", docs, "-m", ckpts["qa"], "-q", "What was void?", "-o", out, "--resume")
    assert r.exit_code == 2 and r.stdout == "" and r.stderr == (
        f"lfcli: error: {out} was written by `lfcli embed` (model {ckpts['embed']}); this is `lfcli qa`: "
        "resume with the same command or use --force\n")
    r = invoke("embed", docs, "-m", ckpts["embed"], "-o", out, "--resume", "--max-length", "64")
    assert r.exit_code == 2 and "with --max-length (not given); this run has --max-length 64" in r.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    r = invoke("embed", docs, "-m", ckpts["embed"], "-o", out, "--resume")  # the same job: nothing left to do
    assert r.exit_code == 0 and "no documents to run; 3 already in the output" in r.stderr


def test_resume_onto_corefs_rows_of_the_older_form_is_refused(ckpts, docs, tmp_path):
    """Rows of `lfcli corefs` are chains of {name, mentions} and quotes (form 3); output an
    older lfcli wrote (clusters, form 1: its job record has no row_form; chains without quotes,
    form 2) is never resumed into."""
    out = tmp_path / "chains.jsonl"
    assert invoke("corefs", docs, "-m", ckpts["corefs"], "-o", out, "--quiet").exit_code == 0
    sidecar = tmp_path / "chains.jsonl.lfcli-job.json"
    written = json.loads(sidecar.read_text())
    assert written["row_form"] == 3
    for form, row in ((1, {"id": "a.txt", "clusters": []}), (2, {"id": "a.txt", "chains": []})):
        record = dict(written)
        if form == 1:
            del record["row_form"]
        else:
            record["row_form"] = form
        sidecar.write_text(json.dumps(record))
        out.write_text(json.dumps(row) + "\n")
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        r = invoke("corefs", docs, "-m", ckpts["corefs"], "-o", out, "--resume")
        assert r.exit_code == 2 and r.stdout == "" and r.stderr == (
            f"lfcli: error: {out} holds `lfcli corefs` rows of an older form (form {form}; this lfcli writes form 3, see "
            "the README's output schemas), and one file never mixes the two: use --force to start over\n")
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("task", ["corefs", "embed", "qa", "classify"])
def test_an_empty_document_is_an_error_row_in_every_task(ckpts, tmp_path, task):
    """As the README says of all tasks: an empty or blank document gets an `empty document`
    error row, the others still run, and a job of nothing but empty documents exits 1."""
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("  \n\n ")
    question = ("-q", "Who came?") if task == "qa" else ()
    r = invoke(task, tmp_path, "-m", ckpts[task], *question, "--quiet")
    assert r.exit_code == 1
    rows = rows_of(r.stdout)
    assert [row["id"] for row in rows] == ["blank.txt", "empty.txt"]
    assert all("empty document" in row["error"] for row in rows)
    (tmp_path / "story.txt").write_text("Anna came home. She was tired.")
    r = invoke(task, tmp_path, "-m", ckpts[task], *question, "--quiet")
    assert r.exit_code == 1, r.output  # two documents failed: exit 1, the third's row written
    assert ["error" in row for row in rows_of(r.stdout)] == [True, True, False]
    r = invoke(task, tmp_path, "-m", ckpts[task], *question, "--quiet", "--partial-ok")
    assert r.exit_code == 0, r.output
    assert ["error" in row for row in rows_of(r.stdout)] == [True, True, False]
    import lfcli  # the Python API reads them the same way

    rows = getattr(lfcli, task)(["", "  "], model=ckpts[task], **({"question": "Who came?"} if task == "qa" else {}))
    assert rows == [{"id": "0", "error": "empty document"}, {"id": "1", "error": "empty document"}]


def test_corefs_writes_its_quotes_to_parquet(ckpts, tmp_path):
    """Row form 3: each row's quotes, {start, end, speaker}, in JSONL and Parquet alike."""
    import pyarrow.parquet as pq

    text = "Anna came in.\n\n\u201cI am cold,\u201d said Anna. \u201cVery cold.\u201d\n\nThe fire was low."
    (tmp_path / "a.txt").write_text(text)
    out = tmp_path / "chains.parquet"
    assert invoke("corefs", tmp_path / "a.txt", "-m", ckpts["corefs"], "-o", out, "--quiet").exit_code == 0
    (row,) = pq.read_table(out).to_pylist()
    assert [text[q["start"]:q["end"]] for q in row["quotes"]] == ["\u201cI am cold,\u201d", "\u201cVery cold.\u201d"]
    assert all(q["speaker"] is None or 0 <= q["speaker"] < len(row["chains"]) for q in row["quotes"])
    (line,) = rows_of(invoke("corefs", tmp_path / "a.txt", "-m", ckpts["corefs"], "--quiet").stdout)
    assert all(q.pop("page") is None for q in row["quotes"])  # Parquet's page column: null for a text file
    assert line["quotes"] == row["quotes"]
