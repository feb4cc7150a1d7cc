"""The task heads: the table of the heads lfcli knows, then the head modules and the task
models over the plain encoder (models/longformer.py), and ARCHITECTURES.

The table (HEADS) has one entry per head: the model class (its name in ARCHITECTURES and in
a checkpoint's config.json `architectures`), a weight name only it has (how a checkpoint shows it carries the head), its words in messages, the modules LoRA
trains in full and saves with the adapter (PEFT's modules_to_save), PEFT's task type, and
the architecture suffix of a transformers source model that carries it (convert.py). The
checkpoint loader, LoRA, conversion, the runner and `lfcli models` all read this one table.

The task models (masked LM, sequence classification, question answering, token
classification, coreference) each put a head on `LongformerModel`; their module names are
transformers' (or, for coreference, the paper code's), so checkpoints load by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import LongformerConfig, coref_settings
from .longformer import HiddenDropout, LongformerModel, LongformerPreTrainedModel


@dataclass(frozen=True)
class Head:
    architecture: str
    marker: str  # a weight-name prefix only this head has
    what: str  # in messages: "this checkpoint has no <what>"
    modules: tuple[str, ...]  # trained in full under LoRA and saved with the adapter
    peft_task_type: str
    source_suffixes: tuple[str, ...] = ()  # transformers architectures "<Model>For<suffix>" it comes from


ENCODER = "LongformerModel"  # no head: embed, and classify zero-shot with --labels
COREF_MODULES = ("start_mention_mlp", "end_mention_mlp", "start_coref_mlp", "end_coref_mlp",
                 "mention_start_classifier", "mention_end_classifier", "mention_s2e_classifier",
                 "antecedent_s2s_classifier", "antecedent_e2e_classifier", "antecedent_s2e_classifier",
                 "antecedent_e2s_classifier")

# Which task runs which head is the task's to say (its home's TaskSpec.architecture).
HEADS = {h.architecture: h for h in (
    # Pretraining trains every weight: no LoRA head. BERT's PreTraining heads: the MLM half (NSP is dropped).
    Head("LongformerForMaskedLM", "lm_head.", "masked-LM head", (), "", ("MaskedLM", "PreTraining")),
    Head("LongformerForSequenceClassification", "classifier.out_proj.", "sequence-classification head",
         ("classifier",), "SEQ_CLS", ("SequenceClassification",)),
    Head("LongformerForQuestionAnswering", "qa_outputs.", "question-answering head", ("qa_outputs",),
         "QUESTION_ANS", ("QuestionAnswering",)),
    Head("LongformerForTokenClassification", "classifier.weight", "token-classification head", ("classifier",),
         "TOKEN_CLS", ("TokenClassification",)),
    Head("LongformerForCoreference", "mention_s2e_classifier.", "coreference head", COREF_MODULES,
         "FEATURE_EXTRACTION", ()),
)}


def source_heads() -> dict[str, str]:
    """A transformers architecture's suffix (`BertFor<suffix>`) -> our class with that head."""
    return {suffix: h.architecture for h in HEADS.values() for suffix in h.source_suffixes}


# -- the head modules and task models -------------------------------------------------------

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
    """MLM head; no automatic global attention (pretraining uses none). Its decoder is the word
    embeddings' weight (tie_weights), so it runs in the encoder's dtype."""

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
        self.dropout = HiddenDropout(config.hidden_dropout_prob)
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
        self.dropout = HiddenDropout(config.hidden_dropout_prob)
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
        self.dropout = HiddenDropout(dropout)

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
    links mentions only (pipelines/tasks/corefs/train.py trains it on the gold mentions).
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
    pipelines/tasks/corefs/entities.py).
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
