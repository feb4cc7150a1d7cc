"""Compressed inputs: `.gz`, `.bz2` and `.xz` files are read as what they hold, with the
standard library (gzip, bz2, lzma). The format is the inner name's: `book.txt.gz` is text,
`records.jsonl.xz` JSONL. A damaged archive is a reading error of that one input, reported
as its row, never a crash of the job.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from typing import IO

OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
# What a damaged or truncated archive raises while it is read (gzip.BadGzipFile is an OSError).
DAMAGED = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)


def compression(path: str) -> str | None:
    """".gz", ".bz2" or ".xz" when `path` names a compressed file, else None."""
    lower = path.lower()
    return next((ext for ext in OPENERS if lower.endswith(ext)), None)


def inner_name(path: str) -> str:
    """The file's name without its compression suffix (what its format is read from)."""
    ext = compression(path)
    return path[: -len(ext)] if ext else path


def open_input(path: str) -> IO[bytes]:
    """The file's bytes, decompressed as they are read when it is compressed."""
    ext = compression(path)
    return OPENERS[ext](path, "rb") if ext else open(path, "rb")


def damage(label: str, path: str, exc: BaseException) -> str:
    """The one-line error of a damaged archive."""
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{label}: damaged {compression(path)} archive ({detail})"
