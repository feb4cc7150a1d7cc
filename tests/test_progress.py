"""The live progress line on a terminal: a single long document shows its windows running
before its row is out, not "0 docs" for the whole run."""

from __future__ import annotations

import io
import time

import pytest
from checkpoints import task_checkpoints

from lfcli.pipelines.infer.runner import Pipeline, Stats
from lfcli.pipelines.io.document import Document
from lfcli.pipelines.progress import live_words, progress_reporter


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    return task_checkpoints(tmp_path_factory.mktemp("ckpt"))


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_document_reports_its_windows_before_its_row(ckpts):
    pipe = Pipeline("embed", ckpts["embed"], max_length=64, batch_size=1, max_tokens=64)
    seen = []
    text = "The court held that the contract was void, and the tenant left. " * 60
    rows = list(pipe.run([Document("long.txt", text)],
                         progress=lambda s: seen.append((s.docs, s.windows, s.windows_queued))))
    assert len(rows) == 1 and "error" not in rows[0]
    during = [(w, q) for docs, w, q in seen if docs == 0]
    assert len(during) >= 10 and [w for w, _ in during] == list(range(1, len(during) + 1))  # after every batch
    assert all(q == during[0][1] for _, q in during) and seen[-1][0] == 1
    assert pipe.stats.tokens_run == pipe.stats.tokens == rows[0]["n_tokens"]  # each document token once


def test_the_live_line_says_the_windows_run_within_a_document():
    now = time.perf_counter()
    done, rates = live_words(Stats(docs=0, windows=120, windows_queued=800, tokens_run=24_000, started=now - 10), now)
    assert done == "0 docs  120/800 windows (15%)" and rates == "0.00 docs/s  2,400 tokens/s"
    done, _ = live_words(Stats(docs=3, tokens=900, windows=40, windows_queued=40, started=now - 1), now)
    assert done == "3 docs"  # every window read so far has run: documents only
    stream = Terminal()
    with progress_reporter(stream=stream) as report:
        report(Stats(docs=0, windows=7, windows_queued=20, tokens_run=1_000, started=now))
    assert "0 docs  7/20 windows (35%)" in stream.getvalue()


def test_a_job_of_known_size_counts_its_documents_for_a_total(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lfcli.pipelines.io.counts import count_documents

    (tmp_path / "a.txt").write_text("one")
    (tmp_path / "b.jsonl").write_text('{"text": "x"}\n\n{"text": "y"}\n')
    pq.write_table(pa.table({"text": ["p", "q", "r"]}), tmp_path / "c.parquet")
    assert count_documents([tmp_path]) == 1 + 2 + 3
    assert count_documents([tmp_path / "c.parquet", tmp_path / "a.txt"]) == 4
    assert count_documents(["-"]) is None and count_documents([tmp_path / "missing"]) is None


def test_the_bar_shows_the_total_and_time_left_on_a_terminal():
    from lfcli.pipelines.infer.runner import Stats

    out = Terminal()
    with progress_reporter(stream=out, total=10) as report:
        stats = Stats(started=time.perf_counter() - 2.0, docs=4, tokens=400)
        report(stats)
    text = out.getvalue()
    assert "4/10" in text and "ETA" in text
