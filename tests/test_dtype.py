"""`--dtype auto`: bf16 where the CPU has native bf16, fp32 elsewhere, and the accuracy guard
that makes bf16 safe as a default (bundled models, the repository's examples).

The bf16 runs here ask for `dtype="bfloat16"` explicitly, so the guard is checked on every
machine (on a CPU without native bf16 it is emulated: slower, same numbers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import lfcli
from lfcli.models.bundled import DEFAULT_MODEL, bundled_available
from lfcli.pipelines.eval.metrics import coref_scores
from lfcli.pipelines.infer.precision import bf16_pays, cpu_has_native_bf16, resolve_dtype

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _needs_bundled():
    why = bundled_available(DEFAULT_MODEL)
    if why is not None:
        pytest.skip(f"the bundled model cannot be built here: {why}")


@pytest.fixture(autouse=True)
def _two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(min(2, before))
    yield
    torch.set_num_threads(before)


def test_auto_follows_the_cpu(monkeypatch):
    cpu = torch.device("cpu")
    assert resolve_dtype("auto", cpu) == (torch.bfloat16 if bf16_pays() else torch.float32)
    assert resolve_dtype("float32", cpu) == torch.float32
    assert resolve_dtype("bf16", cpu) == torch.bfloat16
    # oneDNN capped below AVX-512 (how an AVX2-only machine looks to it): no native bf16.
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert not cpu_has_native_bf16()
    assert resolve_dtype("auto", cpu) == torch.float32


def test_version_verbose_names_the_path():
    out = subprocess.run([sys.executable, "-m", "lfcli", "--version", "--verbose"], capture_output=True, text=True, check=True).stdout
    expected = "bfloat16 on this CPU" if bf16_pays() else "float32 on this CPU"
    assert "--dtype auto: " + expected in out and "torch " in out


def test_heads_stay_fp32_under_a_bf16_encoder(tmp_path):
    from checkpoints import make_checkpoint

    from lfcli.models import LongformerForQuestionAnswering, LongformerModel

    folder = make_checkpoint(tmp_path / "qa", "LongformerForQuestionAnswering")
    qa = LongformerForQuestionAnswering.from_pretrained(folder, dtype=torch.bfloat16)
    assert qa.longformer.encoder.layer[0].attention.self.query.weight.dtype == torch.bfloat16
    assert qa.qa_outputs.weight.dtype == torch.float32
    ids = torch.randint(3, 60, (2, 40))
    start, end = qa(ids, attention_mask=torch.ones_like(ids))
    assert start.dtype == end.dtype == torch.float32
    # The bare encoder has no head: everything in bf16; float32 keeps every weight fp32.
    assert {p.dtype for p in LongformerModel.from_pretrained(folder, dtype=torch.bfloat16).parameters()} == {torch.bfloat16}
    assert {p.dtype for p in LongformerForQuestionAnswering.from_pretrained(folder, dtype=torch.float32).parameters()} == {torch.float32}


def _long_text(tokens_wanted: int) -> str:
    docs = [p.read_text(encoding="utf-8") for p in sorted((EXAMPLES / "docs").glob("*.txt"))]
    text, k = "", 0
    while len(text) < tokens_wanted * 4.5:  # ~4.5 characters per token in these English texts
        text += docs[k % len(docs)] + "\n\n"
        k += 1
    return text


def test_bf16_embeddings_match_fp32():
    _needs_bundled()
    docs = [{"id": "short", "text": "The tenant must give notice six months before the term ends."},
            {"id": "8k", "text": _long_text(8200)}]
    fp32 = lfcli.embed(docs, dtype="float32")
    bf16 = lfcli.embed(docs, dtype="bfloat16")
    assert bf16[1]["n_tokens"] >= 8000
    for a, b in zip(fp32, bf16):
        cos = torch.nn.functional.cosine_similarity(torch.tensor(a["embedding"]), torch.tensor(b["embedding"]), dim=0)
        assert cos >= 0.999, (a["id"], float(cos))


def test_bf16_classify_labels_unchanged():
    _needs_bundled()
    docs = [{"id": p.name, "text": p.read_text(encoding="utf-8")} for p in sorted((EXAMPLES / "docs").glob("*.txt"))]
    labels = ["legal contract", "medical record", "news report", "fiction"]
    fp32 = lfcli.classify(docs, labels=labels, dtype="float32")
    bf16 = lfcli.classify(docs, labels=labels, dtype="bfloat16")
    assert [r["label"] for r in fp32] == [r["label"] for r in bf16]
    for a, b in zip(fp32, bf16):
        assert abs(a["score"] - b["score"]) < 0.02


def _spans(rows: list[dict], dtype: str) -> list[tuple[tuple[int, int], dict[tuple[int, int], float]]]:
    """Each question's best answer as a (start, end) character span, with the margin (span
    logit over the window's no-answer) of every span any window proposed, overlapping ones
    included (the answer list itself leaves those out)."""
    from lfcli.pipelines.io.readers import Document

    pipe = lfcli.Pipeline("qa", dtype=dtype, top_k=1)
    out = []
    for row in rows:
        doc = Document(row["id"], row["text"], fields={"question": row["question"]})
        prepared = pipe.task.prepare(0, doc)
        offsets = prepared.encoded.offsets
        results = pipe._run_one(0, doc)
        ts, te, _ = pipe.task.ranked(prepared, results)[0]
        margins = {}
        for window in results:
            for margin, a, b in window:
                span = (offsets[a][0], offsets[b][1])
                margins[span] = max(margin, margins.get(span, margin))
        out.append(((offsets[ts][0], offsets[te][1]), margins))
    return out


def test_bf16_answer_spans_unchanged():
    """bf16 picks fp32's answer, except where fp32's own margins cannot tell two answers apart
    by more than bf16's rounding moves a margin: a near tie, decided by a margin check. The
    tie is measured on these very questions, not tuned on one CPU: twice the largest change
    bf16 makes to any span's margin (two spans' errors may go opposite ways). CPUs that
    multiply bf16 natively (AVX512-BF16, AMX) and those that emulate it round differently, and
    a tolerance fixed on one flipped a near tie on another."""
    _needs_bundled()
    rows = [json.loads(line) for line in (EXAMPLES / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    fp32, bf16 = _spans(rows, "float32"), _spans(rows, "bfloat16")
    moves = [abs(m32[s] - m16[s]) for (_, m32), (_, m16) in zip(fp32, bf16) for s in m32.keys() & m16.keys()]
    tie = 2 * max(moves)
    assert 0 < tie < 0.5, tie  # bf16 moves a margin by a few hundredths (8-bit mantissas), not more
    clear = 0
    for row, (best, m32), (got, _) in zip(rows, fp32, bf16):
        tied = {span for span, margin in m32.items() if abs(m32[best] - margin) <= tie}
        if tied == {best}:
            clear += 1
            assert got == best, (row["id"], best, got)
        else:  # fp32 itself cannot tell these apart at bf16's precision: bf16 must pick one of them
            assert got in tied, (row["id"], best, got, sorted(tied))
    assert clear >= 3, "too few questions with a clear best answer to guard anything"
    # and the rows' scores, calibrated probabilities, barely move
    for a, b in zip(lfcli.qa(rows, dtype="float32"), lfcli.qa(rows, dtype="bfloat16")):
        assert 0 <= a["score"] <= 1 and abs(a["score"] - b["score"]) < 0.1, (a["id"], a["score"], b["score"])


def test_bf16_coreference_chains_agree():
    _needs_bundled()
    docs = [{"id": p.name, "text": p.read_text(encoding="utf-8")} for p in sorted((EXAMPLES / "docs").glob("*.txt"))]

    def chains(dtype):
        return {r["id"]: [[(m["start"], m["end"]) for m in c] for c in (chain["mentions"] for chain in r["chains"])] for r in lfcli.corefs(docs, dtype=dtype)}

    fp32, bf16 = chains("float32"), chains("bfloat16")
    agreement = coref_scores([(fp32[k], bf16[k]) for k in fp32])
    # Measured 97.6 (one mention of one chain moved, in one of the four documents).
    assert agreement["conll_f1"] >= 95, agreement
    assert agreement["mentions"]["f1"] >= 97, agreement


def test_bf16_runs_where_onednn_has_no_bf16(tmp_path):
    """An AVX2-only CPU, as oneDNN sees it under ONEDNN_MAX_CPU_ISA=AVX2 (read once, at start:
    a fresh process): `--dtype auto` is fp32, and an explicit bf16 still runs (emulated), its
    fused FFN falling back to the plain composition instead of failing in oneDNN."""
    from checkpoints import make_checkpoint

    folder = make_checkpoint(tmp_path / "enc", "LongformerModel", attention_window=8)
    code = (
        "import sys, torch\n"
        "from lfcli.models import LongformerModel\n"
        "from lfcli.pipelines.infer.precision import resolve_dtype\n"
        "assert resolve_dtype('auto', torch.device('cpu')) == torch.float32\n"
        f"m = LongformerModel.from_pretrained({str(folder)!r}, dtype=torch.bfloat16)\n"
        "ids = torch.randint(5, 100, (1, 40))\n"
        "with torch.inference_mode():\n"
        "    out = m(ids, attention_mask=torch.ones_like(ids))\n"
        "assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()\n"
        "print('ok')\n"
    )
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


def test_fp16_on_a_cpu_says_it_is_slow_and_names_the_fast_choice(capsys):
    from lfcli.pipelines.infer.precision import cpu_has_native_fp16, resolve_dtype

    if cpu_has_native_fp16():
        pytest.skip("this CPU multiplies fp16 natively (AMX-FP16)")
    cpu = torch.device("cpu")
    assert resolve_dtype("float16", cpu) == torch.float16  # it still runs, as asked
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dtype float16 is slow on this CPU" in err and "--dtype auto" in err
    for name in ("auto", "float32", "bfloat16"):
        resolve_dtype(name, cpu)
    assert capsys.readouterr().err == ""


def test_version_verbose_lists_the_native_dtypes():
    from lfcli.pipelines.infer.precision import cpu_has_native_bf16

    out = subprocess.run([sys.executable, "-m", "lfcli", "--version", "--verbose"], capture_output=True, text=True,
                         check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("native dtypes on this CPU: "))
    assert line.split(": ", 1)[1].split(", ")[:2] == (["float32", "bfloat16"] if cpu_has_native_bf16() else ["float32"])


def test_auto_takes_bf16_only_where_it_was_measured_faster(monkeypatch, tmp_path):
    """A CPU with AVX512_BF16 may still multiply bf16 at half fp32's rate (AMX hidden): auto
    reads the machine's measurement, kept in the cache folder, and takes fp32 there."""
    from lfcli.pipelines.infer import precision

    monkeypatch.setenv("LFCLI_CACHE", str(tmp_path))
    record = precision.bf16_record_path()
    assert str(record).startswith(str(tmp_path))
    cpu = torch.device("cpu")
    measured = precision.bf16_pays()  # measured now, and kept (a CPU without native bf16: nothing to measure)
    if cpu_has_native_bf16():
        assert record.is_file() and json.loads(record.read_text())["bf16_pays"] == measured
    record.parent.mkdir(parents=True, exist_ok=True)
    for pays in (False, True):
        record.write_text(json.dumps({"bf16_pays": pays}))
        precision.bf16_measured_faster.cache_clear()
        expected = torch.bfloat16 if pays and cpu_has_native_bf16() else torch.float32
        assert resolve_dtype("auto", cpu) == expected
        assert precision.autocast_for(cpu, "auto")[1] == (pays and cpu_has_native_bf16())
    precision.bf16_measured_faster.cache_clear()
