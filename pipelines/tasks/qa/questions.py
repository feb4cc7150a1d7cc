"""qa's questions as a job is given them: one `-q`, several `-q`, a `--questions` file (one
question a line, or JSONL records with `id` and `question`), or each record's own field.

One `-q` asks its question of every document, a row per document, as it always has. Several
questions (several `-q`, or a file) are asked of every document in turn: a row per document
and question, in that order, each row with its `question_id` (the file's `id`; else q1, q2,
... in the order given, -q's first). --resume then knows a row by its id and question_id.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import InputError, UsageError

READS = ("retrieve", "all")


def _read_file(path: str, first_number: int) -> list[tuple[str, str]]:
    """(id, question) pairs of a questions file: JSONL records with `question` (and `id`), or
    plain lines (blank lines skipped); unnamed questions are numbered on from `first_number`."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
        raise InputError(f"--questions {path}: cannot read the questions file ({reason})") from None
    out: list[tuple[str, str]] = []
    jsonl = any(line.lstrip().startswith("{") for line in lines if line.strip())
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if jsonl:
            try:
                record = json.loads(line)
            except ValueError:
                raise InputError(f"--questions {path}: line {number} is not a JSON object (a JSONL file has one a line)") from None
            if not isinstance(record, dict):
                raise InputError(f"--questions {path}: line {number} is not a JSON object")
            text, qid = record.get("question"), record.get("id")
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"--questions {path}: line {number} has no 'question' (a non-empty string)")
            qid = f"q{first_number + len(out)}" if qid is None else str(qid)
        else:
            text, qid = line.strip(), f"q{first_number + len(out)}"
        out.append((qid, text.strip()))
    if not out:
        raise InputError(f"--questions {path}: the file holds no question")
    return out


def _as_pairs(given, first_number: int) -> list[tuple[str, str]]:
    """The API's questions=[...]: strings, {id, question} dicts or (id, question) pairs."""
    out = []
    for k, q in enumerate(given):
        if isinstance(q, str):
            out.append((f"q{first_number + k}", q))
        elif isinstance(q, dict):
            out.append((str(q.get("id", f"q{first_number + k}")), q.get("question")))
        elif isinstance(q, (tuple, list)) and len(q) == 2:
            out.append((str(q[0]), q[1]))
        else:
            raise UsageError(f"questions: {q!r} is not a question (a string, an {{id, question}} dict or an (id, question) pair)")
    return out


def parse_questions(options: dict) -> dict:
    """The command line's (or the API's) -q/--question and --questions as the runner's:
    `question` (one question asked of every document, rows as one -q has always given) or
    `questions` ((id, question) pairs, several asked of every document), the other None.
    Empty questions are usage errors; a questions file that cannot be read, holds none or
    names one id twice, bad input."""
    options = dict(options)
    given, source = options.pop("question", None), options.pop("questions", None)
    if given is None:
        asked = []
    elif isinstance(given, str):
        asked = [given]
    else:
        asked = list(given)
    for q in asked:
        if not isinstance(q, str) or not q.strip():
            raise UsageError("--question is empty" if isinstance(q, str) or q is None else f"--question {q!r} is not text")
    if len(asked) == 1 and source is None:
        return {**options, "question": asked[0], "questions": None}
    pairs = [(f"q{k + 1}", q) for k, q in enumerate(asked)]
    if isinstance(source, (str, Path)):
        pairs += _read_file(str(source), len(pairs) + 1)
    elif source is not None:  # the API's list
        pairs += _as_pairs(source, len(pairs) + 1)
    for qid, q in pairs:
        if not isinstance(q, str) or not q.strip():
            raise UsageError(f"question {qid} is empty")
    seen: set[str] = set()
    for qid, _ in pairs:
        if qid in seen:
            raise InputError(f"question id {qid!r} is given twice: each question needs its own id")
        seen.add(qid)
    return {**options, "question": None, "questions": tuple(pairs) or None}


def asked_questions(options: dict) -> list[str] | None:
    """The questions asked of every document (None: each record's own)."""
    if options.get("questions"):
        return [q for _, q in options["questions"]]
    return None if options.get("question") is None else [options["question"]]


def row_key(options: dict) -> str | tuple[str, ...]:
    """The fields --resume knows a row by: id, and with several questions its question_id."""
    return ("id", "question_id") if options.get("questions") else "id"
