"""Training's shared machinery: loop.py (the one loop: batching by tokens, autocast,
evaluation, --resume) with optimizer.py (AdamW and the schedule), distributed.py (torchrun),
checkpoint.py (the resume state), output.py (the run's folder and metrics.jsonl),
progress_bar.py; finetune.py (`lfcli finetune`: the model, LoRA or full, and how it is
written), setups.py (what a task's set-up gives the loop), batches.py and average.py (model
soups). Each task's own training is in its home (pipelines/tasks/<task>/train.py; masked-LM
pretraining in tasks/mlm/). Imports io/, view/, infer/ and eval/."""
