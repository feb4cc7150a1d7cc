"""Longformer configuration, model, heads and checkpoint I/O (import as `lfcli.models`)."""

from .checkpoint import CheckpointError, MissingHead, available_heads, load_pretrained, save_pretrained
from .config import ConfigError, LongformerConfig
from .longformer import (
    ARCHITECTURES,
    LongformerForCoreference,
    LongformerForMaskedLM,
    LongformerForQuestionAnswering,
    LongformerForSequenceClassification,
    LongformerForTokenClassification,
    LongformerModel,
    SequenceTooLong,
    question_global_attention_mask,
)

__all__ = [
    "ARCHITECTURES",
    "CheckpointError",
    "ConfigError",
    "LongformerConfig",
    "LongformerForCoreference",
    "LongformerForMaskedLM",
    "LongformerForQuestionAnswering",
    "LongformerForSequenceClassification",
    "LongformerForTokenClassification",
    "LongformerModel",
    "MissingHead",
    "SequenceTooLong",
    "available_heads",
    "load_pretrained",
    "question_global_attention_mask",
    "save_pretrained",
]
