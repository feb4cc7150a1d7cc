"""The task heads lfcli knows, one entry each: the model class (its name in ARCHITECTURES and
in a checkpoint's config.json `architectures`), the lfcli command it serves, a weight name
only it has (how a checkpoint shows it carries the head), its words in messages, the modules
LoRA trains in full and saves with the adapter (PEFT's modules_to_save), PEFT's task type,
and the architecture suffix of a transformers source model that carries it (convert.py).

Plain data, no torch: the checkpoint loader, LoRA, conversion, the runner and `lfcli models`
all read this one table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Head:
    architecture: str
    task: str | None  # the lfcli command it serves (None: no inference command)
    marker: str  # a weight-name prefix only this head has
    what: str  # in messages: "this checkpoint has no <what>"
    modules: tuple[str, ...]  # trained in full under LoRA and saved with the adapter
    peft_task_type: str
    source_suffixes: tuple[str, ...] = ()  # transformers architectures "<Model>For<suffix>" it comes from
    advice: str = ""  # how a user gets one, when a checkpoint has none


ENCODER = "LongformerModel"  # no head: embed, and classify zero-shot with --labels
COREF_MODULES = ("start_mention_mlp", "end_mention_mlp", "start_coref_mlp", "end_coref_mlp",
                 "mention_start_classifier", "mention_end_classifier", "mention_s2e_classifier",
                 "antecedent_s2s_classifier", "antecedent_e2e_classifier", "antecedent_s2e_classifier",
                 "antecedent_e2s_classifier")

HEADS = {h.architecture: h for h in (
    # Pretraining trains every weight: no LoRA head. BERT's PreTraining heads: the MLM half (NSP is dropped).
    Head("LongformerForMaskedLM", "pretrain-continue", "lm_head.", "masked-LM head", (), "", ("MaskedLM", "PreTraining")),
    Head("LongformerForSequenceClassification", "classify", "classifier.out_proj.", "sequence-classification head",
         ("classifier",), "SEQ_CLS", ("SequenceClassification",),
         "Without a trained head, classify zero-shot with --labels 'label1,label2,...'"),
    Head("LongformerForQuestionAnswering", "qa", "qa_outputs.", "question-answering head", ("qa_outputs",),
         "QUESTION_ANS", ("QuestionAnswering",),
         "Pass -m with a question-answering checkpoint, or train one with `lfcli finetune qa`"),
    Head("LongformerForTokenClassification", None, "classifier.weight", "token-classification head", ("classifier",),
         "TOKEN_CLS", ("TokenClassification",)),
    Head("LongformerForCoreference", "corefs", "mention_s2e_classifier.", "coreference head", COREF_MODULES,
         "FEATURE_EXTRACTION", (),
         "Pass -m with a coreference checkpoint, or train one with `lfcli finetune corefs`"),
)}


def head_of_task(task: str) -> Head | None:
    """The head an lfcli command runs (None: the bare encoder, as embed)."""
    return next((h for h in HEADS.values() if h.task == task), None)


def architecture_of_task(task: str) -> str:
    """The model class an lfcli command loads: its head's, else the bare encoder."""
    head = head_of_task(task)
    return head.architecture if head else ENCODER


def source_heads() -> dict[str, str]:
    """A transformers architecture's suffix (`BertFor<suffix>`) -> our class with that head."""
    return {suffix: h.architecture for h in HEADS.values() for suffix in h.source_suffixes}
