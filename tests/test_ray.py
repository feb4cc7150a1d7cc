"""`--engine ray`: the same jobs on Ray Data (issue 14), on small real checkpoints and real
Parquet files, against a local Ray instance of 2 CPUs bound to the loopback address.

Marked `ray`; they skip, saying why, where Ray is not installed (`pip install 'lfcli[ray]'`).
The whole module takes about a minute and a half on this project's 2-core machine: most of
it is Ray starting and each job's actor importing torch and loading its model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from checkpoints import task_checkpoints
from tolerance import assert_rows_close
from typer.testing import CliRunner

from lfcli.cli import app

# Read by Ray when it is first imported: bind 127.0.0.1, not the machine's network address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

pytestmark = pytest.mark.ray
runner = CliRunner()
SENTENCES = [
    "The court held that the contract was void because the seller had concealed the defect.",
    "Patients who received the treatment recovered faster than those who did not.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "She said that he would come back before the winter, but he never did.",
]
ROWS_PER_FILE = 80


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance for this module: 2 CPUs, loopback only, no dashboard. Yields its
    address, for jobs run in subprocesses (`--ray-address`)."""
    import logging

    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'lfcli[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    return task_checkpoints(tmp_path_factory.mktemp("ckpt"))


def _text(f: int, i: int):
    """Mostly good rows of 1-5 sentences; every 11th long enough (~250 tokens) to be cut into
    windows by the 128-position model; some null and some blank ones."""
    if i % 17 == 5:
        return None
    if i % 23 == 7:
        return "   "
    text = " ".join(SENTENCES[(f + i + k) % 4] for k in range(1 + i % 5))
    return text * 8 if i % 11 == 0 else text


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A folder of 3 Parquet files (240 rows, row groups of 30), with a doc_id column, a body
    column and a question column (null on every 13th row)."""
    folder = tmp_path_factory.mktemp("dataset")
    for f in range(3):
        table = pa.table({
            "doc_id": [f"f{f}-{i}" for i in range(ROWS_PER_FILE)],
            "body": [_text(f, i) for i in range(ROWS_PER_FILE)],
            "question": [None if i % 13 == 3 else "What was void?" for i in range(ROWS_PER_FILE)],
        })
        pq.write_table(table, folder / f"part-{f}.parquet", row_group_size=30)
    return folder


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _rows(path: Path) -> dict[str, dict]:
    table = pq.read_table(path) if path.is_file() else pads.dataset(path, format="parquet").to_table()
    rows = table.to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "an id appears twice"
    return {r["id"]: r for r in rows}


@pytest.mark.parametrize("job", ["embed", "classify", "qa", "zero-shot"])
def test_ray_engine_gives_the_local_engines_rows(ray_cluster, ckpts, dataset, tmp_path, job):
    # embed takes ids from a column; classify and qa number the rows (ids "part-0.parquet:17").
    # Zero-shot classify's label priors (--label-prior auto) are measured on the job's first
    # documents, there as here: a label that is the first sentence takes most rows, so they apply.
    task = "classify" if job == "zero-shot" else job
    model = ckpts["embed" if job == "zero-shot" else task]
    common = ["--text-column", "body", "-m", model, "--dtype", "float32", "--quiet", "--partial-ok"]  # bad rows on purpose
    if task == "embed":
        common += ["--id-column", "doc_id"]
    if job == "zero-shot":
        common += ["--labels", f"{SENTENCES[0]},medicine,fiction,politics"]
    local, out = tmp_path / "local.parquet", tmp_path / "out"
    r = invoke(task, dataset, *common, "-o", local)
    assert r.exit_code == 0, r.output
    r = invoke(task, dataset, *common, "-o", out, "--engine", "ray", "--workers", "8")
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    # 2 CPUs: one for an actor, one kept for reading and writing; 8 asked, so said and shrunk
    assert "--workers 8: the cluster has room for 1" in r.stderr
    assert pads.dataset(out, format="parquet").schema.equals(pq.read_schema(local), check_metadata=False)
    want, got = _rows(local), _rows(out)
    assert len(want) == 3 * ROWS_PER_FILE and got.keys() == want.keys()
    errors = [k for k, row in want.items() if row["error"]]
    assert 10 < len(errors) < 60  # null and blank texts (and, for qa, rows without a question)
    # ids, labels, spans, token counts and errors exactly; scores, embeddings and answer scores
    # to float rounding: the actor batches and threads differently from the local process
    assert_rows_close(got, want)
    if task == "embed":
        assert max(row["n_tokens"] or 0 for row in want.values()) > 128  # windowed documents ran
    # the same output again is refused at once, before Ray is asked for anything
    r = invoke(task, dataset, *common, "-o", out, "--engine", "ray")
    assert r.exit_code == 2 and "--resume" in r.stderr and r.stderr.count("\n") == 1
    # and so is another job's --resume onto it (the job is in the manifest's header), OUT untouched
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    other = "corefs" if task != "corefs" else "embed"
    r = invoke(other, dataset, "--text-column", "body", "-m", ckpts[other], "-o", out, "--engine", "ray", "--resume")
    assert r.exit_code == 2 and r.stderr == (f"lfcli: error: {out} was written by `lfcli {task}` (model {model}); "
                                             f"this is `lfcli {other}`: resume with the same command or use --force\n")
    r = invoke(task, dataset, *common, "-o", out, "--engine", "ray", "--resume", "--dtype", "bfloat16")
    assert r.exit_code == 2 and "with --dtype float32; this run has --dtype bfloat16" in r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_killed_job_resumes_with_every_id_once(ray_cluster, ckpts, dataset, tmp_path):
    out = tmp_path / "out"
    args = [sys.executable, "-m", "lfcli", "embed", dataset, "--text-column", "body", "--id-column", "doc_id",
            "-m", ckpts["embed"], "--dtype", "float32", "-o", out, "--engine", "ray", "--ray-address", ray_cluster,
            "--partial-ok"]  # the dataset's null and blank texts are error rows on purpose
    env = {**os.environ, "LFCLI_RAY_GROUP_MB": "0.01"}  # ~one group per file: three Ray jobs
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    manifest = out / "_lfcli_manifest.jsonl"
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if manifest.exists() and len(manifest.read_text().splitlines()) >= 2:  # header + one group
            break
        time.sleep(0.1)
    assert proc.poll() is None, f"the job ended before it could be killed: {proc.stderr.read().decode()[-500:]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = json.loads(manifest.read_text().splitlines()[1])["rows"]
    r = subprocess.run([str(a) for a in args + ["--resume"]], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""  # Ray's start-up lines go to stderr
    assert f"{done_before} already in the output" in r.stderr
    # and Ray says nothing that is not the user's business: no token notice, no error line
    # about actor restarts, no "will hang" warning; only lfcli's own lines
    assert all(line.startswith("lfcli: ") for line in r.stderr.splitlines()), r.stderr
    ids = pads.dataset(out, format="parquet").to_table(columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == sorted(f"part-{f}.parquet:f{f}-{i}" for f in range(3) for i in range(ROWS_PER_FILE))


def test_a_pool_the_cluster_cannot_hold_fails_at_once(ray_cluster, ckpts, dataset, tmp_path):
    r = invoke("embed", dataset, "--text-column", "body", "-m", ckpts["embed"], "-o", tmp_path / "out",
               "--engine", "ray", "--workers", "8", "--cpus-per-worker", "2")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
    assert "the Ray cluster has 2 CPUs; one worker needs 2 CPU, plus 1 CPU kept for reading and writing" in r.stderr
    assert not list((tmp_path / "out").glob("**/*.parquet"))  # refused before any row was written


def test_engine_usage_errors(ckpts, dataset, tmp_path):
    """Refused in one line with exit 2, before any input is read or Ray starts."""
    enc = ckpts["embed"]
    cases = [
        (["embed", dataset, "-m", enc, "--workers", "2"], "--workers needs --engine ray"),
        (["embed", dataset, "-m", enc, "--engine", "spark"], "choose local or ray"),
        (["embed", dataset, "-m", enc, "--engine", "ray"], "give -o FOLDER/"),
        (["embed", dataset, "-m", enc, "--engine", "ray", "-o", tmp_path / "x.jsonl"], "names a JSON file"),
        (["embed", dataset, "-m", enc, "--engine", "ray", "--cpus-per-worker", "0", "-o", tmp_path / "o"], "must be positive"),
    ]
    for args, message in cases:
        r = invoke(*args)
        assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1, (args, r.output)


def test_resume_of_an_output_without_a_job_record_is_refused(ckpts, dataset, tmp_path):
    """A manifest an older lfcli wrote has no job record: --resume cannot tell it is this
    job, so it is refused (before Ray starts), and nothing in OUT/ changes."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "_lfcli_manifest.jsonl").write_text(json.dumps({"lfcli": "ray-engine/1", "task": "embed"}) + "\n")
    (out / "part.parquet").write_bytes(b"rows of the older run")
    r = invoke("embed", dataset, "--text-column", "body", "-m", ckpts["embed"], "-o", out, "--engine", "ray", "--resume")
    assert r.exit_code == 2 and "has no record of the job that wrote it" in r.stderr and r.stderr.count("\n") == 1
    assert (out / "part.parquet").read_bytes() == b"rows of the older run"


def test_qa_without_any_question_is_refused_before_ray_starts(ckpts, tmp_path):
    pq.write_table(pa.table({"id": ["a"], "text": ["The court held."]}), tmp_path / "t.parquet")
    r = invoke("qa", tmp_path / "t.parquet", "-m", ckpts["qa"], "-o", tmp_path / "out", "--engine", "ray")
    assert r.exit_code == 2 and "pass -q/--question 'QUESTION'" in r.stderr and not (tmp_path / "out").exists()


def test_rays_noise_is_filtered_and_its_other_warnings_kept():
    """Ray's token-authentication notice and its "no available CPUs ... will hang" warning (a
    pool that takes every CPU; lfcli keeps one for reading and writing) are dropped where Ray
    logs them; other warnings of the same loggers still show."""
    import logging

    from lfcli.pipelines.infer.ray_engine import require_ray

    pytest.importorskip("ray", reason="Ray is not installed: pip install 'lfcli[ray]'")
    require_ray(starts_local=False)
    from ray._private.authentication import authentication_token_setup

    shown: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: shown.append(record.getMessage())
    loggers = [logging.getLogger(authentication_token_setup.__name__), logging.getLogger("ray.data.dataset")]
    for logger in loggers:  # Ray's loggers do not propagate to the root: listen on them
        logger.addHandler(handler)
    try:
        authentication_token_setup._warn_token_auth_enabled()  # Ray's own notice, as ray.init logs it
        loggers[1].warning("Warning: The Ray cluster currently does not have any available CPUs. The Dataset job "
                           "will hang unless more CPUs are freed up.")
        loggers[1].warning("a warning that matters")
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    assert shown == ["a warning that matters"]


def test_not_parquet_is_refused(ray_cluster, ckpts, tmp_path):
    records = tmp_path / "r.jsonl"
    records.write_text('{"id": 1, "text": "One."}\n')
    r = invoke("embed", records, "-m", ckpts["embed"], "--engine", "ray", "-o", tmp_path / "out")
    assert r.exit_code == 2 and "--engine ray reads Parquet" in r.stderr


def test_without_ray_the_error_says_how_to_install_it(ckpts, dataset, tmp_path):
    """Ray absent (its import blocked in a fresh interpreter): one line, exit 2."""
    code = ("import sys; sys.modules['ray'] = None; from lfcli.cli import main; "
            f"sys.argv = ['lfcli', 'embed', {str(dataset)!r}, '-m', {str(ckpts['embed'])!r}, "
            f"'--engine', 'ray', '-o', {str(tmp_path / 'out')!r}]; main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr == "lfcli: error: --engine ray needs Ray: pip install 'lfcli[ray]'\n"


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_million_rows_benchmark_tiny(ckpts, tmp_path, monkeypatch, engine, request):
    """benchmarks/million_rows.py end to end at --tiny (a few hundred generated sentences, the
    tiny checkpoint): rows out equal rows in, memory sampled. No timing is asserted."""
    if engine == "ray":  # join this module's Ray instance instead of starting another one
        monkeypatch.setenv("RAY_ADDRESS", request.getfixturevalue("ray_cluster"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import million_rows

    res = million_rows.main(["--tiny", "--engine", engine, "--threads", "1", "--model", str(ckpts["embed"]),
                             "--data", str(tmp_path / "no-novels"), "--json", str(tmp_path / "r.json")])
    assert res["rows_out"] == res["rows"] == million_rows.ROWS[engine]["tiny"] and res["errors"] == 0
    assert res["samples"] and max(s["mb"] for s in res["samples"]) > 0 and res["docs_per_s"] > 0
    assert json.loads((tmp_path / "r.json").read_text())["benchmark"] == "million_rows"
