"""Bitmask helpers shared by the tests (bit i of a row = token i allowed).

Bitmasks may be NumPy arrays or torch tensors (``xmask.allocate_token_bitmask`` returns a
torch.int32 tensor when torch is installed); both are read through ``np.asarray``.
"""

import numpy as np


def bit(bitmask, token_id: int, row: int = 0) -> bool:
    """Whether ``token_id`` is allowed in ``row`` of an int32 bitmask."""
    return bool((int(bitmask[row, token_id >> 5]) >> (token_id & 31)) & 1)


def diff_ids(a, b, row: int = 0):
    """Token ids whose bits differ between row ``row`` of bitmasks ``a`` and ``b``."""
    x = np.bitwise_xor(np.asarray(a)[row].view(np.uint32), np.asarray(b)[row].view(np.uint32))
    return [int(w) * 32 + k for w in np.nonzero(x)[0] for k in range(32) if (int(x[w]) >> k) & 1]
