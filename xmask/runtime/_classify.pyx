"""Classify every vocabulary token for one automaton state: one token-mask cache entry.

For a state s of rule R the walk starts from the stack (s over BOTTOM).  When a path returns
past BOTTOM (R is done) it continues in every place R can return to (the return states of R's
call sites, following tail calls up, each over CONTEXT); a path that returns past CONTEXT too can
only be judged by the real stack, so the next byte is checked against those callers' FOLLOW set.

A token is
* accepted  if a path consumes all of it without leaving R (or leaving R exactly at its end);
* uncertain if not, but a path consumed it in a caller's context, or left the callers too with a
  byte that can follow them: only the real stack can decide;
* rejected  otherwise: no context whatsoever accepts it.

Work is proportional to what survives, not to the vocabulary: tokens are visited in byte-sorted
order so a shared prefix is parsed once (truncate the history to the common prefix, then push
the rest), and when byte d kills every path the walk jumps over the whole group of tokens that
share those d + 1 bytes (``VocabC.skip``) without touching them.  Only accepted and uncertain
positions are written, straight into the entry's final form: no dense per-token row.
"""

from libc.stdlib cimport malloc, realloc, free, qsort
from libc.string cimport memset, memcpy

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, word_t, intp_t
from xmask.runtime._types cimport XM_KIND_ACCEPTED, XM_KIND_REJECTED, XM_KIND_BITSET
from xmask.runtime._tables cimport AutomatonC, VocabC
from xmask.runtime._bitset cimport bitset_set
from xmask.runtime._stack cimport (
    StackC, stack_init, stack_free, stack_reset, stack_start, stack_start_many, stack_step,
    stack_truncate, stack_set_contains,
)

cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil


cdef int _grow_i32(int32_t** p, intp_t* cap, intp_t need) except -1 nogil:
    cdef intp_t new_cap = cap[0] if cap[0] > 0 else 1024
    cdef int32_t* q
    while new_cap < need:
        new_cap *= 2
    q = <int32_t*>realloc(p[0], <size_t>new_cap * sizeof(int32_t))
    if q == NULL:
        with gil:
            raise MemoryError()
    p[0] = q
    cap[0] = new_cap
    return 0


cdef int scratch_init(ClassifyScratch* s, const VocabC* v) except -1 nogil:
    memset(s, 0, sizeof(ClassifyScratch))
    stack_init(&s.st)
    s.unc_prefix = <uint8_t*>malloc(<size_t>(v.max_token_len + 2))
    s.marks = <word_t*>calloc_words(v.n_words)
    if s.unc_prefix == NULL or s.marks == NULL:
        scratch_free(s)
        with gil:
            raise MemoryError()
    return 0


cdef void* calloc_words(intp_t n) noexcept nogil:
    cdef void* p = malloc(<size_t>(n if n > 0 else 1) * sizeof(word_t))
    if p != NULL:
        memset(p, 0, <size_t>(n if n > 0 else 1) * sizeof(word_t))
    return p


cdef void scratch_free(ClassifyScratch* s) noexcept nogil:
    stack_free(&s.st)
    free(s.unc_prefix)
    free(s.ctx_tops)
    free(s.acc)
    free(s.unc)
    free(s.marks)
    memset(s, 0, sizeof(ClassifyScratch))


cdef bint _inside_rule(const StackC* st) noexcept nogil:
    # Whether a path of the newest top set is still inside the walked rule (or just ended it):
    # its parent chain ends at BOTTOM rather than CONTEXT.
    cdef intp_t i
    cdef int32_t x
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        x = st.tops[i]
        while x >= 2:
            x = st.node_parent[x]
        if x == 0:
            return True
    return False


cdef int _walk(ClassifyScratch* s, const AutomatonC* a, const VocabC* v, int32_t state,
               const int32_t* ctx, intp_t n_ctx, const uint8_t* follow,
               intp_t* n_acc_out, intp_t* n_unc_out) except -1 nogil:
    # Accepted positions -> s.acc, uncertain positions -> s.unc (both ascending).
    cdef StackC* st = &s.st
    cdef uint8_t* unc_prefix = s.unc_prefix
    cdef intp_t n = v.n_sorted
    cdef intp_t i = 0, j, d, k, length, reached = 0, n_ctx_tops, n_acc = 0, n_unc = 0
    cdef int64_t off
    cdef uint8_t b
    cdef bint ok, ctx_has_ctx
    cdef int32_t* p
    stack_reset(st, st.n_nodes > 1 << 16)
    st.bottom_cont = NULL
    # the caller contexts' top set, kept outside the history (node ids stay valid: no reset
    # drops nodes during this walk)
    stack_start_many(st, a, ctx, n_ctx, 1)
    n_ctx_tops = st.set_start[1]
    ctx_has_ctx = stack_set_contains(st, 0, 1)
    if n_ctx_tops > s.ctx_cap:
        _grow_i32(&s.ctx_tops, &s.ctx_cap, n_ctx_tops)
    for i in range(n_ctx_tops):
        s.ctx_tops[i] = st.tops[i]
    stack_reset(st, False)
    st.bottom_cont = s.ctx_tops
    st.n_bottom_cont = n_ctx_tops
    stack_start(st, a, state)
    unc_prefix[0] = 0
    i = 0
    while i < n:
        k = v.lcp[i] if v.lcp[i] < reached else reached
        stack_truncate(st, k + 1)
        off = v.tok_offsets[i]
        length = v.tok_offsets[i + 1] - off
        ok = True
        d = k
        while d < length:
            b = v.tok_bytes[off + d]
            # returned past the callers too (directly, or via BOTTOM whose continuation holds
            # CONTEXT) with a byte that can follow them: only the real stack can tell
            unc_prefix[d + 1] = unc_prefix[d] | (
                follow[b] != 0 and (stack_set_contains(st, d, 1)
                                    or (ctx_has_ctx and stack_set_contains(st, d, 0))))
            if stack_step(st, a, b) == 0:
                ok = False
                break
            d += 1
        if ok:
            reached = length
            if _inside_rule(st):
                if n_acc >= s.acc_cap:
                    _grow_i32(&s.acc, &s.acc_cap, n_acc + 1)
                s.acc[n_acc] = <int32_t>i
                n_acc += 1
            else:
                if n_unc >= s.unc_cap:
                    _grow_i32(&s.unc, &s.unc_cap, n_unc + 1)
                s.unc[n_unc] = <int32_t>i
                n_unc += 1
            i += 1
            continue
        reached = d
        # every token sharing these d + 1 bytes dies the same way: jump over the group
        j = v.skip[off + d]
        if unc_prefix[d + 1]:
            if n_unc + (j - i) > s.unc_cap:
                _grow_i32(&s.unc, &s.unc_cap, n_unc + (j - i))
            while i < j:
                s.unc[n_unc] = <int32_t>i
                n_unc += 1
                i += 1
        i = j
    n_acc_out[0] = n_acc
    n_unc_out[0] = n_unc
    return 0


cdef int _cmp_i32(const void* x, const void* y) noexcept nogil:
    cdef int32_t a = (<const int32_t*>x)[0], b = (<const int32_t*>y)[0]
    return (a > b) - (a < b)


cdef CacheEntryC* entry_new(uint8_t kind, intp_t n_data, intp_t n_unc, intp_t n_acc,
                            intp_t n_rej) except NULL nogil:
    """An unsealed entry with room for its data and unc arrays (fill them, then entry_seal)."""
    cdef size_t header = (sizeof(CacheEntryC) + 7) & ~(<size_t>7)
    cdef CacheEntryC* e = <CacheEntryC*>malloc(header + <size_t>(n_data + n_unc + 1)
                                               * sizeof(int32_t))
    if e == NULL:
        with gil:
            raise MemoryError()
    e.kind = kind
    e.n_data = n_data
    e.n_unc = n_unc
    e.n_acc = n_acc
    e.n_rej = n_rej
    e.hash = 0
    e.data = <const int32_t*>((<char*>e) + header)
    e.unc = e.data + n_data
    return e


cdef void entry_seal(CacheEntryC* e) noexcept nogil:
    # FNV-1a over the kind and both arrays: the dedup key
    cdef uint64_t h = 0xCBF29CE484222325ULL ^ e.kind
    cdef intp_t k
    h = (h ^ <uint64_t>e.n_data) * 0x100000001B3ULL
    h = (h ^ <uint64_t>e.n_unc) * 0x100000001B3ULL
    for k in range(e.n_data):
        h = (h ^ <uint32_t>e.data[k]) * 0x100000001B3ULL
    for k in range(e.n_unc):
        h = (h ^ <uint32_t>e.unc[k]) * 0x100000001B3ULL
    e.hash = h


cdef bint entry_equal(const CacheEntryC* x, const CacheEntryC* y) noexcept nogil:
    cdef intp_t k
    if (x.hash != y.hash or x.kind != y.kind or x.n_data != y.n_data or x.n_unc != y.n_unc):
        return False
    for k in range(x.n_data):
        if x.data[k] != y.data[k]:
            return False
    for k in range(x.n_unc):
        if x.unc[k] != y.unc[k]:
            return False
    return True


cdef CacheEntryC* classify_entry(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                 int32_t state, const int32_t* ctx, intp_t n_ctx,
                                 const uint8_t* follow) except NULL nogil:
    """Walk ``state`` and build its entry in the smallest of three forms: accepted ids (when
    they are the fewest and fit in a bitset's size), rejected ids, or an accepted bitset; ids
    ascending either way, so equal sets give equal entries."""
    cdef intp_t n_acc, n_unc, n_rej, n_words = v.n_words, k, w, m
    cdef uint8_t kind
    cdef CacheEntryC* e
    cdef int32_t* data
    cdef word_t bits
    _walk(s, a, v, state, ctx, n_ctx, follow, &n_acc, &n_unc)
    n_rej = v.n_sorted - n_acc - n_unc
    if n_acc <= n_rej and n_acc <= n_words:
        kind = XM_KIND_ACCEPTED
        e = entry_new(kind, n_acc, n_unc, n_acc, n_rej)
        data = <int32_t*>e.data
        for k in range(n_acc):
            data[k] = v.sorted_ids[s.acc[k]]
        qsort(data, <size_t>n_acc, sizeof(int32_t), _cmp_i32)
    elif n_rej <= n_words:
        kind = XM_KIND_REJECTED
        e = entry_new(kind, n_rej, n_unc, n_acc, n_rej)
        data = <int32_t*>e.data
        # rejected = eligible minus accepted minus uncertain, enumerated in id order
        for k in range(n_acc):
            bitset_set(s.marks, v.sorted_ids[s.acc[k]])
        for k in range(n_unc):
            bitset_set(s.marks, v.sorted_ids[s.unc[k]])
        m = 0
        for w in range(n_words):
            bits = v.eligible[w] & ~s.marks[w]
            s.marks[w] = 0
            while bits:
                data[m] = <int32_t>((w << 5) + __builtin_ctz(bits))
                m += 1
                bits &= bits - 1
    else:
        kind = XM_KIND_BITSET
        e = entry_new(kind, n_words, n_unc, n_acc, n_rej)
        data = <int32_t*>e.data
        memset(data, 0, <size_t>n_words * sizeof(int32_t))
        for k in range(n_acc):
            bitset_set(<word_t*>data, v.sorted_ids[s.acc[k]])
    if n_unc:
        memcpy(<int32_t*>e.unc, s.unc, <size_t>n_unc * sizeof(int32_t))
    entry_seal(e)
    return e
