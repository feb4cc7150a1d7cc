"""Documents and their files: readers.py (iter_documents: files, folders, text, stdin) with
jsonl_reader.py and parquet_reader.py over inputs.py (what the readers share), semeval.py
(SemEval articles XML), conll.py (CoNLL-2012 coreference), writers.py (open_writer: JSONL and
JSON outputs and --resume) with parquet_writer.py over outputs.py (what the writers share),
jobs.py (the record of the job that made an output), page_rows.py (the rows kept inside an
HTML page, for --resume), document.py.
Imports nothing of the other rooms."""
