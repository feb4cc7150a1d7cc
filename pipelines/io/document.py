"""The document every reader yields and every task takes (readers.py, semeval.py, tasks.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator


@dataclass
class Document:
    """One input document.

    ``text`` is ``None`` when the document could not be read; ``error`` then says
    why in one line. ``fields`` holds extra per-record values (e.g. ``question``)
    taken from JSONL fields / Parquet columns named in ``fields=``. ``pages``: a PDF's
    page starts.
    """

    id: str
    text: str | None
    error: str | None = None
    fields: dict = field(default_factory=dict)
    # A PDF's pages: the character offset in `text` where each starts (pdf_reader.py), so rows
    # can say the page of an offset; None for other inputs.
    pages: list[int] | None = None


def as_documents(items: Iterable[Any]) -> Iterator[Document]:
    """Every kind of document the Python API takes, as Documents: a Document as it is; a string
    (its id its position, "0", "1", ...); a dict with "text" (and "id", else its position, and
    any other field, e.g. "question"). An empty text is an error row, not a failure."""
    for i, doc in enumerate(items):
        if isinstance(doc, Document):
            yield doc
        elif isinstance(doc, str):
            ok = bool(doc.strip())
            yield Document(str(i), doc if ok else None, None if ok else "empty document")
        elif isinstance(doc, dict):
            text = doc.get("text")
            fields = {k: v for k, v in doc.items() if k not in ("id", "text")}
            error = None if isinstance(text, str) and text.strip() else "empty document"
            yield Document(str(doc.get("id", i)), text if error is None else None, error, fields)
        else:
            raise TypeError(f"document {i}: expected str, dict or Document, got {type(doc).__name__}")
