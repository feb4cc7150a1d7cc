"""Zero-shot label priors: how much nearer a label's text sits to documents of a kind than
the other labels' texts do, whatever the documents say.

Zero-shot classify picks the label whose embedding is nearest the document's. Some label texts
sit nearer every document of a kind than others ("adventure story" to any passage of a
novel), and such a label wins documents that are not about it: on 36 passages of novels of six
genres the small tier gave "adventure story" half of them and "western" none
(benchmarks/eval_label_bias.py). A label's prior is taken off its cosine with every document
before the softmax (classify/task.py).

The prior of label l is its mean cosine with the documents that do not go to l: a label that
documents are truly about is not marked down for being near them (the plain mean over all the
documents marks it down, and on a batch mostly of one kind hands its documents to other
labels). Which documents go to l depends on the priors, so the two are found together: start
from the uncorrected labels, recompute the priors, relabel, until nothing changes.

`auto` (the default) applies the priors only where the uncorrected labels show the failure: a
label taking more than twice its fair share (1/k of k labels) of at least MIN_DOCUMENTS
documents and of at least as many documents as there are labels. Without it nothing is
changed, so a batch whose labels are spread already scores as without priors.
"""

from __future__ import annotations

import torch

# The fewest documents the automatic priors are measured on (and never fewer than the labels):
# fewer say too little about which label sits near all of them.
MIN_DOCUMENTS = 8
# A label taking more than this many times its fair share of the documents marks the batch as
# biased (the failure the priors correct).
BIAS_SHARE = 2.0
MAX_ROUNDS = 20
# A label's prior needs at least this share of the documents going to other labels (and at
# least MIN_OTHERS of them): a label that keeps more than 60% of a batch is taken as what the
# texts say (a batch of one kind), not as a bias.
MIN_OTHERS_SHARE = 0.4
MIN_OTHERS = 4


def shares(labels: torch.Tensor, k: int) -> torch.Tensor:
    """Each label's share of the documents (labels: (n,) indices)."""
    return torch.bincount(labels, minlength=k).to(torch.float64) / max(1, len(labels))


def leave_own_out_priors(cos: torch.Tensor) -> torch.Tensor:
    """(k,) priors from the (n, k) cosines of n documents and k labels: each label's mean cosine
    over the documents that, with these priors taken off, go to another label. A label that
    keeps more than 60% of the documents (fewer than MIN_OTHERS_SHARE or MIN_OTHERS go
    elsewhere) keeps the least of the other labels' priors: the batch says too little of how
    near it sits to documents of other kinds."""
    n, k = cos.shape
    prior = torch.zeros(k, dtype=cos.dtype)
    labels = cos.argmax(-1)
    enough = max(MIN_OTHERS, MIN_OTHERS_SHARE * n)
    for _ in range(MAX_ROUNDS):
        others = labels[:, None] != torch.arange(k)[None, :]  # (n, k): document d goes elsewhere than l
        counts = others.sum(0)
        prior = (cos * others).sum(0) / counts.clamp(min=1)
        few = counts < enough
        if bool(few.any()):
            prior[few] = prior[~few].min() if bool((~few).any()) else 0.0
        relabelled = (cos - prior).argmax(-1)
        if torch.equal(relabelled, labels):
            break
        labels = relabelled
    return prior


def biased_label(cos: torch.Tensor) -> int | None:
    """The label that takes more than BIAS_SHARE times its fair share of the documents without
    priors, when there are enough documents to say so (see the module's notes); else None."""
    n, k = cos.shape
    if n < max(MIN_DOCUMENTS, k):
        return None
    share = shares(cos.argmax(-1), k)
    top = int(share.argmax())
    return top if float(share[top]) > BIAS_SHARE / k else None


def automatic_priors(cos: torch.Tensor) -> tuple[torch.Tensor, int | None]:
    """(priors, the biased label or None): leave_own_out_priors where biased_label finds the
    failure, else zeros."""
    biased = biased_label(cos)
    if biased is None:
        return torch.zeros(cos.shape[1], dtype=cos.dtype), None
    return leave_own_out_priors(cos), biased
