"""`lfcli evaluate corefs PRED GOLD`: gold clusters and the coreference scores.

GOLD: a CoNLL-2012 file or folder (lfcli.pipelines.io.conll), records with ``id`` and
``clusters`` in PRED's format, or a GAP ``.tsv`` (scored with GAP's own measure). PRED's rows
carry ``chains`` of ``{name, mentions}`` (earlier lfcli versions wrote ``clusters``: lists of
mentions; both are read). Scores as the CoNLL-2012 reference scorer prints them (x100), with
and without one-mention clusters; `singletons` picks the headline ``conll_f1``.
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import InputError
from ...eval.evaluate import Gold, keyed
from ...eval.metrics import coref_scores, gap_decisions, gap_scores, read_gap
from ...io.conll import read_conll


def from_row(record: dict) -> dict:
    """lfcli's rows (chains of {name, mentions}) as clusters of mentions."""
    if isinstance(record, dict) and isinstance(record.get("chains"), list):
        record["clusters"] = [chain.get("mentions") if isinstance(chain, dict) else chain for chain in record["chains"]]
    return record


def read_gold(path: str) -> Gold:
    lower = path.lower()
    if os.path.isdir(path) or lower.endswith((".conll", "_conll")):
        docs = read_conll(path)
        return Gold("conll", {d.id: d.clusters for d in docs}, {d.id: d.text for d in docs}, docs)
    if lower.endswith(".tsv"):
        examples = read_gap(path)
        items: dict[str, Any] = {}
        for ex in examples:
            if ex.id in items:
                raise InputError(f"{path}: GAP id {ex.id!r} appears twice")
            if ex.a_coref is None or ex.b_coref is None:
                raise InputError(f"{path}: GAP example {ex.id!r} has no A-coref/B-coref label")
            items[ex.id] = ex
        return Gold("gap", items, {ex.id: ex.text for ex in examples})
    return Gold("records", keyed(path, _clusters_value), {})


def score(gold: Gold, selected: list[str], prediction, where, singletons: bool = True) -> dict:
    """GAP's F1 and bias for GAP gold; else MUC, B-cubed, CEAF-e, mentions and CoNLL F1 with
    and without one-mention clusters (`singletons`: which is the headline)."""
    if gold.format == "gap":
        decisions, mismatches = {}, 0
        for g in selected:
            raw = prediction(g)
            if raw is not None:  # a failed or missing row has no decisions: false negatives
                decisions[g] = gap_decisions(gold.items[g], _pred_clusters(raw, where(g)))
                mismatches += _text_mismatches(raw, gold.texts.get(g))
        return {"gap": gap_scores([gold.items[g] for g in selected], decisions), "span_text_mismatches": mismatches}
    documents, mismatches = [], 0
    for g in selected:
        raw = prediction(g)
        response = [] if raw is None else _pred_clusters(raw, where(g))
        if raw is not None:
            mismatches += _text_mismatches(raw, gold.texts.get(g))
        documents.append((gold.items[g], response))
    with_s = coref_scores(documents, singletons=True)
    without_s = coref_scores(documents, singletons=False)
    for block in (with_s, without_s):
        block.pop("documents")
    return {"singletons": singletons, "conll_f1": (with_s if singletons else without_s)["conll_f1"],
            "with_singletons": with_s, "without_singletons": without_s, "span_text_mismatches": mismatches}


def fill_table(table, result: dict) -> None:
    """`lfcli evaluate`'s table on stderr (a rich Table): GAP's, or the CoNLL measures."""
    if result["gold_format"] == "gap":
        gap = result["gap"]
        table.add_column("GAP")
        for name in ("recall", "precision", "F1", "tp", "fp", "fn", "tn"):
            table.add_column(name, justify="right")
        for group in ("overall", "masculine", "feminine"):
            s = gap[group]
            table.add_row(group, f"{s['recall']:.1f}", f"{s['precision']:.1f}", f"{s['f1']:.1f}",
                          *(str(s[k]) for k in ("tp", "fp", "fn", "tn")))
        table.add_section()
        table.add_row("bias (F/M)", "", "", "-" if gap["bias"] is None else f"{gap['bias']:.2f}")
        return
    head, other = ("with", "without") if result["singletons"] else ("without", "with")
    table.title += f", {head} singletons"
    table.add_column("measure")
    for name in ("recall", "precision", "F1"):
        table.add_column(name, justify="right")
    table.add_column(f"F1 ({other} singletons)", justify="right")
    for metric, label in (("muc", "MUC"), ("b_cubed", "B-cubed"), ("ceaf_e", "CEAF-e"), ("mentions", "mentions")):
        s, o = result[f"{head}_singletons"][metric], result[f"{other}_singletons"][metric]
        table.add_row(label, f"{s['recall']:.2f}", f"{s['precision']:.2f}", f"{s['f1']:.2f}", f"{o['f1']:.2f}")
    table.add_section()
    table.add_row("CoNLL F1", "", "", f"{result[f'{head}_singletons']['conll_f1']:.2f}",
                  f"{result[f'{other}_singletons']['conll_f1']:.2f}")


def _span(mention: Any, where: str) -> tuple[int, int]:
    try:
        if isinstance(mention, dict):
            start, end = mention["start"], mention["end"]
        else:
            start, end = mention[0], mention[1]
        if isinstance(start, bool) or isinstance(end, bool):
            raise TypeError
        start, end = int(start), int(end)
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"{where}: a mention must be {{start, end, text}} or [start, end], got {mention!r:.60}") from None
    if end <= start or start < 0:
        raise InputError(f"{where}: mention span [{start}, {end}) is empty or negative")
    return start, end


def _clusters_value(record: dict, where: str) -> list[list[tuple[int, int]]]:
    clusters = record.get("clusters")
    if not isinstance(clusters, list) or not all(isinstance(c, list) for c in clusters):
        raise InputError(f"{where}: 'clusters' must be a list of clusters (lists of mentions)")
    return [[_span(m, where) for m in cluster] for cluster in clusters]


def _pred_clusters(clusters: Any, where: str) -> list[list[tuple[int, int]]]:
    return _clusters_value({"clusters": clusters}, where)


def _text_mismatches(clusters: list, text: str | None) -> int:
    """Predicted spans whose ``text`` differs from the gold document's text at their offsets: a
    sign that the predictions were made on another version of the document, so that offsets do
    not line up (0 when the gold format has no texts)."""
    if text is None:
        return 0
    count = 0
    for cluster in clusters:
        for mention in cluster:
            if isinstance(mention, dict) and isinstance(mention.get("text"), str):
                if text[int(mention["start"]):int(mention["end"])] != mention["text"]:
                    count += 1
    return count

