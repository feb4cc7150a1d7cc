"""The corefs page: each document's text with every chain's mentions in the chain's look (a
colour, and past the first 24 chains an underline; chains that meet in the text never share
a look, see chain_looks), beside a list of its chains by title and mention count (biggest first,
named or not; a chain with no name gets a title all the same, "I (narrator)", "the captain",
see chain_titles), which a box above it filters by title; hovering a chain (in the list or on a
mention) or clicking it highlights that chain alone, and clicking its name again steps to its
next mention. Quotes are shaded; hovering one names its speaker and highlights the speaker's
chain.

A whole novel is 700 KB of text and 20,000 mentions, more spans than a page should build at
once. So the text goes in as plain escaped text cut into sections of about SECTION_CHARS
characters at line breaks, and the mentions as compact JSON, per section a flat list
[start, end, chain, ...] in the browser's string units (UTF-16, relative to the section). A
script paints a section's mentions when it comes near the screen (IntersectionObserver), so
the page opens as fast as plain text and scrolling paints only what is seen.
"""

from __future__ import annotations

import bisect
from typing import Any

from .chain_titles import biggest_first, chain_name
from .page import chain_colour, doc_index, dom_text, error_card, escape, frame

SECTION_CHARS = 6000
# Chain looks (chain_looks): colours from page.chain_colour, each plain or with one of three
# underlines (on the swatch in the list too); mentions this close count as neighbours.
N_COLOURS = 24
UNDERLINES = ("", ";border-bottom:2px solid #1d2127", ";border-bottom:2px dashed #1d2127",
              ";border-bottom:2px dotted #1d2127")
NEAR_CHARS = 400
CSS = """
.cdoc .cols{display:grid;grid-template-columns:minmax(12em,17em) 1fr;gap:18px;align-items:start}
.chains{position:sticky;top:8px;max-height:calc(100vh - 16px);overflow:auto;font-size:13px;border-right:1px solid var(--line);padding-right:8px}
.chains .head{position:sticky;top:0;background:var(--paper);padding:0 0 6px}
.chains input{width:100%;margin-top:4px;font:inherit;padding:2px 6px;border:1px solid var(--line);border-radius:4px}
.chains ol{list-style:none;margin:0;padding:0}
.chains li{display:flex;gap:6px;align-items:center;padding:1px 6px;border-radius:4px;cursor:pointer}
.chains li:hover{background:#eef2f7}
.sw{width:12px;height:12px;border-radius:3px;flex:none;border:1px solid rgba(0,0,0,.15)}
.nm{flex:1;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.ct{color:var(--dim);font-variant-numeric:tabular-nums}
.m{border-radius:2px;cursor:pointer}
.q{background-image:linear-gradient(#f4ecd8,#f4ecd8);background-size:100% 35%;background-position:0 100%;background-repeat:no-repeat}
.q[data-c]{cursor:help}
.m .m{box-shadow:inset 0 -2px rgba(0,0,0,.3)}
"""

SCRIPT = r"""
(function () {
  const data = JSON.parse(document.getElementById('lfcli-data').textContent);
  const sections = data.sections, names = data.names, counts = data.counts;
  const painted = new Set();
  function paint(el) {  // wrap the section's mentions, nested as they nest in the text
    const k = +el.dataset.k;
    if (painted.has(k)) return;
    painted.add(k);
    const flat = sections[k];
    if (!flat.length) return;
    const text = el.textContent, frag = document.createDocumentFragment();
    const stack = [{node: frag, end: Infinity}];
    let pos = 0;
    const close = () => { const t = stack.pop(); t.node.append(text.slice(pos, t.end)); pos = t.end; };
    for (let i = 0; i < flat.length; i += 3) {
      const s = flat[i], c = flat[i + 2];
      while (stack.length > 1 && stack[stack.length - 1].end <= s) close();
      const top = stack[stack.length - 1];
      if (s > pos) { top.node.append(text.slice(pos, s)); pos = s; }
      const e = Math.min(flat[i + 1], top.end);  // a crossing mention is cut at its parent's end
      if (e <= s) continue;
      const span = document.createElement('span');
      if (c < 0) {  // a quote: -1 when its speaker is not known, else -2 - the speaker's chain
        span.className = 'q';
        span.title = c === -1 ? 'speaker not found' : 'said by ' + names[-2 - c];
        if (c !== -1) span.dataset.c = -2 - c;
      } else {
        span.className = 'm c' + c;
        span.title = names[c] + ' (' + counts[c] + ')';
      }
      top.node.append(span);
      stack.push({node: span, end: e});
    }
    while (stack.length > 1) close();
    frag.append(text.slice(pos));
    el.replaceChildren(frag);
  }
  const all = document.querySelectorAll('.sec');
  if ('IntersectionObserver' in window) {
    const io = new IntersectionObserver(function (entries) {
      for (const e of entries) if (e.isIntersecting) { paint(e.target); io.unobserve(e.target); }
    }, {rootMargin: '1500px 0px'});
    all.forEach(el => io.observe(el));
  } else {
    all.forEach(paint);
  }
  // highlighting one chain: the hovered one, else the clicked one
  const pick = document.createElement('style');
  document.head.append(pick);
  let chosen = null, hovered = null;
  function refresh() {
    const c = hovered !== null ? hovered : chosen;
    pick.textContent = c === null ? '' :
      '.picking .m:not(.c' + c + '){background:none!important;box-shadow:none;border-bottom-color:transparent!important}' +
      '.m.c' + c + '{box-shadow:0 0 0 2px #1d2127}li[data-c="' + c + '"]{background:#dfe7f7}';
    document.body.classList.toggle('picking', c !== null);
    document.body.dataset.chain = c === null ? '' : c;
  }
  const places = {}, cursor = {};
  function where(c) {  // [section, how many mentions of c in it] for each section holding c
    if (places[c]) return places[c];
    const out = [];
    sections.forEach(function (flat, k) {
      let n = 0;
      for (let i = 2; i < flat.length; i += 3) if (flat[i] === c) n++;
      if (n) out.push([k, n]);
    });
    return places[c] = out;
  }
  function next(c) {  // scroll to chain c's next mention (the first after the last visited)
    const spots = where(c);
    const total = spots.reduce((a, s) => a + s[1], 0);
    if (!total) return;
    let i = cursor[c] === undefined ? 0 : (cursor[c] + 1) % total;
    cursor[c] = i;
    for (const [k, n] of spots) {
      if (i < n) {
        const el = document.querySelector('.sec[data-k="' + k + '"]');
        paint(el);
        const m = el.querySelectorAll('.m.c' + c)[i];
        (m || el).scrollIntoView({block: 'center'});
        return;
      }
      i -= n;
    }
  }
  const chainOf = el => { const m = el.closest && el.closest('.m, li[data-c], .q[data-c]'); return m ?
    +(m.dataset.c !== undefined ? m.dataset.c : m.className.match(/c(\d+)/)[1]) : null; };
  document.addEventListener('mouseover', function (ev) {
    const c = chainOf(ev.target);
    if (c !== hovered) { hovered = c; refresh(); }
  });
  document.addEventListener('click', function (ev) {
    const c = chainOf(ev.target);
    if (c === null) return;
    const inList = !!ev.target.closest('li[data-c]');
    chosen = inList || chosen !== c ? c : null;
    hovered = null;
    refresh();
    if (inList) next(c);
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape') { chosen = hovered = null; refresh(); }
  });
  document.querySelectorAll('.chains input').forEach(function (box) {
    box.addEventListener('input', function () {
      const q = box.value.trim().toLowerCase();  // matched against the chains' titles only
      box.closest('.chains').querySelectorAll('li').forEach(li => {
        li.hidden = !!q && !li.querySelector('.nm').textContent.toLowerCase().includes(q);
      });
    });
  });
  window.lfcliPaint = paint;
})();
"""


def section_bounds(text: str, size: int = SECTION_CHARS) -> list[tuple[int, int]]:
    """[start, end) of about `size` characters each, cut after a paragraph break, else a line
    break, else a space, found within `size` characters past the target; else a hard cut."""
    bounds, start, n = [], 0, len(text)
    while start < n:
        target = start + size
        end = n
        if target < n:
            for mark in ("\n\n", "\n", " "):
                cut = text.find(mark, target, target + size)
                if cut >= 0:
                    end = cut + 1
                    break
            else:
                end = target
        bounds.append((start, end))
        start = end
    return bounds


def _utf16(chunk: str) -> list[int] | None:
    """Code point index -> UTF-16 index over `chunk`, or None when they are the same."""
    if chunk.isascii() or max(chunk) <= "\uffff":
        return None
    index, total = [0], 0
    for ch in chunk:
        total += 2 if ord(ch) > 0xFFFF else 1
        index.append(total)
    return index


def _mention_spans(chains: list[dict], first: int, n: int) -> tuple[list[tuple[int, int, int]], int]:
    """(start, end, global chain) of every mention inside a text of `n` characters, and how
    many mentions lay outside it."""
    spans, outside = [], 0
    for rank, chain in enumerate(chains):
        for m in chain.get("mentions") or []:
            s, e = m.get("start"), m.get("end")
            if isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= n:
                spans.append((s, e, first + rank))
            else:
                outside += 1
    spans.sort(key=lambda t: (t[0], -t[1]))
    return spans, outside


def _quote_spans(row: dict, chains: list[dict], first: int, n: int) -> list[tuple[int, int, int]]:
    """(start, end, code) of the row's quotes inside a text of `n` characters: code -1 when the
    speaker is not known, else -2 - the speaker's global chain (`chains`: the page's order)."""
    rank = {id(chain): first + r for r, chain in enumerate(chains)}
    given = row.get("chains") or []
    out = []
    for q in row.get("quotes") or []:
        s, e, who = q.get("start"), q.get("end"), q.get("speaker")
        if isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= n:
            known = isinstance(who, int) and 0 <= who < len(given)
            out.append((s, e, -2 - rank[id(given[who])] if known else -1))
    return out


def _section_data(text: str, bounds: list[tuple[int, int]], spans: list[tuple[int, int, int]]) -> list[list[int]]:
    """Per section, the flat [start, end, chain, ...] of the mentions in it (a mention over
    a section's end is split there), in UTF-16 units from the section's start. A quote's
    "chain" is negative (_quote_spans)."""
    starts = [s for s, _ in bounds]
    flats: list[list[int]] = [[] for _ in bounds]
    units = [_utf16(text[s:e]) for s, e in bounds]
    for s, e, c in spans:
        k = bisect.bisect_right(starts, s) - 1
        while s < e and k < len(bounds):
            lo, hi = bounds[k]
            piece_end = min(e, hi)
            a, z = s - lo, piece_end - lo
            if units[k] is not None:
                a, z = units[k][a], units[k][z]
            flats[k].extend((a, z, c))
            s, k = piece_end, k + 1
    return flats


def chain_looks(n_chains: int, spans: list[tuple[int, int, int]], first: int = 0) -> list[tuple[int, int]]:
    """A look (colour, underline style) per chain, in rank order, so that chains whose mentions
    stand next to each other in the text never look the same. A novel has hundreds of chains
    and no palette tells hundreds of colours apart; what a reader compares is neighbours.
    Chains meet when two of their mentions follow each other (or nest) within NEAR_CHARS.
    Each chain in turn takes, of the looks no neighbour already has, preferring a colour no
    neighbour has, the least used one (the first ranks get distinct colours, plain)."""
    near: list[set[int]] = [set() for _ in range(n_chains)]
    for (s0, e0, c0), (s1, _, c1) in zip(spans, spans[1:]):
        a, b = c0 - first, c1 - first
        if a != b and s1 - e0 <= NEAR_CHARS:
            near[a].add(b)
            near[b].add(a)
    looks: list[tuple[int, int]] = []
    used = {(c, u): 0 for u in range(len(UNDERLINES)) for c in range(N_COLOURS)}
    order = sorted(used, key=lambda look: (look[1], look[0]))  # all colours plain first, then underlined
    for rank in range(n_chains):
        taken = {looks[j] for j in near[rank] if j < rank}
        colours = {c for c, _ in taken}
        free = [look for look in order if look not in taken] or order
        free = [look for look in free if look[0] not in colours] or free
        look = min(free, key=lambda lk: used[lk])  # min keeps the first of equals: order decides ties
        used[look] += 1
        looks.append(look)
    return looks


def _chain_list(chains: list[dict], titles: list[str], first: int) -> str:
    items = []
    for rank, (chain, title) in enumerate(zip(chains, titles)):
        g = first + rank
        items.append(f'<li data-c="{g}"><span class="sw c{g}"></span><span class="nm">{escape(title)}</span>'
                     f'<span class="ct">{len(chain.get("mentions") or [])}</span></li>')
    total = sum(len(c.get("mentions") or []) for c in chains)
    filter_box = '<input type="search" placeholder="find a chain" aria-label="find a chain">' if len(chains) > 12 else ""
    return (f'<aside class="chains"><div class="head"><b>{len(chains)} chains</b>, {total} mentions{filter_box}</div>'
            f'<ol>{"".join(items)}</ol></aside>')


def _mismatch_note(text: str, chains: list[dict]) -> str:
    checked = bad = 0
    for chain in chains:
        for m in chain.get("mentions") or []:
            s, e, said = m.get("start"), m.get("end"), m.get("text")
            if isinstance(s, int) and isinstance(e, int) and isinstance(said, str):
                checked += 1
                bad += text[s:e] != said
    if not bad:
        return ""
    return (f'<p class="note">{bad} of {checked} mentions do not match the text at their offsets: this is not '
            "the text the job read, so the highlights may be misplaced.</p>")


def _document(k: int, row: dict, text: str | None, first: int, out: dict) -> str:
    """One document's card; its sections' data, chain names and counts go to `out`."""
    # biggest first, named or not, each under a title a reader can use (chain_titles)
    chains = biggest_first(row.get("chains") or [])
    titles = [chain_name(chain, row.get("quotes")) for chain in chains]
    spans, outside = _mention_spans(chains, first, len(text) if text is not None else 0)
    for rank, (chain, (colour, underline)) in enumerate(zip(chains, chain_looks(len(chains), spans, first))):
        out["css"].append(f".c{first + rank}{{background-color:{chain_colour(colour)}{UNDERLINES[underline]}}}")
        out["counts"].append(len(chain.get("mentions") or []))
    out["names"].extend(titles)
    head = f'<h2><a href="#r{k}">{escape(row.get("id"))}</a></h2>'
    if text is None:
        return (f'<section class="card cdoc" id="r{k}">{head}<p class="note">The document\'s text was not found '
                f'(pass --text with the inputs of the job).</p>{_chain_list(chains, titles, first)}</section>')
    shown = dom_text(text)
    bounds = section_bounds(shown)
    base = len(out["sections"])
    quotes = _quote_spans(row, chains, first, len(text))
    painted = sorted(spans + quotes, key=lambda t: (t[0], -t[1], t[2] >= 0))  # a quote wraps what it holds
    out["sections"].extend(_section_data(shown, bounds, painted))
    notes = _mismatch_note(text, chains)
    if outside:
        notes += f'<p class="note">{outside} mentions lie outside the text and are not shown.</p>'
    if not chains:
        notes += '<p class="dim">No chains in this document.</p>'
    body = "".join(f'<div class="sec" data-k="{base + j}">{escape(shown[s:e])}</div>' for j, (s, e) in enumerate(bounds))
    return (f'<section class="card cdoc" id="r{k}">{head}{notes}<div class="cols">{_chain_list(chains, titles, first)}'
            f'<article class="passage">{body}</article></div></section>')


def coref_page(rows: list[dict], texts: dict[str, str | None], *, title: str, subtitle: str, footer: str = "") -> str:
    """The page of `lfcli corefs` rows over their documents' `texts` (id -> text)."""
    out: dict[str, list[Any]] = {"css": [], "names": [], "counts": [], "sections": []}
    cards = []
    for k, row in enumerate(rows):
        if row.get("error"):
            cards.append(error_card(f"r{k}", row.get("id"), row["error"]))
            continue
        cards.append(_document(k, row, texts.get(str(row.get("id"))), len(out["names"]), out))
    body = doc_index([r.get("id") for r in rows]) + "\n".join(cards)
    css = CSS + "\n".join(out["css"]) + "\n"
    data = {"sections": out["sections"], "names": out["names"], "counts": out["counts"]}
    return frame(title, subtitle, body, css=css, script=SCRIPT, data=data,
                 footer=footer)
