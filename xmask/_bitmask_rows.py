"""Checks and bit unpacking shared by the NumPy and torch bitmask paths (no torch import here).

A bitmask row is int32 words; token ``i`` is allowed iff bit ``i % 32`` of word ``i // 32`` is
set.  Both apply paths validate the same way and select the same rows, so the rules live here
once: the masked widths (see :func:`masked_widths`) and the masked rows (all, or ``indices``
that address logits and bitmask rows alike).
"""

from __future__ import annotations

import numpy as np

from .errors import BitmaskError
from .runtime._apply import can_fill, fill_rows


def is_torch_bitmask(bitmask) -> bool:
    """True for a torch.int32 tensor, False for a NumPy int32 array, else BitmaskError.

    torch is not imported: a tensor is recognised by its type's module.

    Example::

        >>> is_torch_bitmask(np.zeros((1, 2), np.int32))
        False
    """
    if isinstance(bitmask, np.ndarray):
        if bitmask.dtype != np.int32:
            raise BitmaskError(f"bitmask must have dtype int32, got {bitmask.dtype}")
        return False
    if type(bitmask).__module__.startswith("torch"):
        if str(bitmask.dtype) != "torch.int32":
            raise BitmaskError(f"bitmask must have dtype torch.int32, got {bitmask.dtype}")
        return True
    raise BitmaskError(
        f"bitmask must be a torch.Tensor or numpy.ndarray, got {type(bitmask).__name__}"
    )


def masked_widths(logits_width: int, bitmask_words: int, vocab_size) -> tuple:
    """``(width, padded)``: the bitmask decides logits columns ``[0, width)``, and columns
    ``[width, padded)`` are logits the bitmask does not cover, set to -inf.

    Without ``vocab_size`` (the default) padding is safe: logits wider than the bitmask's
    ``32 * words`` columns (a model's padded vocabulary) get their extra columns masked, never
    left open; logits narrower than the bitmask by a whole word or more (the bitmask was
    allocated for another vocabulary) raise.  An explicit ``vocab_size`` masks exactly
    ``logits[..., :vocab_size]`` and leaves the rest alone (XGrammar's meaning).

    Example::

        >>> masked_widths(200, 4, None), masked_widths(200, 7, None), masked_widths(200, 4, 100)
        ((128, 200), (200, 200), (100, 100))
    """
    covered = 32 * int(bitmask_words)
    logits_width = int(logits_width)
    if vocab_size is None:
        if logits_width <= covered - 32:
            raise BitmaskError(
                f"the logits have {logits_width} columns but the bitmask has {bitmask_words} "
                f"words ({covered} tokens): it was allocated for a larger vocabulary; allocate "
                f"it for the model's vocabulary or pass vocab_size={logits_width}"
            )
        width = min(logits_width, covered)
        return width, logits_width
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
        raise BitmaskError(f"vocab_size must be an int or None, got {vocab_size!r}")
    width = int(vocab_size)
    if width < 0:
        raise BitmaskError(f"vocab_size must be non-negative, got {width}")
    if width > logits_width or width > covered:
        raise BitmaskError(
            f"vocab_size {width} exceeds the logits width {logits_width} or the bitmask width "
            f"{covered} ({bitmask_words} words)"
        )
    return width, width


def masked_rows(indices, n_mask_rows: int, n_logit_rows: int):
    """The rows to mask as an int64 array, or None for "every row" (shapes must then agree).

    ``indices`` (any int sequence, NumPy array or CPU/GPU tensor) addresses logits row ``r``
    and bitmask row ``r`` alike, as in XGrammar.

    Example::

        >>> masked_rows([2, 0], 3, 4).tolist(), masked_rows(None, 2, 2)
        ([2, 0], None)
    """
    if indices is None:
        if n_mask_rows != n_logit_rows:
            raise BitmaskError(
                f"bitmask has {n_mask_rows} rows but logits have {n_logit_rows}; pass indices "
                "to say which rows to mask"
            )
        return None
    if hasattr(indices, "tolist") and not isinstance(indices, np.ndarray):
        indices = indices.tolist()  # a torch tensor, possibly on a GPU
    rows = np.asarray(indices)
    if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
        raise BitmaskError(f"indices must be a 1-D sequence of ints, got {indices!r}")
    rows = rows.astype(np.int64, copy=False)
    limit = min(n_mask_rows, n_logit_rows)
    bad = rows[(rows < 0) | (rows >= limit)]
    if bad.size:
        raise BitmaskError(
            f"index {int(bad[0])} out of range for {n_mask_rows} bitmask rows and "
            f"{n_logit_rows} logits rows"
        )
    return rows


def disallowed_bits(bitmask_rows: np.ndarray, width: int) -> np.ndarray:
    """(rows, words) int32 -> (rows, width) bool, True where the token is NOT allowed.

    Unpacks the complemented bytes with ``np.unpackbits`` (a table lookup per byte in C), so
    the result is exactly the ``masked_fill`` argument without a second pass to negate it.

    Example::

        >>> disallowed_bits(np.array([[0b101]], np.int32), 4).tolist()
        [[False, True, False, True]]
    """
    words = (width + 31) // 32
    little = np.ascontiguousarray(bitmask_rows[:, :words], dtype="<i4")
    packed = np.invert(little.view(np.uint8))
    return np.unpackbits(packed, axis=-1, count=width, bitorder="little").view(bool)


def fill_disallowed(rows_l: np.ndarray, bitmask_rows: np.ndarray, width: int, rows,
                    value) -> None:
    """``rows_l[r, :width] = value`` where bitmask row ``r`` disallows the token, for every row
    (``rows`` None) or the given rows; in place, whatever ``rows_l``'s strides.

    The compiled kernel (``xmask.runtime._apply``) skips all-allowed words and writes only the
    disallowed positions, single-threaded (no thread-pool hand-off, which on a busy machine
    costs torch's parallel ``masked_fill_`` milliseconds even for one row).  Layouts it does
    not take (strided columns, byte-swapped arrays) go through ``np.putmask``.

    Example::

        >>> logits = np.zeros((1, 4), np.float32)
        >>> fill_disallowed(logits, np.array([[0b101]], np.int32), 4, None, -np.inf)
        >>> logits.tolist()
        [[0.0, -inf, 0.0, -inf]]
    """
    if can_fill(rows_l, bitmask_rows):
        fill_rows(rows_l, bitmask_rows, width, rows, np.asarray(value, dtype=rows_l.dtype))
        return
    if rows is None:
        np.putmask(rows_l[:, :width], disallowed_bits(bitmask_rows, width), value)
        return
    part = rows_l[rows, :width]  # a copy (fancy index): fill it, then scatter it back
    np.putmask(part, disallowed_bits(bitmask_rows[rows], width), value)
    rows_l[rows, :width] = part
