"""The classify page: how many documents got each label, a table of every document (label,
score, its top labels as small bars) sorted by clicking a column's header, and per
document a card with its labels' bars and its text. The label column beside the bars has one
width on every row (a longer label is cut, whole on hover), so the bars line up down the page."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from .page import bar, error_card, escape, frame, score_text

TABLE_LABELS = 3  # top labels drawn in the table
CARD_LABELS = 5  # and in a document's card
SNIPPET_CHARS = 240

CSS = """
table.rows{border-collapse:collapse;width:100%;background:var(--paper);font-size:14px}
table.rows th,table.rows td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:middle}
table.rows th{background:#eef2f7;position:sticky;top:0;white-space:nowrap}
table.rows th[data-sort]{cursor:pointer;user-select:none}
table.rows th[data-sort]::after{content:" \\2195";color:#9aa5b4}
table.rows th[aria-sort=ascending]::after{content:" \\25B2";color:var(--ink)}
table.rows th[aria-sort=descending]::after{content:" \\25BC";color:var(--ink)}
table.rows td.num{font-variant-numeric:tabular-nums;text-align:right}
table.rows td a{color:var(--accent);text-decoration:none;word-break:break-all}
tr.err td{color:var(--bad)}
.bars{display:inline-grid;grid-template-columns:18em 8em 3.5em;gap:2px 8px;align-items:center;font-size:13px}
td .bars{grid-template-columns:11em 8em 3.5em}
.bars .l{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.bars .v{font-variant-numeric:tabular-nums;text-align:right;color:var(--dim)}
.lab{display:inline-block;background:#e8eefb;border-radius:4px;padding:0 6px;font-weight:600}
.snippet{color:#3b4350;margin:6px 0}
.card.summary .bars{grid-template-columns:minmax(8em,max-content) 16em 5em}
"""

SCRIPT = r"""
(function () {
  document.querySelectorAll('th[data-sort]').forEach(function (th) {
    th.addEventListener('click', function () {
      const table = th.closest('table'), body = table.tBodies[0], key = th.dataset.sort;
      const numeric = th.dataset.type === 'num';
      const current = th.getAttribute('aria-sort');
      const dir = current ? (current === 'ascending' ? -1 : 1) : (th.dataset.first === 'descending' ? -1 : 1);
      table.querySelectorAll('th[aria-sort]').forEach(h => h.removeAttribute('aria-sort'));
      th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      const value = tr => numeric ? parseFloat(tr.dataset[key]) : tr.dataset[key];
      const rows = Array.from(body.rows);
      rows.sort(function (a, b) {
        const x = value(a), y = value(b);
        const xm = x === undefined || x === '' || (numeric && isNaN(x));
        const ym = y === undefined || y === '' || (numeric && isNaN(y));
        if (xm || ym) return xm - ym || a.dataset.order - b.dataset.order;  // rows without a value last
        const c = numeric ? x - y : x.localeCompare(y, undefined, {numeric: true});
        return dir * c || a.dataset.order - b.dataset.order;
      });
      body.append(...rows);
    });
  });
})();
"""


def top_labels(row: dict, n: int) -> list[tuple[str, float]]:
    """The row's `n` most likely labels with their probabilities, best first."""
    scores = row.get("scores")
    if isinstance(scores, list):  # a Parquet map read back: (key, value) pairs
        scores = dict(scores)
    if not isinstance(scores, dict) or not scores:
        return [(row["label"], row.get("score"))] if row.get("label") is not None else []
    good = [(str(k), v) for k, v in scores.items() if isinstance(v, (int, float)) and math.isfinite(v)]
    return sorted(good, key=lambda kv: -kv[1])[:n]


def _bars(pairs: list[tuple[str, Any]]) -> str:
    cells = "".join(f'<span class="l" title="{escape(label)}">{escape(label)}</span>{bar(p)}'
                    f'<span class="v">{score_text(p)}</span>' for label, p in pairs)
    return f'<div class="bars">{cells}</div>'


def _table_row(k: int, row: dict) -> str:
    doc = f'<a href="#r{k}">{escape(row.get("id"))}</a>'
    if row.get("error"):
        return (f'<tr class="err" data-order="{k}" data-id="{escape(row.get("id"))}" data-label="" data-score="">'
                f'<td class="num">{k + 1}</td><td>{doc}</td><td>error</td><td></td><td>{escape(row["error"])}</td></tr>')
    score = row.get("score")
    score_attr = f"{score!r}" if isinstance(score, (int, float)) and math.isfinite(score) else ""
    return (f'<tr data-order="{k}" data-id="{escape(row.get("id"))}" data-label="{escape(row.get("label") or "")}" '
            f'data-score="{score_attr}"><td class="num">{k + 1}</td><td>{doc}</td><td>{escape(row.get("label"))}</td>'
            f'<td class="num">{score_text(score)}</td><td>{_bars(top_labels(row, TABLE_LABELS))}</td></tr>')


def _card(k: int, row: dict, text: str | None) -> str:
    head = (f'<h2><a href="#r{k}">{escape(row.get("id"))}</a></h2><p><span class="lab">{escape(row.get("label"))}</span> '
            f'{score_text(row.get("score"))}</p>{_bars(top_labels(row, CARD_LABELS))}')
    if text is None:
        body = '<p class="note">The document\'s text was not found (pass --text with the inputs of the job).</p>'
    else:
        cut = text[:SNIPPET_CHARS]
        more = (f'<details><summary>the whole text ({len(text):,} characters)</summary>'
                f'<div class="box passage">{escape(text)}</div></details>') if len(text) > SNIPPET_CHARS else ""
        body = f'<p class="snippet passage">{escape(cut)}{"…" if more else ""}</p>{more}'
    return f'<section class="card" id="r{k}">{head}{body}</section>'


def _summary(rows: list[dict]) -> str:
    labels = Counter(r.get("label") for r in rows if not r.get("error"))
    errors = sum(1 for r in rows if r.get("error"))
    n = len(rows) or 1
    pairs = [(label, count / n) for label, count in labels.most_common()]
    cells = "".join(f'<span class="l" title="{escape(label)}">{escape(label)}</span>{bar(share, "16em")}'
                    f'<span class="v">{labels[label]}</span>' for label, share in pairs)
    failed = f'<p class="msg">{errors} documents failed (error rows)</p>' if errors else ""
    return f'<section class="card summary"><h2>Labels</h2><div class="bars">{cells}</div>{failed}</section>'


def classify_page(rows: list[dict], texts: dict[str, str | None], *, title: str, subtitle: str, footer: str = "") -> str:
    """The page of `lfcli classify` rows over their documents' `texts` (id -> text)."""
    head = ('<thead><tr><th>#</th><th data-sort="id">document</th><th data-sort="label">label</th>'
            '<th data-sort="score" data-type="num" data-first="descending">score</th><th>top labels</th></tr></thead>')
    table = f'<section class="card"><table class="rows">{head}<tbody>{"".join(_table_row(k, r) for k, r in enumerate(rows))}</tbody></table></section>'
    cards = [error_card(f"r{k}", r.get("id"), r["error"]) if r.get("error") else _card(k, r, texts.get(str(r.get("id"))))
             for k, r in enumerate(rows)]
    body = _summary(rows) + table + "\n".join(cards)
    return frame(title, subtitle, body, css=CSS, script=SCRIPT, footer=footer)
