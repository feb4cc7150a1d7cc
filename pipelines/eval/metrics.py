"""Scorers for lfcli's tasks: classification, SQuAD v1.1 answers, coreference, GAP. The one
place to import them from; each lives with its field's kin: metrics_classify.py,
metrics_qa.py (SQuAD), metrics_coref.py (CoNLL and GAP).

Pure Python (no torch, numpy or scipy), so scoring runs anywhere `lfcli` installs and its
numbers can be checked by hand. Each scorer follows the definition its field uses, so the
numbers compare with published ones:

* classification: accuracy, macro-F1 (the unweighted mean of the per-class F1 over every label
  seen in gold or predictions, as scikit-learn's ``average="macro"``), per-class precision,
  recall, F1 and support, and the confusion matrix (labels sorted; rows gold, columns
  predicted). Fractions in [0, 1].
* SQuAD v1.1 (Rajpurkar et al. 2016, the official ``evaluate-v1.1.py``): answers normalised
  (lower case, punctuation removed, the articles a/an/the removed, white space collapsed);
  exact match and token F1 take the best over a question's gold answers and are averaged over
  questions, x100.
* coreference, as the CoNLL-2012 reference scorer (Pradhan et al. 2014) computes it: mentions
  are exact spans, the key (gold) and response (predicted) mention sets may differ (a response
  mention not in the key counts against precision), each document's numerators and
  denominators are summed over the corpus before dividing (micro-average), x100.

  - MUC (Vilain et al. 1995): recall = sum_K (|K| - |p(K)|) / sum_K (|K| - 1), where p(K) is
    the partition of key entity K by the response entities (a key mention missing from the
    response is a part of its own); precision the same with key and response swapped.
  - B-cubed (Bagga & Baldwin 1998): recall = sum over key mentions m of |K_m ∩ R_m| / |K_m|,
    divided by the number of key mentions; precision symmetrically over response mentions.
  - CEAF-e (Luo 2005): phi4(K, R) = 2 |K ∩ R| / (|K| + |R|), the key-response alignment
    (one-to-one) that maximises the summed phi4, found with the Kuhn-Munkres algorithm;
    recall = total / #key entities, precision = total / #response entities. (CEAF-m, phi3 =
    |K ∩ R|, comes with it for Luo's tables.)
  - CoNLL F1 = the mean of the three F1s.

  Clusterings are iterables of clusters of hashable mentions (``(start, end)`` spans). A
  mention listed twice is kept once, in the first cluster listing it (the reference scorer's
  de-duplication). "Without singletons" removes one-mention clusters from key and response
  before scoring.
* GAP (Webster et al. 2018, the official ``gap_scorer.py``): for each example, is name A (B)
  coreferent with the pronoun? F1 of the positive class over all A and B decisions, overall,
  masculine and feminine (gender from the pronoun), and the bias F1(feminine) / F1(masculine),
  x100. A missing decision counts as a false negative, as in the official scorer.
"""

from __future__ import annotations

from .metrics_classify import classification_scores
from .metrics_coref import (
    GAP_GENDERS,
    GapExample,
    Score,
    b_cubed,
    canonical_clusters,
    ceaf_e,
    ceaf_m,
    coref_document_scores,
    coref_scores,
    gap_decisions,
    gap_scores,
    kuhn_munkres,
    mention_score,
    muc,
    read_gap,
    remove_singletons,
)
from .metrics_qa import normalize_answer, squad_exact_match, squad_f1, squad_scores

__all__ = [
    # classification
    "classification_scores",
    # SQuAD
    "normalize_answer",
    "squad_exact_match",
    "squad_f1",
    "squad_scores",
    # coreference
    "Score",
    "canonical_clusters",
    "remove_singletons",
    "muc",
    "b_cubed",
    "ceaf_e",
    "ceaf_m",
    "mention_score",
    "kuhn_munkres",
    "coref_document_scores",
    "coref_scores",
    # GAP
    "GapExample",
    "GAP_GENDERS",
    "read_gap",
    "gap_decisions",
    "gap_scores",
]
