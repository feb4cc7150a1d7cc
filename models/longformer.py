"""The Longformer encoder, plain: what the paper and transformers compute, read top to bottom.

Follows Beltagy, Peters & Cohan (2020), "Longformer: The Long-Document Transformer", and
computes what transformers' `LongformerModel` computes for the same weights (see
../shared/docs/longformer-reference.md). Module and parameter names are the checkpoint's,
so loading a transformers checkpoint is a plain name match (models/checkpoint.py).

Differences from transformers, none of which change the numbers:
  * no padding to a multiple of the window: the attention kernels take any length;
  * attention runs through `lfcli.kernels.banded_attention` (chunked on CPU, Triton on CUDA);
  * per-head dilation (`attention_dilation`), which the published PyTorch model lacks;
  * MPNet's relative position bias (`relative_attention_num_buckets`), for MPNet encoders made
    long (Song et al. 2020, "MPNet"; transformers' `MPNetModel` computes the same on inputs the
    window covers): one table shared by every layer, read as one vector per head over
    key-minus-query offsets (`LongformerEncoder.offset_bias`, lfcli.kernels.position_bias).

This file is the reference. The speed tricks (the query scale folded into the weights, the
global rows moved to the query side, the Triton global rows, the feed-forward in row chunks,
the fused linear + GELU, the faster dropout mask, the fp32 head under a 16-bit encoder) are
swaps of these modules in models/fast_paths.py, applied when a checkpoint is loaded (not with
`--no-fast-paths`); a swapped module's repr names its swaps; tests/test_fast_paths.py holds
them to this file. The task heads are in models/heads.py.

Classes read bottom-up: embeddings, attention, feed-forward, layer, encoder, pooler, model.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from lfcli.kernels import banded_attention, resolve_backend
from lfcli.kernels.chunked import global_columns
from lfcli.kernels.position_bias import bias_between

from .config import LongformerConfig

ACT2FN = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


# Reading and writing checkpoints is models/checkpoint.py's work, a layer above this file (it
# builds these classes); it installs its loader and writer here when lfcli.models is imported,
# for the classes' from_pretrained and save_pretrained.
_checkpoint_io: dict[str, Callable] = {}


def set_checkpoint_io(load: Callable, save: Callable) -> None:
    """Install `load(cls, path, **kwargs) -> model` and `save(model, path)`."""
    _checkpoint_io.update(load=load, save=save)


class SequenceTooLong(ValueError):
    """Input longer than the model's position table."""


def relative_position_bucket(offset: torch.Tensor, num_buckets: int = 32, max_distance: int = 128) -> torch.Tensor:
    """MPNet's bucket of a key-minus-query offset (T5's bidirectional scheme): keys after the
    query take the upper half of the buckets, keys before it the lower half; within a half, a
    distance below a quarter of num_buckets is its own bucket, longer ones share log-spaced
    buckets up to max_distance, and everything further is the half's last bucket."""
    half = num_buckets // 2
    exact = half // 2
    distance = offset.abs()
    # The same float32 steps as the MPNet checkpoints were trained with (truncated, not rounded).
    far = exact + (
        torch.log(distance.clamp(min=1).float() / exact) / math.log(max_distance / exact) * (half - exact)
    ).to(torch.long)
    far = far.clamp(max=half - 1)
    return (offset > 0).long() * half + torch.where(distance < exact, distance, far)


class HiddenDropout(nn.Dropout):
    """nn.Dropout itself, under a name of the model's own: the fast_dropout swap
    (models/fast_paths.py) finds the model's dropouts by it, and leaves an adapter's alone."""


class LongformerEmbeddings(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = HiddenDropout(config.hidden_dropout_prob)
        self.pad_token_id = config.pad_token_id
        self.bert_style_positions = config.bert_style_positions

    def position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.bert_style_positions:
            return torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        # RoBERTa: real tokens count from pad_token_id + 1, pad tokens sit at pad_token_id.
        real = input_ids.ne(self.pad_token_id).long()
        return torch.cumsum(real, dim=1) * real + self.pad_token_id

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(self.position_ids(input_ids))
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.LayerNorm(x))


class LongformerSelfAttention(nn.Module):
    """Sliding-window attention with the local projections, plus global attention with the
    global projections for the task-chosen tokens (paper section 3.1)."""

    def __init__(self, config: LongformerConfig, layer_id: int):
        super().__init__()
        hidden = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.query_global = nn.Linear(hidden, hidden)
        self.key_global = nn.Linear(hidden, hidden)
        self.value_global = nn.Linear(hidden, hidden)
        self.attention_window = config.attention_windows[layer_id]
        self.dilation = config.attention_dilations[layer_id]  # one int per head
        self.dropout_p = config.attention_probs_dropout_prob

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        B, n, _ = x.shape
        return x.view(B, n, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, n, D)

    def scaled_query(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """The local queries, scaled by 1/sqrt(D) for the dot products: (B, H, n, D)."""
        return self._heads(self.query(hidden_states)) / math.sqrt(self.head_dim)

    def local_qkv(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The local queries (scaled), keys and values: (B, H, n, D) each."""
        return self.scaled_query(hidden_states), self._heads(self.key(hidden_states)), self._heads(self.value(hidden_states))

    def forward(
        self,
        hidden_states: torch.Tensor,  # (B, n, hidden)
        key_padding_mask: torch.Tensor,  # (B, n) True = padding
        is_global: torch.Tensor,  # (B, n) True = global (never padding)
        global_index: torch.Tensor,  # (B, G) positions of global tokens, left-aligned
        global_valid: torch.Tensor,  # (B, G) False for empty slots
        backend: str,
        rel_bias: torch.Tensor | None = None,  # (H, 2R+1) relative position bias by offset, or None
    ) -> torch.Tensor:
        B, n, hidden = hidden_states.shape
        q, k, v = self.local_qkv(hidden_states)  # (B, H, n, D) each
        dropout_p = self.dropout_p if self.training else 0.0
        out = banded_attention(
            q, k, v, self.attention_window, key_padding_mask, is_global, self.dilation, dropout_p, backend, rel_bias,
            columns=(global_index, global_valid),
        )  # (B, H, n, D)
        if global_index.shape[1] and self.needs_global_rows(hidden_states):
            rows = self.global_rows(hidden_states, key_padding_mask, global_index, dropout_p, backend, rel_bias)  # (B, H, G, D)
            out = overwrite_rows(out, rows, global_index, global_valid)
        return out.transpose(1, 2).reshape(B, n, hidden)

    def needs_global_rows(self, hidden_states: torch.Tensor) -> bool:
        """Whether the global tokens' rows must be computed apart (always, here; a fast path
        knows when their band rows are the same)."""
        return True

    def global_queries(self, hidden_states: torch.Tensor, global_index: torch.Tensor) -> torch.Tensor:
        """query_global of the global tokens, scaled by 1/sqrt(D): (B, H, G, D)."""
        B, _, hidden = hidden_states.shape
        G = global_index.shape[1]
        h_global = torch.gather(hidden_states, 1, global_index[:, :, None].expand(B, G, hidden))  # (B, G, hidden)
        q = self.query_global(h_global).view(B, G, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, G, D)
        return q / math.sqrt(self.head_dim)

    def global_rows(
        self,
        hidden_states: torch.Tensor,
        key_padding_mask: torch.Tensor,
        global_index: torch.Tensor,
        dropout_p: float,
        backend: str = "chunked",
        rel_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Global queries attend to every non-padding key with query/key/value_global, as
        transformers computes them (every position projected with key_global and
        value_global); with a relative position bias, that of each key's true distance.
        `backend` is for the fast paths' Triton twin. Returns (B, H, G, D)."""
        q = self.global_queries(hidden_states, global_index)  # (B, H, G, D)
        k = self._heads(self.key_global(hidden_states))  # (B, H, n, D)
        v = self._heads(self.value_global(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)).float()  # (B, H, G, n)
        if rel_bias is not None:
            scores = scores + global_row_bias(rel_bias, global_index, hidden_states.shape[1])
        neg = torch.finfo(torch.float32).min
        probs = torch.softmax(scores.masked_fill(key_padding_mask[:, None, None, :], neg), dim=-1)
        probs = F.dropout(probs.to(q.dtype), p=dropout_p, training=dropout_p > 0)
        return torch.matmul(probs, v)


def overwrite_rows(out: torch.Tensor, rows: torch.Tensor, index: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """out (B, H, n, D) with row index[b, g] replaced by rows[b, :, g] wherever valid[b, g].

    Without reading anything back from the device (no nonzero()): an empty slot writes back
    the row it points at, which is unchanged, and the slots of a sample point at distinct
    positions (chunked.global_columns), so no two writes meet. In place when autograd does not
    need `out`."""
    B, H, _, D = out.shape
    where = index[:, None, :, None].expand(B, H, index.shape[1], D)
    kept = torch.gather(out, 2, where)
    new = torch.where(valid[:, None, :, None], rows.to(out.dtype), kept)  # autocast may run the two in other dtypes
    if torch.is_grad_enabled() and (out.requires_grad or new.requires_grad):
        return out.scatter(2, where, new)
    return out.scatter_(2, where, new)


def global_row_bias(rel_bias: torch.Tensor, global_index: torch.Tensor, n: int) -> torch.Tensor:
    """(B, H, G, n) fp32: the relative position bias of every key j for the global queries at
    positions global_index (B, G), by the offset j - position."""
    j = torch.arange(n, device=global_index.device)
    return bias_between(rel_bias, global_index, j).transpose(0, 1).float()


class LongformerSelfOutput(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = HiddenDropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class LongformerAttention(nn.Module):
    def __init__(self, config: LongformerConfig, layer_id: int):
        super().__init__()
        self.self = LongformerSelfAttention(config, layer_id)
        self.output = LongformerSelfOutput(config)

    def forward(self, hidden_states: torch.Tensor, *masks) -> torch.Tensor:
        return self.output(self.self(hidden_states, *masks), hidden_states)


class LongformerIntermediate(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(hidden_states))


class LongformerOutput(LongformerSelfOutput):
    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)


class LongformerLayer(nn.Module):
    def __init__(self, config: LongformerConfig, layer_id: int):
        super().__init__()
        self.attention = LongformerAttention(config, layer_id)
        self.intermediate = LongformerIntermediate(config)
        self.output = LongformerOutput(config)

    def forward(self, hidden_states: torch.Tensor, *masks) -> torch.Tensor:
        return self.feed_forward(self.attention(hidden_states, *masks))

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """FFN, residual and LayerNorm, position by position."""
        return self.output(self.intermediate(x), x)


class LongformerEncoder(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.layer = nn.ModuleList(LongformerLayer(config, i) for i in range(config.num_hidden_layers))
        self.gradient_checkpointing = False
        # MPNet's relative position bias: (buckets, heads), shared by every layer.
        self.num_buckets = config.relative_attention_num_buckets
        self.max_distance = config.relative_attention_max_distance
        if self.num_buckets:
            self.relative_attention_bias = nn.Embedding(self.num_buckets, config.num_attention_heads)

    def offset_bias(self) -> torch.Tensor | None:
        """The bias table as the kernels read it: (H, 2R+1) by key-minus-query offset -R..R,
        R = max_distance, past which every offset shares the last bucket of its direction
        (lfcli.kernels.position_bias). None for a model without the table."""
        if not self.num_buckets:
            return None
        R = max(1, self.max_distance)
        offsets = torch.arange(-R, R + 1, device=self.relative_attention_bias.weight.device)
        buckets = relative_position_bucket(offsets, self.num_buckets, self.max_distance)
        return self.relative_attention_bias(buckets).t()  # (H, 2R+1), differentiable in the table

    def forward(self, hidden_states: torch.Tensor, *masks) -> torch.Tensor:
        masks = (*masks, self.offset_bias())
        for layer in self.layer:
            if self.gradient_checkpointing and self.training:
                hidden_states = checkpoint(layer, hidden_states, *masks, use_reentrant=False)
            else:
                hidden_states = layer(hidden_states, *masks)
        return hidden_states


class LongformerPooler(nn.Module):
    """[CLS] -> dense -> tanh. Loaded for completeness; no task head here uses it."""

    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden_states[:, 0]))


class LongformerPreTrainedModel(nn.Module):
    """Weight init, checkpoint I/O and backend choice shared by the model and the heads
    (models/heads.py)."""

    config: LongformerConfig
    base_model_prefix = "longformer"

    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.config = config
        # An explicit backend choice (CLI flag / API argument); None defers to the env var,
        # then to config.attention_backend. See lfcli.kernels.attention.
        self.attention_backend: str | None = None

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def set_inference_dtype(self, dtype: torch.dtype):
        """The whole model in `dtype`, for inference. (Loaded models keep a task head in fp32
        under a 16-bit encoder: the fp32_head fast path, models/fast_paths.py.)"""
        return self.to(dtype=dtype)

    def encode(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None) -> torch.Tensor:
        """The encoder's last hidden states, which a task head reads."""
        return self.longformer(input_ids, attention_mask, global_attention_mask, token_type_ids)

    def post_init(self) -> None:
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self) -> None:
        pass

    def set_gradient_checkpointing(self, enabled: bool = True) -> None:
        for module in self.modules():
            if isinstance(module, LongformerEncoder):
                module.gradient_checkpointing = enabled

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """checkpoint.load_pretrained(cls, path, **kwargs): with the fast paths by default."""
        return _checkpoint_io["load"](cls, path, **kwargs)

    def save_pretrained(self, path) -> None:
        _checkpoint_io["save"](self, path)


class LongformerModel(LongformerPreTrainedModel):
    """The bare encoder: input ids -> last hidden states (B, n, hidden)."""

    base_model_prefix = ""

    def __init__(self, config: LongformerConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = LongformerEmbeddings(config)
        self.encoder = LongformerEncoder(config)
        self.pooler = LongformerPooler(config) if add_pooling_layer else None
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        global_attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        num_global: int | None = None,
    ) -> torch.Tensor:
        """num_global: at least the most global tokens of a sample, when the caller knows it (a
        CUDA graph's static global mask is on the device, where counting would read it back)."""
        B, n = input_ids.shape
        if n > self.config.max_tokens:
            raise SequenceTooLong(
                f"input of {n} tokens is longer than this model's {self.config.max_tokens} positions "
                "(max_position_embeddings); split the document into windows (the lfcli pipelines do this)"
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if global_attention_mask is not None and global_attention_mask.device.type == "cpu":
            # The number of global columns is a shape. Counted on the host, from a mask given
            # there (the pipelines on CUDA hand the masks over on the host), the forward never
            # waits for the GPU to report it; the masks follow without blocking (from pinned
            # memory). The count may include globals on padding: a spare slot is only empty.
            if num_global is None:
                num_global = int(global_attention_mask.bool().sum(1).max()) if B else 0
            global_attention_mask = global_attention_mask.to(input_ids.device, non_blocking=True)
        attention_mask = attention_mask.to(input_ids.device, non_blocking=True)
        key_padding_mask = attention_mask == 0
        if global_attention_mask is None:
            is_global = torch.zeros_like(key_padding_mask)
        else:
            is_global = global_attention_mask.bool() & ~key_padding_mask  # padding wins over global
        global_index, global_valid = global_columns(is_global, num_global)
        backend = resolve_backend(self.attention_backend, self.config.attention_backend, input_ids.device)
        hidden_states = self.embeddings(input_ids, token_type_ids)
        return self.encoder(hidden_states, key_padding_mask, is_global, global_index, global_valid, backend)
