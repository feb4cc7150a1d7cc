"""qa: extractive answers to a question from each document (the question and its tokens are
global, paper section 3.1). Its home: task.py (windows and answers), the span rules and
calibration in answers.py; training in train.py; this module's SPEC is what the registry holds.
"""

from __future__ import annotations

from ...errors import UsageError
from ...registry import Evaluation, Option, TaskSpec, TrainingDefaults, lazy

OPTIONS = (
    Option("question", ("--question", "-q"), str, None, "The question (else each record's 'question' field)."),
    Option("top_k", ("--top-k", "-k"), int, 1, "How many answers per document."),
)


def check(options: dict) -> None:
    if options.get("top_k", 1) < 1:
        raise UsageError("--top-k must be at least 1")


SPEC = TaskSpec(
    name="qa",
    summary="Answer a question from each document: id, question, answer, start, end, score.",
    runner=lazy(__name__ + ".task", "runner"),
    global_policy="question",
    options=OPTIONS,
    check=check,
    question=True,
    page=lazy("lfcli.pipelines.view.qa_page", "qa_page"),
    row_fields=("answer", "answers"),
    finetune=lazy(__name__ + ".train", "setup_qa"),
    training=TrainingDefaults(lr={"lora": 1e-3, "full": 5e-5}, epochs=2.0, batch_tokens=16384, patience=2),
    evaluation=Evaluation(field="answer", read_gold=lazy(__name__ + ".evaluation", "read_gold"),
                          score=lazy(__name__ + ".evaluation", "score"),
                          fill_table=lazy(__name__ + ".evaluation", "fill_table"),),
)
