"""Zero-shot classify's --label-prior: each label's mean similarity to reference documents (the
inputs themselves, usually) is subtracted before the softmax, so a label near every document
stops winning them all. A tiny real encoder (tests/checkpoints.py), float32."""

from __future__ import annotations

import json
import math

import pytest

import lfcli
from checkpoints import make_checkpoint
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.tasks.classify import ZERO_SHOT_TEMPERATURE

TEXTS = [
    "The court held that the contract was void because the seller had concealed the defect.",
    "Patients who received the treatment recovered faster than those who did not, the study found.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "The committee will meet on Tuesday to discuss the budget and the new hiring policy.",
    "She said that he would come back before the winter, but he never did.",
    "What is the capital of France? Paris is the capital and largest city of France.",
]
LABELS = ["law", "medicine", "fiction", "politics"]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return str(make_checkpoint(tmp_path_factory.mktemp("enc"), "LongformerModel"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    return path


def batch_corrected(rows: list[dict], temperature: float = ZERO_SHOT_TEMPERATURE) -> list[dict[str, float]]:
    """The rows' probabilities with each label's mean cosine over the rows subtracted, from the
    scores alone: T log p = cos - a constant per row, which the softmax ignores."""
    logits = [{lab: temperature * math.log(p) for lab, p in row["scores"].items()} for row in rows]
    mean = {lab: sum(r[lab] for r in logits) / len(logits) for lab in LABELS}
    out = []
    for r in logits:
        z = {lab: math.exp((r[lab] - mean[lab]) / temperature) for lab in LABELS}
        total = sum(z.values())
        out.append({lab: v / total for lab, v in z.items()})
    return out


def test_the_inputs_as_reference_give_the_batch_correction(encoder, inputs):
    plain = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32")
    fixed = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(inputs))
    for row, want in zip(fixed, batch_corrected(plain)):
        assert row["scores"] == pytest.approx(want, abs=1e-5)
        assert row["label"] == max(want, key=want.get) and row["score"] == pytest.approx(max(want.values()), abs=1e-5)
    # after the correction every label's mean log-probability is the same up to a constant:
    # no label is nearer the documents as a whole than another
    centred = [sum(math.log(r["scores"][lab]) - sum(math.log(r["scores"][x]) for x in LABELS) / len(LABELS)
                   for r in fixed) for lab in LABELS]
    assert max(centred) - min(centred) == pytest.approx(0, abs=1e-3)


def test_a_folder_of_text_files_is_a_reference_too(encoder, inputs, tmp_path):
    for i, text in enumerate(TEXTS):
        (tmp_path / f"{i}.txt").write_text(text)
    from_folder = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(tmp_path))
    from_jsonl = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(inputs))
    for a, b in zip(from_folder, from_jsonl):
        assert a["label"] == b["label"] and a["scores"] == pytest.approx(b["scores"], abs=1e-5)


def test_without_label_prior_nothing_changes(encoder):
    from lfcli.pipelines.tasks.classify.task import ZeroShotClassifyTask

    pipe = lfcli.Pipeline("classify", encoder, labels=LABELS, dtype="float32")
    assert isinstance(pipe.task, ZeroShotClassifyTask) and float(pipe.task.prior.abs().sum()) == 0.0


def test_bad_label_priors_are_refused_before_the_model_loads(encoder, tmp_path):
    with pytest.raises(InputError, match="label-prior"):
        lfcli.classify(TEXTS, model="/missing/model", labels=LABELS, label_prior=str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="--labels"):
        lfcli.classify(TEXTS, model="/missing/model", label_prior=str(tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="--label-prior"):
        lfcli.classify(TEXTS, model=encoder, labels=LABELS, label_prior=str(tmp_path / "empty"))


def test_the_cli_takes_label_prior(encoder, inputs, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "rows.jsonl"
    run = subprocess.run([sys.executable, "-m", "lfcli", "classify", str(inputs), "-m", encoder, "--labels", ",".join(LABELS),
                          "--label-prior", str(inputs), "--dtype", "float32", "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "label priors from 6 documents" in run.stderr
    api = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(inputs))
    assert [json.loads(line)["label"] for line in out.read_text().splitlines()] == [r["label"] for r in api]
