"""Token bitmask helpers: int32 rows, token i allowed iff bit i % 32 of word i // 32 is set.

As in XGrammar, bitmasks are ``torch.int32`` tensors (what servers ``.to(device)``); torch is
optional, so without it they are NumPy int32 arrays, and every helper accepts both.
``bitmask_dtype`` is resolved on first access so that ``import xmask`` never imports torch.
"""

from __future__ import annotations


import numpy as np

from ._bitmask_rows import fill_disallowed, is_torch_bitmask, masked_rows, masked_widths
from .errors import BitmaskError

_BACKENDS = ("auto", "cpu", "cuda", "triton", "torch_compile", "torch_native")


def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def __getattr__(name: str):
    # PEP 562: ``xmask.bitmask.bitmask_dtype`` imports torch only when someone asks for it.
    if name == "bitmask_dtype":
        torch = _torch_or_none()
        return np.int32 if torch is None else torch.int32
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_bitmask_shape(batch_size: int, vocab_size: int):
    """Shape of a bitmask for ``batch_size`` rows over ``vocab_size`` tokens.

    Example::

        >>> get_bitmask_shape(2, 100)
        (2, 4)
    """
    if batch_size < 0 or vocab_size < 0:
        raise ValueError("batch_size and vocab_size must be non-negative")
    return (int(batch_size), (int(vocab_size) + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int):
    """A new bitmask with every token allowed, shape ``(batch, ceil(vocab/32))``.

    A ``torch.int32`` CPU tensor when torch is importable (as XGrammar), else a NumPy int32
    array.  Fill it with ``GrammarMatcher.fill_next_token_bitmask``.

    Example::

        >>> bitmask = allocate_token_bitmask(1, 64)
        >>> tuple(bitmask.shape), str(bitmask.dtype).replace("torch.", "")
        ((1, 2), 'int32')
    """
    shape = get_bitmask_shape(batch_size, vocab_size)
    torch = _torch_or_none()
    if torch is None:
        return np.full(shape, -1, dtype=np.int32)
    return torch.full(shape, -1, dtype=torch.int32)


def reset_token_bitmask(bitmask) -> None:
    """Allow every token again (fill with -1), in place; NumPy array or torch tensor.

    Example::

        >>> bitmask = allocate_token_bitmask(1, 64); bitmask[0, 0] = 0
        >>> reset_token_bitmask(bitmask); int(bitmask[0, 0])
        -1
    """
    if is_torch_bitmask(bitmask):
        bitmask.fill_(-1)
    else:
        bitmask.fill(-1)


def apply_token_bitmask_inplace(logits, bitmask, *, vocab_size=None, indices=None,
                                backend: str = "auto") -> None:
    """Set the logits of disallowed tokens to -inf, in place (XGrammar's semantics).

    ``logits``: (batch, V) or (V,), a torch tensor (float32/16, bfloat16, float64; any device,
    any strides) or a NumPy float array.  ``bitmask``: int32 (batch, ceil(V/32)) or one row,
    tensor or array; moved to the logits' device if needed.  ``vocab_size``: mask only
    ``logits[..., :vocab_size]`` and leave the rest alone.  By default padding is safe (a
    deliberate difference from XGrammar, which leaves them open): logits columns past the
    bitmask's ``32 * words`` (a padded model vocabulary) are set to -inf, and logits narrower
    than the bitmask by a whole word raise ``BitmaskError``.
    ``indices``: mask only these rows (logits row r with bitmask row r; the batch sizes may
    then differ).  ``backend``: ``"auto"`` picks the CPU path for CPU tensors and the
    torch-ops path elsewhere; ``"cpu"`` forces the former, any other XGrammar backend name the
    torch-ops path (xmask ships no custom GPU kernel).

    Example::

        >>> logits = np.zeros((1, 40), dtype=np.float32)
        >>> mask = np.full((1, 2), -1, np.int32); mask[0, 0] = 0b101
        >>> apply_token_bitmask_inplace(logits, mask); np.isfinite(logits[0, :4]).tolist()
        [True, False, True, False]
    """
    if backend not in _BACKENDS:
        raise BitmaskError(f"unknown backend {backend!r}; expected one of {_BACKENDS}")
    if type(logits).__module__.startswith("torch"):
        from ._bitmask_torch import apply_torch

        apply_torch(logits, bitmask, vocab_size, indices, backend)
        return
    _apply_numpy(logits, _as_numpy_bitmask(bitmask), vocab_size, indices)


def _as_numpy_bitmask(bitmask) -> np.ndarray:
    return bitmask.detach().cpu().numpy() if is_torch_bitmask(bitmask) else bitmask


def _apply_numpy(logits, bm: np.ndarray, vocab_size, indices) -> None:
    if not isinstance(logits, np.ndarray) or logits.dtype.kind != "f":
        raise BitmaskError(
            "logits must be a floating-point numpy array or torch tensor, got "
            + (str(logits.dtype) if isinstance(logits, np.ndarray) else type(logits).__name__)
        )
    rows_l = logits[None, :] if logits.ndim == 1 else logits
    bm2 = bm[None, :] if bm.ndim == 1 else bm
    if rows_l.ndim != 2 or bm2.ndim != 2:
        raise BitmaskError(
            f"logits and bitmask must be 1-D or 2-D, got {logits.shape} and {bm.shape}"
        )
    width, padded = masked_widths(rows_l.shape[1], bm2.shape[1], vocab_size)
    rows = masked_rows(indices, bm2.shape[0], rows_l.shape[0])
    if padded > width:  # logits columns past the bitmask: never left open
        rows_l[(slice(None) if rows is None else rows), width:padded] = -np.inf
    fill_disallowed(rows_l, bm2, width, rows, -np.inf)
