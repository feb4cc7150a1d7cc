"""The speed tricks, as named opt-in swaps of the plain model's modules.

models/longformer.py and models/heads.py are the reference: what the paper and transformers
compute, written plainly. Each entry of FAST_PATHS is a subclass of one plain module class
that overrides one method with a faster way to the same numbers (to rounding):

  query_scale_fold      the 1/sqrt(D) of the queries folded into the query weights
  fused_qkv             bf16 inference: the local q, k and v projections as one matmul
  global_row_algebra    global rows with key/value_global moved to the query side (G*H < hidden)
  triton_global_rows    global rows in one flash pass on the triton backend
  local_global_rows     no global rows where the band covers the input and the global
                        projections are the local ones
  row_chunks            inference runs everything after the attention on `chunk_rows`
                        positions at a time
  fused_linear_gelu     the FFN's first projection and GELU fused (lfcli.kernels.fused)
  onednn_linear         large inference projections with the bias inside the matmul
  fast_dropout          training's dropout masks drawn with torch.rand (lfcli.kernels.fused)
  fp32_head             a task head kept in fp32 under a 16-bit encoder (set_inference_dtype)

`apply_fast_paths(model, names=None)` swaps, in place, the class of every submodule a trick
applies to for one that also inherits the trick: no weight moves, no state-dict name
changes, and the swapped class keeps the plain class's name (so its `architectures` in
config.json and the HEADS lookups do not change; its repr adds `fast paths: ...`). The
swaps compose in the table's order: where two override one method (the global rows), the
earlier one decides first and hands the rest to the next. checkpoint.load_pretrained and
init_from_encoder apply them all (`fast_paths=()`, `--no-fast-paths`: none); a model built
with `cls(config)` is the plain reference. tests/test_fast_paths.py holds each one, alone and
all together, to the plain model.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from lfcli.kernels.blocks import LastBuilt
from lfcli.kernels.fused import dropout, linear, linear_gelu

from .longformer import (
    HiddenDropout,
    LongformerIntermediate,
    LongformerLayer,
    LongformerPreTrainedModel,
    LongformerSelfAttention,
    global_row_bias,
)


class QueryScaleFold(LongformerSelfAttention):
    """(h W^T + b) / sqrt(D) computed as h (W / sqrt(D))^T + b / sqrt(D): the scale touches the
    weights (hidden^2 numbers) instead of the activations (n * hidden)."""

    def scaled_query(self, hidden_states: torch.Tensor) -> torch.Tensor:
        scale = 1.0 / math.sqrt(self.head_dim)
        if isinstance(self.query, nn.Linear):
            return self._heads(linear(hidden_states, self.query.weight * scale, self.query.bias * scale))
        # A LoRA-wrapped projection (fine-tuning, models/lora.py): scaling its output keeps
        # autograd from forming the gradient of the whole merged weight.
        return self._heads(self.query(hidden_states) * scale)


class FusedQkv(LongformerSelfAttention):
    """bf16 inference on the CPU: the local query (scaled), key and value projections as one
    matmul against their three weights stacked, (3 * hidden) x hidden; q, k and v are views of
    its output. AMX runs the one wide product at twice the rate of three narrow ones: 5.9
    against 12.0 ms for 4,096 rows at 768 wide (2-core Intel Xeon); in fp32 the two take the
    same time (42 and 43 ms), so fp32 keeps the three. The stacked weight is made once and
    kept beside the module (3.5 MB a layer at base size, bf16), made again when a weight
    changes."""

    def local_qkv(self, hidden_states: torch.Tensor):
        projections = (self.query, self.key, self.value)
        if not (hidden_states.dtype == torch.bfloat16 and hidden_states.device.type == "cpu"
                and not torch.is_grad_enabled() and all(isinstance(m, nn.Linear) for m in projections)):  # not LoRA's
            return super().local_qkv(hidden_states)
        weight, bias = self._stacked_qkv()
        B, n, _ = hidden_states.shape
        qkv = F.linear(hidden_states, weight, bias).view(B, n, 3, self.num_heads, self.head_dim)
        return tuple(qkv[:, :, i].transpose(1, 2) for i in range(3))  # (B, H, n, D) views

    def _stacked_qkv(self) -> tuple[torch.Tensor, torch.Tensor]:
        def stack():
            scale = 1.0 / math.sqrt(self.head_dim)  # the queries' 1/sqrt(D), folded in
            return (torch.cat([self.query.weight * scale, self.key.weight, self.value.weight]),
                    torch.cat([self.query.bias * scale, self.key.bias, self.value.bias]))

        params = tuple(t for m in (self.query, self.key, self.value) for t in (m.weight, m.bias))
        # the swap replaces the class, not __init__: the slot is made on first use
        return self.__dict__.setdefault("_qkv_cache", LastBuilt()).get(params, (), stack)


class GlobalRowAlgebra(LongformerSelfAttention):
    """Global rows without projecting every position with key_global and value_global."""

    def global_rows(
        self,
        hidden_states: torch.Tensor,
        key_padding_mask: torch.Tensor,
        global_index: torch.Tensor,
        dropout_p: float,
        backend: str = "chunked",
        rel_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Projecting every position with key_global and value_global costs 4*n*hidden^2 FLOPs.
        Both are linear, so with G global tokens we can instead move them to the query side:
            q . (W_k h_j + b_k) = (W_k^T q) . h_j + q . b_k
            sum_j p_j (W_v h_j + b_v) = W_v (sum_j p_j h_j) + b_v sum_j p_j
        which costs about 4*n*hidden*G*H FLOPs: cheaper whenever G*H < hidden (e.g. one
        [CLS] token: 12 vs 768). Otherwise the plain projection. Returns (B, H, G, D).
        """
        B, n, hidden = hidden_states.shape
        H, D = self.num_heads, self.head_dim
        G = global_index.shape[1]
        if G * H >= hidden:
            return super().global_rows(hidden_states, key_padding_mask, global_index, dropout_p, backend, rel_bias)
        q = self.global_queries(hidden_states, global_index)  # (B, H, G, D)
        w_k = self.key_global.weight.view(H, D, hidden)
        w_v = self.value_global.weight.view(H, D, hidden)
        q_hidden = torch.einsum("bhgd,hde->bhge", q, w_k)  # (B, H, G, hidden)
        # (n, hidden) @ (hidden, H*G), then transposed: the GEMM streams the hidden states
        # row by row, ~1.6x faster than the (H*G, hidden) @ (hidden, n) orientation.
        scores = torch.matmul(hidden_states, q_hidden.reshape(B, H * G, hidden).transpose(1, 2)).transpose(1, 2)
        scores = scores.reshape(B, H, G, n) + torch.einsum("bhgd,hd->bhg", q, self.key_global.bias.view(H, D))[..., None]
        if rel_bias is not None:
            scores = scores + global_row_bias(rel_bias, global_index, n)
        neg = torch.finfo(torch.float32).min
        probs = torch.softmax(scores.float().masked_fill(key_padding_mask[:, None, None, :], neg), dim=-1)
        probs = F.dropout(probs.to(q.dtype), p=dropout_p, training=dropout_p > 0)
        context = torch.matmul(probs.reshape(B, H * G, n), hidden_states).view(B, H, G, hidden)
        out = torch.einsum("bhge,hde->bhgd", context, w_v)  # (B, H, G, D)
        return out + self.value_global.bias.view(1, H, 1, D) * probs.sum(-1, keepdim=True)


class TritonGlobalRows(LongformerSelfAttention):
    """On the triton backend, the projected global rows in one flash pass: no (B, H, G, n)
    score tensor (lfcli.kernels.triton_banded.triton_global_rows)."""

    def global_rows(
        self,
        hidden_states: torch.Tensor,
        key_padding_mask: torch.Tensor,
        global_index: torch.Tensor,
        dropout_p: float,
        backend: str = "chunked",
        rel_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if backend != "triton":
            return super().global_rows(hidden_states, key_padding_mask, global_index, dropout_p, backend, rel_bias)
        from lfcli.kernels import triton_banded  # optional: imports triton

        q = self.global_queries(hidden_states, global_index)  # (B, H, G, D)
        k = self._heads(self.key_global(hidden_states))  # (B, H, n, D)
        v = self._heads(self.value_global(hidden_states))
        return triton_banded.triton_global_rows(q, k, v, key_padding_mask, dropout_p, rel_bias=rel_bias,
                                                positions=global_index)


class LocalGlobalRows(LongformerSelfAttention):
    """A global token's row is its band row already when the band covers the whole input
    (n <= attention_window/2 + 1, no dilation) and the layer's global projections are its
    local ones: the same softmax over every non-padding key, with the same q, k and v. That
    holds for models converted from BERT or RoBERTa, whose global weights start as copies of
    the local ones (the bundled minilm-l6-long), on inputs of up to half a window: short rows
    and short documents. Inference then skips the global rows (5% of a batch of eight
    140-token rows)."""

    def needs_global_rows(self, hidden_states: torch.Tensor) -> bool:
        skip = (
            hidden_states.shape[1] <= self.attention_window // 2 + 1
            and all(d == 1 for d in self.dilation)
            and not torch.is_grad_enabled()
            and self._global_is_local()
        )
        return not skip and super().needs_global_rows(hidden_states)

    def _global_is_local(self) -> bool:
        """Whether query/key/value_global equal query/key/value, compared again only when a
        weight has been replaced or changed in place."""
        pairs = [(getattr(self, name), getattr(self, name + "_global")) for name in ("query", "key", "value")]
        if not all(isinstance(m, nn.Linear) and m.bias is not None for pair in pairs for m in pair):
            return False  # LoRA-wrapped projections (fine-tuning) are not their copies
        tensors = [(a.weight, b.weight) for a, b in pairs] + [(a.bias, b.bias) for a, b in pairs]
        key = tuple((t.data_ptr(), t._version) for pair in tensors for t in pair)
        if self.__dict__.get("_global_is_local_key") != key:
            self._global_is_local_key = key
            self._global_is_local_value = all(torch.equal(a, b) for a, b in tensors)
        return self._global_is_local_value


class RowChunks(LongformerLayer):
    """Everything in a layer after the attention itself is position-wise: the output
    projection, the residual adds, both LayerNorms and the FFN. Inference runs them on
    `chunk_rows` positions at a time, so that a chunk's activations (1.5 MB at 384 wide, its
    FFN activation 6 MB) stay in cache from one op to the next instead of each op streaming
    the whole (B*n x hidden) tensor through memory; the (positions x intermediate) FFN
    activation is 12 MB at base size instead of 48 MB at 4096 tokens (200 MB at 16k), a size
    the allocator reuses from layer to layer. Training (autograd keeps every activation
    anyway) takes the plain path."""

    chunk_rows = 1024  # positions per chunk, B*n flattened (a chunk may straddle two samples)
    # In bf16 the matmuls run on AMX, fast enough that a chunk of 1,024 rows leaves them short
    # of work: 4,096 rows a chunk took 0.84x the time of 1,024 for the base tier's embed over
    # a novel (one 4,096-token window a batch; 2-core Intel Xeon).
    chunk_rows_bf16 = 4096

    def forward(self, hidden_states: torch.Tensor, *masks) -> torch.Tensor:
        B, n, hidden = hidden_states.shape
        chunks = B * n // (self.chunk_rows_bf16 if hidden_states.dtype == torch.bfloat16 else self.chunk_rows)
        if chunks < 2 or (torch.is_grad_enabled() and hidden_states.requires_grad):
            return super().forward(hidden_states, *masks)
        # Equal chunks of chunk_rows to 2*chunk_rows rows: a ragged tail of a few rows would run
        # its matmuls at a fraction of the rate (8 rows of 140 tokens: 1,024 + 96 rows took 1.07x
        # the time of one chunk of 1,120).
        size = -(-B * n // chunks)
        context = self.attention.self(hidden_states, *masks).reshape(B * n, hidden)
        residual = hidden_states.reshape(B * n, hidden)
        out = torch.empty_like(residual)
        for r0 in range(0, B * n, size):
            rows = slice(r0, r0 + size)
            # LongformerAttention.forward's second half, then LongformerLayer's feed-forward
            out[rows] = self.feed_forward(self.attention.output(context[rows], residual[rows]))
        return out.view(B, n, hidden)


class FusedLinearGelu(LongformerIntermediate):
    """dense + exact GELU through oneDNN on the CPU in inference (lfcli.kernels.fused)."""

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.act is F.gelu:
            return linear_gelu(hidden_states, self.dense.weight, self.dense.bias)
        return super().forward(hidden_states)


class OneDnnLinear(nn.Linear):
    """A projection of many positions at once (the q/k/v projections of whole windows) through
    oneDNN in fp32 inference: the bias is added inside the matmul instead of first being
    copied into every row of the output (lfcli.kernels.fused.linear)."""

    @staticmethod
    def applies_to(module: nn.Module) -> bool:
        return type(module) is nn.Linear or isinstance(module, OneDnnLinear)  # not LoRA's wrappers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


class FastDropout(HiddenDropout):
    """Training's dropout through lfcli.kernels.fused.dropout: the same inverted dropout, its
    mask drawn with torch.rand, 3x faster on the CPU than F.dropout's Bernoulli sampler
    (another random stream, seeded alike). Identity in inference, as the plain one."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


class Fp32Head(LongformerPreTrainedModel):
    """Under a 16-bit encoder a task head stays fp32 and gets the encoder's output in fp32
    (`encode`): the head is a few percent of the FLOPs, and its scores are compared with each
    other (QA span margins, coreference links against the dummy's 0, label probabilities),
    where bf16's 8 bits of mantissa flip close calls. Not for a head that shares weights with
    the encoder (the masked-LM decoder is the word embeddings): see `applies_to`."""

    head_dtype: torch.dtype | None = None  # set by set_inference_dtype: the head's dtype, if not the encoder's

    @staticmethod
    def applies_to(model: nn.Module) -> bool:
        if not (isinstance(model, LongformerPreTrainedModel) and model.base_model_prefix):
            return False
        prefix = model.base_model_prefix
        encoder = {id(p) for p in getattr(model, prefix).parameters()}
        head = [p for name, child in model.named_children() if name != prefix for p in child.parameters()]
        return not any(id(p) in encoder for p in head)

    def set_inference_dtype(self, dtype: torch.dtype):
        self.to(dtype=dtype)
        self.head_dtype = None
        if dtype in (torch.bfloat16, torch.float16):
            for name, child in self.named_children():
                if name != self.base_model_prefix:
                    child.float()
            self.head_dtype = torch.float32
        return self

    def encode(self, input_ids, attention_mask=None, global_attention_mask=None, token_type_ids=None) -> torch.Tensor:
        hidden = super().encode(input_ids, attention_mask, global_attention_mask, token_type_ids)
        return hidden if self.head_dtype is None else hidden.to(self.head_dtype)


# The table, in the order the swaps compose (earlier ones decide first).
FAST_PATHS: dict[str, type[nn.Module]] = {
    "query_scale_fold": QueryScaleFold,
    "fused_qkv": FusedQkv,
    "global_row_algebra": GlobalRowAlgebra,
    "triton_global_rows": TritonGlobalRows,
    "local_global_rows": LocalGlobalRows,
    "row_chunks": RowChunks,
    "fused_linear_gelu": FusedLinearGelu,
    "onednn_linear": OneDnnLinear,
    "fast_dropout": FastDropout,
    "fp32_head": Fp32Head,
}


def _applies(swap: type[nn.Module], module: nn.Module) -> bool:
    if hasattr(swap, "applies_to"):
        return swap.applies_to(module)
    return isinstance(module, swap.__bases__[0])  # the plain class it subclasses


def _plain_class(cls: type) -> type:
    """`cls` without its swaps: the first class of its MRO that is neither a swap nor a class
    composed here."""
    swaps = set(FAST_PATHS.values())
    return next(c for c in cls.__mro__ if c not in swaps and "fast_paths" not in vars(c))


@functools.cache
def _composed(plain: type, names: tuple[str, ...]) -> type:
    """`plain` with the swaps `names` (in FAST_PATHS order), under plain's own name."""
    bases = tuple(FAST_PATHS[name] for name in names) + (plain,)

    def extra_repr(self) -> str:  # the plain module's, then its swaps: print(model) shows what runs
        return ", ".join(filter(None, [plain.extra_repr(self), f"fast paths: {', '.join(names)}"]))

    namespace = {"__module__": plain.__module__, "__qualname__": plain.__qualname__, "__doc__": plain.__doc__,
                 "fast_paths": names, "extra_repr": extra_repr}
    return type(plain.__name__, bases, namespace)


def fast_paths_of(module: nn.Module) -> tuple[str, ...]:
    """The names of the swaps `module` itself runs (not its submodules')."""
    return tuple(name for name, swap in FAST_PATHS.items() if isinstance(module, swap))


def apply_fast_paths(model: nn.Module, names=None) -> nn.Module:
    """Swap in the fast paths `names` (default: all of FAST_PATHS) wherever they apply in
    `model`, in place; returns `model`. Applying one twice changes nothing."""
    names = list(FAST_PATHS) if names is None else list(names)
    unknown = [name for name in names if name not in FAST_PATHS]
    if unknown:
        raise ValueError(f"unknown fast path {unknown[0]!r}; known: {', '.join(FAST_PATHS)}")
    for module in model.modules():
        new = [name for name in names if _applies(FAST_PATHS[name], module)]
        if not new:
            continue
        have = set(fast_paths_of(module)) | set(new)
        module.__class__ = _composed(_plain_class(type(module)), tuple(n for n in FAST_PATHS if n in have))
    return model


def described() -> list[tuple[str, str]]:
    """(name, what it does) of every swap, from this module's table (`lfcli --version --verbose`)."""
    lines = (__doc__ or "").split("\n")
    out: list[tuple[str, str]] = []
    for line in lines:
        words = line.split(None, 1)
        if line.startswith("  ") and words and words[0] in FAST_PATHS:
            out.append((words[0], " ".join(words[1].split()) if len(words) > 1 else ""))
        elif out and line.startswith(" " * 10) and line.strip():  # a continuation line of the table
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
    return out
