"""GrammarMatcher: per-sequence parser state over a shared, immutable CompiledGrammar.

The state is a persistent stack (``_stack.pyx``): one top set per accepted byte, a list of history
depths per accepted token, rollback = truncation.  ``fill_next_token_bitmask`` ORs the cached
accepted sets of the current tops, then checks only the cached *uncertain* tokens against the real
stack, in byte-sorted order so shared prefixes are parsed once, all inside one ``nogil`` block.
"""

cimport cython
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from xmask.runtime._types cimport word_t, intp_t, XM_KIND_ACCEPTED, XM_KIND_REJECTED, XM_KIND_BITSET
from xmask.runtime._bitset cimport bitset_set, bitset_clear, bitset_test, bitset_or_into
from xmask.runtime._tables cimport (
    AutomatonC, VocabC, MaskCacheC, AutomatonTables, VocabTables, MaskCacheTables,
)
from xmask.runtime._stack cimport (
    StackC, stack_init, stack_free, stack_reset, stack_start, stack_step, stack_truncate,
    stack_has_bottom,
)

from xmask.errors import InvalidTokenError, BitmaskError, XmaskError

cdef intp_t _MAX_JUMP_FORWARD_BYTES = 4096


cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil


cdef int _accept_bytes(StackC* st, const AutomatonC* a, const uint8_t* data, intp_t n) except -1 nogil:
    # Feed bytes; on rejection restore the history and return 0, else return 1.
    cdef intp_t base = st.depth
    cdef intp_t i
    for i in range(n):
        if stack_step(st, a, data[i]) == 0:
            stack_truncate(st, base)
            return 0
    return 1


cdef int _fill_row(StackC* st, const AutomatonC* a, const VocabC* v, const MaskCacheC* c,
                   word_t* row, word_t* scratch, word_t* pos_bits,
                   const int32_t* stop_ids, intp_t n_stop) except -1 nogil:
    # The mask for the newest top set, written to row[0:n_words].  Leaves the history unchanged.
    cdef intp_t n_words = v.n_words
    cdef intp_t base = st.depth
    cdef intp_t top_begin = st.set_start[base - 1]
    cdef intp_t top_end = st.set_start[base]
    cdef intp_t i, k, w, e, n_real = 0, single = -1
    cdef int32_t node, tid
    cdef const int32_t* ids
    cdef const int32_t* unc_list = NULL
    cdef intp_t unc_n = 0
    cdef bint can_end = False
    memset(row, 0, <size_t>n_words * sizeof(word_t))

    # 1. cached accepted sets
    for i in range(top_begin, top_end):
        node = st.tops[i]
        if node == 0:
            can_end = True
            continue
        e = c.state_entry[st.node_state[node]]
        n_real += 1
        single = e
        ids = c.data + c.entry_off[e]
        if c.entry_kind[e] == XM_KIND_ACCEPTED:
            for k in range(c.entry_len[e]):
                bitset_set(row, ids[k])
        elif c.entry_kind[e] == XM_KIND_BITSET:
            bitset_or_into(row, <const word_t*>ids, n_words)
        else:
            memcpy(scratch, v.eligible, <size_t>n_words * sizeof(word_t))
            for k in range(c.entry_len[e]):
                bitset_clear(scratch, ids[k])
            for k in range(c.unc_len[e]):
                bitset_clear(scratch, v.sorted_ids[c.unc[c.unc_off[e] + k]])
            bitset_or_into(row, scratch, n_words)

    # 2. uncertain tokens, in sorted order (merged through a position bitset if several tops)
    if n_real == 1:
        unc_list = c.unc + c.unc_off[single]
        unc_n = c.unc_len[single]
        _check_uncertain(st, a, v, row, unc_list, unc_n, NULL, 0)
    elif n_real > 1:
        for i in range(top_begin, top_end):
            node = st.tops[i]
            if node == 0:
                continue
            e = c.state_entry[st.node_state[node]]
            for k in range(c.unc_len[e]):
                bitset_set(pos_bits, c.unc[c.unc_off[e] + k])
        _check_uncertain(st, a, v, row, NULL, 0, pos_bits, (v.n_sorted + 31) >> 5)
    stack_truncate(st, base)

    # 3. stop tokens only when the grammar can end here (even if one is also a normal token)
    for k in range(n_stop):
        if can_end:
            bitset_set(row, stop_ids[k])
        else:
            bitset_clear(row, stop_ids[k])
    return 0


cdef int _check_uncertain(StackC* st, const AutomatonC* a, const VocabC* v, word_t* row,
                          const int32_t* unc_list, intp_t unc_n,
                          word_t* pos_bits, intp_t pos_words) except -1 nogil:
    # Try each uncertain position (from unc_list, or from the set bits of pos_bits, which are
    # cleared on the way) on the real stack, sharing work between consecutive tokens.
    cdef intp_t base = st.depth
    cdef intp_t idx = 0, w = 0, pos, d, k, length, lcp, reached = 0, dead_at = -1
    cdef intp_t prev_off = 0, prev_len = 0
    cdef int64_t off
    cdef word_t bits
    cdef int32_t tid
    cdef bint ok
    bits = 0
    while True:
        # next position in ascending order
        if unc_list != NULL or pos_bits == NULL:
            if idx >= unc_n:
                break
            pos = unc_list[idx]
            idx += 1
        else:
            while bits == 0 and w < pos_words:
                bits = pos_bits[w]
                pos_bits[w] = 0
                w += 1
            if bits == 0:
                break
            pos = ((w - 1) << 5) + __builtin_ctz(bits)
            bits &= bits - 1
        tid = v.sorted_ids[pos]
        if bitset_test(row, tid):
            continue
        off = v.tok_offsets[pos]
        length = v.tok_offsets[pos + 1] - off
        # real common-prefix length with the previous token checked
        lcp = 0
        k = prev_len if prev_len < length else length
        while lcp < k and v.tok_bytes[prev_off + lcp] == v.tok_bytes[off + lcp]:
            lcp += 1
        if dead_at >= 0 and lcp > dead_at:
            continue  # shares the prefix that already killed every path
        prev_off = off
        prev_len = length
        k = lcp if lcp < reached else reached
        stack_truncate(st, base + k)
        ok = True
        d = k
        while d < length:
            if stack_step(st, a, v.tok_bytes[off + d]) == 0:
                ok = False
                break
            d += 1
        if ok:
            reached = length
            dead_at = -1
            bitset_set(row, tid)
        else:
            reached = d
            dead_at = d
    stack_truncate(st, base)
    return 0


def _as_token_id(value, what="token id"):
    """An integer id from an int or NumPy integer (not bool); InvalidTokenError otherwise."""
    import operator

    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise InvalidTokenError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidTokenError(
            f"{what} must be an integer, got {value!r} ({type(value).__name__})"
        ) from None


def _bitmask_view(bitmask):
    """The bitmask as a writable 2-D int32 C-contiguous NumPy view (torch CPU tensors too)."""
    import numpy as np

    arr = bitmask
    if not isinstance(bitmask, np.ndarray):
        mod = type(bitmask).__module__
        if mod.startswith("torch"):
            if str(bitmask.dtype) != "torch.int32":
                raise BitmaskError(f"bitmask must have dtype torch.int32, got {bitmask.dtype}")
            if bitmask.device.type != "cpu":
                raise BitmaskError(
                    f"bitmask must be on the CPU (fill it there, then copy), got {bitmask.device}"
                )
            if not bitmask.is_contiguous():
                raise BitmaskError("bitmask tensor must be contiguous")
            arr = bitmask.numpy()
        else:
            raise BitmaskError(f"bitmask must be a numpy.ndarray or torch.Tensor, got {type(bitmask).__name__}")
    if arr.dtype != np.int32:
        raise BitmaskError(f"bitmask must have dtype int32, got {arr.dtype}")
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise BitmaskError(f"bitmask must be 1-D or 2-D, got shape {tuple(arr.shape)}")
    if not arr.flags.c_contiguous:
        raise BitmaskError("bitmask must be C-contiguous")
    if not arr.flags.writeable:
        raise BitmaskError("bitmask is read-only")
    return arr


@cython.final
cdef class GrammarMatcher:
    """Matches one token sequence against a compiled grammar and produces next-token masks.

    Cheap to create (the compiled grammar is shared and immutable); one matcher per sequence,
    used from one thread at a time.

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
        >>> matcher = xmask.GrammarMatcher(compiled)
        >>> bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
        >>> matcher.fill_next_token_bitmask(bitmask)
        True
        >>> matcher.accept_string('{"a": 1}')
        True
        >>> matcher.is_terminated()
        False
    """

    cdef StackC st
    cdef bint st_ready
    cdef readonly object compiled_grammar
    cdef AutomatonTables at
    cdef VocabTables vt
    cdef MaskCacheTables ct
    cdef intp_t* token_depth       # [n_tokens + 1] history depth after each accepted token
    cdef intp_t n_tokens
    cdef intp_t cap_tokens
    cdef bint terminated
    cdef bint terminate_without_stop_token
    cdef intp_t max_rollback
    cdef int32_t* stop_ids
    cdef intp_t n_stop
    cdef uint8_t* is_stop          # [vocab_size]
    cdef word_t* scratch           # [n_words]
    cdef word_t* pos_bits          # [ceil(n_sorted / 32)], kept all-zero between calls
    cdef object _stop_list

    def __cinit__(self):
        self.st_ready = False
        self.token_depth = NULL
        self.stop_ids = NULL
        self.is_stop = NULL
        self.scratch = NULL
        self.pos_bits = NULL

    def __init__(self, compiled_grammar, override_stop_tokens=None,
                 bint terminate_without_stop_token=False, max_rollback_tokens=-1):
        from xmask.compiler.compiled import CompiledGrammar

        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(
                f"GrammarMatcher needs a CompiledGrammar, got {type(compiled_grammar).__name__}"
            )
        self.compiled_grammar = compiled_grammar
        self.at = compiled_grammar._automaton_tables
        self.vt = compiled_grammar._vocab_tables
        self.ct = compiled_grammar._mask_cache_tables
        vocab_size = self.vt.c.vocab_size
        if override_stop_tokens is None:
            stops = list(compiled_grammar.tokenizer_info.stop_token_ids)
        elif not hasattr(override_stop_tokens, "__iter__"):
            stops = [override_stop_tokens]
        else:
            stops = list(override_stop_tokens)
        stops = [_as_token_id(t, "stop token id") for t in stops]
        for t in stops:
            if not 0 <= t < vocab_size:
                raise InvalidTokenError(f"stop token id {t} is outside [0, {vocab_size})")
        stops = sorted(set(stops))
        self._stop_list = stops
        self.terminate_without_stop_token = terminate_without_stop_token
        self.max_rollback = -1 if max_rollback_tokens is None else int(max_rollback_tokens)
        n_words = self.vt.c.n_words
        pos_words = (self.vt.c.n_sorted + 31) >> 5
        self.n_stop = len(stops)
        self.stop_ids = <int32_t*>malloc(max(1, self.n_stop) * sizeof(int32_t))
        self.is_stop = <uint8_t*>malloc(max(1, vocab_size))
        self.scratch = <word_t*>malloc(max(1, n_words) * sizeof(word_t))
        self.pos_bits = <word_t*>malloc(max(1, pos_words) * sizeof(word_t))
        self.cap_tokens = 256
        self.token_depth = <intp_t*>malloc(self.cap_tokens * sizeof(intp_t))
        if (self.stop_ids == NULL or self.is_stop == NULL or self.scratch == NULL
                or self.pos_bits == NULL or self.token_depth == NULL):
            raise MemoryError()
        memset(self.is_stop, 0, vocab_size)
        memset(self.pos_bits, 0, max(1, pos_words) * sizeof(word_t))
        for i, t in enumerate(stops):
            self.stop_ids[i] = t
            self.is_stop[t] = 1
        stack_init(&self.st)
        self.st_ready = True
        self.reset()

    def __dealloc__(self):
        if self.st_ready:
            stack_free(&self.st)
        free(self.token_depth)
        free(self.stop_ids)
        free(self.is_stop)
        free(self.scratch)
        free(self.pos_bits)

    # ---- state -------------------------------------------------------------------------

    def reset(self):
        """Return to the start of the grammar (forgetting every accepted token)."""
        # Dropping the arena too keeps long-lived matchers from accumulating nodes.
        stack_reset(&self.st, True)
        stack_start(&self.st, &self.at.c, self.at.c.root_start)
        self.n_tokens = 0
        self.token_depth[0] = self.st.depth
        self.terminated = False

    def is_terminated(self):
        """True once a stop token was accepted.  With ``terminate_without_stop_token=True``:
        True whenever the input so far is a complete sentence of the grammar (more tokens may
        still be accepted if the grammar allows them; stop tokens are never consumed)."""
        if self.terminated:
            return True
        return self.terminate_without_stop_token and self._can_end()

    cdef bint _can_end(self):
        return stack_has_bottom(&self.st, self.st.depth - 1)

    @property
    def stop_token_ids(self):
        """The stop token ids this matcher accepts when the grammar can end."""
        return list(self._stop_list)

    @property
    def num_accepted_tokens(self):
        return self.n_tokens

    cdef int _push_token(self) except -1:
        cdef intp_t* p
        if self.n_tokens + 2 > self.cap_tokens:
            p = <intp_t*>realloc(self.token_depth, 2 * self.cap_tokens * sizeof(intp_t))
            if p == NULL:
                raise MemoryError()
            self.token_depth = p
            self.cap_tokens *= 2
        self.n_tokens += 1
        self.token_depth[self.n_tokens] = self.st.depth
        return 0

    # ---- accepting ---------------------------------------------------------------------

    def accept_token(self, token_id):
        """Advance by one token.  Returns False (state unchanged) if the grammar rejects it.

        Stop tokens are accepted only where the grammar can end; they terminate the matcher.
        Raises ``InvalidTokenError`` for an id outside ``[0, vocab_size)``.
        """
        cdef intp_t tid
        cdef intp_t pos
        cdef int64_t off, length
        cdef int ok
        token_id = _as_token_id(token_id)
        if not 0 <= token_id < self.vt.c.vocab_size:
            raise InvalidTokenError(
                f"token id {token_id} is outside the vocabulary [0, {self.vt.c.vocab_size})"
            )
        tid = token_id
        if self.terminated:
            return False
        if self.is_stop[tid]:
            if self.terminate_without_stop_token or not self._can_end():
                return False
            self._push_token()
            self.terminated = True
            return True
        pos = self.vt.c.id_pos[tid]
        if pos < 0:
            return False  # special / padding token: never part of a grammar
        off = self.vt.c.tok_offsets[pos]
        length = self.vt.c.tok_offsets[pos + 1] - off
        with nogil:
            ok = _accept_bytes(&self.st, &self.at.c, self.vt.c.tok_bytes + off, length)
        if not ok:
            return False
        self._push_token()
        return True

    def accept_string(self, input_str):
        """Advance by the bytes of ``input_str`` (str is UTF-8 encoded), which need not align with
        tokens.  Returns False (state unchanged) if rejected.  Counts as one step for rollback."""
        cdef const uint8_t[::1] view
        cdef int ok
        if isinstance(input_str, str):
            data = input_str.encode("utf-8")
        elif isinstance(input_str, (bytes, bytearray, memoryview)):
            data = bytes(input_str)
        else:
            raise TypeError(f"accept_string needs str or bytes, got {type(input_str).__name__}")
        if self.terminated:
            return False
        if len(data) == 0:
            self._push_token()
            return True
        view = data
        with nogil:
            ok = _accept_bytes(&self.st, &self.at.c, &view[0], view.shape[0])
        if not ok:
            return False
        self._push_token()
        return True

    def rollback(self, num_tokens=1):
        """Undo the last ``num_tokens`` accepted tokens (a stop token counts as one).  O(1)."""
        if not isinstance(num_tokens, int) or num_tokens < 0:
            raise ValueError(f"num_tokens must be a non-negative int, got {num_tokens!r}")
        if num_tokens > self.n_tokens:
            raise ValueError(
                f"cannot roll back {num_tokens} tokens: only {self.n_tokens} accepted"
            )
        if 0 <= self.max_rollback < num_tokens:
            raise ValueError(
                f"cannot roll back {num_tokens} tokens: max_rollback_tokens={self.max_rollback}"
            )
        if num_tokens == 0:
            return
        self.n_tokens -= num_tokens
        stack_truncate(&self.st, self.token_depth[self.n_tokens])
        self.terminated = False

    # ---- masks -------------------------------------------------------------------------

    def fill_next_token_bitmask(self, bitmask, int index=0):
        """Write the allowed-next-token mask into row ``index`` of ``bitmask``.

        ``bitmask`` is an int32 array of shape (batch, ceil(vocab_size / 32)) (see
        ``allocate_token_bitmask``); bit ``i % 32`` of word ``i // 32`` is set iff token i is
        allowed.  Special and padding ids are never set; stop tokens only where the grammar can
        end.  Returns True (the row needs applying).  The matcher state is unchanged.  Raises
        ``XmaskError`` after a stop token was accepted (as XGrammar does).
        """
        arr = _bitmask_view(bitmask)
        cdef int32_t[:, ::1] view = arr
        cdef intp_t n_words = self.vt.c.n_words
        if view.shape[1] != n_words:
            raise BitmaskError(
                f"bitmask has {view.shape[1]} words per row, expected {n_words} "
                f"for vocab_size {self.vt.c.vocab_size}"
            )
        if not 0 <= index < view.shape[0]:
            raise BitmaskError(f"index {index} out of range for a batch of {view.shape[0]}")
        cdef word_t* row = <word_t*>&view[index, 0]
        if self.terminated:
            raise XmaskError(
                "the matcher has terminated (a stop token was accepted): nothing can follow; "
                "call rollback() or reset() before asking for another mask"
            )
        with nogil:
            _fill_row(&self.st, &self.at.c, &self.vt.c, &self.ct.c, row, self.scratch,
                      self.pos_bits, self.stop_ids, self.n_stop)
        return True

    def _reference_fill_next_token_bitmask(self, bitmask, int index=0):
        """Slow reference mask: try every token on the byte-level parser, no cache, no prefix
        sharing.  For tests only."""
        arr = _bitmask_view(bitmask)
        cdef int32_t[:, ::1] view = arr
        cdef word_t* row = <word_t*>&view[index, 0]
        cdef intp_t tid, pos, base = self.st.depth
        cdef int64_t off
        cdef bint can_end = self._can_end()
        memset(row, 0, self.vt.c.n_words * sizeof(word_t))
        with nogil:
            for tid in range(self.vt.c.vocab_size):
                if self.is_stop[tid]:
                    if can_end:
                        bitset_set(row, tid)
                    continue
                pos = self.vt.c.id_pos[tid]
                if pos < 0:
                    continue
                off = self.vt.c.tok_offsets[pos]
                if _accept_bytes(&self.st, &self.at.c, self.vt.c.tok_bytes + off,
                                 self.vt.c.tok_offsets[pos + 1] - off):
                    bitset_set(row, tid)
                    stack_truncate(&self.st, base)

    def find_jump_forward_string(self):
        """The longest string that must come next whatever the model picks ('' if none).

        Stops where the grammar could end or branch, and at a whole UTF-8 character.  The
        matcher state is unchanged.
        """
        cdef intp_t base = self.st.depth
        cdef intp_t d, i, cls, the_cls, n_cls, lo
        cdef int32_t node, s
        cdef const AutomatonC* a = &self.at.c
        out = bytearray()
        if self.terminated:
            return ""
        try:
            while len(out) < _MAX_JUMP_FORWARD_BYTES:
                d = self.st.depth - 1
                the_cls = -1
                n_cls = 0
                for i in range(self.st.set_start[d], self.st.set_start[d + 1]):
                    node = self.st.tops[i]
                    if node == 0:
                        n_cls = 2  # could end here: nothing is forced
                        break
                    s = self.st.node_state[node]
                    for cls in range(a.n_classes):
                        if a.trans[s * a.n_classes + cls] >= 0 and cls != the_cls:
                            n_cls += 1
                            the_cls = cls
                    if n_cls > 1:
                        break
                if n_cls != 1:
                    break
                lo = -1
                for i in range(256):
                    if a.byte_class[i] == the_cls:
                        if lo >= 0:
                            lo = -2
                            break
                        lo = i
                if lo < 0:
                    break  # the class holds several bytes
                if stack_step(&self.st, a, <uint8_t>lo) == 0:
                    break
                out.append(lo)
        finally:
            stack_truncate(&self.st, base)
        return _utf8_prefix(bytes(out))

    # ---- introspection -------------------------------------------------------------------

    def _debug_top_states(self):
        """The automaton states of the current stack tops (-1 = the grammar may end)."""
        d = self.st.depth - 1
        out = []
        for i in range(self.st.set_start[d], self.st.set_start[d + 1]):
            node = self.st.tops[i]
            out.append(-1 if node == 0 else self.st.node_state[node])
        return out

    def _debug_arena_nodes(self):
        return self.st.n_nodes

    def __repr__(self):
        return (f"<GrammarMatcher tokens={self.n_tokens} terminated={self.is_terminated()} "
                f"tops={len(self._debug_top_states())}>")


def _utf8_prefix(data):
    """Decode the longest prefix of ``data`` that ends on a UTF-8 character boundary."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="ignore")
