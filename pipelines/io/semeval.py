"""SemEval-2019 Task 4 (hyperpartisan news) XML: articles as documents, ground truth as labels.

An articles file holds `<article id=... title=...>` elements whose body is HTML-like
paragraphs (`<p>`, `<a>`, ...). A document's text is its title, a blank line, then its
paragraphs' text separated by blank lines (the paragraph breaks are kept, so the
`paragraph-starts` global policy still sees them). A ground-truth file holds
`<article id=... hyperpartisan="true|false">`; the label is that attribute's value, as the
task's official evaluator reads it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from .document import Document

_SPACES = re.compile(r"[ \t\r\f\v]+")


def is_articles_file(path: str | Path) -> bool:
    """True for an .xml file whose root element is <articles> (read from its first bytes)."""
    p = Path(path)
    if p.suffix.lower() != ".xml" or not p.is_file():
        return False
    with open(p, "rb") as f:
        head = f.read(512)
    return b"<articles" in head


def _text(element: ET.Element) -> str:
    return _SPACES.sub(" ", "".join(element.itertext())).strip()


def iter_articles(path: str | Path) -> Iterator[Document]:
    """The articles of a SemEval XML file, streamed (ids are the articles' ids)."""
    try:
        for _, element in ET.iterparse(str(path), events=("end",)):
            if element.tag != "article":
                continue
            doc_id = element.get("id")
            paragraphs = [_text(p) for p in element.iter("p")]
            if not paragraphs:  # some articles have their text directly in <article>
                paragraphs = [_text(element)]
            title = (element.get("title") or "").strip()
            body = "\n\n".join(p for p in paragraphs if p)
            text = f"{title}\n\n{body}".strip() if title else body
            element.clear()
            if not doc_id:
                continue
            if text:
                yield Document(doc_id, text)
            else:
                yield Document(doc_id, None, error="the article has no text")
    except ET.ParseError as exc:
        raise InputError(f"{path}: not a readable SemEval articles XML file ({exc})") from None


def read_ground_truth(path: str | Path) -> dict[str, str]:
    """Article id -> "true" | "false" (the hyperpartisan attribute)."""
    try:
        root = ET.parse(str(path)).getroot()
    except (ET.ParseError, OSError) as exc:
        raise InputError(f"{path}: not a readable SemEval ground-truth XML file ({exc})") from None
    labels = {a.get("id"): a.get("hyperpartisan") for a in root.iter("article")}
    labels = {k: v for k, v in labels.items() if k and v}
    if not labels:
        raise InputError(f"{path}: no <article id=... hyperpartisan=...> elements")
    return labels


def find_ground_truth(articles: Path) -> Path | None:
    """The ground-truth file beside an articles file: the same name with `articles`
    replaced by `ground-truth` (the task's naming), else the only ground-truth-*.xml there."""
    named = articles.with_name(articles.name.replace("articles", "ground-truth", 1))
    if named != articles and named.is_file():
        return named
    candidates = sorted(articles.parent.glob("ground-truth*.xml"))
    return candidates[0] if len(candidates) == 1 else None
