"""Zero-shot classify's label priors (pipelines/tasks/classify/priors.py): each label's mean
similarity to the documents that go to other labels is taken off before the softmax, so a
label near every document stops winning them all. `auto` (the default) measures them on the
first inputs and applies them only when a label takes more than twice its share; `none` never;
a file or folder of documents always. The priors' arithmetic on hand-made similarities, then a
tiny real encoder (tests/checkpoints.py), float32, against the same arithmetic on its own
embeddings (the slow twin: lfcli.embed's vectors, cosines, priors, softmax)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

import lfcli
from checkpoints import make_checkpoint
from lfcli.pipelines.errors import InputError, UsageError
from lfcli.pipelines.tasks.classify import ZERO_SHOT_TEMPERATURE
from lfcli.pipelines.tasks.classify.priors import (MIN_DOCUMENTS, automatic_priors, biased_label,
                                                   leave_own_out_priors)

TEXTS = [
    "The court held that the contract was void because the seller had concealed the defect.",
    "Patients who received the treatment recovered faster than those who did not, the study found.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "The committee will meet on Tuesday to discuss the budget and the new hiring policy.",
    "She said that he would come back before the winter, but he never did.",
    "What is the capital of France? Paris is the capital and largest city of France.",
    "The answer is forty-two. The passkey is 7351. Remember it.",
    "Elizabeth walked to Netherfield.",
    "The seller had concealed the defect, the court held.",
]
LABELS = ["law", "medicine", "fiction", "politics"]


# -- the arithmetic -------------------------------------------------------------------------
def balanced_cosines(bias: float) -> torch.Tensor:
    """20 documents, 4 per label of 5: 0.6 or 0.55 with their own label (half each), 0.5 with
    the others, and `bias` more with label 0 for every document."""
    cos = torch.full((20, 5), 0.5, dtype=torch.float64)
    for d in range(20):
        cos[d, d % 5] = 0.55 if d // 5 in (1, 2) else 0.6
    cos[:, 0] += bias
    return cos


def test_a_label_near_every_document_loses_what_it_did_not_earn():
    cos = balanced_cosines(bias=0.08)
    assert cos.argmax(-1).tolist().count(0) == 12  # the failure: label 0 takes 12 of 20
    assert biased_label(cos) == 0
    prior, biased = automatic_priors(cos)
    assert biased == 0
    assert (cos - prior).argmax(-1).tolist() == [d % 5 for d in range(20)]
    # label 0's prior is its mean over the documents of the other labels (0.5 + 0.08)
    assert float(prior[0]) == pytest.approx(0.58)


def test_spread_labels_and_too_few_documents_change_nothing():
    prior, biased = automatic_priors(balanced_cosines(bias=0.0))
    assert biased is None and prior.abs().sum() == 0
    few = balanced_cosines(bias=0.08)[: MIN_DOCUMENTS - 1]
    assert biased_label(few) is None and automatic_priors(few)[0].abs().sum() == 0


def test_a_label_most_documents_are_about_keeps_them():
    """Twelve documents of label 2 (0.7 with it, 0.5 with the others), nine of them, and three
    that go to label 1 (0.72 with it): a batch of one kind whose texts say so. Label 2 keeps
    more than 60% of it, so its prior is no bigger than the others': nothing is handed away."""
    cos = torch.full((12, 4), 0.5, dtype=torch.float64)
    cos[:, 2] = 0.7
    cos[:3, 1] = 0.72
    prior, biased = automatic_priors(cos)
    assert biased == 2
    assert float(prior[2]) <= float(prior.min()) + 1e-12
    assert (cos - prior).argmax(-1).tolist() == cos.argmax(-1).tolist()


# -- the product ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return str(make_checkpoint(tmp_path_factory.mktemp("enc"), "LongformerModel"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    return path


def cosines(encoder: str, texts: list[str]) -> torch.Tensor:
    """(texts, labels) cosines from lfcli.embed's vectors, in float64."""
    vec = lambda xs: torch.nn.functional.normalize(torch.tensor(  # noqa: E731
        [r["embedding"] for r in lfcli.embed(xs, model=encoder, dtype="float32")], dtype=torch.float64), dim=-1)
    return vec(texts) @ vec(LABELS).T


def twin(cos: torch.Tensor, prior: torch.Tensor) -> list[dict[str, float]]:
    probs = torch.softmax((cos - prior) / ZERO_SHOT_TEMPERATURE, dim=-1)
    return [dict(zip(LABELS, p.tolist())) for p in probs]


def assert_rows(rows: list[dict], want: list[dict[str, float]]) -> None:
    """Scores to float32 rounding; the label where the twin's top two are not a near tie (one
    that another CPU's rounding could flip)."""
    for row, w in zip(rows, want, strict=True):
        assert row["scores"] == pytest.approx(w, abs=1e-5)
        first, second = sorted(w.values(), reverse=True)[:2]
        if first - second > 1e-4:
            assert row["label"] == max(w, key=w.get)


def test_auto_is_the_default_and_equals_its_twin(encoder):
    cos = cosines(encoder, TEXTS)
    rows = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32")
    assert_rows(rows, twin(cos, automatic_priors(cos)[0]))
    assert rows == lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior="auto")


def test_auto_applies_when_a_label_takes_the_batch(encoder, capfd):
    """Documents that are the label's own text: 'fiction' takes every one (the texts say so),
    the priors apply, a note says so, and the documents keep their label."""
    docs = ["fiction"] * MIN_DOCUMENTS + TEXTS[:2]
    cos = cosines(encoder, docs)
    prior, biased = automatic_priors(cos)
    assert biased == LABELS.index("fiction") and prior.abs().sum() > 0
    rows = lfcli.classify(docs, model=encoder, labels=LABELS, dtype="float32")
    assert_rows(rows, twin(cos, prior))
    assert [r["label"] for r in rows[:MIN_DOCUMENTS]] == ["fiction"] * MIN_DOCUMENTS
    assert "label priors (auto): 'fiction' took" in capfd.readouterr().err


def test_none_and_a_reference_folder(encoder, inputs, tmp_path):
    cos = cosines(encoder, TEXTS)
    plain = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior="none")
    assert_rows(plain, twin(cos, torch.zeros(len(LABELS))))
    for i, text in enumerate(TEXTS[:4]):
        (tmp_path / f"{i}.txt").write_text(text)
    fixed = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(tmp_path))
    assert_rows(fixed, twin(cos, leave_own_out_priors(cosines(encoder, TEXTS[:4]))))
    from_jsonl = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(inputs))
    assert_rows(from_jsonl, twin(cos, leave_own_out_priors(cos)))


def test_documents_past_the_measured_ones_and_a_resumed_job_score_alike(encoder, monkeypatch):
    """The priors come from the first documents of the job (here 8, LABEL_PRIOR_DOCS lowered)
    and hold for the rest; a job resumed past its first rows measures the same ones."""
    from lfcli.pipelines.io.readers import Document
    from lfcli.pipelines.tasks.classify import task

    docs = ["fiction"] * MIN_DOCUMENTS + TEXTS
    monkeypatch.setattr(task, "LABEL_PRIOR_DOCS", MIN_DOCUMENTS + 1)
    cos = cosines(encoder, docs)
    prior = automatic_priors(cos[: MIN_DOCUMENTS + 1])[0]
    whole = lfcli.classify(docs, model=encoder, labels=LABELS, dtype="float32")
    assert_rows(whole, twin(cos, prior))
    pipe = lfcli.Pipeline("classify", encoder, labels=LABELS, dtype="float32")
    skip = {str(i) for i in range(4)}
    resumed = list(pipe.run([Document(str(i), t) for i, t in enumerate(docs)], skip_ids=skip))
    assert resumed == whole[4:]


def test_bad_label_priors_are_refused_before_the_model_loads(encoder, tmp_path):
    with pytest.raises(InputError, match="label-prior"):
        lfcli.classify(TEXTS, model="/missing/model", labels=LABELS, label_prior=str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="--labels"):
        lfcli.classify(TEXTS, model="/missing/model", label_prior=str(tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="--label-prior"):
        lfcli.classify(TEXTS, model=encoder, labels=LABELS, label_prior=str(tmp_path / "empty"))


def test_the_cli_takes_label_prior(encoder, inputs, tmp_path):
    out = tmp_path / "rows.jsonl"
    run = subprocess.run([sys.executable, "-m", "lfcli", "classify", str(inputs), "-m", encoder, "--labels", ",".join(LABELS),
                          "--label-prior", str(inputs), "--dtype", "float32", "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"label priors from {len(TEXTS)} documents" in run.stderr
    api = lfcli.classify(TEXTS, model=encoder, labels=LABELS, dtype="float32", label_prior=str(inputs))
    assert [json.loads(line)["label"] for line in out.read_text().splitlines()] == [r["label"] for r in api]
    run = subprocess.run([sys.executable, "-m", "lfcli", "classify", str(inputs), "-m", encoder, "--labels", ",".join(LABELS),
                          "--label-prior", str(tmp_path / "nowhere"), "--dtype", "float32"], capture_output=True, text=True)
    assert run.returncode == 1 and "auto, none" in run.stderr and "Traceback" not in run.stderr
