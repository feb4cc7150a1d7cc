"""CoNLL-2012 coreference files: documents, their text, and gold clusters as character spans.

Gold coreference comes as CoNLL-2012 files (OntoNotes, LitBank's ``coref/conll``), while
``lfcli corefs`` reports clusters as character spans into a document's text. This module reads
the files and rebuilds, per document, a text in which every token has a character span, so the
gold clusters can be compared with predictions made on that text.

Format (what the reader relies on):

* ``#begin document (NAME); part P`` opens a document, ``#end document`` closes it; other
  lines starting with ``#`` are comments.
* One token per line, whitespace-separated columns: the 4th column is the word, the last one
  holds the coreference brackets: ``-`` (none), ``(12`` (a mention of entity 12 opens here),
  ``12)`` (closes), ``(12)`` (a one-token mention), and several joined by ``|``, e.g.
  ``(3|(7)|3)``. A closing bracket closes the innermost open mention of the same entity, so
  nested mentions of one entity (``(1`` ``(1`` ``1)`` ``1)``) and several mentions starting on
  the same token come out right.
* A blank line ends a sentence.

The text is the tokens joined by single spaces, each sentence ending with a newline: exactly
LitBank's brat ``.txt`` files (``coref/brat``), so predictions made on those files line up
with the gold spans (``tests/test_conll.py`` checks this on the real files).

Spans are ``(start, end)`` with ``end`` exclusive, both for characters and for tokens.

Ids: a file with one document gives it the file's name without extension
(``105_persuasion.conll`` -> ``105_persuasion``, as LitBank's ``train.ids`` name them); a file
with several documents gives ``NAME_P`` (``bc/cctv/00/cctv_0000_0``, e2e-coref's convention).
The ``ids`` filter keeps a document when its id, its file's stem or its ``#begin`` name is
listed; a listed id that matches nothing is an error (a wrong split file must not score an
empty set).

A mention listed twice in one document is kept once, in the first cluster that has it, as the
CoNLL-2012 reference scorer does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from ..errors import InputError
from ..wording import plural

__all__ = ["ConllDocument", "read_conll", "parse_conll", "select_documents", "read_ids", "CONLL_EXTS"]

#: file endings read from a folder (OntoNotes ships ``*.v4_gold_conll``, ``*.gold_conll``)
CONLL_EXTS = (".conll", "_conll")

_BEGIN = re.compile(r"^#\s*begin\s+document\s*\((?P<name>.*)\)\s*;?\s*(?:part\s+(?P<part>\S+))?\s*$", re.IGNORECASE)
_END = re.compile(r"^#\s*end\s+document\b", re.IGNORECASE)
# one item of the coreference column: "(12", "12)", "(12)"; ids are usually numbers but any
# bracket-free text is accepted
_ITEM = re.compile(r"^(?P<open>\()?(?P<id>[^()|]+)(?P<close>\))?$")


@dataclass
class ConllDocument:
    """One document of a CoNLL-2012 file.

    ``clusters`` are lists of character spans ``(start, end)`` into ``text``; ``token_clusters``
    the same mentions as token spans ``(first, last + 1)``; ``cluster_ids`` the file's entity ids,
    in the same order. Clusters are in order of their first mention, mentions sorted.
    """

    id: str
    name: str
    part: str
    path: str
    tokens: list[str]
    token_spans: list[tuple[int, int]]
    sentences: list[tuple[int, int]]  # token ranges
    text: str
    token_clusters: list[list[tuple[int, int]]]
    clusters: list[list[tuple[int, int]]]
    cluster_ids: list[str] = field(default_factory=list)

    def mention_text(self, span: tuple[int, int]) -> str:
        return self.text[span[0]:span[1]]


def read_ids(path: str | os.PathLike) -> list[str]:
    """Document ids from a file, one per line (blank lines and ``#`` comments skipped)."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{os.fspath(path)}: cannot read the ids file ({getattr(exc, 'strerror', None) or exc})") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def read_conll(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    ids: str | os.PathLike | Iterable[str] | None = None,
) -> list[ConllDocument]:
    """The documents of CoNLL-2012 files and folders (folders: every ``*.conll``/``*_conll``
    file below them, sorted), in order.

    ``ids``: keep only these documents: an iterable of ids, or the path of an ids file (one id
    per line). Raises :class:`InputError` for a missing path, a malformed file, a duplicated
    document id, or a listed id that no document has.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[str] = []
    for path in map(os.fspath, paths):
        if os.path.isdir(path):
            found = sorted(_walk_conll(path))
            if not found:
                raise InputError(f"{path}: folder has no CoNLL files ({', '.join('*' + e for e in CONLL_EXTS)})")
            files.extend(found)
        elif os.path.exists(path):
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or folder")
    docs: list[ConllDocument] = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read file ({getattr(exc, 'strerror', None) or exc})") from None
        docs.extend(parse_conll(lines, path))
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise InputError(f"{doc.path}: document id {doc.id!r} appears twice in the gold files")
        seen.add(doc.id)
    return docs if ids is None else select_documents(docs, ids)


def select_documents(docs: Sequence[ConllDocument], ids: str | os.PathLike | Iterable[str]) -> list[ConllDocument]:
    """The documents whose id, file stem or ``#begin`` name is in ``ids`` (an iterable, or the
    path of an ids file), in their order. A listed id that no document has raises
    :class:`InputError`."""
    wanted = read_ids(ids) if isinstance(ids, (str, os.PathLike)) else [str(x) for x in ids]
    keep = set(wanted)
    chosen = [doc for doc in docs if {doc.id, _stem(doc.path), doc.name} & keep]
    known = {key for doc in docs for key in (doc.id, _stem(doc.path), doc.name)}
    unknown = [x for x in dict.fromkeys(wanted) if x not in known]
    if unknown:
        listing = ", ".join(repr(x) for x in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        raise InputError(f"{plural(len(unknown), 'listed document id')} not in the CoNLL files: {listing}")
    return chosen


def _walk_conll(root: str) -> Iterator[str]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and name.lower().endswith(CONLL_EXTS):
                yield os.path.join(folder, name)


def _stem(path: str) -> str:
    name = os.path.basename(path)
    for ext in (".v4_gold_conll", ".gold_conll", ".v4_auto_conll", ".auto_conll", ".conll"):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return os.path.splitext(name)[0]


class _Builder:
    """Accumulates one document's tokens and brackets while its lines are read."""

    def __init__(self, name: str, part: str, path: str, line_no: int):
        self.name, self.part, self.path, self.line_no = name, part, path, line_no
        self.tokens: list[str] = []
        self.sentences: list[tuple[int, int]] = []
        self.sentence_start = 0
        self.open: dict[str, list[int]] = {}  # entity id -> stack of the start tokens of open mentions
        self.mentions: list[tuple[str, int, int]] = []  # (entity id, start token, end token exclusive)

    def end_sentence(self) -> None:
        if len(self.tokens) > self.sentence_start:
            self.sentences.append((self.sentence_start, len(self.tokens)))
            self.sentence_start = len(self.tokens)

    def add_token(self, word: str, coref: str, where: str) -> None:
        i = len(self.tokens)
        self.tokens.append(word)
        if coref in ("-", "_", ""):
            return
        for item in coref.split("|"):
            m = _ITEM.match(item)
            if m is None or not (m["open"] or m["close"]):
                raise InputError(f"{where}: malformed coreference column {coref!r}")
            entity = m["id"]
            if m["open"] and m["close"]:
                self.mentions.append((entity, i, i + 1))
            elif m["open"]:
                self.open.setdefault(entity, []).append(i)
            else:
                stack = self.open.get(entity)
                if not stack:
                    raise InputError(f"{where}: mention of entity {entity} closes but was never opened")
                start = stack.pop()  # the innermost open mention of this entity
                self.mentions.append((entity, start, i + 1))

    def finish(self, where: str) -> tuple:
        self.end_sentence()
        unclosed = [entity for entity, stack in self.open.items() if stack]
        if unclosed:
            raise InputError(f"{where}: mention of entity {unclosed[0]} opens but is never closed in document {self.name!r}")
        return self.name, self.part, self.tokens, self.sentences, self.mentions


def parse_conll(lines: Iterable[str], path: str = "<string>") -> list[ConllDocument]:
    """The documents in the lines of one CoNLL-2012 file (``path`` names it in errors and ids)."""
    raw: list[tuple[str, str, list[str], list[tuple[int, int]], list[tuple[str, int, int]]]] = []
    doc: _Builder | None = None
    line_no = 0
    for line_no, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        where = f"{path}:{line_no}"
        stripped = line.strip()
        if stripped.startswith("#"):
            begin = _BEGIN.match(stripped)
            if begin:
                if doc is not None:
                    raise InputError(f"{where}: a document begins before {doc.name!r} ended")
                doc = _Builder(begin["name"].strip(), (begin["part"] or "0").strip(), path, line_no)
            elif _END.match(stripped):
                if doc is None:
                    raise InputError(f"{where}: '#end document' without '#begin document'")
                raw.append(doc.finish(where))
                doc = None
            continue
        if not stripped:
            if doc is not None:
                doc.end_sentence()
            continue
        if doc is None:
            raise InputError(f"{where}: token line outside a document (no '#begin document' before it)")
        columns = stripped.split()
        if len(columns) < 5:
            raise InputError(f"{where}: expected at least 5 columns (document, part, index, word, ..., coreference), got {len(columns)}")
        doc.add_token(columns[3], columns[-1], where)
    if doc is not None:
        raise InputError(f"{path}:{line_no}: document {doc.name!r} has no '#end document'")
    single = len(raw) == 1
    stem = _stem(path)
    return [_document(stem if single else f"{name}_{part}", name, part, path, tokens, sentences, mentions)
            for name, part, tokens, sentences, mentions in raw]


def _document(doc_id, name, part, path, tokens, sentences, mentions) -> ConllDocument:
    # Text: tokens joined by spaces, each sentence on its own line (LitBank's brat .txt).
    spans: list[tuple[int, int]] = [(0, 0)] * len(tokens)
    pieces: list[str] = []
    pos = 0
    for lo, hi in sentences:
        for i in range(lo, hi):
            if i > lo:
                pieces.append(" ")
                pos += 1
            pieces.append(tokens[i])
            spans[i] = (pos, pos + len(tokens[i]))
            pos += len(tokens[i])
        pieces.append("\n")
        pos += 1
    text = "".join(pieces)

    # Clusters in order of first mention; a mention kept once, in the first cluster listing it.
    by_entity: dict[str, list[tuple[int, int]]] = {}
    seen: set[tuple[int, int]] = set()
    for entity, lo, hi in sorted(mentions, key=lambda m: (m[1], -m[2])):
        members = by_entity.setdefault(entity, [])
        if (lo, hi) not in seen:
            seen.add((lo, hi))
            members.append((lo, hi))
    order = sorted((e for e, ms in by_entity.items() if ms), key=lambda e: by_entity[e][0])
    token_clusters = [sorted(by_entity[e]) for e in order]
    clusters = [[(spans[lo][0], spans[hi - 1][1]) for lo, hi in cluster] for cluster in token_clusters]
    return ConllDocument(
        id=doc_id, name=name, part=part, path=path, tokens=list(tokens), token_spans=spans,
        sentences=list(sentences), text=text, token_clusters=token_clusters, clusters=clusters,
        cluster_ids=order,
    )
