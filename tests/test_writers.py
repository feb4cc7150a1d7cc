"""Tests of lfcli.pipelines.io.writers on real files (no mocks), including SIGKILL + resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.io.writers import FLUSH_SECONDS, open_writer, output_format, sidecar_path

SPAN = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])
TASK_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("embedding", pa.list_(pa.float32(), 4)),
        ("clusters", pa.list_(pa.list_(SPAN))),
        ("scores", pa.map_(pa.string(), pa.float64())),
        ("label", pa.string()),
        ("error", pa.string()),
    ]
)


def _task_row(i: int) -> dict:
    return {
        "id": f"doc{i:03d}",
        "embedding": np.arange(4, dtype=np.float32) + i,
        "clusters": [[{"start": i, "end": i + 3, "text": "Ms. Reyes"}, {"start": i + 40, "end": i + 43, "text": "she"}]],
        "scores": {"positive": 0.25 + i, "negative": 0.75},
        "label": "positive",
    }


def _read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _ids(path) -> list[str]:
    path = str(path)
    if path.endswith(".parquet"):
        return pq.read_table(path, columns=["id"]).column("id").to_pylist()
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as fh:
            return [row["id"] for row in json.load(fh)]
    return [row["id"] for row in _read_jsonl(path)]


# ---------------------------------------------------------------------------
# formats


def test_output_format_by_extension():
    assert output_format(None) == output_format("-") == "stdout"
    assert output_format("a.jsonl") == output_format("A.NDJSON") == "jsonl"
    assert output_format("a.json") == "json"
    assert output_format("x/a.parquet") == "parquet"
    with pytest.raises(UsageError, match=r"out\.csv: unknown output format \(extension '\.csv'\)"):
        output_format("out.csv")
    with pytest.raises(UsageError):
        open_writer("results")
    assert sidecar_path("a.parquet") == "a.parquet.parts"
    assert sidecar_path("a.json") == "a.json.parts.jsonl"
    assert sidecar_path("a.jsonl") is None


def test_stdout_jsonl_one_object_per_line(capsys):
    with open_writer(None) as w:
        w.write({"id": "a", "answer": "Münster", "score": np.float32(0.5)})
        w.write({"id": "b", "error": "empty document"})
    out = capsys.readouterr().out
    assert out == '{"id": "a", "answer": "Münster", "score": 0.5}\n{"id": "b", "error": "empty document"}\n'
    with pytest.raises(UsageError, match="--resume needs an output file"):
        open_writer("-", resume=True)


def test_jsonl_round_trip(tmp_path):
    path = str(tmp_path / "out.jsonl")
    rows = [
        {"id": "a", "text": "naïve café — 東京", "vec": np.array([1.5, 2.0], dtype=np.float32)},
        {"id": "b", "nan": float("nan"), "nested": {"x": [float("inf"), 1.0]}},
        {"id": "c", "odd": "lone \ud800 surrogate"},
    ]
    with open_writer(path) as w:
        for row in rows:
            w.write(row)
        assert w.done_ids == {"a", "b", "c"}
    raw = open(path, "rb").read()
    assert "naïve café — 東京".encode() in raw  # ensure_ascii=False
    back = _read_jsonl(path)
    assert back[0] == {"id": "a", "text": "naïve café — 東京", "vec": [1.5, 2.0]}
    assert back[1] == {"id": "b", "nan": None, "nested": {"x": [None, 1.0]}}
    assert back[2] == {"id": "c", "odd": "lone \ud800 surrogate"}


def test_json_array_round_trip_and_empty(tmp_path):
    path = str(tmp_path / "out.json")
    with open_writer(path) as w:
        w.write({"id": "1", "label": "contract"})
        w.write({"id": "2", "label": None, "error": "empty document"})
        assert os.path.exists(path + ".parts.jsonl")
        assert not os.path.exists(path)
    assert json.load(open(path)) == [{"id": "1", "label": "contract"}, {"id": "2", "label": None, "error": "empty document"}]
    assert not os.path.exists(path + ".parts.jsonl")
    empty = str(tmp_path / "empty.json")
    open_writer(empty).close()
    assert json.load(open(empty)) == []


def test_parquet_round_trip_with_nested_task_schema(tmp_path):
    path = str(tmp_path / "out.parquet")
    with open_writer(path, schema=TASK_SCHEMA, rows_per_group=4) as w:
        for i in range(10):
            w.write(_task_row(i))
        w.write({"id": "bad", "error": "not valid UTF-8"})  # an error row fits the schema
        assert len(os.listdir(path + ".parts")) == 2  # two complete groups of 4 flushed as we go
    assert not os.path.exists(path + ".parts")
    pf = pq.ParquetFile(path)
    assert pf.schema_arrow.equals(pa.schema([f.with_nullable(True) for f in TASK_SCHEMA]))
    assert pf.num_row_groups == 3
    rows = pf.read().to_pylist(maps_as_pydicts="strict")
    assert [r["id"] for r in rows] == [f"doc{i:03d}" for i in range(10)] + ["bad"]
    assert rows[2]["embedding"] == [2.0, 3.0, 4.0, 5.0]
    assert rows[2]["clusters"] == [[{"start": 2, "end": 5, "text": "Ms. Reyes"}, {"start": 42, "end": 45, "text": "she"}]]
    assert rows[2]["scores"] == {"positive": 2.25, "negative": 0.75}
    assert rows[-1] == {"id": "bad", "embedding": None, "clusters": None, "scores": None, "label": None, "error": "not valid UTF-8"}


def test_parquet_schema_gets_nullable_fields_and_error_column(tmp_path):
    path = str(tmp_path / "out.parquet")
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("score", pa.float64(), nullable=False)])
    with open_writer(path, schema=schema) as w:
        w.write({"id": "a", "score": 1.0})
        w.write({"id": "b", "error": "boom"})
        with pytest.raises(ValueError, match="'surprise'"):
            w.write({"id": "c", "surprise": 1})
    table = pq.read_table(path)
    assert table.schema.names == ["id", "score", "error"]
    assert all(f.nullable for f in table.schema)
    assert table.to_pylist() == [{"id": "a", "score": 1.0, "error": None}, {"id": "b", "score": None, "error": "boom"}]


def test_parquet_row_that_does_not_fit_is_named(tmp_path):
    path = str(tmp_path / "out.parquet")
    w = open_writer(path, schema=TASK_SCHEMA, rows_per_group=2)
    w.write(_task_row(0))
    with pytest.raises(ValueError, match="row 'x' does not fit the output schema"):
        w.write({"id": "x", "embedding": [1.0, 2.0]})  # wrong fixed size


def test_parquet_inferred_schema_unifies_parts(tmp_path):
    path = str(tmp_path / "out.parquet")
    with open_writer(path, rows_per_group=2) as w:
        w.write({"id": "a", "error": "empty document"})  # first part: no answer column at all
        w.write({"id": "b", "answer": None, "error": "empty document"})
        w.write({"id": "c", "answer": "the lessee", "score": 1})
        w.write({"id": "d", "answer": "the lessor", "score": 0.5})
    table = pq.read_table(path)
    assert table.schema.field("answer").type == pa.string()
    assert table.schema.field("score").type == pa.float64()
    assert table.column("answer").to_pylist() == [None, None, "the lessee", "the lessor"]
    assert table.column("error").to_pylist() == ["empty document", "empty document", None, None]


def test_empty_parquet_output(tmp_path):
    path = str(tmp_path / "out.parquet")
    open_writer(path, schema=TASK_SCHEMA).close()
    assert pq.read_table(path).num_rows == 0
    path2 = str(tmp_path / "out2.parquet")
    open_writer(path2).close()
    assert pq.read_table(path2).schema.names == ["id", "error"]


# ---------------------------------------------------------------------------
# existing outputs


@pytest.mark.parametrize("name", ["out.jsonl", "out.json", "out.parquet"])
def test_existing_output_is_refused_without_force_or_resume(tmp_path, name):
    path = str(tmp_path / name)
    with open_writer(path) as w:
        w.write({"id": "old"})
    with pytest.raises(UsageError) as info:
        open_writer(path)
    assert str(info.value) == f"{path} exists; pass --force to overwrite or --resume to continue"
    assert info.value.exit_code == 2
    with pytest.raises(UsageError, match="cannot be used together"):
        open_writer(path, force=True, resume=True)
    with open_writer(path, force=True) as w:
        assert w.done_ids == set()
        w.write({"id": "new"})
    assert _ids(path) == ["new"]


@pytest.mark.parametrize("name", ["out.json", "out.parquet"])
def test_unfinished_run_is_refused(tmp_path, name):
    path = str(tmp_path / name)
    w = open_writer(path, rows_per_group=1)
    w.write({"id": "a"})
    w.flush()
    # no close(): the sidecar is there but no output file
    assert not os.path.exists(path)
    with pytest.raises(UsageError, match=r"has an unfinished run .*pass --resume to continue or --force"):
        open_writer(path)
    with open_writer(path, force=True) as w2:
        w2.write({"id": "b"})
    assert _ids(path) == ["b"]
    assert not os.path.exists(sidecar_path(path))


def test_output_in_missing_folder_is_an_input_error(tmp_path):
    folder = tmp_path / "no" / "such"
    with pytest.raises(InputError) as info:
        open_writer(str(folder / "out.jsonl"))
    assert str(info.value) == f"output folder {folder} does not exist"
    assert info.value.exit_code == 1
    os.mkdir(tmp_path / "dir.jsonl")
    with pytest.raises(InputError, match="is a folder"):
        open_writer(str(tmp_path / "dir.jsonl"))


# ---------------------------------------------------------------------------
# resume


@pytest.mark.parametrize("name", ["out.jsonl", "out.json", "out.parquet"])
def test_resume_finished_output_appends(tmp_path, name):
    path = str(tmp_path / name)
    schema = TASK_SCHEMA if name.endswith(".parquet") else None
    with open_writer(path, schema=schema, rows_per_group=2) as w:
        for i in range(5):
            w.write(_task_row(i) if schema else {"id": f"doc{i:03d}", "n": i})
    with open_writer(path, schema=schema, resume=True, rows_per_group=2) as w:
        assert w.done_ids == {f"doc{i:03d}" for i in range(5)}
        for i in range(8):
            if f"doc{i:03d}" not in w.done_ids:
                w.write(_task_row(i) if schema else {"id": f"doc{i:03d}", "n": i})
    assert _ids(path) == [f"doc{i:03d}" for i in range(8)]
    if schema:
        assert pq.read_table(path).schema.field("embedding").type == pa.list_(pa.float32(), 4)
    # resuming a complete output with nothing left to do keeps it intact
    with open_writer(path, schema=schema, resume=True) as w:
        assert len(w.done_ids) == 8
    assert _ids(path) == [f"doc{i:03d}" for i in range(8)]


EMBED_JOB = {"command": "embed", "model": "minilm-l6-long", "model_fingerprint": "abc", "inputs": ["docs"],
             "options": {"--pooling": None, "--max-length": None}}


def _files(folder) -> dict[str, bytes]:
    """Every file under `folder` and its bytes: an output left untouched keeps them all."""
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(folder) for f in names}


@pytest.mark.parametrize("finished", [True, False])
@pytest.mark.parametrize("name", ["out.jsonl", "out.json", "out.parquet"])
def test_resume_refuses_another_jobs_output_and_leaves_it_untouched(tmp_path, name, finished):
    """The job is recorded with the output (Parquet: schema metadata; JSONL/JSON: a sidecar);
    --resume with another command, model, option or input, or onto an output without a
    record, is a one-line usage error before anything is read or changed."""
    path = str(tmp_path / name)
    w = open_writer(path, rows_per_group=2, job=EMBED_JOB)
    for i in range(3):
        w.write({"id": f"d{i}", "n": i})
    w.close() if finished else w.abort()
    if name.endswith(".parquet"):
        source = path if finished else os.path.join(sidecar_path(path), "part-000000.parquet")
        assert json.loads(pq.read_schema(source).metadata[b"lfcli.job"]) == EMBED_JOB
    else:
        assert json.loads(open(path + ".lfcli-job.json", encoding="utf-8").read()) == EMBED_JOB
    before = _files(tmp_path)
    others = [
        ({**EMBED_JOB, "command": "qa"}, f"{path} was written by `lfcli embed` (model minilm-l6-long); this is `lfcli qa`: "
                                         "resume with the same command or use --force"),
        ({**EMBED_JOB, "model": "./mine"}, "with model minilm-l6-long; this run has model ./mine:"),
        ({**EMBED_JOB, "model_fingerprint": "def"}, "its weights or config have changed since"),
        ({**EMBED_JOB, "options": {"--pooling": "cls", "--max-length": None}},
         "(model minilm-l6-long) with --pooling (not given); this run has --pooling cls:"),
        ({**EMBED_JOB, "inputs": ["docs", "more"]}, "with inputs docs; this run has inputs docs more:"),
    ]
    for job, message in others:
        with pytest.raises(UsageError) as info:
            open_writer(path, resume=True, job=job)
        assert message in str(info.value) and "\n" not in str(info.value)
        assert _files(tmp_path) == before
    # the same job (written by another lfcli version) continues
    with open_writer(path, resume=True, rows_per_group=2, job={**EMBED_JOB, "written_by": "lfcli 9"}) as w:
        assert w.done_ids == {"d0", "d1", "d2"}
        w.write({"id": "d3", "n": 3})
    assert _ids(path) == ["d0", "d1", "d2", "d3"]
    # an output without a record (an older lfcli's) is refused too: nothing says which job wrote it
    old = str(tmp_path / f"old-{name}")
    with open_writer(old) as w:
        w.write({"id": "x"})
    before = _files(tmp_path)
    with pytest.raises(UsageError, match=r"has no record of the job that wrote it .* use --force to start over"):
        open_writer(old, resume=True, job=EMBED_JOB)
    assert _files(tmp_path) == before
    with open_writer(old, force=True, job=EMBED_JOB) as w:
        w.write({"id": "y"})
    with open_writer(old, resume=True, job=EMBED_JOB) as w:
        assert w.done_ids == {"y"}


def test_resume_without_existing_output_starts_fresh(tmp_path):
    path = str(tmp_path / "new.parquet")
    with open_writer(path, resume=True) as w:
        assert w.done_ids == set()
        w.write({"id": "a"})
    assert _ids(path) == ["a"]


def test_jsonl_resume_truncates_a_torn_last_line(tmp_path):
    path = str(tmp_path / "out.jsonl")
    with open_writer(path) as w:
        for i in range(3):
            w.write({"id": str(i), "text": "x" * 50})
    whole = open(path, "rb").read()
    lines = whole.splitlines(keepends=True)
    # every possible cut inside the last line: it is dropped and redone
    for cut in range(len(whole) - len(lines[-1]) + 1, len(whole)):
        with open(path, "wb") as fh:
            fh.write(whole[:cut])
        with open_writer(path, resume=True) as w:
            assert w.done_ids == {"0", "1"}
            w.write({"id": "2", "text": "x" * 50})
        assert open(path, "rb").read() == whole
    # a torn *first* line: nothing is done yet
    with open(path, "wb") as fh:
        fh.write(whole[:10])
    with open_writer(path, resume=True) as w:
        assert w.done_ids == set()
    assert open(path, "rb").read() == b""


def test_jsonl_resume_refuses_a_corrupt_middle_line(tmp_path):
    path = str(tmp_path / "out.jsonl")
    with open(path, "w") as fh:
        fh.write('{"id": "a"}\nGARBAGE\n{"id": "c"}\n')
    with pytest.raises(InputError, match=r"line 2 is not valid JSON, cannot resume"):
        open_writer(path, resume=True)


def test_exception_inside_with_keeps_rows_for_resume(tmp_path):
    path = str(tmp_path / "out.parquet")
    with pytest.raises(RuntimeError):
        with open_writer(path, schema=TASK_SCHEMA, rows_per_group=100) as w:
            for i in range(3):
                w.write(_task_row(i))
            raise RuntimeError("model crashed")
    assert not os.path.exists(path)  # not finalized ...
    with open_writer(path, schema=TASK_SCHEMA, resume=True) as w:  # ... but nothing is lost
        assert w.done_ids == {"doc000", "doc001", "doc002"}
        w.write(_task_row(3))
    assert _ids(path) == ["doc000", "doc001", "doc002", "doc003"]


def test_parquet_resume_ignores_leftovers_of_any_crash_point(tmp_path):
    """Simulate the states a kill can leave between the steps of flush/close/adopt."""
    path = str(tmp_path / "out.parquet")
    parts = path + ".parts"
    # a finished output from an earlier run, plus an unfinished resume of it
    with open_writer(path, schema=TASK_SCHEMA, rows_per_group=2) as w:
        for i in range(4):
            w.write(_task_row(i))
    w = open_writer(path, schema=TASK_SCHEMA, resume=True, rows_per_group=2)
    for i in range(4, 8):
        w.write(_task_row(i))
    # killed now: the parts folder holds the adopted output + 2 new parts; add debris of
    # a torn part write, a torn merge, a torn adopt and a torn folder removal
    assert sorted(os.listdir(parts)) == ["part-000000.parquet", "part-000001.parquet", "part-000002.parquet"]
    with open(os.path.join(parts, "part-000003.parquet.tmp"), "wb") as fh:
        fh.write(b"PAR1 half a file")
    with open(path + ".tmp", "wb") as fh:
        fh.write(b"PAR1 half a merge")
    os.mkdir(parts + ".adopt-999")
    os.mkdir(parts + ".done-999")
    del w
    with open_writer(path, schema=TASK_SCHEMA, resume=True, rows_per_group=2) as w:
        assert w.done_ids == {f"doc{i:03d}" for i in range(8)}
        for i in range(8, 10):
            w.write(_task_row(i))
    assert _ids(path) == [f"doc{i:03d}" for i in range(10)]
    assert sorted(os.listdir(tmp_path)) == ["out.parquet"]

    # killed after the merged file was renamed but before the parts folder went away:
    # the parts folder (a superset of the file) is authoritative, the result is the same
    w = open_writer(path, schema=TASK_SCHEMA, resume=True, rows_per_group=2)
    w.write(_task_row(10))
    w.flush()
    shutil.copytree(parts, str(tmp_path / "saved"))
    w.close()
    os.rename(tmp_path / "saved", parts)
    with pytest.raises(UsageError):
        open_writer(path)
    with open_writer(path, schema=TASK_SCHEMA, resume=True) as w2:
        assert len(w2.done_ids) == 11
    assert _ids(path) == [f"doc{i:03d}" for i in range(11)]
    assert sorted(os.listdir(tmp_path)) == ["out.parquet"]


# ---------------------------------------------------------------------------
# SIGKILL at a random moment, then resume


WORKER = textwrap.dedent(
    """
    import sys, time
    import pyarrow as pa
    from lfcli.pipelines.io.writers import open_writer

    path, total = sys.argv[1], int(sys.argv[2])
    schema = None
    if path.endswith(".parquet"):
        schema = pa.schema([("id", pa.string()), ("n", pa.int64()), ("vec", pa.list_(pa.float32(), 8)),
                            ("text", pa.string())])
    w = open_writer(path, schema=schema, resume=True, rows_per_group=5, flush_seconds=None)
    print("resumed", len(w.done_ids), flush=True)
    for i in range(total):
        rid = f"doc{i:04d}"
        if rid in w.done_ids:
            continue
        w.write({"id": rid, "n": i, "vec": [float(i)] * 8, "text": "lorem ipsum " * (i % 50)})
        print(rid, flush=True)
        time.sleep(0.003)
    w.close()
    print("closed", flush=True)
    """
)


def _run_and_kill(path: str, total: int, kill_after: int) -> int:
    """Run the worker, SIGKILL it after it reported ``kill_after`` rows; return rows it reported."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, path, str(total)],
        stdout=subprocess.PIPE,
        text=True,
    )
    written = 0
    try:
        header = proc.stdout.readline()
        assert header.startswith("resumed"), header
        while written < kill_after:
            line = proc.stdout.readline()
            assert line.startswith("doc"), line
            written += 1
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.stdout.close()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return written


@pytest.mark.parametrize("name", ["out.jsonl", "out.parquet", "out.json"])
def test_sigkill_mid_run_then_resume(tmp_path, name):
    path = str(tmp_path / name)
    total = 120
    _run_and_kill(path, total, kill_after=23)  # killed in the middle of a row group
    _run_and_kill(path, total, kill_after=31)  # the resumed run is killed too
    # nothing is final yet for the sidecar formats; the last resume finishes the job
    done = subprocess.run(
        [sys.executable, "-c", WORKER, path, str(total)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("closed")
    resumed = int(done.stdout.split()[1])
    assert resumed >= 23 + 31 - 2 * 4  # a kill loses at most the rows still buffered (< a group)
    ids = _ids(path)
    assert Counter(ids) == Counter({f"doc{i:04d}": 1 for i in range(total)})
    if name.endswith(".parquet"):
        table = pq.read_table(path)
        assert table.schema.field("vec").type == pa.list_(pa.float32(), 8)
        for row in table.to_pylist():
            i = int(row["id"][3:])
            assert row["n"] == i and row["vec"] == [float(i)] * 8 and row["text"] == "lorem ipsum " * (i % 50)
    assert sorted(os.listdir(tmp_path)) == [name]


def test_sigkill_after_finish_then_resume_more(tmp_path):
    """Resume of a finished Parquet output, killed mid-way, then finished: still exactly once."""
    path = str(tmp_path / "out.parquet")
    done = subprocess.run([sys.executable, "-c", WORKER, path, "40"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    _run_and_kill(path, 100, kill_after=17)
    with open_writer(path, resume=True) as w:
        assert {f"doc{i:04d}" for i in range(40)} <= w.done_ids
        for i in range(100):
            rid = f"doc{i:04d}"
            if rid not in w.done_ids:
                w.write({"id": rid, "n": i, "vec": [float(i)] * 8, "text": ""})
    table = pq.read_table(path)
    assert Counter(table.column("id").to_pylist()) == Counter({f"doc{i:04d}": 1 for i in range(100)})
    assert all(row["n"] == int(row["id"][3:]) for row in table.to_pylist())


def test_json_resume_of_a_hand_formatted_array(tmp_path):
    path = str(tmp_path / "out.json")
    with open(path, "w") as fh:
        json.dump([{"id": "a", "v": [1, 2]}, {"id": "b", "v": []}], fh, indent=2)
    with open_writer(path, resume=True) as w:
        assert w.done_ids == {"a", "b"}
        w.write({"id": "c", "v": [3]})
    assert json.load(open(path)) == [{"id": "a", "v": [1, 2]}, {"id": "b", "v": []}, {"id": "c", "v": [3]}]
    with open(path, "w") as fh:
        fh.write('{"id": "not an array"}')
    with pytest.raises(InputError, match="not a JSON array, cannot resume"):
        open_writer(path, resume=True)


def test_parquet_time_based_flush(tmp_path):
    path = str(tmp_path / "out.parquet")
    w = open_writer(path, rows_per_group=1000, flush_seconds=0.0)
    w.write({"id": "a"})
    w.write({"id": "b"})
    assert len(os.listdir(path + ".parts")) == 2  # each write was old enough to flush
    w.close()
    assert _ids(path) == ["a", "b"]
    # by default rows wait at most a few seconds for a row group to fill (issue #15: a job
    # killed in its first minute used to keep nothing)
    assert open_writer(str(tmp_path / "default.parquet")).flush_seconds == FLUSH_SECONDS <= 5


@pytest.mark.parametrize("name", ["out.jsonl", "out.json", "out.parquet"])
def test_failure_before_the_first_row_leaves_nothing(tmp_path, name):
    path = str(tmp_path / name)
    with pytest.raises(InputError):
        with open_writer(path):
            raise InputError("docs/missing.txt: no such file or folder")
    assert os.listdir(tmp_path) == []
    with open_writer(path) as w:  # the rerun is not refused
        w.write({"id": "a"})
    assert _ids(path) == ["a"]
