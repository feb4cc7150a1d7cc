"""corefs: coreference chains over whole documents, books included. Its home: task.py (windows
and how their chains join into the document's entities), entities.py (what a mention says of
its entity: names, genders, pronouns, speakers; scene breaks), decode.py (a window's scores
into chains), cast.py (the biggest chains said at the end of a run on a terminal); training in train.py; this module's SPEC is what the registry holds.
"""

from __future__ import annotations

from typing import List

from ...registry import Option, TaskSpec, TrainingDefaults, evaluation_in, lazy

# One flag for both commands: one-mention chains count only when asked for in `lfcli corefs`
# (a reader wants characters, not every noun phrase), and count by default in `lfcli evaluate
# corefs` (LitBank's headline scores them); None is each command's default.
SINGLETONS = Option("singletons", ("--singletons/--no-singletons",), bool, None,
                    "One-mention entities: `lfcli corefs` reports them with --singletons; `lfcli evaluate corefs` "
                    "scores them unless --no-singletons (its JSON has both).")
OPTIONS = (SINGLETONS,)
EVALUATE_OPTIONS = (SINGLETONS,)


def parse(options: dict) -> dict:
    """The command line's values -> the runner's: no --singletons is none reported."""
    return {**options, "singletons": bool(options.get("singletons"))}


# The bundled trained models, one a tier (lfcli.models.bundled.TASK_MODELS).
MODELS = ("minilm-l6-long-litbank-coref", "mpnet-base-long-litbank-coref")

FINETUNE_OPTIONS = (
    Option("ids", ("--ids",), str, None, "Train only on the documents listed in this file (one id per line, e.g. "
           "LitBank's train.ids)."),
    Option("validation_ids", ("--validation-ids",), str, None, "Validate on these documents (of --validation, else of DATA)."),
    Option("gap", ("--gap",), List[str], None, "GAP TSV files (A-coref/B-coref labels) whose rows also train the "
           "pronoun's antecedent."),
    Option("gap_validation", ("--gap-validation",), str, None, "A GAP TSV scored at each evaluation; the best model "
           "then has the best mean of CoNLL F1 and GAP F1."),
    Option("ffnn_size", ("--ffnn-size",), int, None, "Width of the coreference head's mention and antecedent layers "
           "(default 128)."),
    Option("gap_weight", ("--gap-weight",), float, None, "How much a GAP row's loss weighs against a training "
           "document's (default 0.2)."),
)

SPEC = TaskSpec(
    name="corefs",
    summary=("Coreference chains: id, chains, each {name, mentions}: its representative name (most frequent "
             "proper name, else most frequent short noun phrase; null for pronouns only) and its {start, end, "
             "text} character spans; and quotes, each {start, end, speaker}: the speaker's index in chains, or "
             "null. Whole books: one chain per character (chains never join two names that cannot be one "
             "person; far-apart chains join by name), a first-person narrator's \"I\" one chain."),
    runner=lazy(__name__ + ".task", "runner"),
    global_policy="none",
    architecture="LongformerForCoreference",
    models=MODELS,
    missing_head="Pass -m with a coreference checkpoint, or train one with `lfcli finetune corefs`",
    options=OPTIONS,
    parse=parse,
    page=lazy("lfcli.pipelines.view.coref_page", "coref_page"),
    report=lazy(__name__ + ".cast", "CastReport"),
    row_fields=("chains", "quotes"),
    # 2: chains of {name, mentions}, where form 1 had clusters (lists of mentions);
    # 3: and quotes, each {start, end, speaker}
    row_form=3,
    finetune=lazy(__name__ + ".train", "setup_corefs"),
    finetune_summary=("Train coreference (start-to-end, Kirstain et al. 2021). DATA: CoNLL-2012 files or folders "
                      "(coreference in the last column), or JSONL with text and clusters of {start, end} spans."),
    finetune_options=FINETUNE_OPTIONS,
    training=TrainingDefaults(lr={"lora": 1e-3, "full": 5e-5}, epochs=16.0, batch_tokens=2048, patience=6),
    evaluation=evaluation_in(__name__ + ".evaluation", "clusters", from_row=lazy(__name__ + ".evaluation", "from_row"),
                             options=EVALUATE_OPTIONS,
                             gold_help="CoNLL-2012 file or folder, .jsonl with id, clusters, or a GAP .tsv",
                             measures="MUC, B3, CEAF-e and CoNLL F1; GAP F1 and bias for a GAP .tsv"),
)
