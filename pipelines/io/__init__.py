"""Documents and their files: readers.py (files, folders, JSONL, Parquet, stdin), semeval.py
(SemEval articles XML), conll.py (CoNLL-2012 coreference), writers.py (JSONL, JSON, Parquet
outputs and --resume), jobs.py (the record of the job that made an output), document.py.
Imports nothing of the other rooms."""
