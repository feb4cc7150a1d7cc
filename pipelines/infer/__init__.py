"""Running a model over documents: tokenize.py (windows), policies.py (global attention),
tasks.py + answers.py (each task's batches and decoding), precision.py (dtype and autocast),
catalog.py (which models there are), runner.py (the Pipeline: read, batch, run, decode, in
order), ray_engine.py (the same jobs on Ray Data). Imports io/."""
