"""The qa page: per row its question, the answers best score first, each with its score, a
bar and the words around it, and a link down to the answer highlighted in the document's
passage (every answer marked there with its rank and score). No script: links and marks."""

from __future__ import annotations

import math
from typing import Any

from .page import bar, doc_index, error_card, escape, excerpt, frame, markup, score_text

SHORT_TEXT = 600  # characters: below this, no excerpt beside each answer
INDEX_QUESTION = 70  # characters of a question shown in the page's index

CSS = """
.q{font-size:17px;margin:2px 0 10px}
.q a{color:inherit;text-decoration:none}
small.id{font:500 11.5px/1.2 system-ui,sans-serif;color:var(--dim);margin-left:4px}
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
    """The answer's span in `text` when its offsets hold its words (an answer reads its span
    with each run of white space as one space)."""
    s, e = answer.get("start"), answer.get("end")
    if text is None or not (isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= len(text)):
        return None
    said = answer.get("answer")
    return (s, e) if said is None or " ".join(text[s:e].split()) == " ".join(said.split()) else None


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


def _marks(k: int, row: dict, text: str, asked: str) -> list[tuple[int, int, str, str]]:
    """Row k's answers marked in `text`, each with its rank and score (and `asked`, which
    question of the passage, where several share it)."""
    marks = []
    for j, a in enumerate(ranked_answers(row)):
        span = _where(text, a)
        if span:
            rank = "r1" if j == 0 else "rn"
            tip = escape(f"{asked}answer {j + 1}, score {score_text(a.get('score'))}")
            marks.append((*span, f'<mark id="r{k}a{j}" class="{rank}" title="{tip}">',
                          f'</mark><sup class="rank">{escape(asked)}{j + 1} · {score_text(a.get("score"))}</sup>'))
    return marks


def _card(k: int, row: dict, text: str | None, passage_rows: list[tuple[int, dict]] | None, owner: int) -> str:
    """Row k's card: its question and answers; the document's passage when this card shows it
    (`passage_rows`: every row asked of the same text, their answers all marked there), else a
    link to the card that does: a document is on the page once, however many questions it has."""
    answers = ranked_answers(row)
    items = "".join(_answer_item(k, j, a, text) for j, a in enumerate(answers))
    question = row.get("question")
    head = (f'<h2 class="q"><a href="#r{k}">{escape(question) if question else "(no question)"}</a> '
            f'<small class="id">{_row_name(row)}</small></h2>')
    if text is None:
        passage = '<p class="note">The document\'s text was not found (pass --text with the inputs of the job).</p>'
    elif passage_rows is None:
        passage = f'<p class="note">Its answers are marked in <a href="#r{owner}doc">the passage above</a>.</p>'
    else:
        several = len(passage_rows) > 1
        marks = [m for n, (k2, r2) in enumerate(passage_rows)
                 for m in _marks(k2, r2, text, f"Q{n + 1}: " if several else "")]
        passage = f'<div class="box passage" id="r{k}doc">{markup(text, marks)}</div>'
    return f'<section class="card" id="r{k}">{head}<ol class="answers">{items}</ol>{passage}</section>'


def _row_name(row: dict) -> str:
    """A row's id (and question_id, with several questions), escaped: small beside its question."""
    qid = row.get("question_id")
    return escape(row.get("id")) + (f" · {escape(qid)}" if qid is not None else "")


def _index_label(row: dict) -> str:
    """A row's link in the page's index: its question (shortened), its id small beside it."""
    question = str(row.get("question") or "")
    short = question if len(question) <= INDEX_QUESTION else question[: INDEX_QUESTION - 1].rstrip() + "…"
    return f'{escape(short) or "(no question)"} <small class="id">{_row_name(row)}</small>'


def qa_page(rows: list[dict], texts: dict[str, str | None], *, title: str, subtitle: str, footer: str = "") -> str:
    """The page of `lfcli qa` rows over their documents' `texts` (id -> text). Rows asked of
    the same text (several questions of one book) share one passage, in the first one's card."""
    owners: dict[str, int] = {}  # a text -> the card that shows it
    sharing: dict[int, list[tuple[int, dict]]] = {}
    for k, row in enumerate(rows):
        text = None if row.get("error") else texts.get(str(row.get("id")))
        if text is not None:
            sharing.setdefault(owners.setdefault(text, k), []).append((k, row))
    cards: list[Any] = []
    for k, row in enumerate(rows):
        if row.get("error"):
            cards.append(error_card(f"r{k}", row.get("id"), row["error"]))
            continue
        text = texts.get(str(row.get("id")))
        owner = owners.get(text, k) if text is not None else k
        cards.append(_card(k, row, text, sharing.get(k), owner))
    body = doc_index([r.get("id") for r in rows], labels=[_index_label(r) for r in rows]) + "\n".join(cards)
    return frame(title, subtitle, body, css=CSS, footer=footer)
