"""Token bitmask helpers: int32 rows, token i allowed iff bit i % 32 of word i // 32 is set."""

from __future__ import annotations

import numpy as np

from .errors import BitmaskError


def get_bitmask_shape(batch_size: int, vocab_size: int):
    """Shape of a bitmask for ``batch_size`` rows over ``vocab_size`` tokens.

    Example::

        >>> get_bitmask_shape(2, 100)
        (2, 4)
    """
    if batch_size < 0 or vocab_size < 0:
        raise ValueError("batch_size and vocab_size must be non-negative")
    return (int(batch_size), (int(vocab_size) + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A new int32 bitmask (all tokens allowed) of shape ``(batch, ceil(vocab/32))``.

    Example::

        >>> allocate_token_bitmask(1, 64)
        array([[-1, -1]], dtype=int32)
    """
    return np.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=np.int32)


def _bits(bitmask: np.ndarray, width: int) -> np.ndarray:
    # (rows, words) int32 -> (rows, width) bool, little-endian bit order within each word
    as_u8 = np.ascontiguousarray(bitmask.astype("<i4", copy=False)).view(np.uint8)
    return np.unpackbits(as_u8, axis=-1, bitorder="little")[..., :width].astype(bool)


def apply_token_bitmask_inplace(logits, bitmask, indices=None, vocab_size=None):
    """Set the logits of disallowed tokens to -inf, in place.

    ``logits``: float array (batch, V) or (V,) — NumPy, or a torch tensor if torch is installed.
    ``bitmask``: int32 (batch, ceil(V/32)) (or one row).  ``indices``: which rows to mask (bitmask
    row ``i`` applies to logits row ``i``, as in XGrammar; default: every row).
    Positions at or beyond ``vocab_size`` (default ``min(V, 32 * words)``) are left untouched.

    Example::

        >>> logits = np.zeros((1, 40), dtype=np.float32)
        >>> mask = allocate_token_bitmask(1, 40); mask[0, 0] = 0b101
        >>> apply_token_bitmask_inplace(logits, mask); np.isfinite(logits[0, :4]).tolist()
        [True, False, True, False]
    """
    if type(logits).__module__.startswith("torch"):
        return _apply_torch(logits, bitmask, indices, vocab_size)
    if not isinstance(logits, np.ndarray) or logits.dtype.kind != "f":
        raise BitmaskError("logits must be a floating-point numpy array or torch tensor")
    bm = np.asarray(bitmask)
    if bm.dtype != np.int32:
        raise BitmaskError(f"bitmask must have dtype int32, got {bm.dtype}")
    rows_l = logits.reshape(1, -1) if logits.ndim == 1 else logits
    bm2 = bm.reshape(1, -1) if bm.ndim == 1 else bm
    if rows_l.ndim != 2 or bm2.ndim != 2:
        raise BitmaskError("logits and bitmask must be 1-D or 2-D")
    width = min(rows_l.shape[1], bm2.shape[1] * 32) if vocab_size is None else int(vocab_size)
    if width > rows_l.shape[1] or width > bm2.shape[1] * 32:
        raise BitmaskError(f"vocab_size {width} exceeds the logits or bitmask width")
    rows = _rows(indices, bm2.shape[0], rows_l.shape[0])
    allowed = _bits(bm2[rows], width)
    for k, r in enumerate(rows):
        row = rows_l[r, :width]
        row[~allowed[k]] = -np.inf


def _rows(indices, n_mask_rows: int, n_logit_rows: int):
    if indices is None:
        if n_mask_rows != n_logit_rows:
            raise BitmaskError(
                f"bitmask has {n_mask_rows} rows but logits have {n_logit_rows}; pass indices"
            )
        return list(range(n_mask_rows))
    rows = [int(i) for i in indices]
    for r in rows:
        if not (0 <= r < n_mask_rows and r < n_logit_rows):
            raise BitmaskError(
                f"index {r} out of range for {n_mask_rows} bitmask / {n_logit_rows} logits rows"
            )
    return rows


def _apply_torch(logits, bitmask, indices, vocab_size):
    import torch

    if bitmask.dtype != torch.int32:
        raise BitmaskError(f"bitmask must have dtype torch.int32, got {bitmask.dtype}")
    rows_l = logits.view(1, -1) if logits.dim() == 1 else logits
    bm2 = bitmask.view(1, -1) if bitmask.dim() == 1 else bitmask
    width = min(rows_l.shape[1], bm2.shape[1] * 32) if vocab_size is None else int(vocab_size)
    if width > rows_l.shape[1] or width > bm2.shape[1] * 32:
        raise BitmaskError(f"vocab_size {width} exceeds the logits or bitmask width")
    rows = _rows(indices, bm2.shape[0], rows_l.shape[0])
    shifts = torch.arange(32, device=bm2.device, dtype=torch.int32)
    bits = ((bm2[rows].unsqueeze(-1) >> shifts) & 1).view(len(rows), -1)[:, :width]
    bits = bits.to(rows_l.device).bool()
    for k, r in enumerate(rows):
        rows_l[r, :width].masked_fill_(~bits[k], float("-inf"))
