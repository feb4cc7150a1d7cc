"""LongformerConfig: the fields of a transformers `config.json`, under the checkpoint's names.

A `longformer` config is read as is. `bert` and `roberta` configs are read too and describe a
"short" model: a Longformer whose window covers every position, so it computes exactly what
the original model does (see `LongformerConfig.from_dict`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

KNOWN_MODEL_TYPES = ("longformer", "roberta", "bert")


class ConfigError(ValueError):
    """A config.json that lfcli cannot use; the message names the field."""


@dataclass
class LongformerConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    # RoBERTa-style tables reserve pad_token_id + 1 rows before the first real position
    # (4098 rows hold 4096 tokens). Defaults follow transformers' LongformerConfig.
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 1
    bos_token_id: int = 0
    eos_token_id: int = 2
    sep_token_id: int = 2
    # The FULL window (transformers' convention): w1 = attention_window // 2 keys each side.
    attention_window: int | list[int] = 512
    # lfcli's own: one int per layer, or one list of per-head ints per layer. 1 = no gaps.
    attention_dilation: int | list[int | list[int]] = 1
    # lfcli's own: which attention backend to use ("auto" picks by device); see lfcli.kernels.
    attention_backend: str = "auto"
    # MPNet's relative position bias: one table of buckets x heads shared by every layer, added
    # to every head's scores by the bucket of the key-minus-query distance. 0: no table (BERT,
    # RoBERTa, Longformer). Buckets are exact below a quarter of them per direction, log-spaced
    # up to relative_attention_max_distance and constant beyond (MPNet: 32 and 128).
    relative_attention_num_buckets: int = 0
    relative_attention_max_distance: int = 128
    id2label: dict[int, str] | None = None
    # "longformer" for real Longformer checkpoints; "bert"/"roberta" for short models loaded as
    # Longformers (BERT-style embeddings count positions from 0 and have no padding offset).
    model_type: str = "longformer"
    # Everything else in config.json (architectures, transformers_version, ...), kept for saving.
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.model_type not in KNOWN_MODEL_TYPES:
            raise ConfigError(
                f"unknown model_type {self.model_type!r}: lfcli reads {', '.join(KNOWN_MODEL_TYPES)} checkpoints"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size {self.hidden_size} is not a multiple of num_attention_heads {self.num_attention_heads}"
            )
        if self.id2label is not None:
            self.id2label = {int(k): str(v) for k, v in self.id2label.items()}
        windows = self.attention_windows
        if len(windows) != self.num_hidden_layers:
            raise ConfigError(
                f"attention_window has {len(windows)} values for {self.num_hidden_layers} layers"
            )
        for w in windows:
            if not isinstance(w, int) or w <= 0 or w % 2:
                raise ConfigError(f"attention_window must be positive and even (the full window), got {w!r}")
        for layer, d in enumerate(self.attention_dilations):
            if any((not isinstance(x, int)) or x < 1 for x in d) or len(d) != self.num_attention_heads:
                raise ConfigError(
                    f"attention_dilation of layer {layer} must be a positive int or "
                    f"{self.num_attention_heads} positive ints, got {d!r}"
                )
            if self.relative_attention_num_buckets and any(x != 1 for x in d):
                raise ConfigError(f"attention_dilation of layer {layer}: a relative position bias runs with dilation 1 only")
        for name in ("relative_attention_num_buckets", "relative_attention_max_distance"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value % 2:
                raise ConfigError(f"{name} must be an even whole number >= 0, got {value!r}")

    # -- derived values -------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_labels(self) -> int:
        return len(self.id2label) if self.id2label else 2

    @property
    def label2id(self) -> dict[str, int]:
        return {v: k for k, v in (self.id2label or {}).items()}

    @property
    def bert_style_positions(self) -> bool:
        """BERT counts positions 0..n-1; RoBERTa/Longformer start at pad_token_id + 1."""
        return self.model_type == "bert"

    @property
    def max_tokens(self) -> int:
        """The longest input the position table allows."""
        if self.bert_style_positions:
            return self.max_position_embeddings
        return self.max_position_embeddings - self.pad_token_id - 1

    @property
    def attention_windows(self) -> list[int]:
        w = self.attention_window
        return list(w) if isinstance(w, (list, tuple)) else [w] * self.num_hidden_layers

    @property
    def attention_dilations(self) -> list[list[int]]:
        """One list of per-head dilations for every layer."""
        d = self.attention_dilation
        per_layer = list(d) if isinstance(d, (list, tuple)) else [d] * self.num_hidden_layers
        if len(per_layer) != self.num_hidden_layers:
            raise ConfigError(f"attention_dilation has {len(per_layer)} values for {self.num_hidden_layers} layers")
        return [list(x) if isinstance(x, (list, tuple)) else [x] * self.num_attention_heads for x in per_layer]

    # -- reading and writing config.json --------------------------------------------------
    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "LongformerConfig":
        raw = dict(raw)
        model_type = raw.get("model_type", "longformer")
        if model_type not in KNOWN_MODEL_TYPES:
            raise ConfigError(
                f"unknown model_type {model_type!r}: lfcli reads {', '.join(KNOWN_MODEL_TYPES)} checkpoints"
            )
        if model_type != "longformer":
            # A short model: make the window cover every position so that each query sees
            # every key (the dense path), which is exactly BERT/RoBERTa self-attention.
            raw.setdefault("attention_window", 2 * raw.get("max_position_embeddings", 512))
            if model_type == "bert":
                raw.setdefault("pad_token_id", 0)
                raw.setdefault("sep_token_id", 102)
                raw.setdefault("bos_token_id", 101)
                raw.setdefault("eos_token_id", 102)
                raw.setdefault("layer_norm_eps", 1e-12)
                raw.setdefault("type_vocab_size", 2)
                raw.setdefault("max_position_embeddings", 512)
                if raw.get("position_embedding_type", "absolute") != "absolute":
                    raise ConfigError("only absolute position embeddings are supported for bert checkpoints")
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in raw.items() if k in names}
        extra = {k: v for k, v in raw.items() if k not in names and k != "label2id"}
        try:
            return cls(**known, extra=extra)
        except TypeError as exc:  # pragma: no cover - a field of the wrong kind
            raise ConfigError(str(exc)) from exc

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "extra"}
        out = {**self.extra, **out}
        if self.id2label is not None:
            out["id2label"] = {str(k): v for k, v in self.id2label.items()}
            out["label2id"] = self.label2id
        else:
            out.pop("id2label")
        return out

    @classmethod
    def from_json_file(cls, path: str | Path) -> "LongformerConfig":
        path = Path(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: no config.json there") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        return cls.from_dict(raw)

    def to_json_file(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


# The coreference head's settings where config.json's "coref" block leaves one out (ffnn_size:
# the hidden size); a new head's own choices are the corefs task's (its train.py).
COREF_SETTINGS = {"max_span_width": 30, "top_lambda": 0.4, "mention_threshold": 0.0, "link_threshold": 0.0,
                  "pronoun_agreement": True}


def coref_settings(config: "LongformerConfig") -> dict:
    """config.json's "coref" block, checked: each setting of the kind it must be (JSON true or
    false for pronoun_agreement, whole numbers for the sizes, numbers for the rest), else a
    one-line ConfigError naming the setting and the value (a quoted "false" would read as on)."""
    block = config.extra.get("coref")
    if block is None:
        block = {}
    if not isinstance(block, dict):
        raise ConfigError(f'config.json: "coref" must be a JSON object of settings, got {_shown(block)}')
    kinds = {"ffnn_size": (int, config.hidden_size), **{key: (type(value), value) for key, value in COREF_SETTINGS.items()}}
    out = {}
    for key, (kind, default) in kinds.items():
        value = block.get(key, default)
        if kind is bool:
            ok = isinstance(value, bool)
            wanted = "true or false (a JSON boolean, without quotes)"
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
            wanted = "a positive whole number"
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
            wanted = "a number"
        if not ok:
            raise ConfigError(f'config.json: "{key}" in the "coref" block must be {wanted}, got {_shown(value)}')
        out[key] = kind(value)
    return out


def _shown(value) -> str:
    """A config value as config.json writes it, with its JSON kind when it is a string."""
    text = json.dumps(value, default=repr)
    return f"{text} (a string)" if isinstance(value, str) else text
