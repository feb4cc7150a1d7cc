"""Longformer configuration, model, heads and checkpoint I/O (import as `lfcli.models`)."""

# The attention backend's choice, for the layers above: they reach lfcli.kernels through here.
from lfcli.kernels import ENV_VAR as BACKEND_ENV_VAR
from lfcli.kernels import BackendUnavailable, resolve_backend

from . import model_folders  # noqa: F401  (installs the loader's resolver of adapter bases)
from .checkpoint import CheckpointError, MissingHead, available_heads, load_pretrained, save_pretrained
from .config import ConfigError, LongformerConfig
from .fast_paths import FAST_PATHS, apply_fast_paths
from .heads import (
    ARCHITECTURES,
    LongformerForCoreference,
    LongformerForMaskedLM,
    LongformerForQuestionAnswering,
    LongformerForSequenceClassification,
    LongformerForTokenClassification,
    question_global_attention_mask,
)
from .longformer import LongformerModel, SequenceTooLong

__all__ = [
    "ARCHITECTURES",
    "BACKEND_ENV_VAR",
    "BackendUnavailable",
    "FAST_PATHS",
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
    "apply_fast_paths",
    "available_heads",
    "load_pretrained",
    "question_global_attention_mask",
    "resolve_backend",
    "save_pretrained",
]
