"""The scorers against numbers worked out by hand and published in the papers that define them.

Coreference: the examples of Vilain et al. 1995 (MUC), Bagga & Baldwin 1998 (B-cubed) and
Luo 2005 (CEAF, Table 1), and the predicted-mention cases of the CoNLL-2012 reference scorer's
test suite (Pradhan et al. 2014, TC-A), then agreement with the independent `scorch` scorer on
random perturbed clusterings. SQuAD: the official normalisation. GAP: the official scorer's
counting, and the real files when ../shared/data is here.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from lfcli.pipelines.errors import InputError
from lfcli.pipelines.eval.metrics import (
    GapExample,
    Score,
    b_cubed,
    canonical_clusters,
    ceaf_e,
    ceaf_m,
    classification_scores,
    coref_document_scores,
    coref_scores,
    gap_decisions,
    gap_scores,
    kuhn_munkres,
    mention_score,
    muc,
    normalize_answer,
    read_gap,
    remove_singletons,
    squad_exact_match,
    squad_f1,
    squad_scores,
)
from shared_data import DATA, need  # noqa: E402


def clusters(spec: str) -> list[set[str]]:
    """'{a} {bc} {def}' -> [{'a'}, {'b', 'c'}, {'d', 'e', 'f'}] (one letter per mention)."""
    return [set(group.strip("{}")) for group in spec.split()]


def rpf(score: Score) -> tuple[float, float, float]:
    return score.recall, score.precision, score.f1


def close(got, want, tol=1e-9):
    return all(abs(float(g) - float(w)) <= tol for g, w in zip(got, want, strict=True))


def f1(r, p):
    return 2 * r * p / (r + p) if r + p else 0


# ---------------------------------------------------------------------------
# classification


def test_classification_on_a_tiny_confusion_matrix():
    gold = ["cat", "cat", "cat", "dog", "dog", "bird"]
    pred = ["cat", "dog", "cat", "dog", "cat", "bird"]
    s = classification_scores(gold, pred)
    assert s["labels"] == ["bird", "cat", "dog"]
    # rows gold, columns predicted, both in label order
    assert s["confusion_matrix"] == [[1, 0, 0], [0, 2, 1], [0, 1, 1]]
    assert s["accuracy"] == pytest.approx(4 / 6)
    assert s["per_class"]["bird"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert s["per_class"]["cat"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3})
    assert s["per_class"]["dog"] == pytest.approx({"precision": 1 / 2, "recall": 1 / 2, "f1": 1 / 2, "support": 2})
    assert s["macro_f1"] == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    assert s["unpredicted"] == [0, 0, 0] and s["n"] == 6


def test_classification_missing_predictions_and_unknown_labels():
    s = classification_scores(["a", "a", "b"], [None, "a", "z"])
    assert s["labels"] == ["a", "b", "z"]
    assert s["accuracy"] == pytest.approx(1 / 3)
    assert s["unpredicted"] == [1, 0, 0]  # the missing one is a miss for "a", not a column
    assert s["confusion_matrix"] == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert s["per_class"]["a"] == pytest.approx({"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2})
    assert s["per_class"]["z"]["f1"] == 0 and s["per_class"]["z"]["support"] == 0
    assert s["macro_f1"] == pytest.approx((2 / 3 + 0 + 0) / 3)  # over every label seen, like scikit-learn


def test_classification_agrees_with_scikit_learn():
    sk = pytest.importorskip("sklearn.metrics", reason="scikit-learn is not installed")
    rng = random.Random(7)
    for _ in range(20):
        labels = ["x", "y", "z", "w"][: rng.randint(2, 4)]
        gold = [rng.choice(labels) for _ in range(rng.randint(1, 40))]
        pred = [g if rng.random() < 0.5 else rng.choice(labels) for g in gold]
        s = classification_scores(gold, pred)
        assert s["accuracy"] == pytest.approx(sk.accuracy_score(gold, pred))
        assert s["macro_f1"] == pytest.approx(sk.f1_score(gold, pred, average="macro", zero_division=0))
        assert s["confusion_matrix"] == sk.confusion_matrix(gold, pred, labels=s["labels"]).tolist()
        p, r, f, n = sk.precision_recall_fscore_support(gold, pred, labels=s["labels"], zero_division=0)
        for i, label in enumerate(s["labels"]):
            c = s["per_class"][label]
            assert (c["precision"], c["recall"], c["f1"], c["support"]) == pytest.approx((p[i], r[i], f[i], n[i]))


# ---------------------------------------------------------------------------
# SQuAD v1.1


@pytest.mark.parametrize(
    "raw, normal",
    [
        ("The Denver Broncos", "denver broncos"),
        ("  Denver\tBroncos.  ", "denver broncos"),
        ("an apple, a pear and THE plum!", "apple pear and plum"),
        ("theatre anthem", "theatre anthem"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("the", ""),
        ("rock-'n'-roll", "rocknroll"),
        ("“quoted”", "“quoted”"),  # only ASCII punctuation, as the official script
    ],
)
def test_squad_normalisation(raw, normal):
    assert normalize_answer(raw) == normal


def test_squad_exact_match_and_f1():
    assert squad_exact_match("the Denver Broncos!", ["Broncos", "Denver Broncos"]) == 1.0
    assert squad_exact_match("Denver", ["Denver Broncos"]) == 0.0
    # P = 1, R = 1/2
    assert squad_f1("Denver", ["Denver Broncos"]) == pytest.approx(2 / 3)
    # the best gold answer counts
    assert squad_f1("Denver", ["Broncos", "Denver Broncos", "Denver"]) == 1.0
    # tokens are a bag: "a a b" vs "a b": P = 2/3, R = 1
    assert squad_f1("x x y", ["x y"]) == pytest.approx(0.8)
    # v1.1: two empty normalised strings match exactly but have F1 0
    assert squad_exact_match("The", ["a"]) == 1.0 and squad_f1("The", ["a"]) == 0.0
    assert squad_exact_match(None, ["x"]) == 0.0 and squad_f1(None, ["x"]) == 0.0
    s = squad_scores([("Denver", ["Denver Broncos"]), ("Broncos", ["broncos"]), (None, ["z"])])
    assert s == pytest.approx({"exact_match": 100 / 3, "f1": 100 * (2 / 3 + 1) / 3, "n": 3})


# ---------------------------------------------------------------------------
# coreference: the papers' examples

# Bagga & Baldwin 1998 (Figures 2-3) and Luo 2005 (Figure 1, Table 1): twelve mentions, truth
# {1..5} {6,7} {8,9,A,B,C}, four system responses.
TRUTH = [set("12345"), set("67"), set("89ABC")]
LUO_RESPONSES = {
    "a": [set("12345"), set("6789ABC")],
    "b": [set("1234589ABC"), set("67")],
    "c": [set("123456789ABC")],
    "d": [{m} for m in "123456789ABC"],
}
# Luo 2005, Table 1: MUC F, B-cubed F, CEAF phi3 (mention), CEAF phi4 (entity); "-" for (d)'s MUC
LUO_TABLE = {
    "a": (0.947, 0.865, 0.833, 0.733),
    "b": (0.947, 0.737, 0.583, 0.667),
    "c": (0.900, 0.545, 0.417, 0.294),
    "d": (None, 0.400, 0.250, 0.178),
}


@pytest.mark.parametrize("system", sorted(LUO_RESPONSES))
def test_luo_2005_table_1(system):
    response = LUO_RESPONSES[system]
    want = LUO_TABLE[system]
    got = (muc(TRUTH, response).f1, b_cubed(TRUTH, response).f1, ceaf_m(TRUTH, response).f1, ceaf_e(TRUTH, response).f1)
    for g, w in zip(got, want):
        if w is None:  # all singletons: no links, MUC is undefined (0 here, as the reference scorer)
            assert g == 0
        else:
            assert round(g, 3) == w


def test_bagga_baldwin_1998_b_cubed_separates_what_muc_does_not():
    # merging the small entity {6,7} into a big one costs less than merging two big ones
    a, b = LUO_RESPONSES["a"], LUO_RESPONSES["b"]
    assert rpf(muc(TRUTH, a)) == pytest.approx((1, 9 / 10, 2 * 0.9 / 1.9))
    assert rpf(muc(TRUTH, b)) == pytest.approx(rpf(muc(TRUTH, a)))  # MUC cannot tell them apart
    assert rpf(b_cubed(TRUTH, a)) == pytest.approx((1, 16 / 21, f1(1, 16 / 21)))
    assert rpf(b_cubed(TRUTH, b)) == pytest.approx((1, 7 / 12, f1(1, 7 / 12)))
    # B-cubed precision, mention by mention: (5 x 5/5 + 2 x 2/7 + 5 x 5/7) / 12
    assert b_cubed(TRUTH, a).precision == pytest.approx((5 + 2 * Fraction(2, 7) + 5 * Fraction(5, 7)) / 12)


@pytest.mark.parametrize(
    "key, response, recall, precision",
    [
        # Vilain et al. 1995, section 3: key <A B C D>; response <A B> <C D>
        ("{ABCD}", "{AB} {CD}", Fraction(2, 3), 1),
        # and the other way round
        ("{AB} {CD}", "{ABCD}", 1, Fraction(2, 3)),
        # a response whose links differ from the key's but give the same equivalence class
        ("{ABCD}", "{ABCD}", 1, 1),
        # <A B C> against <A C>: B is missing from the response, its own part of the partition
        ("{ABC}", "{AC}", Fraction(1, 2), 1),
        # one key class cut into three responses with a spurious mention each
        ("{BCDEGHJ}", "{ABC} {DEF} {GHI}", Fraction(3, 6), Fraction(3, 6)),
        ("{ABC} {DEFG}", "{AB} {CD} {FGH}", Fraction(2, 5), Fraction(2, 4)),
    ],
)
def test_vilain_1995_muc_examples(key, response, recall, precision):
    score = muc(clusters(key), clusters(response))
    assert (score.recall, score.precision) == pytest.approx((float(recall), float(precision)))
    assert score.f1 == pytest.approx(f1(float(recall), float(precision)))


# The reference scorer's predicted-mention cases (Pradhan et al. 2014; test/TestCases.README of
# conll/reference-coreference-scorers), key {a} {bc} {def}: (response, MUC R/P, B3 R/P, CEAF-e R/P).
# Capital B is a different mention (an overlapping span) from b.
KEY_A = "{a} {bc} {def}"
TC_A = {
    "A1": ("{a} {bc} {def}", (1, 1), (1, 1), (1, 1)),
    "A2": ("{a} {de}", (Fraction(1, 3), 1), (Fraction(7, 18), 1), (Fraction(18, 30), Fraction(18, 20))),
    "A3": ("{a} {bcx} {defy} {z}", (1, Fraction(3, 5)), (1, Fraction(55, 108)),
           ((1 + Fraction(4, 5) + Fraction(6, 7)) / 3, (1 + Fraction(4, 5) + Fraction(6, 7)) / 4)),
    "A4": ("{a} {bcx} {dy} {z}", (Fraction(1, 3), Fraction(1, 3)), (Fraction(5, 9), Fraction(17, 42)),
           (Fraction(11, 15), Fraction(11, 20))),
    "A5": ("{a} {bcxB} {dy} {z}", (Fraction(1, 3), Fraction(1, 4)), (Fraction(5, 9), Fraction(5, 16)),
           ((1 + Fraction(4, 6) + Fraction(2, 5)) / 3, (1 + Fraction(4, 6) + Fraction(2, 5)) / 4)),
    "A6": ("{a} {bcx} {dy} {Bz}", (Fraction(1, 3), Fraction(1, 4)), (Fraction(5, 9), Fraction(17, 48)),
           (Fraction(11, 15), Fraction(11, 20))),
    "A10": ("{a} {b} {c} {d} {e} {f}", (0, 0), (Fraction(3, 6), 1), None),
    "A11": ("{abcdef}", (1, Fraction(3, 5)), (1, Fraction(7, 18)), None),
    "A12": ("{a} {x} {y} {c} {d} {e} {z}", (0, 0), (Fraction(13, 36), Fraction(4, 7)), None),
    "A13": ("{axycdez}", (Fraction(1, 3), Fraction(1, 6)), (Fraction(17, 36), Fraction(6, 49)), None),
}


@pytest.mark.parametrize("case", sorted(TC_A))
def test_reference_scorer_predicted_mention_cases(case):
    response, muc_rp, b3_rp, ceafe_rp = TC_A[case]
    key, resp = clusters(KEY_A), clusters(response)
    assert close((muc(key, resp).recall, muc(key, resp).precision), muc_rp)
    assert close((b_cubed(key, resp).recall, b_cubed(key, resp).precision), b3_rp)
    if ceafe_rp is not None:
        assert close((ceaf_e(key, resp).recall, ceaf_e(key, resp).precision), ceafe_rp)


def test_repeated_mentions_are_kept_once_in_their_first_cluster():
    # TC-A-7 / A-8: a repeated mention is dropped (same cluster or a later one), as the
    # reference scorer de-duplicates: both score like {a} {bcx} {dy} {z}
    key = clusters(KEY_A)
    plain = [set("a"), set("bcx"), set("dy"), set("z")]
    same_cluster = [["a"], ["b", "c", "x", "b"], ["d", "y"], ["z"]]
    other_cluster = [["a"], ["b", "c", "x"], ["d", "y"], ["b", "z"]]
    assert canonical_clusters(other_cluster) == [frozenset("a"), frozenset("bcx"), frozenset("dy"), frozenset("z")]
    for response in (same_cluster, other_cluster):
        for metric in (muc, b_cubed, ceaf_e, ceaf_m):
            assert rpf(metric(key, response)) == pytest.approx(rpf(metric(key, plain)))


def test_without_singletons_removes_one_mention_clusters_from_both_sides():
    key = [{(0, 1)}, {(2, 3), (4, 5)}, {(6, 7), (8, 9), (10, 11)}]
    response = [{(0, 1)}, {(2, 3)}, {(4, 5), (6, 7)}, {(8, 9), (10, 11)}, {(12, 13)}]
    assert remove_singletons(key) == [frozenset({(2, 3), (4, 5)}), frozenset({(6, 7), (8, 9), (10, 11)})]
    without = coref_document_scores(key, response, singletons=False)
    # what remains: key {23 45} {67 89 1011}, response {45 67} {89 1011}
    k2, r2 = remove_singletons(key), remove_singletons(response)
    assert without["b_cubed"] == b_cubed(k2, r2)
    assert without["b_cubed"].recall == pytest.approx((1 / 2 + 1 / 3 + 2 * 2 / 3) / 5)
    assert without["b_cubed"].precision == pytest.approx((1 / 2 + 1 / 2 + 2 * 2 / 2) / 4)
    assert without["mentions"].recall == pytest.approx(4 / 5)
    with_ = coref_document_scores(key, response, singletons=True)
    assert (with_["mentions"].recall, with_["mentions"].precision) == pytest.approx((6 / 6, 6 / 7))


def test_corpus_scores_pool_counts_over_documents():
    # the reference scorer sums numerators and denominators, it does not average documents
    doc1 = (clusters("{ABCD}"), clusters("{AB} {CD}"))  # MUC R 2/3, P 2/2
    doc2 = (clusters("{AB} {CD}"), clusters("{ABCD}"))  # MUC R 2/2, P 2/3
    doc3 = (clusters("{ABC}"), [])  # R 0/2; nothing predicted
    s = coref_scores([doc1, doc2, doc3])
    assert s["documents"] == 3
    assert s["muc"]["recall"] == pytest.approx(100 * (2 + 2 + 0) / (3 + 2 + 2))
    assert s["muc"]["precision"] == pytest.approx(100 * (2 + 2) / (2 + 3))
    b3 = b_cubed(*doc1) + b_cubed(*doc2) + b_cubed(*doc3)
    assert s["b_cubed"]["f1"] == pytest.approx(100 * b3.f1)
    assert b3.recall_den == 4 + 4 + 3
    assert s["conll_f1"] == pytest.approx((s["muc"]["f1"] + s["b_cubed"]["f1"] + s["ceaf_e"]["f1"]) / 3)


def test_empty_sides_score_zero_not_an_error():
    assert rpf(muc([], [])) == (0, 0, 0)
    assert rpf(ceaf_e([{1, 2}], [])) == (0, 0, 0)
    assert rpf(b_cubed([], [{1}])) == (0, 0, 0)
    assert rpf(mention_score([{1, 2}], [{2, 3}])) == pytest.approx((0.5, 0.5, 0.5))


# ---------------------------------------------------------------------------
# Kuhn-Munkres


def _brute_force_best(weights) -> float:
    n, m = len(weights), len(weights[0])
    if n <= m:
        return max(sum(weights[i][c] for i, c in enumerate(cols)) for cols in itertools.permutations(range(m), n))
    return max(sum(weights[r][j] for j, r in enumerate(rows)) for rows in itertools.permutations(range(n), m))


def test_kuhn_munkres_finds_the_best_assignment():
    rng = random.Random(3)
    for _ in range(300):
        n, m = rng.randint(1, 6), rng.randint(1, 6)
        # many ties and zeros, as CEAF's similarity matrices have
        weights = [[rng.choice([0, 0, 0.25, 0.5, 1, rng.random()]) for _ in range(m)] for _ in range(n)]
        pairs = kuhn_munkres(weights)
        assert len(pairs) == min(n, m)
        assert len({r for r, _ in pairs}) == len(pairs) == len({c for _, c in pairs})
        assert sum(weights[r][c] for r, c in pairs) == pytest.approx(_brute_force_best(weights))
    assert kuhn_munkres([]) == [] and kuhn_munkres([[]]) == []
    assert kuhn_munkres([[1, 5], [4, 1]]) == [(0, 1), (1, 0)]


def test_ceaf_split_into_components_equals_one_big_assignment():
    # CEAF solves each group of entities that share mentions on its own; check against the
    # assignment over the full similarity matrix
    rng = random.Random(11)
    for _ in range(30):
        key, response = _random_pair(rng, n_mentions=rng.randint(1, 25))
        k, r = canonical_clusters(key), canonical_clusters(response)
        if not k or not r:
            continue
        full = [[2 * len(a & b) / (len(a) + len(b)) for b in r] for a in k]
        total = sum(full[i][j] for i, j in kuhn_munkres(full))
        assert ceaf_e(key, response).recall_num == pytest.approx(total)


# ---------------------------------------------------------------------------
# agreement with scorch (an independent CoNLL-2012 scorer)


def _random_pair(rng: random.Random, n_mentions: int) -> tuple[list[set], list[set]]:
    """A random key partition of (start, end) mentions and a perturbed response: mentions
    moved, clusters split and merged, mentions dropped, spurious mentions and singletons added."""
    mentions = [(i * 10, i * 10 + rng.randint(1, 5)) for i in range(n_mentions)]
    key: list[set] = []
    for m in mentions:
        if key and rng.random() < 0.6:
            rng.choice(key).add(m)
        else:
            key.append({m})
    response = [set(c) for c in key]
    for _ in range(rng.randint(0, 4)):
        op = rng.choice(["move", "split", "merge", "drop", "spurious", "singleton"])
        live = [c for c in response if c]
        if not live:
            break
        if op == "move" and len(live) > 1:
            a, b = rng.sample(live, 2)
            m = rng.choice(sorted(a))
            a.discard(m)
            b.add(m)
        elif op == "split":
            a = rng.choice(live)
            part = {m for m in a if rng.random() < 0.5}
            a -= part
            response.append(part)
        elif op == "merge" and len(live) > 1:
            a, b = rng.sample(live, 2)
            a |= b
            b.clear()
        elif op == "drop":
            a = rng.choice(live)
            a.discard(rng.choice(sorted(a)))
        elif op == "spurious":
            rng.choice(live).add((rng.randint(0, 10 * n_mentions), -1))  # never a key mention
        elif op == "singleton":
            response.append({(rng.randint(0, 10 * n_mentions), -2 - rng.randint(0, 99))})
    response = [c for c in response if c]
    # no mention in two response clusters (scorch does not de-duplicate)
    response = [set(c) for c in canonical_clusters(response)]
    rng.shuffle(response)
    return key, response


def test_agrees_with_scorch_on_random_perturbed_clusterings():
    scores = pytest.importorskip("scorch.scores", reason="scorch (pip install scorch) is not installed")
    rng = random.Random(2024)
    checked = 0
    for trial in range(300):
        key, response = _random_pair(rng, n_mentions=rng.randint(1, 30))
        for singletons in (True, False):
            k, r = (key, response) if singletons else (remove_singletons(key), remove_singletons(response))
            k, r = [set(c) for c in k], [set(c) for c in r]
            for ours, theirs in ((muc, scores.muc), (b_cubed, scores.b_cubed), (ceaf_e, scores.ceaf_e)):
                want = theirs(k, r)
                got = rpf(ours(k, r))
                assert close(got, want, 1e-9), (trial, ours.__name__, k, r, got, want)
                checked += 1
    assert checked == 300 * 2 * 3


# ---------------------------------------------------------------------------
# GAP

GAP_HEADER = "ID\tText\tPronoun\tPronoun-offset\tA\tA-offset\tA-coref\tB\tB-offset\tB-coref\tURL\n"


def _gap_row(id_, text, pronoun, a, a_coref, b, b_coref, url="http://x"):
    return "\t".join([id_, text, pronoun, str(text.index(" " + pronoun + " ") + 1), a, str(text.index(a)),
                      a_coref, b, str(text.index(b)), b_coref, url]) + "\n"


def test_read_gap_and_decide_from_clusters(tmp_path):
    text = 'Mary Smith met "Jane" Doe. Later she left.'
    path = tmp_path / "gap.tsv"
    path.write_text(GAP_HEADER + _gap_row("t-1", text, "she", "Smith", "TRUE", "Jane", "FALSE"), encoding="utf-8")
    [ex] = read_gap(str(path))
    assert (ex.id, ex.pronoun, ex.gender, ex.a_coref, ex.b_coref) == ("t-1", "she", "feminine", True, False)
    assert text[slice(*ex.a_span)] == "Smith" and text[slice(*ex.pronoun_span)] == "she"
    she = ex.pronoun_span
    # the model's mention "Mary Smith" overlaps the name span "Smith": A is coreferent
    assert gap_decisions(ex, [[(0, 10), she]]) == (True, False)
    assert gap_decisions(ex, [[{"start": 16, "end": 25, "text": "Jane Doe"}, {"start": she[0], "end": she[1]}]]) == (False, True)
    # the names in a cluster without the pronoun: no decision for either
    assert gap_decisions(ex, [[(0, 10), (16, 25)], [she]]) == (False, False)
    # a mention that covers the pronoun and the name together does not count for the name
    assert gap_decisions(ex, [[(0, len(text)), she]]) == (False, False)
    assert gap_decisions(ex, []) == (False, False)


def test_read_gap_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text(GAP_HEADER + "t-1\tHe ran.\tHe\t3\tX\t0\tTRUE\tY\t0\tFALSE\turl\n", encoding="utf-8")
    with pytest.raises(InputError, match="Pronoun-offset 3 does not point"):
        read_gap(str(bad))
    bad.write_text("a\tb\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a GAP file"):
        read_gap(str(bad))
    bad.write_text(GAP_HEADER + "t-1\tHe ran.\tHe\t0\tX\t0\tmaybe\tY\t0\tFALSE\turl\n", encoding="utf-8")
    with pytest.raises(InputError, match="TRUE or FALSE"):
        read_gap(str(bad))


def _ex(id_, pronoun, a_coref, b_coref):
    return GapExample(id_, "", pronoun, 0, "A", 0, a_coref, "B", 0, b_coref)


def test_gap_scores_count_as_the_official_scorer():
    examples = [
        _ex("m1", "he", True, False),
        _ex("m2", "His", False, True),
        _ex("f1", "she", True, False),
        _ex("f2", "her", False, False),
        _ex("f3", "hers", True, False),
    ]
    decisions = {
        "m1": (True, False),  # tp, tn
        "m2": (False, True),  # tn, tp
        "f1": (True, True),  # tp, fp
        "f2": (False, True),  # tn, fp
        # f3 missing: both decisions are false negatives, even B whose gold is FALSE (as gap_scorer.py)
    }
    s = gap_scores(examples, decisions)
    assert {k: s["masculine"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 2, "fp": 0, "fn": 0, "tn": 2}
    assert {k: s["feminine"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 1, "fp": 2, "fn": 2, "tn": 1}
    assert {k: s["overall"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 3, "fp": 2, "fn": 2, "tn": 3}
    assert s["masculine"]["f1"] == pytest.approx(100)
    assert s["feminine"]["precision"] == pytest.approx(100 / 3) and s["feminine"]["recall"] == pytest.approx(100 / 3)
    assert s["overall"]["f1"] == pytest.approx(100 * f1(3 / 5, 3 / 5))
    assert s["bias"] == pytest.approx((100 / 3) / 100)
    assert s["examples"] == 5
    assert gap_scores([_ex("m", "he", True, False)], {"m": (False, False)})["bias"] is None


def test_gap_real_files():
    folder = need(DATA / "gap")
    dev = read_gap(str(folder / "gap-development.tsv"))
    val = read_gap(str(folder / "gap-validation.tsv"))
    assert (len(dev), len(val)) == (2000, 454)
    assert {ex.gender for ex in dev} == {"masculine", "feminine"}
    # gold decisions score 100; "always A" scores what the counts say
    assert gap_scores(dev, {ex.id: (ex.a_coref, ex.b_coref) for ex in dev})["overall"]["f1"] == pytest.approx(100)
    s = gap_scores(dev, {ex.id: (True, False) for ex in dev})
    tp = sum(ex.a_coref for ex in dev)
    fn = sum(ex.b_coref for ex in dev)
    assert (s["overall"]["tp"], s["overall"]["fp"], s["overall"]["fn"]) == (tp, len(dev) - tp, fn)
    # clusters built from the gold labels give the gold decisions back
    for ex in dev[:200]:
        cluster = [ex.pronoun_span] + [span for span, gold in ((ex.a_span, ex.a_coref), (ex.b_span, ex.b_coref)) if gold]
        assert gap_decisions(ex, [cluster]) == (ex.a_coref, ex.b_coref)
