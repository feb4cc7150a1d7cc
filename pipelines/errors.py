"""User-facing errors of the lfcli I/O layer.

Two kinds, each mapped to one exit code by the CLI:

* :class:`InputError` (exit code 1): the input (or the place the output goes)
  cannot be used: a missing or unreadable path, a corrupt Parquet file, a
  missing or non-string text column, an output folder that does not exist.
* :class:`UsageError` (exit code 2): the command was used the wrong way: an
  existing output without ``--force``/``--resume``, an unknown output
  extension, incompatible options.

Both carry a message of exactly one line (newlines in the given message are
folded into spaces), so the CLI can print ``error: <message>`` and exit.
Per-document problems are *not* exceptions: readers report them on the
:class:`~lfcli.pipelines.io.readers.Document` (``error`` field) and keep going.
"""

from __future__ import annotations

__all__ = ["LfcliError", "InputError", "UsageError", "one_line"]


def one_line(message: object) -> str:
    """Fold ``message`` into a single line (whitespace runs with newlines become one space)."""
    text = str(message)
    if "\n" in text or "\r" in text:
        text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return text


class LfcliError(Exception):
    """Base class of lfcli's user-facing errors; ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: object) -> None:
        super().__init__(one_line(message))

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class InputError(LfcliError):
    """Bad input (or unusable output location): exit code 1."""

    exit_code = 1


class UsageError(LfcliError):
    """Bad usage of the command (options, existing output, ...): exit code 2."""

    exit_code = 2
