"""Where the rows of a caller's bitmask live, so the matcher writes into them with no copy.

A bitmask is a NumPy int32 array or a torch.int32 CPU tensor, 1-D (one row) or 2-D
``(rows, ceil(vocab_size / 32))``.  Only each row has to be contiguous: the row stride may be
larger than a row, which is what a 2-D view of a 3-D speculative-decoding buffer looks like
(``bitmask3d[i]`` or ``bitmask3d[:, j, :]``).  torch stays optional: it is never imported here,
a tensor is recognised by its type's module.

Example::

    >>> import numpy as np
    >>> buf = np.zeros((4, 3, 10), dtype=np.int32)
    >>> rows = bitmask_rows(buf[:, 1, :], 10)
    >>> rows.n_rows, rows.stride_words
    (4, 30)
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from ..errors import BitmaskError


class BitmaskRows(NamedTuple):
    """Row 0's address, the distance between rows in 32-bit words, the number of rows, and the
    object that owns the memory (kept referenced while the rows are written)."""

    address: int
    stride_words: int
    n_rows: int
    owner: object


def _check_shape(shape, n_words: int) -> None:
    if len(shape) not in (1, 2):
        raise BitmaskError(
            f"bitmask must be 1-D or 2-D, got shape {tuple(shape)} "
            "(for a 3-D speculative buffer pass a 2-D view such as bitmask[i] or bitmask[:, j])"
        )
    if shape[-1] != n_words:
        raise BitmaskError(
            f"bitmask has {shape[-1]} words per row, expected {n_words} "
            "(= ceil(vocab_size / 32); see get_bitmask_shape)"
        )


def _rows_from_strides(address, shape, strides_words, owner) -> BitmaskRows:
    # strides in elements; a row must be contiguous, rows may be spaced further apart.
    if len(shape) == 1:
        shape, strides_words = (1, shape[0]), (shape[0], strides_words[0])
    n_rows, n_words = shape
    if n_words > 1 and strides_words[1] != 1:
        raise BitmaskError("each bitmask row must be contiguous (element stride 1)")
    row_stride = strides_words[0] if n_rows > 1 else n_words
    if row_stride < n_words:
        raise BitmaskError(
            f"bitmask rows overlap or run backwards (row stride {row_stride} words, "
            f"row length {n_words})"
        )
    return BitmaskRows(address, row_stride, n_rows, owner)


def _numpy_rows(arr: np.ndarray, n_words: int) -> BitmaskRows:
    if arr.dtype != np.int32:  # also rejects non-native byte order
        raise BitmaskError(f"bitmask must have dtype int32, got {arr.dtype}")
    _check_shape(arr.shape, n_words)
    if not arr.flags.writeable:
        raise BitmaskError("bitmask is read-only")
    if any(s % 4 for s in arr.strides):
        raise BitmaskError("bitmask strides must be whole int32 elements")
    return _rows_from_strides(
        arr.__array_interface__["data"][0], arr.shape, [s // 4 for s in arr.strides], arr
    )


def _torch_rows(t, n_words: int) -> BitmaskRows:
    if str(t.dtype) != "torch.int32":
        raise BitmaskError(f"bitmask must have dtype torch.int32, got {t.dtype}")
    if t.device.type != "cpu":
        raise BitmaskError(
            f"bitmask is on {t.device}: fill it on the CPU (allocate_token_bitmask gives a CPU "
            "tensor), then copy it with .to(device)"
        )
    if str(t.layout) != "torch.strided":
        raise BitmaskError(f"bitmask must be a dense (strided) tensor, got layout {t.layout}")
    _check_shape(tuple(t.shape), n_words)
    return _rows_from_strides(t.data_ptr(), tuple(t.shape), t.stride(), t)


def bitmask_rows(bitmask, n_words: int) -> BitmaskRows:
    """Validate ``bitmask`` for rows of ``n_words`` words and locate its rows (no copy).

    Raises ``BitmaskError`` naming the problem: wrong type, dtype, row length, device, layout,
    read-only memory.
    """
    if isinstance(bitmask, np.ndarray):
        return _numpy_rows(bitmask, n_words)
    if type(bitmask).__module__.startswith("torch"):
        return _torch_rows(bitmask, n_words)
    raise BitmaskError(
        f"bitmask must be a numpy.ndarray or a torch.Tensor, got {type(bitmask).__name__}"
    )


def row_index(index) -> int:
    """A row index as a Python int: any integer (int, NumPy integer, 0-d integer tensor, via
    ``operator.index``), not a bool or float; BitmaskError otherwise."""
    if isinstance(index, bool) or "bool" in str(getattr(index, "dtype", "")):
        raise BitmaskError(f"bitmask row index must be an int, got {index!r}")
    try:
        return operator.index(index)
    except TypeError:
        raise BitmaskError(f"bitmask row index must be an int, got {index!r}") from None


def row_address(rows: BitmaskRows, index) -> int:
    """The address of row ``index``; BitmaskError if it is not an integer in range."""
    index = row_index(index)
    if not 0 <= index < rows.n_rows:
        raise BitmaskError(f"index {index} out of range for a bitmask of {rows.n_rows} rows")
    return rows.address + index * rows.stride_words * 4
