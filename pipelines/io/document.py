"""The document every reader yields and every task takes (readers.py, semeval.py, tasks.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Document:
    """One input document.

    ``text`` is ``None`` when the document could not be read; ``error`` then says
    why in one line. ``fields`` holds extra per-record values (e.g. ``question``)
    taken from JSONL fields / Parquet columns named in ``fields=``.
    """

    id: str
    text: str | None
    error: str | None = None
    fields: dict = field(default_factory=dict)
