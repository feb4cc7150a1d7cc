"""How many documents a job's inputs hold, where that is cheap to know, for a progress bar's
total and ETA: a file is one document, a Parquet file its footer's row count, a JSONL file its
non-blank lines (counted, for files up to COUNT_JSONL_BYTES). None where it is not known
without reading it all (standard input, a large or compressed JSONL file, an unreadable one).
"""

from __future__ import annotations

import os
from typing import Sequence

from .compressed import compression
from .readers import detect_format, walk_folder

COUNT_JSONL_BYTES = 256 * 2**20  # a larger JSONL file is not read twice for a total


def _jsonl_lines(path: str) -> int | None:
    if compression(path) or os.path.getsize(path) > COUNT_JSONL_BYTES:
        return None
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def _file_documents(path: str, input_format: str) -> int | None:
    fmt = detect_format(path, input_format)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq  # lazy: as the readers, only for Parquet

            return pq.ParquetFile(path).metadata.num_rows
        if fmt == "jsonl":
            return _jsonl_lines(path)
    except (OSError, ValueError, ImportError):
        return None
    except Exception:  # noqa: BLE001 - pyarrow's errors: a bad file has no known count, the reader says why
        return None
    return 1


def count_documents(inputs: Sequence[str], *, glob: str | None = None, input_format: str = "auto") -> int | None:
    """The number of documents `inputs` hold, or None when it is not cheap to know."""
    total = 0
    for path in map(os.fspath, inputs):
        if path == "-" or not os.path.exists(path):
            return None
        files = [full for full, _ in walk_folder(path, glob)] if os.path.isdir(path) else [path]
        for full in files:
            n = _file_documents(full, input_format)
            if n is None:
                return None
            total += n
    return total
