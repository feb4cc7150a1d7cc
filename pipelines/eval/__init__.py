"""Scoring: metrics.py (SQuAD, classification, CoNLL-2012 coreference with MUC, B3 and
CEAF-e, GAP) and evaluate.py (`lfcli evaluate`: a model against labelled data). Imports io/
and infer/."""
