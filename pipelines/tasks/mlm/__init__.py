"""mlm: continued masked-LM pretraining on long documents (Beltagy et al. 2020, section 5),
`lfcli pretrain-continue`. Its home: config.py (PretrainConfig, the command's options and
defaults), masking.py (the corpus into masked sequences, the model with its MLM head),
pretrain.py (the run, on the one training loop); this module's SPEC is what the registry holds.
"""

from __future__ import annotations

from ...registry import TaskSpec, lazy

SPEC = TaskSpec(
    name="mlm",
    summary="Continue masked-LM pretraining on long documents (the paper's recipe); works under torchrun.",
    pretrain=lazy(__name__ + ".pretrain", "pretrain_continue"),
)
