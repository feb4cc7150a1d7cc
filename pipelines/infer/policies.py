"""Which tokens get global attention (paper section 3.1: the task decides).

Each task's home names its default (classify and embed the first token, [CLS] / <s>; qa the
first token and every question token; corefs none). `--global` overrides with one of:
  none | cls | question | sentence-starts | paragraph-starts | regex:PATTERN
A policy turns one window into the list of its global positions.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..errors import UsageError
from .tokenize import Window

POLICIES = ("none", "cls", "question", "sentence-starts", "paragraph-starts", "regex:PATTERN")

# A sentence starts after ., ! or ? (optionally closed by quotes/brackets) and white space.
_SENTENCE_BREAK = re.compile(r"[.!?][\"')\]]*\s+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


def check_policy(policy: str) -> str:
    if policy in POLICIES[:-1]:
        return policy
    if policy.startswith("regex:"):
        try:
            re.compile(policy[len("regex:"):])
        except re.error as exc:
            raise UsageError(f"--global {policy!r}: not a valid regular expression ({exc})") from None
        return policy
    raise UsageError(f"--global {policy!r}: choose one of {', '.join(POLICIES)}")


@lru_cache(maxsize=64)
def _pattern(policy: str) -> re.Pattern:
    return {"sentence-starts": _SENTENCE_BREAK, "paragraph-starts": _PARAGRAPH_BREAK}.get(policy) or re.compile(
        policy[len("regex:"):]
    )


def global_positions(
    policy: str, window: Window, text: str, offsets: list[tuple[int, int]]
) -> list[int]:
    """Positions in `window.input_ids` that get global attention.

    offsets: the character span of every content token of the document (for the text-based
    policies). The first token counts as a sentence/paragraph start; regex marks every token
    that overlaps a match.
    """
    if policy == "none":
        return []
    if policy == "cls":
        return [0]
    if policy == "question":
        q0, q1 = window.question_span
        return [0, *range(q0, q1)]
    s, e = window.span
    if s == e:
        return [0]
    lo, hi = offsets[s][0], offsets[e - 1][1]
    if policy.startswith("regex:"):
        matches = [(m.start(), m.end()) for m in _pattern(policy).finditer(text, lo, hi) if m.end() > m.start()]
        positions = []
        j = 0
        for t in range(s, e):
            a, b = offsets[t]
            while j < len(matches) and matches[j][1] <= a:
                j += 1
            if j < len(matches) and matches[j][0] < b:
                positions.append(window.content_start + t - s)
        return positions
    # Character positions where a sentence/paragraph begins: the text start and every break end.
    starts = {0} | {m.end() for m in _pattern(policy).finditer(text, max(0, lo - 8), hi)}
    positions = [0]  # the first token too, so the window always has a summary token
    positions += [window.content_start + t - s for t in range(s, e) if offsets[t][0] in starts]
    return sorted(set(positions))
