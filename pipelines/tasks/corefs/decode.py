"""From a coreference window's scores to chains: which spans may be mentions (whole words), which
words are personal pronouns, and max-antecedent decoding that keeps two people apart.

A chain never holds two people that cannot be one (entities.py: two names, two genders,
personal pronouns of two kinds, a quote's speaker and addressee). A mention whose best
antecedent sits in a chain it cannot join takes its next-best antecedent above the threshold
instead, or starts a chain of its own. With the bundled model on LitBank dev, pronoun
agreement alone took B3 precision from 45.7 to 50.3 for 0.5 of recall (CoNLL F1 58.4 -> 58.9,
bf16); all the rules give 59.5 (fp32), GAP F1 64.5 (`benchmarks/eval_coref.py
--no-pronoun-agreement` decodes without any). The same rules hold where windows are joined
(document.DocumentEntities).
"""

from __future__ import annotations

from typing import Callable

import torch

from .entities import Profile, pronoun_kind


def words_of(tokenizer, text: str, n: int, parts: list[tuple[int, int]] | None = None
             ) -> tuple[bytearray, bytearray, dict[tuple[int, int], str]]:
    """(starts, ends, pronouns) of a text's n tokens: whether each token is the first / last
    sub-word of a word, as the tokenizer's pre-tokenizer splits words (white space and
    punctuation: in "Elizabeth's", "Elizabeth" is a word), and {(first, last token): kind} of
    the words that are personal pronouns. Mentions start and end on word boundaries, so only
    those tokens are candidates (a third fewer spans, none cutting a word).

    `parts`: the [start, end) character stretches the document's tokens were encoded in
    (infer.tokenize.stretches, for a long text), read one by one as they were, so a book is
    never held as one tokenizer output (its offsets alone are ~100 bytes a token)."""
    starts, ends = bytearray(), bytearray()  # 1 or 0 a token: a byte each, not a list entry
    pronouns: dict[tuple[int, int], str] = {}
    for lo, hi in parts or [(0, len(text))]:
        encoding = tokenizer.encode(text[lo:hi], add_special_tokens=False)
        word_ids, offsets = encoding.word_ids, encoding.offsets  # each a new list per access: read once
        shift, m = len(starts), len(word_ids)
        starts.extend(i == 0 or w is None or w != word_ids[i - 1] for i, w in enumerate(word_ids))
        ends.extend(i == m - 1 or w is None or w != word_ids[i + 1] for i, w in enumerate(word_ids))
        first = 0
        for i in range(m):
            if starts[shift + i]:
                first = i
            if ends[shift + i] and word_ids[i] is not None:
                kind = pronoun_kind(text[lo + offsets[first][0]:lo + offsets[i][1]])
                if kind is not None:
                    pronouns[(shift + first, shift + i)] = kind
    if len(starts) != n:  # cannot happen with one tokenizer; every token is then a candidate
        return bytearray(b"\x01") * n, bytearray(b"\x01") * n, {}
    return starts, ends, pronouns


def decode_clusters(spans, valid, antecedent_scores, mention_scores, mention_threshold: float = 0.0,
                    link_threshold: float = 0.0, profiles: list[Profile | None] | None = None) -> list[list[tuple[int, int]]]:
    """One window's entities from its scores (LongformerForCoreference.forward, one sample).

    The kept spans whose mention score exceeds `mention_threshold` (0: probability 0.5) are
    the mentions. Max-antecedent decoding among them: each mention links to its
    best-scoring earlier mention when that beats the dummy antecedent (score 0; or
    `link_threshold`, which trades merges for precision), and links chain into clusters;
    a mention that links to nothing and is not linked to is a one-mention entity.
    `profiles`: what each span says about its entity (entities.Profile: its name,
    pronoun, gender, quote) or None; when given, a mention links to the best antecedent
    whose chain it is compatible with (different names, genders, pronoun kinds, or a
    quote's speaker and addressee never share a chain).
    Spans are (start, end) token positions, end inclusive; clusters in order of their first
    mention, mentions in text order (the model's order)."""

    is_mention = valid.bool() & (mention_scores.float() > mention_threshold)
    pair = antecedent_scores.float().masked_fill(~is_mention[None, :], float("-inf"))
    best_score, best = pair.max(dim=1)
    cluster_of: dict[int, int] = {}
    clusters: list[list[int]] = []
    chain_profiles: list[Profile] = []  # what each cluster's mentions say

    def profile_of(j: int) -> Profile:
        if j in cluster_of:
            return chain_profiles[cluster_of[j]]
        return profiles[j] if profiles and profiles[j] else Profile()

    for i in torch.nonzero(is_mention).flatten().tolist():
        own = profiles[i] if profiles else None
        agrees = (lambda j: own.compatible(profile_of(j))) if own else None
        j = _antecedent(pair[i], int(best[i]), float(best_score[i]), link_threshold, agrees)
        if j is None:
            continue
        if j not in cluster_of:
            chain = Profile()
            chain.update(profile_of(j))
            chain_profiles.append(chain)
            cluster_of[j] = len(clusters)
            clusters.append([j])
        cluster_of[i] = cluster_of[j]
        clusters[cluster_of[i]].append(i)
        if own:
            chain_profiles[cluster_of[i]].update(own)
    singles = [[i] for i in torch.nonzero(is_mention).flatten().tolist() if i not in cluster_of]
    out = sorted(clusters + singles, key=lambda c: min(c))
    return [[(int(spans[i, 0]), int(spans[i, 1])) for i in sorted(c)] for c in out]


def _antecedent(row, best: int, best_score: float, threshold: float, agrees: Callable[[int], bool] | None) -> int | None:
    """The best-scoring earlier mention above `threshold` that `agrees` (any, when None)."""
    if not best_score > threshold:  # finite and above the dummy
        return None
    if agrees is None or agrees(best):
        return best
    scores, order = row.sort(descending=True)  # only for a pronoun whose best antecedent disagrees
    for score, j in zip(scores.tolist(), order.tolist()):
        if not score > threshold:
            return None
        if agrees(j):
            return j
    return None
