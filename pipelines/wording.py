"""Wording of user-facing messages: counts with their nouns, and JSON parse errors.

Messages count things that are often one (one held-out article, one bad record), so a count
goes through `plural` instead of a hard-coded "s".
"""

from __future__ import annotations

import json


def plural(n: float, noun: str, nouns: str | None = None) -> str:
    """`n` and its noun: "1 document", "2 documents", "12,000 documents", "1.5 CPUs".
    `nouns` is the plural when it is not `noun` + "s" (plural(n, "query", "queries"))."""
    number = f"{n:,}" if isinstance(n, int) else f"{n:g}"
    return f"{number} {noun if n == 1 else nouns or noun + 's'}"


def json_error(exc: json.JSONDecodeError, where: str = "column") -> str:
    """json's message with the position (`where`: "column" or "line"), e.g. "Expecting value
    at column 3". Some of json's messages end in "at" ("Invalid control character '\\n' at",
    "Unterminated string starting at"), which would read "at at column 35"."""
    message = exc.msg[: -len(" at")] if exc.msg.endswith(" at") else exc.msg
    position = exc.lineno if where == "line" else exc.colno
    return f"{message} at {where} {position}"
