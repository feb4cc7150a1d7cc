"""Documents in, rows out; data in, trained models out (import as `lfcli.pipelines`).

Rooms, each a package, the tasks' homes above them, and a few small modules every room uses:

  io/      documents and the files they come from and go to: reading (files, folders, JSONL,
           Parquet, stdin, compressed files, SemEval XML, CoNLL-2012), writing (JSONL, JSON,
           Parquet, with --resume) and the record of the job that made an output
  view/    the HTML pages of outputs (`-o NAME.html`, `lfcli show`) and training curves
  infer/   running a model over documents: tokenising into windows, global-attention
           policies, precision, the Pipeline runner and the Ray engine
  eval/    scoring: the metrics (SQuAD, classification, CoNLL-2012 coreference, GAP) and
           `lfcli evaluate`
  train/   the one training loop (loop.py), `lfcli finetune`'s shared set-up, checkpoints
           and adapters' averages
  tasks/   one home per task (classify, qa, embed, corefs, mlm): what only that task knows,
           its decoding, training set-up, metric glue and options, registered by name
  registry.py (task name -> its home's TaskSpec), errors.py, wording.py, progress.py: the
           registry every room looks tasks up in, the errors users see, plural words, stderr
           progress

tests/test_architecture.py holds which room may import which (docs/architecture.md draws
them), and all of them call lfcli.models, never lfcli.kernels.
"""
