"""One rule for comparing model outputs that are not promised to be bit-equal.

Two runs of the same model on the same documents give the same ids, order, labels, spans and
token counts, but their floats (scores, embeddings, answer scores) may differ in the last
bits whenever the two runs sum in another order: another engine (Ray's actor vs the local
process), another batch (other padding, other window grouping), another thread count or
another CPU's BLAS kernels (an AVX2 machine differs from an AVX-512 one by a few 1e-8).

`assert_rows_close` walks rows (dicts, lists, tuples, nested to any depth) and compares every
float leaf with a tolerance and every other leaf (ids, labels, offsets, errors, None)
exactly. Where bit-equality *is* promised (a resumed job, the same engine on the same batch,
a checkpoint's round trip) tests keep `==` / `torch.equal` instead.
"""

from __future__ import annotations

import math

# float32 carries ~7 significant digits; 1e-5 relative leaves ~100x room for sums taken in
# another order, and the absolute floor covers values near 0 (embedding components, small
# probabilities) whose relative error means nothing.
REL = 1e-5
ABS = 1e-6


def _plain(x):
    """Tensors and numpy arrays/scalars as Python lists/numbers; everything else unchanged."""
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
        return x.tolist()
    return x


def _label(i, item) -> str:
    if isinstance(item, dict) and "id" in item:
        return f"[{i} id={item['id']!r}]"
    return f"[{i}]"


def assert_rows_close(got, want, rel: float = REL, abs: float = ABS) -> float:  # noqa: A002 (pytest.approx's names)
    """Assert that `got` equals `want` up to float rounding: floats within
    `math.isclose(rel_tol=rel, abs_tol=abs)` (NaN equals NaN), everything else exactly and of
    the same type (dict keys, list lengths, strings, ints, bools, None; an int is not a
    float). Returns the largest float difference seen, for a test that wants to report it.
    The error names the first leaf that differs, e.g.
    `rows[3 id='f0-7']['scores']['law']: 0.41 != 0.4102 (difference ...)`."""
    worst = [0.0]

    def walk(a, b, where: str) -> None:
        a, b = _plain(a), _plain(b)
        if isinstance(a, dict) or isinstance(b, dict):
            assert isinstance(a, dict) and isinstance(b, dict), f"{where}: {a!r} != {b!r}"
            assert a.keys() == b.keys(), (
                f"{where}: keys differ: only in got {sorted(map(str, a.keys() - b.keys()))}, "
                f"only in want {sorted(map(str, b.keys() - a.keys()))}")
            for k in a:
                walk(a[k], b[k], f"{where}[{k!r}]")
        elif isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
            assert isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)), f"{where}: {a!r} != {b!r}"
            assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)} items"
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, where + _label(i, y))
        elif isinstance(a, float) and isinstance(b, float):
            if math.isnan(a) or math.isnan(b):
                assert math.isnan(a) and math.isnan(b), f"{where}: {a!r} != {b!r}"
                return
            assert math.isclose(a, b, rel_tol=rel, abs_tol=abs), (
                f"{where}: {a!r} != {b!r} (difference {a - b:.3g}; tolerance rel {rel:g}, abs {abs:g})")
            if math.isfinite(a) and math.isfinite(b):
                worst[0] = max(worst[0], math.fabs(a - b))
        else:
            assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"

    walk(got, want, "rows")
    return worst[0]
