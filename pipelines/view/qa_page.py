"""The qa page: per row its question, the answers best score first, each with its score, a
bar and the words around it, and a link down to the answer highlighted in the document's
passage (every answer marked there with its rank and score). No script: links and marks."""

from __future__ import annotations

import math
from typing import Any

from .page import bar, doc_index, error_card, escape, excerpt, frame, markup, score_text

SHORT_TEXT = 600  # characters: below this, no excerpt beside each answer

CSS = """
.q{font-size:16px;margin:2px 0 10px}
.q b{color:var(--dim);font-weight:600}
ol.answers{margin:0 0 12px;padding-left:1.6em}
ol.answers li{margin:0 0 8px}
ol.answers .ans{font-weight:600;color:var(--accent);text-decoration:none}
ol.answers .sc{font-variant-numeric:tabular-nums;margin:0 6px}
.ctx{color:#3b4350;font-size:13.5px;margin-top:2px}
.ctx mark,.passage mark{background:#ffe38a;border-radius:2px;padding:0 1px}
.passage mark.r1{background:#ffd23f;outline:1px solid #c99a00}
.passage mark.rn{background:#ffeeb0}
.passage mark:target{outline:3px solid var(--accent)}
sup.rank{font:600 10px/1 system-ui,sans-serif;color:#6b5200;background:#fff3c4;border-radius:3px;padding:1px 3px;margin-left:1px}
"""


def ranked_answers(row: dict) -> list[dict]:
    """The row's answers (its `answers` list, else the row's own answer), best score first."""
    answers = row.get("answers")
    if not isinstance(answers, list) or not answers:
        answers = [{k: row.get(k) for k in ("answer", "start", "end", "score")}]

    def key(a: dict) -> float:
        s = a.get("score")
        return -s if isinstance(s, (int, float)) and math.isfinite(s) else math.inf

    return sorted((a for a in answers if isinstance(a, dict)), key=key)


def _where(text: str | None, answer: dict) -> tuple[int, int] | None:
    """The answer's span in `text` when its offsets hold its words."""
    s, e = answer.get("start"), answer.get("end")
    if text is None or not (isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= len(text)):
        return None
    said = answer.get("answer")
    return (s, e) if said is None or text[s:e] == said else None


def _answer_item(k: int, j: int, answer: dict, text: str | None) -> str:
    words = answer.get("answer")
    shown = escape(words) if words else '<span class="dim">(no answer)</span>'
    span = _where(text, answer)
    label = f'<a class="ans" href="#r{k}a{j}">{shown}</a>' if span else f'<span class="ans">{shown}</span>'
    line = f'{label} <span class="sc">{score_text(answer.get("score"))}</span>{bar(answer.get("score"))}'
    if span and len(text) > SHORT_TEXT:  # a short passage below shows it whole
        lo, hi = excerpt(text, *span)
        ctx = markup(text[lo:hi], [(span[0] - lo, span[1] - lo, "<mark>", "</mark>")])
        line += f'<div class="ctx">{"…" if lo else ""}{ctx}{"…" if hi < len(text) else ""}</div>'
    elif span is None and text is not None and words:
        line += '<div class="note">not at its offsets in this text: the document has changed since the job</div>'
    return f"<li>{line}</li>"


def _card(k: int, row: dict, text: str | None) -> str:
    answers = ranked_answers(row)
    items = "".join(_answer_item(k, j, a, text) for j, a in enumerate(answers))
    question = row.get("question")
    head = (f'<h2><a href="#r{k}">{escape(row.get("id"))}</a></h2>'
            f'<p class="q"><b>Q</b> {escape(question) if question else "(no question)"}</p>')
    if text is None:
        passage = '<p class="note">The document\'s text was not found (pass --text with the inputs of the job).</p>'
    else:
        marks = []
        for j, a in enumerate(answers):
            span = _where(text, a)
            if span:
                rank = "r1" if j == 0 else "rn"
                tip = escape(f"answer {j + 1}, score {score_text(a.get('score'))}")
                marks.append((*span, f'<mark id="r{k}a{j}" class="{rank}" title="{tip}">',
                              f'</mark><sup class="rank">{j + 1} · {score_text(a.get("score"))}</sup>'))
        passage = f'<div class="box passage" id="r{k}doc">{markup(text, marks)}</div>'
    return f'<section class="card" id="r{k}">{head}<ol class="answers">{items}</ol>{passage}</section>'


def qa_page(rows: list[dict], texts: dict[str, str | None], *, title: str, subtitle: str, footer: str = "") -> str:
    """The page of `lfcli qa` rows over their documents' `texts` (id -> text)."""
    cards: list[Any] = []
    for k, row in enumerate(rows):
        if row.get("error"):
            cards.append(error_card(f"r{k}", row.get("id"), row["error"]))
        else:
            cards.append(_card(k, row, texts.get(str(row.get("id")))))
    body = doc_index([r.get("id") for r in rows]) + "\n".join(cards)
    return frame(title, subtitle, body, css=CSS, footer=footer)
