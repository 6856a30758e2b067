"""The last token of a token budget (see _fill_spent.pxd and _fill.pyx).

A spent top x = (s, M) sits right on its budget's marker M (deadline <= the next token), in a
frame whose region (the states s reaches by bytes and tail calls) makes no other call.  A
token is allowed through x iff a path leaves the frame by the token's end: read inside the
frame, the path is a set of states over M (frame-local, no stack), allowed when a final state
is left at the end (the closure pops to M's parent P, whose paths must all be alive); a path
that could leave mid-token (a final state and a next byte that can start what follows M) and
every uncertain token go to the real walk.  So the candidates cost table lookups, not stack
steps.  Any other spent top (nested frames, merged parents, rules with a budget of 1, whose
calls at the boundary are spent at once and make every cached set suspect) takes the full walk.

The mask a qualifying spent top allows depends only on its state and on the bytes that can
follow its frame (``first``), so it is computed once per grammar and kept beside the token-mask
cache (``SpentMemoC``, at most ``SPENT_MEMO_MAX`` of them): a server whose requests share a
reasoning budget pays the walk of the vocabulary once, not at every request's last budgeted
token.
"""

from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport int64_t

from xmask.runtime._types cimport XM_KIND_ACCEPTED, XM_KIND_BITSET, XM_FLAG_FINAL
from xmask.runtime._bitset cimport bitset_set, bitset_clear, bitset_test, bitset_or_into
from xmask.runtime._stack cimport stack_truncate
from xmask.runtime._stack_gss cimport stack_start_many, stack_step
from xmask.runtime._mask_cache cimport (
    SpentMemoC, cache_spent_memo_find, cache_spent_memo_publish,
)

cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil
    int __builtin_popcount(unsigned int x) nogil


cdef void entry_positions(const VocabC* v, const CacheEntryC* e, word_t* bits) noexcept nogil:
    cdef intp_t k, w, p
    cdef const int32_t* ids = e.data
    cdef const word_t* accepted
    cdef word_t x
    if e.kind == XM_KIND_ACCEPTED:
        for k in range(e.n_data):
            p = v.id_pos[ids[k]]
            if p >= 0:
                bitset_set(bits, p)
    elif e.kind == XM_KIND_BITSET:
        accepted = <const word_t*>ids
        for w in range(v.n_words):
            x = accepted[w]
            while x:
                p = v.id_pos[(w << 5) + __builtin_ctz(x)]
                x &= x - 1
                if p >= 0:
                    bitset_set(bits, p)
    else:  # every eligible token but the rejected and the uncertain ones
        for k in range(v.n_sorted >> 5):
            bits[k] = <word_t>0xFFFFFFFF
        for p in range(v.n_sorted & ~(<intp_t>31), v.n_sorted):
            bitset_set(bits, p)
        for k in range(e.n_data):
            p = v.id_pos[ids[k]]
            if p >= 0:
                bitset_clear(bits, p)
        for k in range(e.n_unc):
            bitset_clear(bits, e.unc[k])


cdef void spent_scratch_free(SpentScratch* sp) noexcept nogil:
    free(sp.sets)
    free(sp.sizes)
    free(sp.bail)
    free(sp.cand)
    free(sp.seen)
    free(sp.work)
    memset(sp, 0, sizeof(SpentScratch))


cdef bint _region_ok(const AutomatonC* a, int32_t s0, SpentScratch* sp) noexcept nogil:
    # Whether every state s0 reaches by bytes and tail calls makes tail calls only.
    cdef intp_t n = 1, count = 1, k, c
    cdef int32_t x, t
    memset(sp.seen, 0, <size_t>a.n_states)
    sp.work[0] = s0
    sp.seen[s0] = 1
    while n > 0:
        n -= 1
        x = sp.work[n]
        for k in range(a.call_offsets[x], a.call_offsets[x + 1]):
            if a.call_ret[k] >= 0:
                return False
            t = a.call_target[k]
            if not sp.seen[t]:
                sp.seen[t] = 1
                sp.work[n] = t
                n += 1
                count += 1
        for c in range(a.n_classes):
            t = a.trans[x * a.n_classes + c]
            if t >= 0 and not sp.seen[t]:
                sp.seen[t] = 1
                sp.work[n] = t
                n += 1
                count += 1
        if count > _REGION_MAX:
            return False
    return True


cdef bint spent_fast_usable(StackC* st, const AutomatonC* a, const VocabC* v,
                            SpentScratch* sp) except -1 nogil:
    # Whether every spent top qualifies for _spent_fast_top; then sp is ready (buffers, the
    # bytes that can follow each spent frame) and the caller frees it.
    cdef intp_t i, base = st.depth, depth_len = v.max_token_len + 1
    cdef int32_t x, m, p, last = st.tok_index
    if a.min_call_budget < 2:
        return False
    sp.seen = <uint8_t*>malloc(<size_t>a.n_states)
    sp.work = <int32_t*>malloc(<size_t>a.n_states * sizeof(int32_t))
    sp.sets = <int32_t*>malloc(<size_t>(depth_len * _FRAME_MAX) * sizeof(int32_t))
    sp.sizes = <int32_t*>malloc(<size_t>depth_len * sizeof(int32_t))
    sp.bail = <uint8_t*>malloc(<size_t>depth_len)
    sp.cand = <word_t*>calloc(<size_t>((v.n_sorted + 31) >> 5) + 1, sizeof(word_t))
    if (sp.seen == NULL or sp.work == NULL or sp.sets == NULL or sp.sizes == NULL
            or sp.bail == NULL or sp.cand == NULL):
        spent_scratch_free(sp)
        with gil:
            raise MemoryError()
    for i in range(st.set_start[base - 1], st.set_start[base]):
        x = st.tops[i]
        if x == 0 or not spent_top(st, x):
            continue
        m = st.node_parent[x]
        if m < 2 or st.node_state[m] >= -1 or -3 - st.node_state[m] > last:
            break  # not right on its spent marker
        p = st.node_parent[m]
        if p < 0 or st.node_dead[p] <= last or not _region_ok(a, st.node_state[x], sp):
            break
        _follow_bytes(st, a, p, sp.first)
    else:
        return True
    spent_scratch_free(sp)
    return False


cdef int _follow_bytes(StackC* st, const AutomatonC* a, int32_t p, uint8_t* first) except -1 nogil:
    # OR into first[] the bytes the stack popped to p can read next (its closure's steps).
    cdef intp_t base = st.depth, b
    cdef int32_t s
    if p < 2:
        return 0  # the end of the grammar: nothing follows
    s = st.node_state[p]
    stack_start_many(st, a, &s, 1, st.node_parent[p])
    for b in range(256):
        if not first[b] and stack_step(st, a, <uint8_t>b) > 0:
            first[b] = 1
            stack_truncate(st, base + 1)
    stack_truncate(st, base)
    return 0


cdef inline intp_t _fl_close(const AutomatonC* a, int32_t* S, intp_t n) noexcept nogil:
    # Close S[0:n] over (tail) calls in place; the new size, or -1 past _FRAME_MAX states.
    cdef intp_t i = 0, j, k
    cdef int32_t t
    while i < n:
        for k in range(a.call_offsets[S[i]], a.call_offsets[S[i] + 1]):
            t = a.call_target[k]
            for j in range(n):
                if S[j] == t:
                    break
            else:
                if n == _FRAME_MAX:
                    return -1
                S[n] = t
                n += 1
        i += 1
    return n


cdef inline bint _fl_final(const AutomatonC* a, const int32_t* S, intp_t n) noexcept nogil:
    cdef intp_t i
    for i in range(n):
        if a.flags[S[i]] & XM_FLAG_FINAL:
            return True
    return False


cdef int _spent_fast_top(StackC* st, const AutomatonC* a, const VocabC* v, SpentScratch* sp,
                         int32_t x, const CacheEntryC* e, word_t* row, word_t* pos_bits,
                         GuardC* g) except -1 nogil:
    # Allow the tokens x lets leave its spent frame by their end; queue for the real walk
    # (pos_bits) those that may leave mid-token, and x's uncertain ones.
    cdef intp_t pos_words = (v.n_sorted + 31) >> 5
    cdef intp_t k, w, p, d, length, lcp, lim, reached = 0, prev_off = 0, prev_len = 0, m, n_out
    cdef int64_t off
    cdef int32_t tid, cls, t
    cdef int32_t* S
    cdef int32_t* out
    cdef word_t wbits
    cdef uint8_t byte
    # the candidates: accepted positions (the uncertain ones go to the real walk)
    entry_positions(v, e, sp.cand)
    for k in range(e.n_unc):
        bitset_clear(sp.cand, e.unc[k])
        bitset_set(pos_bits, e.unc[k])
    # depth 0: x's state closed over its tail calls
    sp.sets[0] = st.node_state[x]
    sp.sizes[0] = <int32_t>_fl_close(a, sp.sets, 1)
    sp.bail[0] = 0
    for w in range(pos_words):
        wbits = sp.cand[w]
        sp.cand[w] = 0
        while wbits:
            p = (w << 5) + __builtin_ctz(wbits)
            wbits &= wbits - 1
            tid = v.sorted_ids[p]
            if g != NULL:
                g.work += 1
            if bitset_test(row, tid):
                continue
            off = v.tok_offsets[p]
            length = v.tok_offsets[p + 1] - off
            lcp = token_lcp(v, prev_off, prev_len, off, length)
            prev_off = off
            prev_len = length
            d = lcp if lcp < reached else reached
            while d < length:
                byte = v.tok_bytes[off + d]
                S = sp.sets + d * _FRAME_MAX
                out = S + _FRAME_MAX
                m = sp.sizes[d]
                sp.bail[d + 1] = sp.bail[d] or (d >= 1 and m > 0 and sp.first[byte]
                                               and _fl_final(a, S, m))
                if m <= 0:
                    sp.sizes[d + 1] = m
                else:
                    cls = a.byte_class[byte]
                    n_out = 0
                    for k in range(m):
                        t = a.trans[S[k] * a.n_classes + cls]
                        if t >= 0:
                            for lim in range(n_out):
                                if out[lim] == t:
                                    break
                            else:
                                out[n_out] = t
                                n_out += 1
                    sp.sizes[d + 1] = <int32_t>_fl_close(a, out, n_out)
                d += 1
            reached = length
            m = sp.sizes[length]
            if m > 0 and _fl_final(a, sp.sets + length * _FRAME_MAX, m):
                bitset_set(row, tid)  # leaves the frame at the token's end
            elif m < 0 or sp.bail[length]:
                bitset_set(pos_bits, p)  # the real walk decides
    return 0


cdef SpentMemoC* _spent_memo_build(StackC* st, const AutomatonC* a, const VocabC* v,
                                   SpentScratch* sp, int32_t x, const CacheEntryC* e,
                                   GuardC* g) except NULL nogil:
    # The whole mask of spent top x (from an empty row) as a new, unowned SpentMemoC.
    cdef intp_t n_words = v.n_words, pos_words = (v.n_sorted + 31) >> 5, w, n_bail = 0, k = 0
    cdef word_t* row = <word_t*>calloc(<size_t>n_words + 1, sizeof(word_t))
    cdef word_t* pos = <word_t*>calloc(<size_t>pos_words + 1, sizeof(word_t))
    cdef SpentMemoC* m = NULL
    cdef word_t bits
    if row != NULL and pos != NULL:
        _spent_fast_top(st, a, v, sp, x, e, row, pos, g)  # (raises nothing)
        for w in range(pos_words):
            n_bail += __builtin_popcount(pos[w])
        m = <SpentMemoC*>malloc(sizeof(SpentMemoC) + <size_t>n_words * sizeof(word_t)
                                + <size_t>n_bail * sizeof(int32_t))
    if m != NULL:
        m.state = st.node_state[x]
        memcpy(m.first, sp.first, 256)
        m.n_words = n_words
        m.n_bail = n_bail
        m.allowed = <word_t*>(<char*>m + sizeof(SpentMemoC))
        m.bail = <int32_t*>(<char*>m.allowed + <size_t>n_words * sizeof(word_t))
        memcpy(m.allowed, row, <size_t>n_words * sizeof(word_t))
        for w in range(pos_words):
            bits = pos[w]
            while bits:
                m.bail[k] = <int32_t>((w << 5) + __builtin_ctz(bits))
                bits &= bits - 1
                k += 1
    free(row)
    free(pos)
    if m == NULL:
        with gil:
            raise MemoryError("xmask: no memory for the mask at the end of a token budget")
    return m


cdef int spent_fast_top_memo(MaskCacheC* c, StackC* st, const AutomatonC* a, const VocabC* v,
                             SpentScratch* sp, int32_t x, const CacheEntryC* e, word_t* row,
                             word_t* pos_bits, GuardC* g) except -1 nogil:
    # _spent_fast_top through the grammar's memo: OR what x allows into row and queue the
    # tokens the real walk decides into pos_bits.
    cdef const SpentMemoC* m = cache_spent_memo_find(c, st.node_state[x], sp.first)
    cdef SpentMemoC* mine = NULL
    cdef intp_t k
    if m == NULL:
        mine = _spent_memo_build(st, a, v, sp, x, e, g)
        m = mine
    elif g != NULL:
        g.work += (m.n_words >> 4) + m.n_bail
    bitset_or_into(row, m.allowed, m.n_words)
    for k in range(m.n_bail):
        bitset_set(pos_bits, m.bail[k])
    if mine != NULL and not cache_spent_memo_publish(c, mine):
        free(mine)  # another thread published it first, or the memo is full
    return 0
