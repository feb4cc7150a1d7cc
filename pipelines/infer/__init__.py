"""Running a model over documents: tokenize.py (windows), policies.py (global attention),
tasks.py (the Task every task's home subclasses: batches and decoding), precision.py (dtype
and autocast), catalog.py (which models there are), heap.py (memory kept flat), runner.py
(the Pipeline: read, batch, run, decode, in order), ray_engine.py (the same jobs on Ray
Data). Imports io/."""
