"""qa: extractive answers to a question from each document (the question and its tokens are
global, paper section 3.1). Its home: task.py (windows and answers), the span rules and
calibration in answers.py, the questions a job asks in questions.py, retrieve-then-read over
long documents in retrieve.py; training in train.py; this module's SPEC is what the registry holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

from ...errors import UsageError
from ...registry import Option, TaskSpec, TrainingDefaults, evaluation_in, lazy
from .questions import READS, asked_questions, parse_questions, row_key

OPTIONS = (
    Option("question", ("--question", "-q"), List[str], None,
           "A question asked of every document; repeat it for several (a row per document and question). "
           "Else each record's 'question' field."),
    Option("questions", ("--questions",), str, None,
           "A file of questions asked of every document: one a line, or JSONL with 'id' and 'question'."),
    Option("top_k", ("--top-k", "-k"), int, 1, "How many answers per document."),
    Option("read", ("--read",), str, "retrieve",
           "retrieve: over a long document, read only the windows around the passages most like the question "
           "(fast; passages embedded once a text); all: read every window (slow, the reference)."),
    Option("retriever", ("--retriever",), str, None,
           "The sentence encoder that ranks passages for --read retrieve (default: the QA model's base, "
           "its tier's bundled embedding model)."),
    Option("cache", ("--cache",), str, None,
           "A folder that keeps each long text's passage vectors, so a later job over the same text skips "
           "embedding it (keyed by the text's sha256 and the models)."),
)


def check(options: dict) -> None:
    if options.get("top_k", 1) < 1:
        raise UsageError("--top-k must be at least 1")
    if options.get("read", "retrieve") not in READS:
        raise UsageError(f"--read {options.get('read')!r}: choose {' or '.join(READS)}")
    retriever = options.get("retriever")
    if retriever is not None and not Path(retriever).is_dir():
        from lfcli.models.bundled import BUNDLED  # lazy: torch, not for --help
    if retriever is not None and not Path(retriever).is_dir() and retriever not in BUNDLED:
        raise UsageError(f"--retriever {retriever}: not a bundled model (see `lfcli models`) nor a model folder")


# How to give `lfcli qa` its questions, said when a job has none at all.
NO_QUESTIONS = ("lfcli qa needs questions: pass -q/--question 'QUESTION' (asked of every document), or give "
                "JSONL/Parquet records a 'question' field")
# The bundled trained models, one a tier (lfcli.models.bundled.TASK_MODELS).
MODELS = ("minilm-l6-long-squad", "mpnet-base-long-squad")

NEGATIVES = 0.5
TRAIN_MAX_LENGTH = 256  # training windows: SQuAD paragraphs mostly fit
MAX_EVAL = 600  # validation questions an evaluation scores: CPU time
FINETUNE_OPTIONS = (
    Option("negatives", ("--negatives",), float, NEGATIVES, "SQuAD JSON: chance that a question also trains on a "
           "no-answer window of another paragraph of its article."),
    Option("max_eval", ("--max-eval",), int, MAX_EVAL, "Validation questions scored at each evaluation (CPU time)."),
)

SPEC = TaskSpec(
    name="qa",
    summary="Answer a question from each document: id, question, answer, start, end, score.",
    runner=lazy(__name__ + ".task", "runner"),
    global_policy="question",
    architecture="LongformerForQuestionAnswering",
    models=MODELS,
    missing_head="Pass -m with a question-answering checkpoint, or train one with `lfcli finetune qa`",
    options=OPTIONS,
    check=check,
    pair="question",
    pair_missing=NO_QUESTIONS,
    parse=parse_questions,
    asked_pairs=asked_questions,
    row_key=row_key,
    page=lazy("lfcli.pipelines.view.qa_page", "qa_page"),
    row_fields=("answer", "answers"),
    finetune=lazy(__name__ + ".train", "setup_qa"),
    finetune_summary=("Train extractive question answering. DATA: SQuAD JSON, or JSONL/Parquet with context (or "
                      "text), question and answers ({text, answer_start} lists). Validation holds out whole articles."),
    finetune_options=FINETUNE_OPTIONS,
    training=TrainingDefaults(lr={"lora": 1e-3, "full": 5e-5}, epochs=2.0, batch_tokens=16384, patience=2,
                              max_length=TRAIN_MAX_LENGTH),
    evaluation=evaluation_in(__name__ + ".evaluation", "answer", measures="SQuAD EM/F1",
                             gold_help="SQuAD .json, or .jsonl with id, answers"),
)
