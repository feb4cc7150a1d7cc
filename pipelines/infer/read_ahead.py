"""Reading and tokenising ahead of the model, in a background thread.

On a GPU the model's work on a chunk of documents is short next to the host's work of reading
and tokenising the next one; done one after the other, the card waits for the host between
chunks. `read_ahead(items, depth)` iterates `items` (a generator whose every step reads and
tokenises a chunk) in a thread, at most `depth` steps ahead of the consumer, and hands them
over in their own order. The tokenizers' Rust code and torch's kernels release the GIL, so the
two overlap.

What the consumer sees is what plain iteration would give, in the same order: the same items,
and an exception raised by the iterator at the point where it was raised (after every item
before it). Closing the consumer early stops the thread at its next step.
"""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

_DONE = object()  # the iterator ran out


class _Raised:
    def __init__(self, exc: BaseException):
        self.exc = exc


def read_ahead(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """`items`, produced by a background thread at most `depth` items ahead."""
    handed: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(thing) -> bool:
        while not stop.is_set():
            try:
                handed.put(thing, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            put(_Raised(exc))

    worker = threading.Thread(target=produce, name="lfcli-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            thing = handed.get()
            if thing is _DONE:
                return
            if isinstance(thing, _Raised):
                raise thing.exc
            yield thing
    finally:
        stop.set()
        worker.join(timeout=5)
