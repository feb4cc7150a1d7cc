"""qa: extractive answers to a question from each document (the question and its tokens are
global, paper section 3.1). Its home: task.py (windows and answers), the span rules and
calibration in answers.py; training in train.py; this module's SPEC is what the registry holds.
"""

from __future__ import annotations

from ...errors import UsageError
from ...registry import Option, TaskSpec, TrainingDefaults, evaluation_in, lazy

OPTIONS = (
    Option("question", ("--question", "-q"), str, None, "The question (else each record's 'question' field)."),
    Option("top_k", ("--top-k", "-k"), int, 1, "How many answers per document."),
)


def check(options: dict) -> None:
    if options.get("top_k", 1) < 1:
        raise UsageError("--top-k must be at least 1")


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
