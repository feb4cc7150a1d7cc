"""The tests' own rule for comparing model outputs across engines, batches and threads
(tests/tolerance.py): it forgives float rounding and nothing else."""

from __future__ import annotations

import pytest
from tolerance import assert_rows_close

ROW = {
    "id": "part-0.parquet:17",
    "label": "law",
    "score": 0.4123456,
    "scores": {"law": 0.4123456, "medicine": 0.5876544},
    "embedding": [0.25, -0.0000001, 0.75],
    "answers": [{"answer": "void", "start": 3, "end": 7, "score": 0.9}],
    "n_tokens": 250,
    "error": None,
}


def _with(path, value):
    """A deep copy of ROW with the leaf at `path` (a tuple of keys/indexes) replaced."""
    import copy

    row = copy.deepcopy(ROW)
    *parents, last = path
    node = row
    for key in parents:
        node = node[key]
    node[last] = value
    return row


@pytest.mark.parametrize("path", [("score",), ("scores", "law"), ("embedding", 0), ("answers", 0, "score")])
def test_a_rounding_difference_passes_and_a_real_one_fails(path):
    leaf = ROW
    for key in path:
        leaf = leaf[key]
    worst = assert_rows_close([_with(path, leaf + 3e-8)], [ROW])
    assert 0 < worst < 1e-7
    with pytest.raises(AssertionError, match="id='part-0.parquet:17'"):
        assert_rows_close([_with(path, leaf + 1e-3)], [ROW])


@pytest.mark.parametrize("path, value", [
    (("id",), "part-0.parquet:18"), (("label",), "medicine"), (("n_tokens",), 251), (("error",), "empty document"),
    (("answers", 0, "start"), 4), (("answers", 0, "answer"), "voi"), (("score",), None), (("n_tokens",), 250.0),
])
def test_everything_but_floats_is_exact(path, value):
    with pytest.raises(AssertionError):
        assert_rows_close([_with(path, value)], [ROW])


def test_shapes_must_match():
    with pytest.raises(AssertionError, match="keys differ"):
        assert_rows_close({**ROW, "extra": 1}, ROW)
    with pytest.raises(AssertionError, match="2 items != 3 items"):
        assert_rows_close(_with(("embedding",), [0.25, 0.0]), ROW)
    with pytest.raises(AssertionError, match="1 items != 2 items"):
        assert_rows_close([ROW], [ROW, ROW])


def test_near_zero_nan_and_tensors():
    assert_rows_close({"v": 1e-9}, {"v": -1e-9})  # the absolute floor: components near 0
    with pytest.raises(AssertionError):
        assert_rows_close({"v": 2e-9}, {"v": 1e-9}, abs=0)  # without the floor, relative only
    assert_rows_close([float("nan")], [float("nan")])
    with pytest.raises(AssertionError):
        assert_rows_close([float("nan")], [0.0])
    torch = pytest.importorskip("torch")
    assert_rows_close(torch.tensor([0.5, 0.25]), [0.5, 0.25 + 1e-8])
    with pytest.raises(AssertionError):
        assert_rows_close(torch.tensor([0.5, 0.25]), [0.5, 0.26])
