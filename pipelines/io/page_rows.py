"""The rows an HTML output carries (writers.py's OUT.html): a JSON block at the end of the
page, one row a line, so a finished page can be resumed like a finished JSON array.

    <script type="application/json" id="lfcli-rows">
    {"id": "a.txt", ...}
    </script>

`<`, `>` and `&` in a row are written as \\u escapes: they occur only inside JSON strings,
where the escapes stand for the same characters, and without them a document's
`</script>` would end the block (and whatever follows would run as the page's script).
"""

from __future__ import annotations

import json
import os

from ..errors import InputError
from .outputs import fsync_dir

ROWS_BLOCK = '<script type="application/json" id="lfcli-rows">'
ROWS_BLOCK_END = "</script>"


def script_safe(line: bytes) -> bytes:
    """A JSON line that cannot end a <script> element."""
    return line.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def with_rows(page: str, lines: list[bytes]) -> str:
    """`page` with the rows block (of JSON lines `lines`) before its `</body>`."""
    block = "\n".join([ROWS_BLOCK, *(script_safe(line).decode("utf-8", "replace") for line in lines),
                       ROWS_BLOCK_END, ""])
    cut = page.rfind("</body>")
    return page[:cut] + block + page[cut:] if cut >= 0 else page + block


def rows_to_jsonl(path: str, target: str) -> None:
    """Write the rows block of HTML output `path` as JSONL to `target` (via a temp file)."""
    tmp = target + ".tmp"
    found = ended = False
    with open(path, "rb") as fh, open(tmp, "wb") as out:
        for raw in fh:
            line = raw.strip()
            if not found:
                found = line == ROWS_BLOCK.encode()
            elif line == ROWS_BLOCK_END.encode():
                ended = True
                break
            elif line:
                try:
                    json.loads(line)
                except ValueError:
                    break
                out.write(line + b"\n")
        out.flush()
        os.fsync(out.fileno())
    if not ended:
        os.remove(tmp)
        raise InputError(f"{path}: no rows in this page (not written by lfcli -o NAME.html, or cut short), "
                         "cannot resume (pass --force to start over)")
    os.replace(tmp, target)
    fsync_dir(os.path.dirname(target))
