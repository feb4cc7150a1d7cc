"""The Longformer encoder and its task heads, in one file.

Follows Beltagy, Peters & Cohan (2020), "Longformer: The Long-Document Transformer", and
computes what transformers' `LongformerModel` computes for the same weights (see
../shared/docs/longformer-reference.md). Module and parameter names are the checkpoint's,
so loading a transformers checkpoint is a plain name match (models/checkpoint.py).

Differences from transformers, none of which change the numbers:
  * no padding to a multiple of the window: the attention kernels take any length;
  * attention runs through `lfcli.kernels.banded_attention` (chunked on CPU, Triton on CUDA);
  * global rows fold key_global/value_global into the few global queries when that is
    cheaper than projecting every position (see `LongformerSelfAttention.global_rows`);
  * per-head dilation (`attention_dilation`), which the published PyTorch model lacks.
Classes read bottom-up: embeddings, attention, layer, encoder, model, heads.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from lfcli.kernels import banded_attention, resolve_backend
from lfcli.kernels.fused import Dropout, linear_gelu
from lfcli.kernels.chunked import global_columns

from .config import LongformerConfig, coref_settings

ACT2FN = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


class SequenceTooLong(ValueError):
    """Input longer than the model's position table."""


class LongformerEmbeddings(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
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

    def forward(
        self,
        hidden_states: torch.Tensor,  # (B, n, hidden)
        key_padding_mask: torch.Tensor,  # (B, n) True = padding
        is_global: torch.Tensor,  # (B, n) True = global (never padding)
        global_index: torch.Tensor,  # (B, G) positions of global tokens, left-aligned
        global_valid: torch.Tensor,  # (B, G) False for empty slots
        backend: str,
    ) -> torch.Tensor:
        B, n, hidden = hidden_states.shape
        # (h W^T + b) / sqrt(D) computed as h (W / sqrt(D))^T + b / sqrt(D): the scale touches
        # the weights (hidden^2 numbers) instead of the activations (n * hidden).
        scale = 1.0 / math.sqrt(self.head_dim)
        if isinstance(self.query, nn.Linear):
            q = self._heads(F.linear(hidden_states, self.query.weight * scale, self.query.bias * scale))
        else:  # a LoRA-wrapped projection (fine-tuning): scaling its output keeps autograd from
            # forming the gradient of the whole merged weight
            q = self._heads(self.query(hidden_states) * scale)
        k = self._heads(self.key(hidden_states))
        v = self._heads(self.value(hidden_states))
        dropout_p = self.dropout_p if self.training else 0.0
        out = banded_attention(
            q, k, v, self.attention_window, key_padding_mask, is_global, self.dilation, dropout_p, backend
        )  # (B, H, n, D)
        if global_index.shape[1]:
            rows = self.global_rows(hidden_states, key_padding_mask, global_index, dropout_p, backend)  # (B, H, G, D)
            b, g = global_valid.nonzero(as_tuple=True)  # the filled slots only
            where = (b, slice(None), global_index[b, g])
            # Overwrite the global tokens' rows: in place when autograd does not need `out`.
            if torch.is_grad_enabled() and out.requires_grad:
                out = out.clone()
            out[where] = rows[b, :, g].to(out.dtype)  # autocast may run the two parts in other dtypes
        return out.transpose(1, 2).reshape(B, n, hidden)

    def global_rows(
        self,
        hidden_states: torch.Tensor,
        key_padding_mask: torch.Tensor,
        global_index: torch.Tensor,
        dropout_p: float,
        backend: str = "chunked",
    ) -> torch.Tensor:
        """Global queries attend to every non-padding key with query/key/value_global.

        Projecting every position with key_global and value_global costs 4*n*hidden^2 FLOPs.
        Both are linear, so with G global tokens we can instead move them to the query side:
            q . (W_k h_j + b_k) = (W_k^T q) . h_j + q . b_k
            sum_j p_j (W_v h_j + b_v) = W_v (sum_j p_j h_j) + b_v sum_j p_j
        which costs about 4*n*hidden*G*H FLOPs: cheaper whenever G*H < hidden (e.g. one
        [CLS] token: 12 vs 768). Otherwise project all positions as transformers does.
        Returns (B, H, G, D).
        """
        B, n, hidden = hidden_states.shape
        H, D = self.num_heads, self.head_dim
        G = global_index.shape[1]
        h_global = torch.gather(hidden_states, 1, global_index[:, :, None].expand(B, G, hidden))
        q = self.query_global(h_global).view(B, G, H, D).transpose(1, 2) / math.sqrt(D)  # (B, H, G, D)
        neg = torch.finfo(torch.float32).min
        if G * H < hidden:
            w_k = self.key_global.weight.view(H, D, hidden)
            w_v = self.value_global.weight.view(H, D, hidden)
            q_hidden = torch.einsum("bhgd,hde->bhge", q, w_k)  # (B, H, G, hidden)
            # (n, hidden) @ (hidden, H*G), then transposed: the GEMM streams the hidden states
            # row by row, ~1.6x faster than the (H*G, hidden) @ (hidden, n) orientation.
            scores = torch.matmul(hidden_states, q_hidden.reshape(B, H * G, hidden).transpose(1, 2)).transpose(1, 2)
            scores = scores.reshape(B, H, G, n) + torch.einsum("bhgd,hd->bhg", q, self.key_global.bias.view(H, D))[..., None]
            probs = torch.softmax(scores.float().masked_fill(key_padding_mask[:, None, None, :], neg), dim=-1)
            probs = F.dropout(probs.to(q.dtype), p=dropout_p, training=dropout_p > 0)
            context = torch.matmul(probs.reshape(B, H * G, n), hidden_states).view(B, H, G, hidden)
            out = torch.einsum("bhge,hde->bhgd", context, w_v)
            return out + self.value_global.bias.view(1, H, 1, D) * probs.sum(-1, keepdim=True)
        k = self._heads(self.key_global(hidden_states))
        v = self._heads(self.value_global(hidden_states))
        if backend == "triton":  # a flash pass: no (B, H, G, n) score tensor
            from lfcli.kernels.triton_banded import triton_global_rows

            return triton_global_rows(q, k, v, key_padding_mask, dropout_p)
        scores = torch.matmul(q, k.transpose(-1, -2)).float()
        probs = torch.softmax(scores.masked_fill(key_padding_mask[:, None, None, :], neg), dim=-1)
        probs = F.dropout(probs.to(q.dtype), p=dropout_p, training=dropout_p > 0)
        return torch.matmul(probs, v)


class LongformerSelfOutput(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

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
        if self.act is F.gelu:  # one fused matmul + bias + GELU on the CPU (lfcli.kernels.fused)
            return linear_gelu(hidden_states, self.dense.weight, self.dense.bias)
        return self.act(self.dense(hidden_states))


class LongformerOutput(LongformerSelfOutput):
    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)


class LongformerLayer(nn.Module):
    # Positions whose feed-forward runs at a time in inference (see feed_forward).
    ffn_rows = 1024

    def __init__(self, config: LongformerConfig, layer_id: int):
        super().__init__()
        self.attention = LongformerAttention(config, layer_id)
        self.intermediate = LongformerIntermediate(config)
        self.output = LongformerOutput(config)

    def forward(self, hidden_states: torch.Tensor, *masks) -> torch.Tensor:
        return self.feed_forward(self.attention(hidden_states, *masks))

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """FFN, residual and LayerNorm: position-wise, so inference runs it on `ffn_rows`
        positions at a time. Its (positions x intermediate) activation is then 12 MB at base
        size instead of 48 MB at 4096 tokens (200 MB at 16k): a size the allocator reuses
        from layer to layer, where the whole one is mapped and page-faulted in afresh every
        layer. Measured ~8% faster for the FFN at 4096 tokens, and a lower peak."""
        B, n, hidden = x.shape
        if B * n <= self.ffn_rows or (torch.is_grad_enabled() and x.requires_grad):
            return self.output(self.intermediate(x), x)
        rows = x.reshape(B * n, hidden)
        out = torch.empty_like(rows)
        for r0 in range(0, B * n, self.ffn_rows):
            part = rows[r0 : r0 + self.ffn_rows]
            out[r0 : r0 + self.ffn_rows] = self.output(self.intermediate(part), part)
        return out.view(B, n, hidden)


class LongformerEncoder(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.layer = nn.ModuleList(LongformerLayer(config, i) for i in range(config.num_hidden_layers))
        self.gradient_checkpointing = False

    def forward(self, hidden_states: torch.Tensor, *masks) -> torch.Tensor:
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
    """Weight init, checkpoint I/O and backend choice shared by the model and the heads."""

    config: LongformerConfig
    base_model_prefix = "longformer"

    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.config = config
        # An explicit backend choice (CLI flag / API argument); None defers to the env var,
        # then to config.attention_backend. See lfcli.kernels.attention.
        self.attention_backend: str | None = None
        # Set by set_inference_dtype when the encoder runs in 16 bits and the head in fp32.
        self.head_dtype: torch.dtype | None = None

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

    # Whether the task head may stay fp32 under a 16-bit encoder; not the MLM head, whose
    # decoder shares its weight with the (16-bit) word embeddings.
    fp32_head = True

    def set_inference_dtype(self, dtype: torch.dtype):
        """The encoder in `dtype`. Under a 16-bit encoder a task head stays fp32 and gets the
        encoder's output in fp32 (`encode`): the head is a few percent of the FLOPs, and its
        scores are compared with each other (QA span margins, coreference links against the
        dummy's 0, label probabilities), where bf16's 8 bits of mantissa flip close calls."""
        self.to(dtype=dtype)
        self.head_dtype = None
        if dtype in (torch.bfloat16, torch.float16) and self.fp32_head and self.base_model_prefix:
            for name, child in self.named_children():
                if name != self.base_model_prefix:
                    child.float()
            self.head_dtype = torch.float32
        return self

    def encode(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None) -> torch.Tensor:
        """The encoder's last hidden states, in the head's dtype (see set_inference_dtype)."""
        hidden = self.longformer(input_ids, attention_mask, global_attention_mask, token_type_ids)
        return hidden if self.head_dtype is None else hidden.to(self.head_dtype)

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
        from .checkpoint import load_pretrained

        return load_pretrained(cls, path, **kwargs)

    def save_pretrained(self, path) -> None:
        from .checkpoint import save_pretrained

        save_pretrained(self, path)


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
    ) -> torch.Tensor:
        B, n = input_ids.shape
        if n > self.config.max_tokens:
            raise SequenceTooLong(
                f"input of {n} tokens is longer than this model's {self.config.max_tokens} positions "
                "(max_position_embeddings); split the document into windows (the lfcli pipelines do this)"
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        key_padding_mask = attention_mask == 0
        if global_attention_mask is None:
            is_global = torch.zeros_like(key_padding_mask)
        else:
            is_global = global_attention_mask.bool() & ~key_padding_mask  # padding wins over global
        global_index, global_valid = global_columns(is_global)
        backend = resolve_backend(self.attention_backend, self.config.attention_backend, input_ids.device)
        hidden_states = self.embeddings(input_ids, token_type_ids)
        return self.encoder(hidden_states, key_padding_mask, is_global, global_index, global_valid, backend)


class LongformerLMHead(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)  # tied to word embeddings
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.layer_norm(F.gelu(self.dense(features)))
        return self.decoder(x) + self.bias


class LongformerForMaskedLM(LongformerPreTrainedModel):
    """MLM head; no automatic global attention (pretraining uses none)."""

    fp32_head = False

    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        self.longformer = LongformerModel(config, add_pooling_layer=False)
        self.lm_head = LongformerLMHead(config)
        self.post_init()

    def tie_weights(self) -> None:
        self.lm_head.decoder.weight = self.longformer.embeddings.word_embeddings.weight

    def forward(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None):
        return self.lm_head(self.longformer(input_ids, attention_mask, global_attention_mask, token_type_ids))


class LongformerClassificationHead(nn.Module):
    def __init__(self, config: LongformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        x = self.dropout(hidden_states[:, 0])  # the first token (<s> / [CLS])
        x = self.dropout(torch.tanh(self.dense(x)))
        return self.out_proj(x)


class LongformerForSequenceClassification(LongformerPreTrainedModel):
    """Document label from the first token, which is global when no mask is given."""

    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        self.longformer = LongformerModel(config, add_pooling_layer=False)
        self.classifier = LongformerClassificationHead(config)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None):
        if global_attention_mask is None:
            global_attention_mask = torch.zeros_like(input_ids)
            global_attention_mask[:, 0] = 1
        return self.classifier(self.encode(input_ids, attention_mask, global_attention_mask, token_type_ids))


def question_global_attention_mask(input_ids: torch.Tensor, sep_token_id: int) -> torch.Tensor:
    """Global attention on every token before the first separator (<s> + question).

    transformers asserts exactly three separators per sample; here a sample without one
    gets global attention on its first token only.
    """
    is_sep = input_ids == sep_token_id
    n = input_ids.shape[1]
    first_sep = torch.where(is_sep.any(dim=1), is_sep.int().argmax(dim=1), torch.ones_like(is_sep[:, 0], dtype=torch.long))
    return (torch.arange(n, device=input_ids.device)[None, :] < first_sep[:, None]).long()


class LongformerForQuestionAnswering(LongformerPreTrainedModel):
    """Extractive QA: start and end logits for every token."""

    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        self.longformer = LongformerModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None):
        if global_attention_mask is None:
            global_attention_mask = question_global_attention_mask(input_ids, self.config.sep_token_id)
        logits = self.qa_outputs(self.encode(input_ids, attention_mask, global_attention_mask, token_type_ids))
        start_logits, end_logits = logits.unbind(dim=-1)
        return start_logits, end_logits


class LongformerForTokenClassification(LongformerPreTrainedModel):
    """A label per token; no automatic global attention."""

    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        self.longformer = LongformerModel(config, add_pooling_layer=False)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None):
        hidden = self.encode(input_ids, attention_mask, global_attention_mask, token_type_ids)
        return self.classifier(self.dropout(hidden))


class CorefMLP(nn.Module):
    def __init__(self, in_size: int, out_size: int, dropout: float):
        super().__init__()
        self.dense = nn.Linear(in_size, out_size)
        self.layer_norm = nn.LayerNorm(out_size)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.layer_norm(F.gelu(self.dense(x))))


class CorefScores:
    """Everything LongformerForCoreference.score computes for a batch (B samples).

    mention_scores (B, n, W): f_m(start i, end i + w), -inf for spans that may not be mentions.
    spans (B, K, 2): the kept mentions' token positions [start, end] inclusive, in text order
        (by start, then end); valid (B, K) False for padding slots.
    top_scores (B, K): their mention scores (0 where not valid).
    antecedent_scores (B, K, K): row q = mention, column c = candidate antecedent:
        f_a(c, q), -inf unless c is an earlier valid mention of q. The dummy
        antecedent (no antecedent: q starts an entity or is no mention) scores 0, implicitly.
    """

    def __init__(self, mention_scores, spans, valid, top_scores, antecedent_scores):
        self.mention_scores, self.spans, self.valid = mention_scores, spans, valid
        self.top_scores, self.antecedent_scores = top_scores, antecedent_scores


class LongformerForCoreference(LongformerPreTrainedModel):
    """Start-to-end coreference (Kirstain, Ram & Levy 2021, "Coreference Resolution without
    Span Representations"). No global attention.

    Mentions: a span (s, e) scores f_m = v_s . m_s + v_e . m_e + m_s . B_m m_e from the
    start and end tokens' mention vectors m_s = MLP_s(h_s), m_e = MLP_e(h_e) (eq. 1 of the
    paper). Every span of at most max_span_width tokens is scored, width by width, so memory
    stays (n x W) scores, never (n x W x size) vectors; the top lambda * n (top_lambda, 0.4)
    are kept.
    Antecedents: for a kept mention q and an earlier kept mention c, with coref vectors
    a_s = MLP'_s(h_s), a_e = MLP'_e(h_e),
        f_a(c, q) = a_s^c . B_ss a_s^q + a_s^c . B_se a_e^q + a_e^c . B_es a_s^q + a_e^c . B_ee a_e^q
    (eq. 2), computed as one (K, 2 size) @ (2 size, K) product:
        [a_s^c, a_e^c] . [B_ss a_s^q + B_se a_e^q, B_es a_s^q + B_ee a_e^q].
    The pair score is f_a(c, q); the dummy antecedent scores 0. No span representations and
    no (K x K x size) tensor: memory is linear in the length, plus K^2.

    One departure from the paper, which adds f_m(c) + f_m(q) to the pair score and trains f_m
    only through the antecedent loss: here f_m is trained as a calibrated "is a mention"
    logit, the kept spans it scores above `mention_threshold` are the mentions (LitBank
    annotates one-mention entities, so mention detection is a task of its own), and f_a
    links mentions only (pipelines/train/coref.py trains it on the gold mentions).
    Mentions are rare (about one candidate span in 240): with f_m in the pair score and
    every kept span trained to take the dummy, no link beat the dummy after 3 epochs on
    LitBank.

    Module names: antecedent_XY_classifier is B_XY, X the mention's side, Y the antecedent's
    (s = start, e = end).

    config.extra["coref"] sets ffnn_size (default: hidden size), max_span_width (30),
    top_lambda (0.4), mention_threshold (0: a kept span is a mention when f_m exceeds it) and
    link_threshold (0: a mention links to its best antecedent when f_a exceeds it, i.e.
    beats the dummy) and pronoun_agreement (true: a chain never holds two people that cannot
    be one: personal pronouns of two kinds, two names, two genders; see
    pipelines/infer/coref_entities.py).
    """

    def __init__(self, config: LongformerConfig):
        super().__init__(config)
        coref = coref_settings(config)
        size = coref["ffnn_size"]
        self.max_span_width = coref["max_span_width"]
        self.top_lambda = coref["top_lambda"]  # mentions kept per token
        self.mention_threshold = coref["mention_threshold"]
        self.link_threshold = coref["link_threshold"]
        self.pronoun_agreement = coref["pronoun_agreement"]
        self.longformer = LongformerModel(config, add_pooling_layer=False)
        p = config.hidden_dropout_prob
        self.start_mention_mlp = CorefMLP(config.hidden_size, size, p)
        self.end_mention_mlp = CorefMLP(config.hidden_size, size, p)
        self.start_coref_mlp = CorefMLP(config.hidden_size, size, p)
        self.end_coref_mlp = CorefMLP(config.hidden_size, size, p)
        self.mention_start_classifier = nn.Linear(size, 1)
        self.mention_end_classifier = nn.Linear(size, 1)
        self.mention_s2e_classifier = nn.Linear(size, size)
        self.antecedent_s2s_classifier = nn.Linear(size, size)
        self.antecedent_e2e_classifier = nn.Linear(size, size)
        self.antecedent_s2e_classifier = nn.Linear(size, size)
        self.antecedent_e2s_classifier = nn.Linear(size, size)
        self.post_init()

    def mention_scores(self, hidden: torch.Tensor, start_mask: torch.Tensor, end_mask: torch.Tensor,
                       segment_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(B, n, W) f_m of the span [i, i + w]; -inf unless token i may start a mention,
        token i + w may end one, i + w < n, and (with segment_ids, e.g. paragraphs) both lie
        in one segment."""
        B, n, _ = hidden.shape
        start_m, end_m = self.start_mention_mlp(hidden), self.end_mention_mlp(hidden)
        s2e = self.mention_s2e_classifier(start_m)  # B_m m_s, (B, n, size)
        start_score = self.mention_start_classifier(start_m).squeeze(-1)  # (B, n)
        end_score = self.mention_end_classifier(end_m).squeeze(-1)
        width = max(1, min(self.max_span_width, n))
        columns = []
        for w in range(width):  # the span [i, i + w] for every i at once: O(n size) memory per width
            bilinear = (s2e[:, : n - w] * end_m[:, w:]).sum(-1)  # (B, n - w)
            ok = start_mask[:, : n - w] & end_mask[:, w:]
            if segment_ids is not None:
                ok = ok & (segment_ids[:, : n - w] == segment_ids[:, w:])
            col = (start_score[:, : n - w] + end_score[:, w:] + bilinear).float().masked_fill(~ok, float("-inf"))
            columns.append(F.pad(col, (0, w), value=float("-inf")))
        return torch.stack(columns, dim=-1)

    def score(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None, mention_mask=None,
              start_mask=None, end_mask=None, keep=None, segment_ids=None) -> CorefScores:
        """mention_mask (B, n) bool: tokens a mention may cover (default: the non-padding
        tokens); start_mask / end_mask: tokens a mention may start / end on (default:
        mention_mask; e.g. the first and last sub-word of words); segment_ids (B, n): a
        mention's first and last token share one (paragraphs; default: no such rule). keep
        (B, n, W) bool: spans kept whatever their score (training: the gold mentions, so that
        the antecedent loss sees every gold link from the first update)."""
        hidden = self.encode(input_ids, attention_mask, global_attention_mask, token_type_ids)
        B, n, _ = hidden.shape
        if mention_mask is None:
            mention_mask = attention_mask.bool() if attention_mask is not None else torch.ones_like(input_ids, dtype=torch.bool)
        start_mask = mention_mask if start_mask is None else start_mask & mention_mask
        end_mask = mention_mask if end_mask is None else end_mask & mention_mask
        scores = self.mention_scores(hidden, start_mask, end_mask, segment_ids)  # (B, n, W)
        width = scores.shape[-1]
        k = max(1, min(int(self.top_lambda * int(mention_mask.sum(dim=1).max())), n * width))
        rank = scores.detach()
        if keep is not None:
            rank = rank.masked_fill(keep & torch.isfinite(rank), float("inf"))
        flat = rank.view(B, -1).topk(k, dim=1).indices.sort(dim=1).values  # kept spans in text order
        top_scores = scores.view(B, -1).gather(1, flat)
        valid = torch.isfinite(top_scores)
        starts = flat // width
        ends = starts + flat % width
        top_scores = top_scores.masked_fill(~valid, 0.0)
        size = self.start_coref_mlp.dense.out_features
        a_s = self.start_coref_mlp(hidden).gather(1, starts[..., None].expand(B, k, size))  # (B, K, size)
        a_e = self.end_coref_mlp(hidden).gather(1, ends[..., None].expand(B, k, size))
        query = torch.cat([
            self.antecedent_s2s_classifier(a_s) + self.antecedent_e2s_classifier(a_e),  # . a_s of the antecedent
            self.antecedent_s2e_classifier(a_s) + self.antecedent_e2e_classifier(a_e),  # . a_e of the antecedent
        ], dim=-1)
        pair = torch.matmul(query, torch.cat([a_s, a_e], dim=-1).transpose(1, 2)).float()  # (B, K, K)
        earlier = torch.ones(k, k, dtype=torch.bool, device=hidden.device).tril(-1)
        allowed = earlier[None] & valid[:, :, None] & valid[:, None, :]
        return CorefScores(scores, torch.stack([starts, ends], dim=-1), valid, top_scores,
                           pair.masked_fill(~allowed, float("-inf")))

    def forward(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None, mention_mask=None,
                start_mask=None, end_mask=None, segment_ids=None):
        """(spans (B, K, 2) [start, end] inclusive, valid (B, K), antecedent_scores (B, K, K)
        with -inf where column j is not an earlier valid mention of row i, mention scores of
        the spans (B, K)). See `score`."""
        out = self.score(input_ids, attention_mask, global_attention_mask, token_type_ids, mention_mask, start_mask, end_mask,
                         segment_ids=segment_ids)
        return out.spans, out.valid, out.antecedent_scores, out.top_scores


ARCHITECTURES = {
    cls.__name__: cls
    for cls in (
        LongformerModel,
        LongformerForMaskedLM,
        LongformerForSequenceClassification,
        LongformerForQuestionAnswering,
        LongformerForTokenClassification,
        LongformerForCoreference,
    )
}
