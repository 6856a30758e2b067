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


class GreedyTokens:
    """Longest-match tokenization over a tokenizer's non-special vocabulary (first id of each
    byte string), for documents the tokenizer's own encoding does not spell byte for byte."""

    def __init__(self, info, who: str = ""):
        special = set(info.special_token_ids)
        self.who = who
        self.by_bytes = {}
        for tid, b in enumerate(info.decoded_vocab):
            if b and tid not in special:
                self.by_bytes.setdefault(b, tid)
        self.longest = max(len(b) for b in self.by_bytes)

    def ids(self, data: bytes):
        out, pos = [], 0
        while pos < len(data):
            for n in range(min(self.longest, len(data) - pos), 0, -1):
                tid = self.by_bytes.get(data[pos:pos + n])
                if tid is not None:
                    out.append(tid)
                    pos += n
                    break
            else:
                prefix = f"{self.who}: " if self.who else ""
                raise AssertionError(f"{prefix}no token for byte {data[pos]:#x}")
        return out


def walk_equals_reference(matcher, ids, vocab_size: int) -> None:
    """Feed ``ids`` to ``matcher``; before each token the mask must equal the slow reference
    and allow that token; the matcher must end terminated (``ids`` ends with a stop token)."""
    import xmask

    fast = np.asarray(xmask.allocate_token_bitmask(1, vocab_size))
    ref = np.asarray(xmask.allocate_token_bitmask(1, vocab_size))
    for k, tid in enumerate(ids):
        matcher.fill_next_token_bitmask(fast)
        matcher._reference_fill_next_token_bitmask(ref)
        assert np.array_equal(fast, ref), f"step {k}: ids {diff_ids(fast, ref)[:10]}"
        assert bit(fast, tid), f"step {k}: token {tid} masked"
        assert matcher.accept_token(tid)
    assert matcher.is_terminated()


def cache_entries(compiled):
    """{state: (kind, data bytes, uncertain bytes)} of every classified state of a compiled
    grammar's token-mask cache (its export)."""
    snap = compiled._mask_cache.export()
    out = {}
    for s in np.nonzero(snap["state_entry"] >= 0)[0].tolist():
        k = int(snap["state_entry"][s])
        lo, n = int(snap["entry_off"][k]), int(snap["entry_len"][k])
        ulo, un = int(snap["unc_off"][k]), int(snap["unc_len"][k])
        out[s] = (int(snap["entry_kind"][k]), snap["data"][lo:lo + n].tobytes(),
                  snap["unc"][ulo:ulo + un].tobytes())
    return out
