"""Documents in, rows out; data in, trained models out (import as `lfcli.pipelines`).

Four rooms, each a package, and three small modules every room uses:

  io/      documents and the files they come from and go to: reading (files, folders, JSONL,
           Parquet, stdin, SemEval XML, CoNLL-2012), writing (JSONL, JSON, Parquet, with
           --resume) and the record of the job that made an output
  infer/   running a model over documents: tokenising into windows, global-attention
           policies, the tasks' decoding, precision, the Pipeline runner and the Ray engine
  eval/    scoring: the metrics (SQuAD, classification, CoNLL-2012 coreference, GAP) and
           `lfcli evaluate`
  train/   the one training loop (loop.py), `lfcli finetune` and `lfcli pretrain-continue`,
           and one module per trained task (classify.py, qa.py, coref.py)
  errors.py, wording.py, progress.py: the errors users see, plural words, stderr progress

A room imports the rooms before it in that order and never one after it (io <- infer <- eval
<- train), and all of them call lfcli.models, never lfcli.kernels (tests/test_architecture.py).
"""
