"""classify: a label per document, from a trained head or zero-shot with --labels. Its home:
task.py (windows and labels), training in train.py; this module's SPEC is what the registry
holds (free of torch, see lfcli.pipelines.tasks.embed).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError, UsageError
from ...registry import Option, TaskSpec, TrainingDefaults, evaluation_in, lazy, shared

# The contrastive-training temperature of sentence-embedding models, which spreads their
# narrow cosine range over the labels (task.ZeroShotClassifyTask).
ZERO_SHOT_TEMPERATURE = 0.05
# Zero-shot label priors (--label-prior, priors.py, task.ZeroShotClassifyTask). A label text can
# sit nearer every document of a kind than the other labels do, and then wins those documents
# whatever they say (on passages of novels, the small tier gave "adventure story" 50% of 36
# passages of six genres, and "western" and "gothic horror" none). A label's prior, taken off
# its cosine with every document before the softmax, is its mean cosine with the documents
# that go to other labels. `auto` (the default) measures the priors on the first
# LABEL_PRIOR_DOCS input documents, embedded before the first row (and not again), and applies
# them only when a label takes more than twice its share there; `none` never; a file or folder
# of documents like the inputs always applies priors measured on them. Fixed "neutral" texts
# instead of the documents did not help (benchmarks/eval_label_bias.py): a label's prior
# depends on the kind of documents.
LABEL_PRIOR_DOCS = 256
LABEL_PRIOR_CHARS = 32_000_000  # and at most this many characters of them
OPTIONS = (
    Option("labels", ("--labels",), str, None, "Zero-shot: comma-separated labels, e.g. 'sports,politics,science'."),
    Option("labels_file", ("--labels-file",), str, None, "Zero-shot: one label per line, optionally 'label: description'."),
    Option("temperature", ("--temperature",), float, ZERO_SHOT_TEMPERATURE,
           "Zero-shot softmax temperature over cosine similarities."),
    Option("label_prior", ("--label-prior",), str, "auto",
           "Zero-shot: auto, none, or a file or folder of documents like the inputs. A label's prior (its mean "
           "similarity to the documents that go to other labels) is taken off its similarity to every document, so "
           f"that a label near all of them does not win them all. auto: measured on the first {LABEL_PRIOR_DOCS} "
           "inputs, applied only when a label takes more than twice its share of them; none: never."),
)


def parse_labels(options: dict) -> dict:
    """The command line's --labels or --labels-file (or the API's labels=[label or (label,
    description), ...]) as the runner's `labels`: a list of (label, description) pairs (None:
    the model's trained head)."""
    options = dict(options)
    labels, labels_file = options.pop("labels", None), options.pop("labels_file", None)
    if labels and labels_file:
        raise UsageError("give --labels or --labels-file, not both")
    if isinstance(labels, str):
        options["labels"] = [(x.strip(), "") for x in labels.split(",") if x.strip()]
    elif labels is not None:
        options["labels"] = [(x, "") if isinstance(x, str) else tuple(x) for x in labels]
    elif labels_file is not None:
        try:
            lines = Path(labels_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{labels_file}: cannot read the labels file ({exc})") from None
        options["labels"] = []
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                name, _, desc = line.partition(":")
                options["labels"].append((name.strip(), desc.strip()))
    if options.get("labels") is None and options.get("label_prior") in (None, "auto", "none"):
        options.pop("temperature", None)  # only zero-shot has them
        options.pop("label_prior", None)
    return options


def check(options: dict) -> None:
    labels, prior = options.get("labels"), options.get("label_prior")
    if labels is None:
        if prior is not None:
            raise UsageError("--label-prior corrects zero-shot labels: give --labels or --labels-file too")
        return
    if prior not in (None, "auto", "none") and not isinstance(prior, list) and (  # a list: for_workers's texts
            not isinstance(prior, (str, Path)) or str(prior) == "-" or not Path(prior).exists()):
        raise InputError(f"--label-prior {prior}: no such file or folder (give auto, none, or documents like the inputs)")
    names = [name for name, _ in labels]
    if len(names) < 2:
        given = f" (got only {names[0]!r})" if names else ""
        raise UsageError(f"zero-shot classify needs two labels or more{given}: with one label every document scores 1.0")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(f"label {repeated[0]!r} is given more than once")
    if not options.get("temperature", ZERO_SHOT_TEMPERATURE) > 0:
        raise UsageError("--temperature must be positive")


def zero_shot(options: dict) -> bool:
    return options.get("labels") is not None


def for_workers(options: dict, first_texts) -> dict:
    """Zero-shot with --label-prior auto, run in parts (Ray): every worker measures the priors
    on the job's first documents, as the local job does (task.ZeroShotClassifyTask.begin)."""
    if not zero_shot(options) or options.get("label_prior", "auto") != "auto":
        return options
    return {**options, "label_prior": list(first_texts(LABEL_PRIOR_DOCS, LABEL_PRIOR_CHARS))}


FINETUNE_OPTIONS = (
    shared("text_column"),
    Option("label_column", ("--label-column",), str, "label", "Label field / column."),
    shared("id_column"),
    Option("class_weights", ("--class-weights",), str, "auto", "auto: weigh classes by n / (k * n_class) in the loss; none."),
    Option("first_window_only", ("--first-window-only",), bool, False, "Train on each document's first window only."),
)

SPEC = TaskSpec(
    name="classify",
    summary="Label documents: id, label, score, scores. With --labels, zero-shot (no trained head needed).",
    runner=lazy(__name__ + ".task", "runner"),
    global_policy="cls",
    architecture="LongformerForSequenceClassification",
    missing_head="Without a trained head, classify zero-shot with --labels 'label1,label2,...'",
    bare_encoder=zero_shot,  # the bundled base's embeddings against the labels': no head
    zero_shot="classify --labels (zero-shot)",
    options=OPTIONS,
    parse=parse_labels,
    check=check,
    page=lazy("lfcli.pipelines.view.classify_page", "classify_page"),
    row_fields=("label",),
    for_workers=for_workers,
    finetune=lazy(__name__ + ".train", "setup_classify"),
    finetune_summary=("Train a document classifier. DATA: JSONL/Parquet with text and label, a folder with one "
                      "subfolder per label, or a SemEval hyperpartisan articles XML (ground truth beside it)."),
    finetune_options=FINETUNE_OPTIONS,
    training=TrainingDefaults(lr={"lora": 5e-4, "full": 5e-5}, epochs=6.0, batch_tokens=16384, patience=3),
    evaluation=evaluation_in(__name__ + ".evaluation", "label", measures="accuracy and F1",
                             gold_help=".jsonl/.parquet with id, label, or a folder of LABEL/ subfolders"),
)
