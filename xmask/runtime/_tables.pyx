"""Owners of a compiled grammar's flat arrays, exposing them to C as structs of pointers.

Each class takes NumPy arrays, copies them into C-contiguous arrays of the exact dtype (one
copy, at construction) and keeps them in ``arrays`` so introspection can read them zero-copy.
"""

import numpy as np

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, word_t, intp_t


cdef dict _own(dict arrays, dict dtypes):
    out = {}
    for name, dtype in dtypes.items():
        a = np.ascontiguousarray(arrays[name], dtype=dtype)
        if a.size == 0:  # keep a valid pointer for empty tables
            a = np.zeros(1, dtype=dtype)
            a.setflags(write=False)
            out[name] = (a, 0)
            continue
        a.setflags(write=False)
        out[name] = (a, a.size)
    return out


cdef const int32_t* _i32(tuple entry):
    cdef const int32_t[::1] v = entry[0]
    return &v[0]


cdef const int64_t* _i64(tuple entry):
    cdef const int64_t[::1] v = entry[0]
    return &v[0]


cdef const uint8_t* _u8(tuple entry):
    cdef const uint8_t[::1] v = entry[0]
    return &v[0]


cdef const word_t* _words(tuple entry):
    cdef const word_t[::1] v = entry[0]
    return &v[0]


cdef class AutomatonTables:
    """Flat automaton arrays (see ``xmask.compiler.automaton``) as an ``AutomatonC``."""

    def __init__(self, automaton):
        own = _own(
            {k: getattr(automaton, k) for k in
             ("byte_class", "trans", "flags", "call_offsets", "call_target", "call_ret")},
            {"byte_class": np.uint8, "trans": np.int32, "flags": np.uint8,
             "call_offsets": np.int32, "call_target": np.int32, "call_ret": np.int32},
        )
        if own["byte_class"][1] != 256:
            raise ValueError("byte_class must have 256 entries")
        self.c.n_states = automaton.n_states
        self.c.n_classes = automaton.n_classes
        self.c.root_start = automaton.root_start
        if own["trans"][1] != self.c.n_states * self.c.n_classes:
            raise ValueError("transition table has the wrong size")
        if own["call_offsets"][1] != self.c.n_states + 1:
            raise ValueError("call_offsets has the wrong size")
        self.c.byte_class = _u8(own["byte_class"])
        self.c.trans = _i32(own["trans"])
        self.c.flags = _u8(own["flags"])
        self.c.call_offsets = _i32(own["call_offsets"])
        self.c.call_target = _i32(own["call_target"])
        self.c.call_ret = _i32(own["call_ret"])
        self.arrays = {k: v[0] for k, v in own.items()}

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self.arrays.values())


cdef class VocabTables:
    """Byte-sorted vocabulary with common-prefix lengths, as a ``VocabC``."""

    def __init__(self, vocab_size, n_sorted, max_token_len, dict arrays):
        own = _own(arrays, {"sorted_ids": np.int32, "tok_offsets": np.int64, "tok_bytes": np.uint8,
                            "lcp": np.int32, "id_pos": np.int32, "eligible": np.uint32})
        self.c.vocab_size = vocab_size
        self.c.n_words = (vocab_size + 31) // 32
        self.c.n_sorted = n_sorted
        self.c.max_token_len = max_token_len
        if own["tok_offsets"][1] != n_sorted + 1 or own["id_pos"][1] != vocab_size:
            raise ValueError("vocabulary tables have inconsistent sizes")
        if own["eligible"][1] != self.c.n_words:
            raise ValueError("eligible bitset has the wrong size")
        self.c.sorted_ids = _i32(own["sorted_ids"])
        self.c.tok_offsets = _i64(own["tok_offsets"])
        self.c.tok_bytes = _u8(own["tok_bytes"])
        self.c.lcp = _i32(own["lcp"])
        self.c.id_pos = _i32(own["id_pos"])
        self.c.eligible = _words(own["eligible"])
        self.arrays = {k: v[0] for k, v in own.items()}

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self.arrays.values())

    @property
    def max_token_len(self):
        """Length in bytes of the longest grammar-eligible token."""
        return self.c.max_token_len

    @property
    def vocab_size(self):
        return self.c.vocab_size


cdef class MaskCacheTables:
    """The adaptive token-mask cache (per-state entries, deduplicated) as a ``MaskCacheC``."""

    def __init__(self, dict arrays):
        own = _own(arrays, {"state_entry": np.int32, "entry_kind": np.uint8, "entry_off": np.int64,
                            "entry_len": np.int64, "unc_off": np.int64, "unc_len": np.int64,
                            "data": np.int32, "unc": np.int32})
        self.c.state_entry = _i32(own["state_entry"])
        self.c.entry_kind = _u8(own["entry_kind"])
        self.c.entry_off = _i64(own["entry_off"])
        self.c.entry_len = _i64(own["entry_len"])
        self.c.unc_off = _i64(own["unc_off"])
        self.c.unc_len = _i64(own["unc_len"])
        self.c.data = _i32(own["data"])
        self.c.unc = _i32(own["unc"])
        self.arrays = {k: v[0] for k, v in own.items()}

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self.arrays.values())
