"""Fine-tuning extractive question answering: data, windows with their targets, loss, eval.

Records come from SQuAD JSON (articles -> paragraphs -> questions) or JSONL/Parquet with a
context (`context` or `text`), a `question` and `answers` ({text, answer_start} lists).

Windows are made exactly as `lfcli qa` makes them at inference (QATask.prepare: the
question in every window, global attention on it, contexts longer than a window cut into
overlapping windows). A window that holds the whole first gold answer is trained to point
at it; a window without it is trained to point at its first token ([CLS] / <s>), the
no-answer target. That no-answer score is what lets `lfcli qa` compare spans across the
windows of a long document on one scale (answers.best_spans). For SQuAD JSON, a question also
gets, with probability `negatives`, a window of another paragraph of its article, with the
no-answer target: a distractor on the same topic, as the question meets when asked of a
whole article.

The loss of a window is the mean of the start and end cross-entropies over its first token
and its context tokens (question, separators and padding are never targets). Validation:
SQuAD v1.1 EM/F1, decoded by QATask exactly as `lfcli qa` decodes.

Calibration: at every evaluation the temperature of the answers' scores (answers.QACandidates)
is fitted on the validation questions (`fit_temperature`: least log loss of "the answer is
right", token F1 >= 0.5 with a gold answer), and the evaluation reports the scores' expected
calibration error and AUROC at that temperature. The model saved with an evaluation carries
its temperature in config.json (lfcli.qa_calibration), which `lfcli qa` reads. These are
validation figures: the same questions fitted the temperature and chose the saved model.
Whole books are another matter (hundreds of windows): `fit_window_terms` fits the terms that
lower the score as a document's windows multiply (answers.QACalibration) on questions over
whole books, and `save_window_terms` adds them to lfcli.qa_calibration
(benchmarks/eval_book_qa.py --fit --save-calibration).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lfcli.models import LongformerConfig

from ...errors import InputError
from ...eval.metrics import squad_f1, squad_scores
from ...infer.policies import check_policy
from ...infer.tasks import Item, batch_tensors, model_inputs, predict_rows
from ...infer.tokenize import token_span
from ...io.readers import Document, iter_documents
from ...train.setups import Setup, fingerprint_of, report_skipped, training_tokenizer
from ...wording import plural
from . import MAX_EVAL, NEGATIVES, TRAIN_MAX_LENGTH
from .answers import QACandidates
from .calibration import calibrate
from .task import QATask

RIGHT_F1 = 0.5  # an answer is right when its SQuAD token F1 with a gold answer reaches this


@dataclass
class QARecord:
    id: str
    context: str
    question: str
    answers: list[dict]  # {"text", "answer_start"}
    article: str = ""


@dataclass
class QAExample:
    item: Item
    start: int  # window positions of the answer's first and last token; 0, 0 = no answer
    end: int
    allowed: tuple[int, int]  # window positions of the context tokens [c0, c1)

    def __len__(self) -> int:
        return len(self.item)


def read_squad_json(path: Path) -> tuple[list[QARecord], list[str]]:
    """(records, problems): every question of a SQuAD-format file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a SQuAD JSON file ({str(exc).splitlines()[0]})") from None
    records, problems = [], []
    for a, article in enumerate(data):
        title = str(article.get("title", a))
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context")
            for qa in paragraph.get("qas", []):
                qid = str(qa.get("id", f"{title}:{len(records)}"))
                _keep(QARecord(qid, context, qa.get("question"), qa.get("answers") or [], title), records, problems)
    return records, problems


def _keep(record: QARecord, records: list[QARecord], problems: list[str]) -> None:
    """Add a usable record to `records`, else its one-line problem to `problems`."""
    problem = check_record(record)
    if problem:
        problems.append(f"{record.id}: {problem}")
    else:
        records.append(record)


def check_record(r: QARecord) -> str | None:
    if not isinstance(r.context, str) or not r.context.strip():
        return "no context"
    if not isinstance(r.question, str) or not r.question.strip():
        return "no question"
    if not r.answers:
        return "no answers"
    for ans in r.answers:
        if not isinstance(ans, dict) or not isinstance(ans.get("text"), str) or not isinstance(ans.get("answer_start"), int):
            return "answers must be {text, answer_start} objects"
        start = ans["answer_start"]
        if not 0 <= start <= len(r.context) - len(ans["text"]) or r.context[start:start + len(ans["text"])] != ans["text"]:
            return f"answer {ans['text'][:40]!r} is not at character {start} of the context"
    return None


def read_qa_records(inputs: list[str], text_column: str | None = None, id_column: str | None = None) -> tuple[list[QARecord], list[str]]:
    """SQuAD JSON files, or JSONL/Parquet records with context/text, question, answers."""
    records, problems = [], []
    for path in inputs:
        if str(path).endswith(".json"):
            r, p = read_squad_json(Path(path))
            records += r
            problems += p
            continue
        column = text_column or "context"
        docs = iter_documents([path], text_column=column, id_column=id_column, fields=("question", "answers"))
        try:
            docs = list(docs)
        except InputError:
            if text_column:
                raise
            docs = list(iter_documents([path], text_column="text", id_column=id_column, fields=("question", "answers")))
        for doc in docs:
            if doc.text is None:
                problems.append(f"{doc.id}: {doc.error}")
                continue
            answers = doc.fields.get("answers")
            if isinstance(answers, dict) and "text" in answers:  # columnar {text: [...], answer_start: [...]}
                answers = [{"text": t, "answer_start": s} for t, s in zip(answers["text"], answers["answer_start"])]
            _keep(QARecord(doc.id, doc.text, doc.fields.get("question"), list(answers or []), article=doc.id), records, problems)
    return records, problems


def split_by_article(records: list[QARecord], fraction: float, seed: int) -> tuple[list[QARecord], list[QARecord]]:
    """(train, validation): whole articles held out (a seeded choice), so no validation
    paragraph was seen in training."""
    articles = sorted({r.article for r in records})
    rng = random.Random(seed)
    rng.shuffle(articles)
    n_val = max(1, round(len(articles) * fraction)) if len(articles) > 1 else 0
    held = set(articles[:n_val])
    return [r for r in records if r.article not in held], [r for r in records if r.article in held]


def _targets(qa: QATask, record: QARecord, answer: bool) -> list[QAExample]:
    prepared = qa.prepare(0, Document(record.id, record.context, fields={"question": record.question}))
    span = None
    if answer:
        gold = record.answers[0]
        span = token_span(prepared.encoded.offsets, gold["answer_start"], gold["answer_start"] + len(gold["text"]))
    out = []
    for item in prepared.items:
        w = item.window
        c0, c1 = w.content_start, w.content_start + w.span[1] - w.span[0]
        if span is not None and w.span[0] <= span[0] and span[1] < w.span[1]:
            out.append(QAExample(item, c0 + span[0] - w.span[0], c0 + span[1] - w.span[0], (c0, c1)))
        else:
            out.append(QAExample(item, 0, 0, (c0, c1)))
    return out


@dataclass
class QATrainTask:
    """The QA task for the trainer (see pipelines/train/loop.py)."""

    qa: QATask
    pad_id: int
    validation: list[QARecord]
    max_eval: int | None = 1000
    examples: list[QAExample] = field(default_factory=list)
    save_fn: object = None
    calibration: dict | None = None  # what the last evaluation fitted (calibrate)

    def build(self, records: list[QARecord], negatives: float, seed: int) -> dict:
        rng = random.Random(seed)
        by_article: dict[str, list[QARecord]] = {}
        for r in records:
            by_article.setdefault(r.article, []).append(r)
        counts = {"questions": 0, "windows": 0, "no_answer_windows": 0, "distractors": 0, "skipped": 0}
        for r in records:
            try:
                examples = _targets(self.qa, r, answer=True)
            except InputError:
                counts["skipped"] += 1
                continue
            counts["questions"] += 1
            others = [o for o in by_article[r.article] if o.context != r.context]
            if others and rng.random() < negatives:
                other = rng.choice(others)
                distractor = _targets(self.qa, QARecord(r.id, other.context, r.question, [], r.article), answer=False)
                examples.append(rng.choice(distractor))
                counts["distractors"] += 1
            self.examples += examples
            counts["windows"] += len(examples)
            counts["no_answer_windows"] += sum(e.start == 0 for e in examples)
        return counts

    def collate(self, examples: list[QAExample], seeds: list[int]) -> dict:
        batch = batch_tensors([e.item for e in examples], self.pad_id)
        allowed = torch.zeros_like(batch["attention_mask"], dtype=torch.bool)
        allowed[:, 0] = True
        for b, e in enumerate(examples):
            allowed[b, e.allowed[0]: e.allowed[1]] = True
        batch["allowed"] = allowed
        batch["start_positions"] = torch.tensor([e.start for e in examples])
        batch["end_positions"] = torch.tensor([e.end for e in examples])
        return batch

    def count(self, batch: dict) -> float:
        return float(batch["start_positions"].numel())

    def loss(self, model, batch: dict) -> torch.Tensor:
        start_logits, end_logits = model(**model_inputs(batch))
        neg = torch.finfo(torch.float32).min
        start_logits = start_logits.float().masked_fill(~batch["allowed"], neg)
        end_logits = end_logits.float().masked_fill(~batch["allowed"], neg)
        ce = torch.nn.functional.cross_entropy
        return (ce(start_logits, batch["start_positions"], reduction="sum")
                + ce(end_logits, batch["end_positions"], reduction="sum")) / 2

    def evaluate(self, model) -> dict:
        records = evaluation_sample(self.validation, self.max_eval)
        predictions = predict_cases(model, self.qa, records, self.pad_id)
        golds = [[a["text"] for a in r.answers] for r in records]
        scores = squad_scores((predictions[r.id][0], gold) for r, gold in zip(records, golds))
        cases = [predictions[r.id][1:] for r in records]
        right = [squad_f1(predictions[r.id][0], gold) >= RIGHT_F1 for r, gold in zip(records, golds)]
        self.calibration = calibrate(cases, right)
        metrics = {"score": scores["f1"], "exact_match": scores["exact_match"], "f1": scores["f1"], "questions": len(records)}
        if self.calibration:
            metrics.update({k: self.calibration[k] for k in ("ece", "auroc", "temperature")})
        return metrics

    def save(self, model, folder: Path) -> None:
        """The model with the temperature its evaluation fitted (none fitted: the saved model
        has none, whatever its base had, and scores at temperature 1)."""
        block = model.config.extra.get("lfcli") or {}
        block.pop("qa_calibration", None)
        if self.calibration:
            block["qa_calibration"] = self.calibration
        model.config.extra["lfcli"] = block
        self.save_fn(model, folder)


def evaluation_sample(records: list[QARecord], n: int | None) -> list[QARecord]:
    """At most `n` of the validation questions, spread evenly over them (every k-th), so that
    an evaluation sees every held-out article, not the first few (the file's order)."""
    if not n or len(records) <= n:
        return records
    step = len(records) / n
    return [records[int(k * step)] for k in range(n)]


def predict_answers(model, qa: QATask, records: list[QARecord], pad_id: int) -> dict[str, str]:
    """Question id -> answer text, decoded as `lfcli qa` decodes (QATask)."""
    return {k: v[0] for k, v in predict_cases(model, qa, records, pad_id).items()}


class _WithCandidates:
    """A QATask whose rows are (answer text, candidates, best span): what calibration needs."""

    def __init__(self, qa: QATask):
        self.qa = qa

    def prepare(self, doc_index, doc):
        return self.qa.prepare(doc_index, doc)

    def forward(self, model, batch, items):
        return self.qa.forward(model, batch, items)

    def finish(self, doc, prepared, results):
        offsets = prepared.encoded.offsets
        first, last, margin = self.qa.ranked(prepared, results)[0]
        return (doc.id, doc.text[offsets[first][0]:offsets[last][1]], self.qa.candidates(results, prepared),
                (first, last, margin))


def predict_cases(model, qa: QATask, records: list[QARecord], pad_id: int) -> dict[str, tuple[str, QACandidates, tuple]]:
    """Question id -> (answer text, the document's candidates, the answer's (first token,
    last token, margin)), decoded as `lfcli qa` decodes (QATask)."""
    docs = [Document(r.id, r.context, fields={"question": r.question}) for r in records]
    return {row[0]: row[1:] for row in predict_rows(model, _WithCandidates(qa), docs, pad_id)}


# -- the tasks' set-ups (corefs': coref.py) ------------------------------------------------
def setup_qa(*, folder: Path, data: list[str], validation, validation_split: float, max_length, global_policy, seed: int,
             say, negatives: float = NEGATIVES, max_eval: int | None = MAX_EVAL, **_) -> Setup:
    """QA: windows of 256 tokens by default (SQuAD paragraphs mostly fit; the dense
    attention path is exact and fastest there); validation = whole held-out articles."""
    records, problems = read_qa_records(data)
    report_skipped(problems, "training record", say)
    if not records:
        raise InputError("no usable question-answer records in the training data")
    if validation:
        val, val_problems = read_qa_records(validation)
        report_skipped(val_problems, "validation record", say)
        train_records = records
    else:
        train_records, val = split_by_article(records, validation_split, seed)
    tok, length = training_tokenizer(folder, max_length, TRAIN_MAX_LENGTH)
    qa = QATask(tok, check_policy(global_policy or "question"))
    pad = LongformerConfig.from_json_file(folder / "config.json").pad_token_id
    task = QATrainTask(qa, pad, val, max_eval=max_eval)
    counts = task.build(train_records, negatives, seed)
    say(f"{plural(counts['questions'], 'training question')} -> {plural(counts['windows'], 'window')} "
        f"({counts['no_answer_windows']} without the answer, {counts['distractors']} from other paragraphs); "
        f"{plural(len(val), 'validation question')} from {plural(len({r.article for r in val}), 'held-out article')}")
    # Inference in windows of the training length: on held-out whole articles, 256-token
    # windows gave F1 64 where 4096-token ones gave 38 (README, Quality).
    note = {"default_max_length": length, "train_questions": counts["questions"], "validation_questions": len(val),
            "validation_articles": sorted({r.article for r in val})}
    return Setup(task, None, length, fingerprint_of([[r.id, len(r.context)] for r in train_records] + [negatives]),
                 note)

