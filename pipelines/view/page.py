"""The frame every page shares: the HTML skeleton, escaping, JSON that is safe inside a
<script>, nested highlights over a text, the chain colours, and the CSS common to the views.

A page is one file that opens from disk with no network: its CSS and script are inline, and
nothing in it names another address (no links out, no fonts, no icons; the favicon is an
empty data: address so the browser asks for none). Every piece of a document's text goes
through `escape`, and every value a script reads goes through `script_json`, so a document
holding `<script>` or `</script>` shows as text and never runs.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, Iterable

from ..io.writers import finite

# JSON for a <script> block: `<`, `>` and `&` as \\u escapes, so no `</script>` or `<!--` can
# end the element early; U+2028/U+2029 too, which some script parsers take for line breaks.
_SCRIPT_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                 "\u2028": "\\u2028", "\u2029": "\\u2029"})

# The first chain colours, picked by hand to tell apart at a glance (light, so black text reads
# on them); later chains go round the hue circle by the golden angle (chain_colour).
PALETTE = ("#ffd166", "#8ecae6", "#b5e48c", "#f4a3c0", "#cdb4db", "#ffb38a", "#9ee6d3", "#e9d8a6",
           "#a9c5ff", "#ff9f9f", "#c7e9a0", "#f7c6ff")

# `[hidden]` first: an element a script hides (a filtered list's item) stays hidden whatever
# display its own rule gives it (`.chains li{display:flex}` would show it again).
BASE_CSS = """
:root{--ink:#1d2127;--dim:#5f6b7a;--line:#d9dee5;--paper:#fff;--wash:#f5f7fa;--bad:#b3261e;--accent:#2f5aa8}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--wash)}
header.top{padding:14px 24px;background:var(--paper);border-bottom:1px solid var(--line)}
header.top h1{margin:0;font-size:19px}
header.top p{margin:2px 0 0;color:var(--dim);font-size:13px}
main{padding:16px 24px;max-width:1400px}
.card{background:var(--paper);border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:0 0 16px}
.card h2{margin:0 0 6px;font-size:16px;word-break:break-all}
.card h2 a{color:inherit;text-decoration:none}
.err{border-color:#e6b3b0;background:#fff6f5}
.err .msg{color:var(--bad);font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
.note{color:#8a5a00;background:#fff7e0;border:1px solid #f0dca0;border-radius:6px;padding:4px 8px;font-size:13px;margin:6px 0}
.passage{white-space:pre-wrap;overflow-wrap:anywhere;font:15px/1.6 Georgia,"Times New Roman",serif;max-width:80ch}
.box{max-width:110ch;max-height:26em;overflow:auto;border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:#fcfcfd}
.dim{color:var(--dim)}
.bar{display:inline-block;height:9px;background:#e7ebf0;border-radius:5px;vertical-align:middle;overflow:hidden}
.bar>i{display:block;height:100%;background:var(--accent);border-radius:5px}
nav.docs{font-size:13px;margin:0 0 12px;columns:4 14em}
nav.docs a{display:block;color:var(--accent);text-decoration:none;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
footer{color:var(--dim);font-size:12px;padding:8px 24px 24px}
"""


def escape(text: Any) -> str:
    """`text` as HTML text or attribute value: & < > " ' escaped."""
    return html.escape(str(text), quote=True)


def script_json(value: Any) -> str:
    """`value` as JSON to place inside a <script> element (see _SCRIPT_ESCAPES)."""
    text = json.dumps(finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_ESCAPES)


def dom_text(text: str) -> str:
    """`text` as the browser's DOM will hold it, code point for code point: HTML parsing turns
    CR LF into LF and drops NUL, which would shift every offset after them, so CR LF becomes
    space LF, a lone CR LF, and NUL U+FFFD (same lengths, the same look)."""
    if "\r" in text:
        text = text.replace("\r\n", " \n").replace("\r", "\n")
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def chain_colour(rank: int) -> str:
    """The background of the chain ranked `rank` (0: the most mentioned) in its document."""
    if rank < len(PALETTE):
        return PALETTE[rank]
    hue = (rank * 137.508 + 15) % 360
    light = (84, 78, 90)[rank % 3]
    return f"hsl({hue:.0f},70%,{light}%)"


def markup(text: str, spans: Iterable[tuple[int, int, str, str]]) -> str:
    """`text` escaped, with each span (start, end, opening HTML, closing HTML) wrapped around
    its characters. Spans nest; one that crosses the end of the span it starts in is cut at
    that end (HTML elements cannot cross). Offsets are code points, end exclusive."""
    out: list[str] = []
    stack: list[tuple[int, str]] = []  # (end, closing HTML) of the open spans
    pos = 0
    n = len(text)
    for start, end, opening, closing in sorted(spans, key=lambda s: (s[0], -s[1])):
        start, end = max(0, min(start, n)), max(0, min(end, n))
        while stack and stack[-1][0] <= start:
            top_end, top_close = stack.pop()
            out.append(escape(text[pos:top_end]) + top_close)
            pos = top_end
        if start > pos:
            out.append(escape(text[pos:start]))
            pos = start
        if stack:
            end = min(end, stack[-1][0])
        if end <= start:
            continue
        out.append(opening)
        stack.append((end, closing))
    while stack:
        top_end, top_close = stack.pop()
        out.append(escape(text[pos:top_end]) + top_close)
        pos = top_end
    out.append(escape(text[pos:]))
    return "".join(out)


def excerpt(text: str, start: int, end: int, around: int = 160) -> tuple[int, int]:
    """The bounds of about `around` characters either side of [start, end), widened to whole
    words where a space is near."""
    lo, hi = max(0, start - around), min(len(text), end + around)
    if lo > 0:
        space = text.find(" ", lo, start)
        lo = space + 1 if space >= 0 else lo
    if hi < len(text):
        space = text.rfind(" ", end, hi)
        hi = space if space >= 0 else hi
    return lo, hi


def score_text(score: Any) -> str:
    return f"{score:.3f}" if isinstance(score, (int, float)) and math.isfinite(score) else "–"


def bar(score: Any, width: str = "8em") -> str:
    """A small horizontal bar for a probability in [0, 1]."""
    fill = min(max(score, 0.0), 1.0) * 100 if isinstance(score, (int, float)) and math.isfinite(score) else 0
    return f'<span class="bar" style="width:{width}"><i style="width:{fill:.1f}%"></i></span>'


def error_card(anchor: str, doc_id: Any, message: Any) -> str:
    return (f'<section class="card err" id="{anchor}"><h2>{escape(doc_id)}</h2>'
            f'<div class="msg">error: {escape(message)}</div></section>')


def doc_index(ids: list[Any], anchor_prefix: str = "r", labels: list[str] | None = None) -> str:
    """Links to each document's card, when there are several; `labels`: each link's own HTML
    (escaped already) instead of its id."""
    if len(ids) < 2:
        return ""
    shown = labels if labels is not None else [escape(i) for i in ids]
    links = "".join(f'<a href="#{anchor_prefix}{k}">{label}</a>' for k, label in enumerate(shown))
    return f'<nav class="docs" aria-label="documents">{links}</nav>'


def frame(title: str, subtitle: str, body: str, *, css: str = "", script: str = "", data: Any = None,
          footer: str = "") -> str:
    """The whole page: head with inline CSS, a title bar, `body`, `data` as JSON for `script`
    (read with JSON.parse(document.getElementById('lfcli-data').textContent)), then `script`."""
    data_block = ("" if data is None else
                  f'<script type="application/json" id="lfcli-data">{script_json(data)}</script>\n')
    script_block = f"<script>\n{script}\n</script>\n" if script else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<title>{escape(title)}</title>\n<link rel="icon" href="data:,">\n'
        f"<style>{BASE_CSS}{css}</style>\n</head>\n<body>\n"
        f'<header class="top"><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header>\n'
        f"<main>\n{body}\n</main>\n<footer>{escape(footer)}</footer>\n"
        f"{data_block}{script_block}</body>\n</html>\n"
    )
