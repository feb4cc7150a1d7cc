"""Scene breaks: where the people a text names change completely (entities.scene_breaks).

A paragraph start is a scene break when the `width` positions before it and after it each name
at least `least` people and no name before can be a name after: no chain goes on across one
but by name (document.DocumentEntities).
"""

from __future__ import annotations

import bisect

from .entities import Name, names_compatible


def scene_breaks(named: list[tuple[int, Name]], candidates: list[int], width: int, least: int) -> list[int]:
    """Where the people change: the candidate positions (paragraph starts) with at least
    `least` different names in the `width` positions before and after, no name before
    compatible with a name after. A run of such candidates (the unnamed paragraphs between two
    casts) gives one break, its middle one. `named`: (position, name) in position order.

    Pronouns carry a chain through a paragraph break, and with nothing else to go on a "she" at
    the top of a new scene takes the last woman of the old one; across a scene break a chain
    goes on by name only (DocumentEntities)."""
    positions = [p for p, _ in named]

    def names_in(lo: int, hi: int) -> set[Name]:
        return {n for _, n in named[bisect.bisect_left(positions, lo):bisect.bisect_left(positions, hi)]}

    found: list[int] = []
    run: list[int] = []
    for p in candidates:
        before, after = names_in(p - width, p), names_in(p, p + width)
        apart = (len({n.words for n in before}) >= least and len({n.words for n in after}) >= least
                 and not any(names_compatible(a, b) for a in before for b in after))
        if apart and run and names_in(run[-1], p):  # a named mention between: a new run
            found.append(run[len(run) // 2])
            run = []
        if apart:
            run.append(p)
        elif run:
            found.append(run[len(run) // 2])
            run = []
    if run:
        found.append(run[len(run) // 2])
    return found
