"""Training: loop.py (the one loop: batching by tokens, autocast, evaluation, checkpoints,
--resume), finetune.py (`lfcli finetune`: the model, LoRA or full, and how it is written),
pretrain.py (`lfcli pretrain-continue`, masked-LM), setups.py (what each task's set-up gives
the loop) and one module per task: classify.py, qa.py, coref.py. Imports io/, infer/ and
eval/."""
