"""Owners of a compiled grammar's flat arrays, exposing them to C as structs of pointers.

Each class takes NumPy arrays, copies them into C-contiguous arrays of the exact dtype (one
copy, at construction) and keeps them in ``arrays`` so introspection can read them zero-copy.
"""

from libc.stdlib cimport calloc, free
from libc.string cimport memset
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer

import numpy as np

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint64_t, word_t, intp_t, XM_FLAG_FINAL


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


cdef const void* _data(tuple entry, Py_ssize_t itemsize) except NULL:
    # The data pointer of an array _own made (C-contiguous, its exact dtype, kept alive in the
    # owner's ``arrays``), read through the buffer protocol: a typed memoryview per array cost
    # ~0.2 us, and a compile takes ten.
    cdef Py_buffer buf
    cdef const void* p
    PyObject_GetBuffer(entry[0], &buf, PyBUF_C_CONTIGUOUS)
    p = buf.buf
    if buf.itemsize != itemsize:
        PyBuffer_Release(&buf)
        raise TypeError("array of the wrong item size")
    PyBuffer_Release(&buf)
    return p


cdef inline const int32_t* _i32(tuple entry) except NULL:
    return <const int32_t*>_data(entry, sizeof(int32_t))


cdef inline const int64_t* _i64(tuple entry) except NULL:
    return <const int64_t*>_data(entry, sizeof(int64_t))


cdef inline const uint8_t* _u8(tuple entry) except NULL:
    return <const uint8_t*>_data(entry, sizeof(uint8_t))


cdef inline const word_t* _words(tuple entry) except NULL:
    return <const word_t*>_data(entry, sizeof(word_t))


cdef int _check_token_edges(const int32_t[::1] set_of, const int32_t[::1] target, intp_t n,
                            intp_t n_sets) except -1:
    # C passes (deserialized automata are untrusted; for a compile's arrays this costs well
    # under a microsecond, where the NumPy form cost ~5)
    cdef intp_t s
    cdef bint bad = False
    with nogil:
        for s in range(set_of.shape[0]):
            if set_of[s] >= n_sets or set_of[s] < -1:
                bad = True
                break
    if bad:
        raise ValueError("token_set_of names a token set that does not exist")
    if n:
        with nogil:
            for s in range(target.shape[0]):
                if (set_of[s] >= 0 and target[s] < 0) or target[s] >= n:
                    bad = True
                    break
        if bad:
            raise ValueError("a token edge has no valid target state")
    return 0


cdef bint _any_nonnegative(const int64_t[::1] v) noexcept:
    # a C loop: most grammars have no budget, and NumPy's form of this test cost ~2 us a compile
    cdef intp_t i
    for i in range(v.shape[0]):
        if v[i] >= 0:
            return True
    return False


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
        self._set_token_edges(automaton)
        self._set_budgets(automaton)
        self._stub_hit = 0
        self.c.stub_hit = &self._stub_hit if getattr(automaton, "has_stubs", False) else NULL

    cdef int _set_budgets(self, automaton) except -1:
        # Per call edge, the token budget of the callee rule (NULL: the grammar has none).
        self.c.call_budget = NULL
        self.c.min_call_budget = 0x7FFFFFFF
        budget = getattr(automaton, "rule_budget", None)
        if budget is None or not _any_nonnegative(np.ascontiguousarray(budget, dtype=np.int64)):
            return 0
        starts = np.asarray(automaton.rule_start, dtype=np.intp)
        rule_of = np.full(self.c.n_states, -1, dtype=np.intp)
        rule_of[starts] = np.arange(len(starts))
        target = np.asarray(self.arrays["call_target"], dtype=np.intp)
        if (rule_of[target] < 0).any():
            raise ValueError("a call target is not the start of a rule")
        own = _own({"call_budget": np.asarray(budget, dtype=np.int32)[rule_of[target]]},
                   {"call_budget": np.int32})
        self.arrays["call_budget"] = own["call_budget"][0]
        cb = own["call_budget"][0]
        if own["call_budget"][1]:
            if ((cb >= 0) & (np.asarray(self.arrays["call_ret"]) < 0)).any():
                raise ValueError("a budgeted rule is tail-called")
            self.c.call_budget = _i32(own["call_budget"])
            if (cb >= 0).any():
                self.c.min_call_budget = int(cb[cb >= 0].min())
        return 0

    cdef int _set_token_edges(self, automaton) except -1:
        # Automata built without token sets (tests, older builders) get empty token tables.
        n = self.c.n_states
        set_of = getattr(automaton, "token_set_of", None)
        target = getattr(automaton, "token_target", None)
        bits = getattr(automaton, "token_bits", None)
        if set_of is None:
            set_of = np.full(n, -1, dtype=np.int32)
            target = np.full(n, -1, dtype=np.int32)
        if bits is None:
            bits = np.zeros((0, 0), dtype=np.uint32)
        bits = np.ascontiguousarray(bits, dtype=np.uint32)
        if bits.ndim != 2:
            raise ValueError("token_bits must be 2-D")
        n_sets = bits.shape[0]
        any_bits = np.bitwise_or.reduce(bits, axis=0) if n_sets else np.zeros(0, np.uint32)
        own = _own({"token_set_of": set_of, "token_target": target,
                    "token_bits": bits.reshape(-1),
                    "token_any": any_bits},
                   {"token_set_of": np.int32, "token_target": np.int32,
                    "token_bits": np.uint32, "token_any": np.uint32})
        if own["token_set_of"][1] != n or own["token_target"][1] != n:
            raise ValueError("token edge tables have the wrong size")
        _check_token_edges(own["token_set_of"][0], own["token_target"][0], n, n_sets)
        self.c.token_set_of = _i32(own["token_set_of"])
        self.c.token_target = _i32(own["token_target"])
        self.c.token_bits = _words(own["token_bits"])
        self.c.token_any = _words(own["token_any"])
        self.c.n_token_sets = n_sets
        self.c.token_words = bits.shape[1] if n_sets else 0
        for k, v in own.items():
            self.arrays[k] = v[0]
        return 0

    @property
    def n_token_sets(self):
        return self.c.n_token_sets

    @property
    def stub_hit(self):
        """Whether a walk on these tables wanted a byte from a stub state (``XM_FLAG_STUB``:
        a rule a lazy compile has not built yet); always False without stubs."""
        return self.c.stub_hit != NULL and self.c.stub_hit[0] != 0

    @property
    def token_words(self):
        return self.c.token_words

    cdef intp_t push_bound(self) except -1:
        # How many frames one byte can push at most (the closure after a byte follows call
        # edges without consuming input).  Used to know when a stack is close enough to the
        # recursion bound that cached accepted sets may be wrong.  Computed once, lazily.
        cdef intp_t b
        if self._push_bound_plus1 == 0:  # zero-initialized: not computed yet
            with nogil:
                b = _push_bound(&self.c)
            if b < 0:
                raise MemoryError()
            self._push_bound_plus1 = b + 1
        return self._push_bound_plus1 - 1

    @property
    def frames_per_byte_bound(self):
        """The most frames one byte can push (``push_bound``; ``1 << 30``: unbounded)."""
        return self.push_bound()

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self.arrays.values())


cdef intp_t _push_bound(const AutomatonC* a) noexcept nogil:
    # Longest weighted path over "zero-byte" edges: state -> callee start (weight 1 for a real
    # call, 0 for a tail call) and state -> return state when the callee can finish without
    # input (weight 0).  Without left recursion there is no positive cycle; if one shows up
    # anyway the bound is "unbounded" (1 << 30), which only makes the matcher check every
    # token exactly near the recursion bound.  -1 on allocation failure.
    # Only states with calls can differ from their start values (nullable = final, path 0),
    # so both fixpoints iterate over those alone: most states read bytes only, and sweeping
    # every state each round was ~1.5% of a schema's time to first mask.
    cdef intp_t n = a.n_states, s, i, k, rounds, best, v, nc = 0
    cdef int32_t t, r
    cdef bint changed = True
    cdef uint8_t* nul = <uint8_t*>calloc(max(n, 1), 1)
    cdef intp_t* g = <intp_t*>calloc(max(n, 1), sizeof(intp_t))
    cdef intp_t* callers = <intp_t*>calloc(max(n, 1), sizeof(intp_t))
    if nul == NULL or g == NULL or callers == NULL:
        free(nul)
        free(g)
        free(callers)
        return -1
    # the states with calls, descending (the order the relaxation always swept them in)
    for s in range(n - 1, -1, -1):
        if a.flags[s] & XM_FLAG_FINAL:
            nul[s] = 1
        if a.call_offsets[s] < a.call_offsets[s + 1]:
            callers[nc] = s
            nc += 1
    # nullable states: least fixpoint
    while changed:
        changed = False
        for i in range(nc):
            s = callers[i]
            if nul[s]:
                continue
            for k in range(a.call_offsets[s], a.call_offsets[s + 1]):
                t = a.call_target[k]
                r = a.call_ret[k]
                if nul[t] and (r < 0 or nul[r]):
                    nul[s] = 1
                    changed = True
                    break
    # longest path by relaxation (a positive cycle never settles)
    changed = True
    rounds = 0
    while changed and rounds <= n + 1:
        changed = False
        rounds += 1
        for i in range(nc):
            s = callers[i]
            best = g[s]
            for k in range(a.call_offsets[s], a.call_offsets[s + 1]):
                t = a.call_target[k]
                r = a.call_ret[k]
                v = g[t] + (1 if r >= 0 else 0)
                if v > best:
                    best = v
                if r >= 0 and nul[t] and g[r] > best:
                    best = g[r]
            if best > g[s]:
                g[s] = best
                changed = True
    best = 0
    for i in range(nc):
        if g[callers[i]] > best:
            best = g[callers[i]]
    free(nul)
    free(g)
    free(callers)
    if changed:
        return <intp_t>1 << 30
    return best


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
        skip = np.empty(max(own["tok_bytes"][1], 1), dtype=np.int32)
        cdef int32_t[::1] sk = skip
        with nogil:
            _prefix_group_ends(&self.c, &sk[0])
        skip.setflags(write=False)
        self.arrays["skip"] = skip
        self.c.skip = &sk[0]
        self._split_plain()

    cdef int _split_plain(self) except -1:
        # Per first byte, the tokens a string-body shortcut can take whole vs the rest (see
        # VocabC): a token whose first byte can start plain text is "plain" if all of it is;
        # one whose first byte cannot (a quote, a backslash, ...) if everything after it is.
        cdef intp_t n = self.c.n_sorted, i, k, length, n_sc = 0, n_rest = 0
        cdef int64_t off, prev_off = 0, prev_len = 0
        cdef uint8_t b, u, prev_b = 0
        cdef bint took
        sc = np.empty(max(n, 1), dtype=np.int32)
        sig = np.zeros(max(n, 1), dtype=np.uint64)
        rest = np.empty(max(n, 1), dtype=np.int32)
        rest_lcp = np.zeros(max(n, 1), dtype=np.int32)
        offs = np.zeros((3, 257), dtype=np.int32)  # grp_off, sc_off, rest_off
        cdef int32_t[::1] sv = sc, rv = rest, lv = rest_lcp
        cdef uint64_t[::1] gv = sig
        cdef uint64_t bits
        cdef int64_t j
        cdef int32_t[:, ::1] ov = offs
        with nogil:
            for i in range(n):
                off = self.c.tok_offsets[i]
                length = self.c.tok_offsets[i + 1] - off
                b = self.c.tok_bytes[off]
                ov[0, b + 1] += 1
                u = PLAIN_UTF8[0][b]
                took = plain_from(0 if u == 255 else u, self.c.tok_bytes + off + 1, length - 1)
                if took:
                    bits = 0
                    for j in range(off + 1, off + length):
                        if self.c.tok_bytes[j] < 0x80:
                            bits |= (<uint64_t>1) << (self.c.tok_bytes[j] & 63)
                    gv[n_sc] = bits
                    sv[n_sc] = <int32_t>i
                    n_sc += 1
                    ov[1, b + 1] += 1
                    continue
                k = 0
                if n_rest > 0 and prev_b == b:
                    while (k < length and k < prev_len
                           and self.c.tok_bytes[prev_off + k] == self.c.tok_bytes[off + k]):
                        k += 1
                rv[n_rest] = <int32_t>i
                lv[n_rest] = <int32_t>k
                n_rest += 1
                ov[2, b + 1] += 1
                prev_off = off
                prev_len = length
                prev_b = b
        np.cumsum(offs, axis=1, out=offs)
        for name, arr, m in (("shortcut_pos", sc, n_sc), ("shortcut_sig", sig, n_sc),
                             ("rest_pos", rest, n_rest),
                             ("rest_lcp", rest_lcp, n_rest)):
            arr = np.ascontiguousarray(arr[:max(m, 1)])
            arr.setflags(write=False)
            self.arrays[name] = arr
        for row, name in enumerate(("group_off", "shortcut_off", "rest_off")):
            arr = np.ascontiguousarray(offs[row])
            arr.setflags(write=False)
            self.arrays[name] = arr
        self._plain_by_length(sc[:n_sc])
        cdef const uint64_t[::1] g1 = self.arrays["shortcut_sig"]
        cdef const int32_t[::1] p1 = self.arrays["shortcut_pos"]
        cdef const int32_t[::1] p2 = self.arrays["rest_pos"]
        cdef const int32_t[::1] p3 = self.arrays["rest_lcp"]
        cdef const int32_t[::1] o1 = self.arrays["group_off"]
        cdef const int32_t[::1] o2 = self.arrays["shortcut_off"]
        cdef const int32_t[::1] o3 = self.arrays["rest_off"]
        self.c.shortcut_pos = &p1[0]
        self.c.shortcut_sig = &g1[0]
        self.c.rest_pos = &p2[0]
        self.c.rest_lcp = &p3[0]
        self.c.group_off = &o1[0]
        self.c.shortcut_off = &o2[0]
        self.c.rest_off = &o3[0]
        return 0

    cdef int _plain_by_length(self, shortcut_pos) except -1:
        # The plain tokens (VocabC.plain_bits): a bounded string body with room for d more
        # bytes takes those of at most d bytes at once and walks only the longer ones, which
        # are few for most d (Llama-3: 1% are longer than 17 bytes): listed longest first.
        # Every token is listed the same way too (a derived entry walks those longer than the
        # length its state agrees with its neighbour on, _classify.classify_entry_from).
        pos = np.asarray(shortcut_pos, dtype=np.int64)
        offs = self.arrays["tok_offsets"]
        first = self.arrays["tok_bytes"][offs[pos]] if len(pos) else np.zeros(0, dtype=np.uint8)
        starts = np.array([plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE for b in range(256)])
        pos = pos[starts[first]] if len(pos) else pos
        ids = self.arrays["sorted_ids"][pos]
        bits = np.zeros(max(self.c.n_words, 1), dtype=np.uint32)
        np.bitwise_or.at(bits, ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))
        bits.setflags(write=False)
        self.arrays["plain_bits"] = bits
        cdef const word_t[::1] bv = self.arrays["plain_bits"]
        self.c.plain_bits = <const word_t*>&bv[0]
        self.c.n_plain_longest = self._longest_first("plain", pos)
        self.c.n_all_longest = self._longest_first("all", np.arange(self.c.n_sorted))
        cdef const int32_t[::1] lv = self.arrays["plain_longest"]
        cdef const int32_t[::1] cv = self.arrays["plain_longer"]
        cdef const int32_t[::1] la = self.arrays["all_longest"]
        cdef const int32_t[::1] ca = self.arrays["all_longer"]
        self.c.plain_longest = &lv[0]
        self.c.plain_longer = &cv[0]
        self.c.all_longest = &la[0]
        self.c.all_longer = &ca[0]
        return 0

    def _longest_first(self, prefix, pos):
        # arrays[prefix + "_longest"]: the longest n_sorted / 16 of the sorted positions `pos`,
        # longest first; arrays[prefix + "_longer"][d]: how many of `pos` are longer than d
        # bytes (d = 0 .. max_token_len + 1).  Returns how many are listed.
        offs = self.arrays["tok_offsets"]
        lengths = (offs[pos + 1] - offs[pos]).astype(np.int64)
        order = np.argsort(-lengths, kind="stable")
        longest = np.ascontiguousarray(pos[order][:max(self.c.n_sorted >> 4, 1)], dtype=np.int32)
        counts = np.bincount(lengths, minlength=self.c.max_token_len + 2)[: self.c.max_token_len + 2]
        longer = np.ascontiguousarray(len(lengths) - np.cumsum(counts), dtype=np.int32)
        for name, arr in ((prefix + "_longest", longest if len(longest) else np.zeros(1, dtype=np.int32)),
                          (prefix + "_longer", longer)):
            arr.setflags(write=False)
            self.arrays[name] = arr
        return len(longest)

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


cdef void _prefix_group_ends(const VocabC* v, int32_t* skip) noexcept nogil:
    # skip[off(i) + d] = first j > i with lcp[j] <= d.  Token i + 1 either leaves the group
    # (lcp <= d) or shares its first d + 1 bytes, and then its own group end at depth d is ours:
    # one backward pass, O(total token bytes).
    cdef intp_t i, d, n = v.n_sorted, length
    cdef int64_t off, nxt
    for i in range(n - 1, -1, -1):
        off = v.tok_offsets[i]
        length = v.tok_offsets[i + 1] - off
        nxt = v.tok_offsets[i + 1]  # offset of token i + 1 (when i + 1 < n)
        for d in range(length):
            if i + 1 == n or v.lcp[i + 1] <= d:
                skip[off + d] = <int32_t>(i + 1)
            else:
                skip[off + d] = skip[nxt + d]


# Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF) over the bytes a JSON string holds
# unescaped: states 0 = at a character boundary, 1-3 = that many continuation bytes to go,
# 4-7 = the restricted second byte after E0 / ED / F0 / F4.  255 = no transition.
cdef uint8_t PLAIN_UTF8[8][256]


cdef void _init_plain_utf8() noexcept nogil:
    cdef int b
    memset(PLAIN_UTF8, 255, sizeof(PLAIN_UTF8))
    for b in range(0x20, 0x80):
        if b != 0x22 and b != 0x5C:
            PLAIN_UTF8[0][b] = 0
    for b in range(0xC2, 0xE0):
        PLAIN_UTF8[0][b] = 1
    for b in range(0xE1, 0xF0):
        PLAIN_UTF8[0][b] = 2
    PLAIN_UTF8[0][0xE0] = 4
    PLAIN_UTF8[0][0xED] = 5
    for b in range(0xF1, 0xF4):
        PLAIN_UTF8[0][b] = 3
    PLAIN_UTF8[0][0xF0] = 6
    PLAIN_UTF8[0][0xF4] = 7
    for b in range(0x80, 0xC0):
        PLAIN_UTF8[1][b] = 0
        PLAIN_UTF8[2][b] = 1
        PLAIN_UTF8[3][b] = 2
    for b in range(0xA0, 0xC0):
        PLAIN_UTF8[4][b] = 1
    for b in range(0x80, 0xA0):
        PLAIN_UTF8[5][b] = 1
    for b in range(0x90, 0xC0):
        PLAIN_UTF8[6][b] = 2
    for b in range(0x80, 0x90):
        PLAIN_UTF8[7][b] = 2


_init_plain_utf8()


cdef uint8_t plain_utf8_step(uint8_t u, uint8_t b) noexcept nogil:
    return PLAIN_UTF8[u][b]


cdef bint plain_from(uint8_t u, const uint8_t* data, intp_t n) noexcept nogil:
    # Whether the plain-string automaton, in state u, reads all of data.
    cdef intp_t i
    for i in range(n):
        u = PLAIN_UTF8[u][data[i]]
        if u == 255:
            return False
    return True
