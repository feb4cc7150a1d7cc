"""Coreference scores as the CoNLL-2012 reference scorer computes them (MUC, B-cubed, CEAF-e
and -m, mentions, the CoNLL F1), and GAP: reading its TSV files and scoring pronoun decisions
as the official ``gap_scorer.py``. Definitions: metrics.py."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping, Sequence

from ..errors import InputError
from ..wording import plural
from .metrics_classify import f1_of, ratio


@dataclass(frozen=True)
class Score:
    """Recall = recall_num / recall_den, precision = precision_num / precision_den.

    Adding scores pools numerators and denominators: the corpus score of a sum of documents is
    the reference scorer's micro-average, not a mean of per-document scores.
    """

    recall_num: float = 0.0
    recall_den: float = 0.0
    precision_num: float = 0.0
    precision_den: float = 0.0

    @property
    def recall(self) -> float:
        return ratio(self.recall_num, self.recall_den)

    @property
    def precision(self) -> float:
        return ratio(self.precision_num, self.precision_den)

    @property
    def f1(self) -> float:
        return f1_of(self.precision, self.recall)

    def __add__(self, other: "Score") -> "Score":
        return Score(
            self.recall_num + other.recall_num,
            self.recall_den + other.recall_den,
            self.precision_num + other.precision_num,
            self.precision_den + other.precision_den,
        )

    def as_dict(self, scale: float = 100.0) -> dict:
        return {"recall": scale * self.recall, "precision": scale * self.precision, "f1": scale * self.f1}


Clustering = Iterable[Iterable[Hashable]]


def canonical_clusters(clusters: Clustering) -> list[frozenset]:
    """Clusters as frozensets, each mention in one cluster only (the first that lists it), no
    empty clusters: the reference scorer's de-duplication."""
    seen: set = set()
    out = []
    for cluster in clusters:
        members = []
        for mention in cluster:
            if mention not in seen:
                seen.add(mention)
                members.append(mention)
        if members:
            out.append(frozenset(members))
    return out


def remove_singletons(clusters: Clustering) -> list[frozenset]:
    """The clusters with at least two (distinct) mentions."""
    return [c for c in canonical_clusters(clusters) if len(c) > 1]


def _entity_of(clusters: list[frozenset]) -> dict:
    return {m: i for i, c in enumerate(clusters) for m in c}


def _muc_side(entities: list[frozenset], other: list[frozenset]) -> tuple[int, int]:
    where = _entity_of(other)
    num = den = 0
    for entity in entities:
        # p(K): one part per other-side entity K meets, plus one per mention the other side lacks
        parts = len({where[m] for m in entity if m in where}) + sum(1 for m in entity if m not in where)
        num += len(entity) - parts
        den += len(entity) - 1
    return num, den


def muc(key: Clustering, response: Clustering) -> Score:
    """MUC link-based score (Vilain et al. 1995)."""
    key, response = canonical_clusters(key), canonical_clusters(response)
    r_num, r_den = _muc_side(key, response)
    p_num, p_den = _muc_side(response, key)
    return Score(r_num, r_den, p_num, p_den)


def _overlaps(key: list[frozenset], response: list[frozenset]) -> dict[tuple[int, int], int]:
    """|K_i ∩ R_j| for every pair that shares a mention."""
    where = _entity_of(response)
    counts: dict[tuple[int, int], int] = {}
    for i, entity in enumerate(key):
        for m in entity:
            j = where.get(m)
            if j is not None:
                counts[i, j] = counts.get((i, j), 0) + 1
    return counts


def b_cubed(key: Clustering, response: Clustering) -> Score:
    """B-cubed mention-based score (Bagga & Baldwin 1998), over all key and response mentions."""
    key, response = canonical_clusters(key), canonical_clusters(response)
    r_num = p_num = 0.0
    for (i, j), n in _overlaps(key, response).items():
        # each of the n shared mentions scores n/|K| for recall and n/|R| for precision
        r_num += n * n / len(key[i])
        p_num += n * n / len(response[j])
    return Score(r_num, sum(map(len, key)), p_num, sum(map(len, response)))


def _ceaf(key: list[frozenset], response: list[frozenset], phi) -> float:
    """The summed similarity of the best one-to-one alignment of key and response entities.

    Entities that share no mention have similarity 0, so the alignment splits into the
    connected components of the "shares a mention" graph, each solved on its own: a document
    with hundreds of entities becomes many tiny assignment problems.
    """
    overlaps = _overlaps(key, response)
    parent = list(range(len(key) + len(response)))  # union-find: key i -> i, response j -> len(key) + j

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in overlaps:
        a, b = find(i), find(len(key) + j)
        if a != b:
            parent[a] = b
    components: dict[int, tuple[dict[int, None], dict[int, None]]] = {}  # ordered sets
    for i, j in overlaps:
        rows, cols = components.setdefault(find(i), ({}, {}))
        rows[i] = cols[j] = None
    total = 0.0
    for rows, cols in components.values():
        rows, cols = list(rows), list(cols)
        weights = [[phi(overlaps.get((i, j), 0), len(key[i]), len(response[j])) for j in cols] for i in rows]
        total += sum(weights[r][c] for r, c in kuhn_munkres(weights))
    return total


def _phi4(common: int, k: int, r: int) -> float:
    return 2.0 * common / (k + r)


def _phi3(common: int, k: int, r: int) -> float:
    return float(common)


def ceaf_e(key: Clustering, response: Clustering) -> Score:
    """Entity-based CEAF (Luo 2005, phi4)."""
    key, response = canonical_clusters(key), canonical_clusters(response)
    total = _ceaf(key, response, _phi4)
    return Score(total, len(key), total, len(response))


def ceaf_m(key: Clustering, response: Clustering) -> Score:
    """Mention-based CEAF (Luo 2005, phi3)."""
    key, response = canonical_clusters(key), canonical_clusters(response)
    total = _ceaf(key, response, _phi3)
    return Score(total, sum(map(len, key)), total, sum(map(len, response)))


def mention_score(key: Clustering, response: Clustering) -> Score:
    """Mention detection: exact-span matches between the key's and the response's mentions."""
    key_mentions = {m for c in canonical_clusters(key) for m in c}
    response_mentions = {m for c in canonical_clusters(response) for m in c}
    common = len(key_mentions & response_mentions)
    return Score(common, len(key_mentions), common, len(response_mentions))


def kuhn_munkres(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """A maximum-weight one-to-one assignment of rows to columns: ``[(row, column), ...]``.

    The Hungarian method (Kuhn 1955, Munkres 1957) in its shortest-augmenting-path form with
    row and column potentials, O(n^2 m) for n rows <= m columns (a wider matrix is solved
    transposed). Every row of the smaller side is assigned.
    """
    n = len(weights)
    m = len(weights[0]) if n else 0
    if n == 0 or m == 0:
        return []
    if n > m:
        transposed = [[weights[i][j] for i in range(n)] for j in range(m)]
        return sorted((i, j) for j, i in kuhn_munkres(transposed))
    # minimise cost = -weight; index 0 is a sentinel (1-based rows and columns below)
    cost = [[-float(w) for w in row] for row in weights]
    inf = float("inf")
    u = [0.0] * (n + 1)  # row potentials
    v = [0.0] * (m + 1)  # column potentials
    owner = [0] * (m + 1)  # owner[j]: the row assigned to column j (0: none)
    way = [0] * (m + 1)  # the previous column on the augmenting path
    for row in range(1, n + 1):
        owner[0] = row
        j0 = 0
        slack = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta, j1 = inf, 0
            cost_row, u_i0 = cost[i0 - 1], u[i0]
            for j in range(1, m + 1):
                if not used[j]:
                    reduced = cost_row[j - 1] - u_i0 - v[j]
                    if reduced < slack[j]:
                        slack[j], way[j] = reduced, j0
                    if slack[j] < delta:
                        delta, j1 = slack[j], j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    slack[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:  # flip the augmenting path
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    return sorted((owner[j] - 1, j - 1) for j in range(1, m + 1) if owner[j])


def coref_document_scores(key: Clustering, response: Clustering, singletons: bool = True) -> dict[str, Score]:
    """One document's ``{"muc", "b_cubed", "ceaf_e", "mentions"}`` :class:`Score` counts."""
    if singletons:
        key, response = canonical_clusters(key), canonical_clusters(response)
    else:
        key, response = remove_singletons(key), remove_singletons(response)
    return {
        "muc": muc(key, response),
        "b_cubed": b_cubed(key, response),
        "ceaf_e": ceaf_e(key, response),
        "mentions": mention_score(key, response),
    }


def coref_scores(documents: Iterable[tuple[Clustering, Clustering]], singletons: bool = True) -> dict:
    """Corpus scores over ``(key, response)`` clusterings, one pair per document, x100:
    ``{"muc", "b_cubed", "ceaf_e", "mentions": {"recall", "precision", "f1"}, "conll_f1",
    "documents"}``."""
    totals = {name: Score() for name in ("muc", "b_cubed", "ceaf_e", "mentions")}
    n = 0
    for key, response in documents:
        n += 1
        for name, score in coref_document_scores(key, response, singletons).items():
            totals[name] = totals[name] + score
    out = {name: score.as_dict() for name, score in totals.items()}
    out["conll_f1"] = (out["muc"]["f1"] + out["b_cubed"]["f1"] + out["ceaf_e"]["f1"]) / 3
    out["documents"] = n
    return out



# ---------------------------------------------------------------------------
# GAP
_GAP_COLUMNS = ("ID", "Text", "Pronoun", "Pronoun-offset", "A", "A-offset", "A-coref", "B", "B-offset", "B-coref", "URL")
#: the official scorer's pronoun -> gender map (GAP has no reflexives)
GAP_GENDERS = {"he": "masculine", "him": "masculine", "his": "masculine", "she": "feminine", "her": "feminine", "hers": "feminine"}


@dataclass(frozen=True)
class GapExample:
    """One GAP row. Offsets are character offsets into ``text``."""

    id: str
    text: str
    pronoun: str
    pronoun_offset: int
    a: str
    a_offset: int
    a_coref: bool | None  # None when the file has no label (a test file without answers)
    b: str
    b_offset: int
    b_coref: bool | None
    url: str = ""

    @property
    def pronoun_span(self) -> tuple[int, int]:
        return self.pronoun_offset, self.pronoun_offset + len(self.pronoun)

    @property
    def a_span(self) -> tuple[int, int]:
        return self.a_offset, self.a_offset + len(self.a)

    @property
    def b_span(self) -> tuple[int, int]:
        return self.b_offset, self.b_offset + len(self.b)

    @property
    def gender(self) -> str | None:
        """"masculine" or "feminine" from the pronoun (None for a pronoun GAP does not use)."""
        return GAP_GENDERS.get(self.pronoun.lower())


def _gap_bool(value: str, where: str) -> bool | None:
    low = value.strip().lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low == "":
        return None
    raise InputError(f"{where}: expected TRUE or FALSE, got {value!r}")


def read_gap(path: str) -> list[GapExample]:
    """The rows of a GAP TSV file (header ID, Text, Pronoun, Pronoun-offset, A, A-offset,
    A-coref, B, B-offset, B-coref, URL). Raises :class:`InputError` on a malformed file,
    including offsets that do not point at the named text."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            # GAP's texts hold quotation marks that are not CSV quoting: read fields as they are
            rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read GAP file ({getattr(exc, 'strerror', None) or exc})") from None
    if not rows:
        raise InputError(f"{path}: empty GAP file")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in _GAP_COLUMNS if c not in header and c != "URL"]
    if missing:
        raise InputError(f"{path}: not a GAP file: no column {missing[0]!r} (header: {', '.join(header[:11])})")
    col = {name: header.index(name) for name in _GAP_COLUMNS if name in header}
    out = []
    for line_no, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        where = f"{path}:{line_no}"
        if len(row) < len(header):
            raise InputError(f"{where}: {plural(len(row), 'field')}, the header has {len(header)}")
        try:
            ex = GapExample(
                id=row[col["ID"]], text=row[col["Text"]],
                pronoun=row[col["Pronoun"]], pronoun_offset=int(row[col["Pronoun-offset"]]),
                a=row[col["A"]], a_offset=int(row[col["A-offset"]]), a_coref=_gap_bool(row[col["A-coref"]], where),
                b=row[col["B"]], b_offset=int(row[col["B-offset"]]), b_coref=_gap_bool(row[col["B-coref"]], where),
                url=row[col["URL"]] if "URL" in col else "",
            )
        except ValueError:
            raise InputError(f"{where}: an offset is not a whole number") from None
        for name, span, expected in (("Pronoun", ex.pronoun_span, ex.pronoun), ("A", ex.a_span, ex.a), ("B", ex.b_span, ex.b)):
            if ex.text[span[0]:span[1]] != expected:
                raise InputError(f"{where}: {name}-offset {span[0]} does not point at {expected!r} in the text")
        out.append(ex)
    return out


def _span_of(mention) -> tuple[int, int]:
    if isinstance(mention, Mapping):
        return int(mention["start"]), int(mention["end"])
    start, end = mention[0], mention[1]
    return int(start), int(end)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def gap_decisions(example: GapExample, clusters: Iterable[Iterable]) -> tuple[bool, bool]:
    """Whether the predicted clusters make A, and B, coreferent with the example's pronoun.

    ``clusters``: character spans into ``example.text``, as ``(start, end)`` or ``{"start",
    "end"}``. A name is coreferent when a cluster holds a mention overlapping the pronoun and
    another mention, not overlapping the pronoun, that overlaps the name's span (so a model
    whose mention is "Dr. Smith" for the name "Smith" still counts).
    """
    pronoun, decisions = example.pronoun_span, []
    spans = [[_span_of(m) for m in cluster] for cluster in clusters]
    for name in (example.a_span, example.b_span):
        found = False
        for cluster in spans:
            if any(_overlap(m, pronoun) for m in cluster) and any(
                _overlap(m, name) and not _overlap(m, pronoun) for m in cluster
            ):
                found = True
                break
        decisions.append(found)
    return decisions[0], decisions[1]


def gap_scores(examples: Iterable[GapExample], decisions: Mapping[str, tuple[bool | None, bool | None]]) -> dict:
    """GAP's scorecard: ``{"overall", "masculine", "feminine": {"recall", "precision", "f1",
    "tp", "fp", "fn", "tn"}, "bias", "examples"}`` (x100; ``bias`` = F1 feminine / F1
    masculine, None when either is 0).

    ``decisions`` maps an example id to its (A, B) predictions; a missing id or a None
    decision counts as a false negative, as the official scorer does. Examples without gold
    labels raise :class:`ValueError`.
    """
    counts = {group: Counter() for group in ("overall", "masculine", "feminine")}
    n = 0
    for ex in examples:
        n += 1
        if ex.a_coref is None or ex.b_coref is None:
            raise ValueError(f"GAP example {ex.id!r} has no gold A-coref/B-coref labels")
        predicted = decisions.get(ex.id, (None, None))
        groups = ["overall"] + ([ex.gender] if ex.gender else [])
        for gold, system in ((ex.a_coref, predicted[0]), (ex.b_coref, predicted[1])):
            if system is None:
                outcome = "fn"
            elif system:
                outcome = "tp" if gold else "fp"
            else:
                outcome = "fn" if gold else "tn"
            for group in groups:
                counts[group][outcome] += 1
    out: dict = {}
    for group, c in counts.items():
        precision, recall = ratio(c["tp"], c["tp"] + c["fp"]), ratio(c["tp"], c["tp"] + c["fn"])
        out[group] = {
            "recall": 100.0 * recall, "precision": 100.0 * precision, "f1": 100.0 * f1_of(precision, recall),
            **{k: c[k] for k in ("tp", "fp", "fn", "tn")},
        }
    m, f = out["masculine"]["f1"], out["feminine"]["f1"]
    out["bias"] = f / m if m and f else None
    out["examples"] = n
    return out
