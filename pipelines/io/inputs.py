"""What every reader shares (readers.py, jsonl_reader.py, parquet_reader.py, and the Ray
engine through them): ReadOptions, iter_documents' options; UTF-8 decoding and the check that
turns a record's bad text value into a one-line error; id_str, a record's id as rows carry it
(the writers compare --resume ids with it too)."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass

from ..errors import UsageError

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ReadOptions:
    """How iter_documents reads (its keyword options); the Ray engine reads Parquet with the same."""

    text_column: str
    id_column: str | None
    glob: str | None
    encoding_errors: str
    fields: tuple[str, ...]
    input_format: str
    empty_ok: bool = False  # an empty document is a document with no text, not an error (corefs: no chains)
    encoding: str = "utf-8"  # a text file's: utf-8, auto (detected where not UTF-8), or a codec's name

    @property
    def id_key(self) -> str:
        return self.id_column if self.id_column is not None else "id"


ENCODING_HINT = ("not UTF-8? --encoding auto detects the encoding, --encoding cp1252 (or another) names it, "
                 "--encoding-errors replace reads it with U+FFFD for the bad bytes")


def check_encoding(encoding: str) -> None:
    """Refuse an --encoding Python has no codec for (a UsageError, before anything is read)."""
    if encoding != "auto":
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise UsageError(f"--encoding {encoding!r}: no such encoding (auto, utf-8, cp1252, latin-1, utf-16, ...)") from None


def decode_text(data: bytes, label: str, errors: str, encoding: str = "utf-8") -> tuple[str | None, str | None]:
    """A text file's bytes in `encoding` ("auto": UTF-8 where they are UTF-8, else the encoding
    charset-normalizer finds most likely); ``(text, None)`` or ``(None, one-line error)``."""
    if encoding == "auto":
        text, error = decode(data, label, "strict")
        if error is None:
            return text, None
        return _detected(data, label)
    if codecs.lookup(encoding).name == "utf-8":
        text, error = decode(data, label, errors)
        return text, None if error is None else f"{error}; {ENCODING_HINT}"
    try:
        return data.decode(encoding, errors), None
    except UnicodeDecodeError as exc:
        return None, f"{label}: invalid {encoding} at byte offset {exc.start}; --encoding auto detects the encoding"


WESTERN = "cp1252"  # Windows' Western European code page: the commonest text that is not UTF-8
CHAOS_MARGIN = 0.02  # how much more mess (charset-normalizer's chaos) cp1252 may read as and still win


def _detected(data: bytes, label: str) -> tuple[str | None, str | None]:
    """`data` (not UTF-8) in the encoding charset-normalizer finds most likely; where cp1252
    reads it as cleanly, cp1252: on a short text the library cannot tell the Windows code
    pages apart ("fièvre" came out as cp1250's "fičvre"), and cp1252 is by far the commonest of
    them. A Cyrillic or Polish text, which cp1252 reads as a mess, keeps the library's choice."""
    from charset_normalizer import from_bytes  # lazy: only for a text that is not UTF-8

    best = from_bytes(data).best()
    if best is None:
        return None, f"{label}: its encoding could not be detected (not UTF-8); name it with --encoding NAME"
    western = from_bytes(data, cp_isolation=[WESTERN]).best()
    if western is not None and western.chaos <= best.chaos + CHAOS_MARGIN:
        return str(western), None
    return str(best), None


def decode(data: bytes, label: str, errors: str, where: str = "") -> tuple[str | None, str | None]:
    """Decode UTF-8 ``data``; return ``(text, None)`` or ``(None, one-line error)``."""
    skip = 0
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
        skip = len(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        if errors == "replace":
            return data.decode("utf-8", "replace"), None
        bad = data[exc.start]
        return None, f"{label}: {where}invalid UTF-8 at byte offset {exc.start + skip} (byte 0x{bad:02x})"


def is_blank(text: str) -> bool:
    return not text or text.isspace()


def id_str(value) -> str:
    """A record's id as the text rows carry (the writers compare --resume ids the same way)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    return f"a {type(value).__name__}"


def check_text(value, label: str, where: str, opts: ReadOptions) -> tuple[str | None, str | None]:
    """Validate a record's text value; return ``(text, None)`` or ``(None, error)``."""
    col = opts.text_column
    if value is None:
        return None, f"{label}: {where}'{col}' is null"
    if isinstance(value, (bytes, bytearray)):
        text, error = decode(bytes(value), label, opts.encoding_errors, f"{where}'{col}': ")
        if error is not None:
            return None, error
        value = text
    if not isinstance(value, str):
        return None, f"{label}: {where}'{col}' is {type_name(value)}, not a string"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate from a JSON \ud800 escape
        if opts.encoding_errors == "replace":
            value = _SURROGATE.sub("\ufffd", value)
        else:
            return None, f"{label}: {where}'{col}' has an unpaired surrogate at character {exc.start} (not valid Unicode)"
    if is_blank(value) and not opts.empty_ok:
        return None, f"{label}: {where}empty document"
    return value, None
