"""The lazy, shared token-mask cache of one compiled grammar (see _mask_cache.pxd).

A compiled grammar starts with no entry classified.  The first fill that meets a state on top
of its stack classifies it (``cache_classify``, no GIL) and publishes the entry; every later
fill, in any matcher and thread, reads it.  Threads racing on one state both classify it, the
first to publish wins and the other frees its copy, so a reader sees either nothing or a
complete entry.  Identical entries are stored once (hash + full compare under a short spin
lock).  ``precompute`` classifies every state up front on C threads (the warm-up mode).

Masks never depend on what was classified when: an entry is a pure function of the automaton,
the vocabulary and the state.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')
    >>> cg.cache_summary()["classified"]
    0
"""

from cpython.ref cimport PyObject

from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy, memcmp

import numpy as np

from xmask.errors import GrammarLimitError

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint64_t, intp_t
from xmask.runtime._atomic cimport xm_flag_try, xm_flag_release, xm_yield
from xmask.runtime._clock cimport monotonic_seconds
from xmask.runtime._atomic cimport xm_fetch_add
from xmask.runtime._workers cimport xm_pool_run
from xmask.runtime._tables cimport AutomatonC, VocabC, AutomatonTables, VocabTables
from xmask.runtime._token_equivalence cimport agree_depth
from xmask.runtime._cache_entry cimport CacheEntryC, entry_new, entry_seal, entry_equal
from xmask.runtime._classify cimport (
    ClassifyScratch, scratch_init, scratch_free, classify_entry, classify_entry_from,
    classify_pair_from,
)

# A rule called from more than this many places (the shared character tail of long bounded
# strings: one call per position) is classified up to its end only (n_ctx < 0 for
# classify_entry): a token going on past it with a byte of the rule's FOLLOW set is uncertain,
# as if its callers were unknown.  Walking on in every caller at once would cost that many stack
# steps per byte and decide almost nothing (some caller reads almost anything).  Instead, a
# fill that meets such a state on top of the stack over a plain frame classifies the pair
# (state, the frame's state) once (MaskCacheC.pair_blocks): an exact entry for that caller, so
# the tokens the state's own entry would leave uncertain are not checked at every fill.  A
# cache reads the value when it is built.
cdef intp_t _max_ctx_walk = 32
# A state whose own entry leaves at least this many tokens uncertain is classified, on top of
# the stack over a plain frame, with that frame too (MaskCacheC.pair_min_unc; -1: never).  Its
# own entry's uncertain tokens are mostly the ones that end its rule (a string's closing quote
# and what follows): the real stack checks them at every fill (~75-100 ns each, Llama-3), where
# the pair's entry accepts or rejects most of them.  The pair is classified from the own entry
# (classify_pair_from: only its uncertain tokens are walked, ~ the cost of one fill's check), so
# a fill pays that once per (state, caller) met instead of at every visit.  A cache reads the
# value when it is built.
cdef intp_t _pair_min_unc = 16


def set_max_ctx_walk(n):
    """Set how many return states a classification walk continues into, for caches built
    afterwards (tests: a huge value walks every caller); returns the previous value.

    Example::

        >>> old = set_max_ctx_walk(10**9); _ = set_max_ctx_walk(old)
    """
    global _max_ctx_walk
    old = _max_ctx_walk
    _max_ctx_walk = int(n)
    return old


def set_pair_min_uncertain(n):
    """Set from how many uncertain tokens in its own entry a state on top of the stack over a
    plain frame uses the entry of (state, that frame's state) instead, for caches built
    afterwards (-1: never; tests: 0 pairs every such state); returns the previous value.

    Example::

        >>> old = set_pair_min_uncertain(0); _ = set_pair_min_uncertain(old)
    """
    global _pair_min_unc
    old = _pair_min_unc
    _pair_min_unc = int(n)
    return old


cdef inline void _lock(MaskCacheC* c) noexcept nogil:
    while not xm_flag_try(&c.lock):
        xm_yield()


cdef inline void _unlock(MaskCacheC* c) noexcept nogil:
    xm_flag_release(&c.lock)


cdef intp_t _entry_bytes(const CacheEntryC* e) noexcept nogil:
    return 4 * (e.n_data + e.n_unc)


cdef int _table_put(CacheEntryC** table, intp_t cap, CacheEntryC* e) noexcept nogil:
    cdef intp_t slot = <intp_t>(e.hash & <uint64_t>(cap - 1))
    while table[slot] != NULL:
        slot = (slot + 1) & (cap - 1)
    table[slot] = e
    return 0


cdef int _register(EntryStore* c, CacheEntryC* e) noexcept nogil:
    # Add a new distinct entry (lock held).  -1 when out of memory (nothing changed).
    cdef intp_t k, new_cap
    cdef CacheEntryC** t
    cdef CacheEntryC** o
    if c.n_owned + 1 > c.owned_cap:
        new_cap = c.owned_cap * 2 if c.owned_cap else 64
        o = <CacheEntryC**>realloc(c.owned, <size_t>new_cap * sizeof(CacheEntryC*))
        if o == NULL:
            return -1
        c.owned = o
        c.owned_cap = new_cap
    if 2 * (c.n_owned + 1) > c.table_cap:
        new_cap = c.table_cap * 2 if c.table_cap else 128
        t = <CacheEntryC**>calloc(<size_t>new_cap, sizeof(CacheEntryC*))
        if t == NULL:
            return -1
        for k in range(c.n_owned):
            _table_put(t, new_cap, c.owned[k])
        free(c.table)
        c.table = t
        c.table_cap = new_cap
    _table_put(c.table, c.table_cap, e)
    c.owned[c.n_owned] = e
    c.n_owned += 1
    c.bytes += _entry_bytes(e)
    return 0


cdef CacheEntryC* _find(const EntryStore* c, const CacheEntryC* e) noexcept nogil:
    cdef intp_t slot
    if c.table_cap == 0:
        return NULL
    slot = <intp_t>(e.hash & <uint64_t>(c.table_cap - 1))
    while c.table[slot] != NULL:
        if entry_equal(c.table[slot], e):
            return c.table[slot]
        slot = (slot + 1) & (c.table_cap - 1)
    return NULL


cdef void _store_free(EntryStore* c) noexcept nogil:
    cdef intp_t k
    for k in range(c.n_owned):
        free(c.owned[k])
    free(c.owned)
    free(c.table)
    memset(c, 0, sizeof(EntryStore))


cdef int64_t _store_bytes(const EntryStore* c) noexcept nogil:
    # payload, headers and dedup table
    return c.bytes + c.n_owned * <int64_t>sizeof(CacheEntryC) + c.table_cap * <int64_t>sizeof(void*)


cdef const CacheEntryC* _publish_locked(MaskCacheC* c, CacheEntryC** slot, EntryStore* store,
                                       intp_t* count, CacheEntryC* e) except NULL nogil:
    # With the lock held (released here): publish a new (unowned) entry into `slot` (a state's
    # or a pair's), deduplicated in `store`; returns what the slot ends up with.
    cdef CacheEntryC* cur = slot[0]
    cdef CacheEntryC* same
    if cur != NULL:  # another thread won the race
        _unlock(c)
        free(e)
        return cur
    same = _find(store, e)
    if same != NULL:
        free(e)
        e = same
    elif _register(store, e) != 0:
        _unlock(c)
        free(e)
        with gil:
            raise MemoryError()
    xm_store_release(<void**>slot, e)
    count[0] += 1
    _unlock(c)
    return e


cdef const CacheEntryC* _publish(MaskCacheC* c, int32_t state, CacheEntryC* e) except NULL nogil:
    # Publish a new (unowned) entry for `state`; returns what the state ends up with.
    _lock(c)
    return _publish_locked(c, &c.entry[state], &c.store, &c.n_classified, e)


cdef const SpentMemoC* cache_spent_memo_find(MaskCacheC* c, int32_t state,
                                             const uint8_t* first) noexcept nogil:
    # The published spent-top mask for (state, first), or NULL.
    cdef intp_t k
    cdef const SpentMemoC* m
    cdef const SpentMemoC* found = NULL
    _lock(c)
    for k in range(c.n_spent_memo):
        m = c.spent_memo[k]
        if m.state == state and memcmp(m.first, first, 256) == 0:
            found = m
            break
    _unlock(c)
    return found


cdef bint cache_spent_memo_publish(MaskCacheC* c, SpentMemoC* m) noexcept nogil:
    # Keep m (then the cache owns it, True) unless an equal key is there already or the memo
    # is full (False: the caller still owns m).
    cdef intp_t k
    cdef bint kept = False
    _lock(c)
    for k in range(c.n_spent_memo):
        if c.spent_memo[k].state == m.state and memcmp(c.spent_memo[k].first, m.first, 256) == 0:
            break
    else:
        if c.spent_memo == NULL:
            c.spent_memo = <SpentMemoC**>calloc(SPENT_MEMO_MAX, sizeof(SpentMemoC*))
        if c.spent_memo != NULL and c.n_spent_memo < SPENT_MEMO_MAX:
            c.spent_memo[c.n_spent_memo] = m
            c.n_spent_memo += 1
            c.spent_memo_bytes += (<int64_t>sizeof(SpentMemoC) + m.n_words * <int64_t>sizeof(word_t)
                                   + m.n_bail * <int64_t>sizeof(int32_t))
            kept = True
    _unlock(c)
    return kept


cdef void _share(MaskCacheC* c, int32_t state, CacheEntryC* e) noexcept nogil:
    # Give `state` an already registered entry (unless it has one).
    _lock(c)
    if c.entry[state] == NULL:
        xm_store_release(<void**>&c.entry[state], e)
        c.n_classified += 1
    _unlock(c)


cdef CacheEntryC** _pair_row_locked(MaskCacheC* c, int32_t state) noexcept nogil:
    # The state's pair row (lock held), allocated (with its block) on first use; NULL when out
    # of memory.
    cdef CacheEntryC** row
    cdef intp_t n_slots = c.ctx_off[c.state_rule[state] + 1] - c.ctx_off[c.state_rule[state]]
    cdef CacheEntryC*** block = c.pair_blocks[state >> PAIR_BLOCK_SHIFT]
    if block == NULL:
        block = <CacheEntryC***>calloc(<size_t>1 << PAIR_BLOCK_SHIFT, sizeof(CacheEntryC**))
        if block == NULL:
            return NULL
        c.pair_block_bytes += (<int64_t>1 << PAIR_BLOCK_SHIFT) * <int64_t>sizeof(void*)
        xm_store_release(<void**>&c.pair_blocks[state >> PAIR_BLOCK_SHIFT], block)
    row = block[state & ((1 << PAIR_BLOCK_SHIFT) - 1)]
    if row == NULL:
        row = <CacheEntryC**>calloc(<size_t>(n_slots if n_slots > 0 else 1), sizeof(CacheEntryC*))
        if row == NULL:
            return NULL
        c.pair_row_bytes += 8 * n_slots
        xm_store_release(<void**>&block[state & ((1 << PAIR_BLOCK_SHIFT) - 1)], row)
    return row


cdef int _share_pair(MaskCacheC* c, int32_t state, intp_t slot, CacheEntryC* e) except -1 nogil:
    # Give the pair (state, slot) an already registered pair entry (unless it has one).
    cdef CacheEntryC** row
    _lock(c)
    row = _pair_row_locked(c, state)
    if row == NULL:
        _unlock(c)
        with gil:
            raise MemoryError()
    if row[slot] == NULL:
        xm_store_release(<void**>&row[slot], e)
        c.n_pairs += 1
    _unlock(c)
    return 0


cdef int _check_cache_memory(MaskCacheC* c) except -1 nogil:
    # The stored entries may not pass max_bytes: checked before each classification, so the
    # cache passes its cap by at most one entry (a bitset plus uncertain ids: < 4 bytes x the
    # vocabulary).
    cdef int64_t stored = (c.store.bytes + c.store.n_owned * <int64_t>sizeof(CacheEntryC)
                           + _store_bytes(&c.pair_store) + c.pair_row_bytes)
    if c.max_bytes > 0 and stored > c.max_bytes:
        with gil:
            raise GrammarLimitError(
                f"the token-mask cache holds more than {c.max_bytes / 1048576:.3g} MB "
                f"(CompileLimits.max_compile_memory_bytes)")
    return 0


cdef CacheEntryC* _classify_with(ClassifyScratch* s, MaskCacheC* c, const AutomatonC* a,
                                 const VocabC* v, int32_t state, double deadline) except NULL nogil:
    # deadline: a monotonic time (0: the cache's own, max_seconds from now)
    cdef int32_t r = c.state_rule[state]
    cdef CacheEntryC* e
    cdef intp_t n_ctx = c.ctx_off[r + 1] - c.ctx_off[r]
    _check_cache_memory(c)
    _limit_scratch(s, c, deadline)
    if n_ctx > c.max_ctx_walk:
        n_ctx = -1  # (its follow row is the rule's FOLLOW set, see MaskCache.__init__)
    e = classify_entry(s, a, v, state, -1, c.ctx_states + c.ctx_off[r], n_ctx,
                       c.follow + 256 * <intp_t>r)
    _note_peaks(s, c)
    return e


cdef inline void _limit_scratch(ClassifyScratch* s, MaskCacheC* c, double deadline) noexcept nogil:
    # the cache's bounds on one classification (deadline 0: max_seconds from now)
    s.max_tops = c.max_tops
    s.max_bytes = c.max_bytes
    s.deadline = deadline
    if deadline <= 0 and c.max_seconds > 0:
        s.deadline = monotonic_seconds() + c.max_seconds


cdef inline void _note_peaks_locked(const ClassifyScratch* s, MaskCacheC* c) noexcept nogil:
    # (the lock held) the cache's largest top set and stack memory seen so far
    if s.peak_tops > c.peak_tops:
        c.peak_tops = s.peak_tops
    if s.peak_bytes > c.peak_bytes:
        c.peak_bytes = s.peak_bytes


cdef inline void _note_peaks(const ClassifyScratch* s, MaskCacheC* c) noexcept nogil:
    _lock(c)
    _note_peaks_locked(s, c)
    _unlock(c)


cdef const CacheEntryC* cache_classify(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                       int32_t state, double* deadline) except NULL nogil:
    # A fill's lazy classification: every state one fill classifies shares one deadline, so a
    # fill that meets thousands of new states (a grammar with that many rules live at once)
    # still ends max_compile_seconds after its first classification.
    cdef ClassifyScratch s
    cdef CacheEntryC* e = NULL
    cdef const CacheEntryC* got = NULL
    cdef int32_t r = c.state_rule[state], last
    cdef intp_t same = 0, n_ctx
    # The state the rule classified last may classify every token alike (the positions of a
    # long bounded string far from its bound): then its entry is this state's too.  Or every
    # token up to some length (a position nearer the bound): then only the longer ones are
    # walked (_token_equivalence.pyx).
    _lock(c)
    last = c.last_of_rule[r]
    _unlock(c)
    if last >= 0 and last != state:
        got = cache_peek(c, last)
        if got != NULL:
            same = agree_depth(a, state, last, v.max_token_len) - 1
            if same >= v.max_token_len:
                _share(c, state, <CacheEntryC*>got)
                return cache_peek(c, state)
    if deadline[0] <= 0 and c.max_seconds > 0:
        deadline[0] = monotonic_seconds() + c.max_seconds
    scratch_init(&s, v)
    try:
        if same > 0:
            n_ctx = c.ctx_off[r + 1] - c.ctx_off[r]
            _check_cache_memory(c)
            _limit_scratch(&s, c, deadline[0])
            e = classify_entry_from(&s, a, v, state, c.ctx_states + c.ctx_off[r],
                                    -1 if n_ctx > c.max_ctx_walk else n_ctx,
                                    c.follow + 256 * <intp_t>r, got, same)
            if e != NULL:
                _note_peaks(&s, c)
        if e == NULL:
            e = _classify_with(&s, c, a, v, state, deadline[0])
    finally:
        scratch_free(&s)
    got = _publish(c, state, e)
    _lock(c)
    c.last_of_rule[r] = state
    _unlock(c)
    return got


cdef const CacheEntryC* cache_classify_pair(MaskCacheC* c, const AutomatonC* a,
                                            const VocabC* v, int32_t state, int32_t ret,
                                            intp_t slot, double* deadline,
                                            const CacheEntryC* own=NULL) except NULL nogil:
    # Classify `state` over a frame at `ret` (pair slot `slot` of the state's row): the walk
    # starts with both frames, and continues into the callers of ret's rule.  With `own` (the
    # state's own entry) only its uncertain tokens are walked (classify_pair_from).
    cdef ClassifyScratch s
    cdef CacheEntryC* e
    cdef CacheEntryC** row
    cdef int32_t r = c.state_rule[ret]
    cdef intp_t n_ctx = c.ctx_off[r + 1] - c.ctx_off[r]
    if n_ctx > c.max_ctx_walk:
        n_ctx = -1
    if deadline[0] <= 0 and c.max_seconds > 0:
        deadline[0] = monotonic_seconds() + c.max_seconds
    scratch_init(&s, v)
    try:
        _check_cache_memory(c)
        _limit_scratch(&s, c, deadline[0])
        if own != NULL:
            e = classify_pair_from(&s, a, v, state, ret, c.ctx_states + c.ctx_off[r], n_ctx,
                                   c.follow + 256 * <intp_t>r, own)
        else:
            e = classify_entry(&s, a, v, state, ret, c.ctx_states + c.ctx_off[r], n_ctx,
                               c.follow + 256 * <intp_t>r)
    finally:
        scratch_free(&s)
    _lock(c)
    _note_peaks_locked(&s, c)
    row = _pair_row_locked(c, state)
    if row == NULL:
        _unlock(c)
        free(e)
        with gil:
            raise MemoryError()
    return _publish_locked(c, &row[slot], &c.pair_store, &c.n_pairs, e)


cdef int _precompute_chunk(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                           const int32_t* states, const int32_t* rets, intp_t n,
                           double deadline, char* status) except -1 nogil:
    # Classify states[0:n] that have no entry yet or, with rets, the (states[i], rets[i])
    # pairs (rules whose callers a walk does not follow, see cache_pair_slot); status: 1 =
    # past the deadline.
    cdef ClassifyScratch s
    cdef intp_t i, slot
    cdef double dl
    scratch_init(&s, v)
    try:
        for i in range(n):
            if status[0]:
                break
            if deadline > 0 and monotonic_seconds() > deadline:
                status[0] = 1
                break
            if rets == NULL:
                if cache_peek(c, states[i]) == NULL:
                    _publish(c, states[i], _classify_with(&s, c, a, v, states[i], deadline))
                continue
            slot = cache_pair_slot(c, states[i], rets[i])
            if slot >= 0 and cache_pair_peek(c, states[i], slot) == NULL:
                dl = deadline
                cache_classify_pair(c, a, v, states[i], rets[i], slot, &dl)
    finally:
        scratch_free(&s)
    return 0


cdef extern from "Python.h":
    void Py_XDECREF(PyObject* o)


cdef struct PrecomputeJob:
    # one warm-up call, shared by its threads: chunk k is states[k * per : (k + 1) * per]
    MaskCacheC* c
    const AutomatonC* a
    const VocabC* v
    const int32_t* states
    const int32_t* rets  # NULL: classify states; else the pairs (states[i], rets[i])
    intp_t n
    intp_t per
    int64_t next_chunk  # atomic: the next chunk to take
    double deadline
    char status         # 1 = past the deadline, 2 = an error (raised on some thread)


cdef int _precompute_chunks(PrecomputeJob* j) except -1 nogil:
    # take chunks until none is left or a thread stopped the job
    cdef intp_t k
    cdef intp_t n_chunks = (j.n + j.per - 1) // j.per
    while not j.status:
        k = <intp_t>xm_fetch_add(&j.next_chunk, 1)
        if k >= n_chunks:
            break
        _precompute_chunk(j.c, j.a, j.v, j.states + k * j.per,
                          NULL if j.rets == NULL else j.rets + k * j.per,
                          min(j.per, j.n - k * j.per), j.deadline, &j.status)
    return 0


ctypedef int (*_ChunksFn)(PrecomputeJob* j) noexcept nogil


cdef int _precompute_job(void* arg) noexcept nogil:
    # a pool thread's job: called as a plain C function, a -1 return leaves the exception set
    # on the thread's state, where the pool finds it (_workers.pxd)
    cdef _ChunksFn chunks = <_ChunksFn>_precompute_chunks
    cdef PrecomputeJob* j = <PrecomputeJob*>arg
    if chunks(j) < 0:
        j.status = 2  # the other threads stop after their chunk
        return -1
    return 0


cdef bint _all_in_range(const int32_t[::1] v, intp_t hi) noexcept:
    """Whether every value of ``v`` lies in ``0 .. hi - 1`` (a C pass over a table of a
    possibly deserialized, untrusted automaton)."""
    cdef intp_t k
    cdef bint ok = True
    with nogil:
        for k in range(v.shape[0]):
            if v[k] < 0 or v[k] >= hi:
                ok = False
                break
    return ok


cdef struct PairRef:
    # one classified (state, return-state slot) pair and its entry (export)
    int32_t state
    intp_t slot
    const CacheEntryC* entry


cdef intp_t _pair_refs_locked(MaskCacheC* c, PairRef** out) noexcept nogil:
    # The classified pairs in (state, slot) order into a new array *out (lock held; the caller
    # frees it); their count, -1 when out of memory.
    cdef intp_t b, r, k, n = 0, state, n_slots
    cdef CacheEntryC*** block
    cdef CacheEntryC** row
    cdef PairRef* refs
    out[0] = NULL
    if c.n_pairs == 0:
        return 0
    refs = <PairRef*>malloc(<size_t>c.n_pairs * sizeof(PairRef))
    if refs == NULL:
        return -1
    for b in range(c.n_pair_blocks):
        block = c.pair_blocks[b]
        if block == NULL:
            continue
        for r in range(1 << PAIR_BLOCK_SHIFT):
            row = block[r]
            state = (b << PAIR_BLOCK_SHIFT) + r
            if row == NULL or state >= c.n_states:
                continue
            n_slots = c.ctx_off[c.state_rule[state] + 1] - c.ctx_off[c.state_rule[state]]
            for k in range(n_slots):
                if row[k] != NULL and n < c.n_pairs:
                    refs[n].state = <int32_t>state
                    refs[n].slot = k
                    refs[n].entry = row[k]
                    n += 1
    out[0] = refs
    return n


cdef CacheEntryC* _loaded_entry(intp_t k, const uint8_t[::1] kind, const int64_t[::1] eo,
                                const int64_t[::1] el, const int64_t[::1] uo,
                                const int64_t[::1] ul, const int64_t[::1] na,
                                const int64_t[::1] nr, const int32_t[::1] data,
                                const int32_t[::1] unc) except NULL:
    # Entry k of export()-style arrays (MaskCache.load), sealed and unowned.
    cdef CacheEntryC* e = entry_new(kind[k], el[k], ul[k], na[k], nr[k])
    cdef intp_t i
    for i in range(el[k]):
        (<int32_t*>e.data)[i] = data[eo[k] + i]
    for i in range(ul[k]):
        (<int32_t*>e.unc)[i] = unc[uo[k] + i]
    entry_seal(e)
    return e


cdef class MaskCache:
    """The token-mask cache of one compiled grammar: per state an entry, classified on demand.

    Built from the grammar's ``Automaton`` (its per-rule return contexts and follow sets);
    matchers reach it through the C struct.  Python callers use ``precompute``, ``summary``,
    ``export`` and ``load`` (serialization, ``cache_stats``).
    """

    def __cinit__(self):
        memset(&self.c, 0, sizeof(MaskCacheC))

    def __init__(self, automaton, limits=None):
        cdef intp_t n = automaton.n_states
        cdef intp_t n_rules = len(automaton.rule_names)
        cdef intp_t r, n_many = 0
        ctx_off = np.ascontiguousarray(automaton.rule_ctx_offsets, dtype=np.int64)
        ctx_states = np.ascontiguousarray(automaton.rule_ctx_flat, dtype=np.int32)
        state_rule = np.ascontiguousarray(automaton.state_rule, dtype=np.int32)
        if ctx_off.ndim != 1 or ctx_states.ndim != 1 or state_rule.ndim != 1:
            raise ValueError("automaton context tables have the wrong shape")
        cdef const int64_t[::1] off_v = ctx_off
        cdef const int32_t[::1] cs_v = ctx_states
        cdef const int32_t[::1] sr_v = state_rule
        # the checks as C loops: a compile pays them for every grammar (their NumPy form, one
        # small array per test, cost ~10 us); deserialized automata are untrusted
        if (off_v.shape[0] != n_rules + 1 or off_v[0] != 0
                or off_v[n_rules] != cs_v.shape[0]):
            raise ValueError("automaton return-context offsets are inconsistent")
        for r in range(n_rules):
            if off_v[r + 1] < off_v[r]:
                raise ValueError("automaton return-context offsets are inconsistent")
            if off_v[r + 1] - off_v[r] > _max_ctx_walk:
                n_many += 1
        if sr_v.shape[0] != n:
            raise ValueError("automaton context tables have the wrong size")
        if not _all_in_range(cs_v, n):
            raise ValueError("a return context state is out of range")
        if not _all_in_range(sr_v, n_rules):
            raise ValueError("a state's rule is out of range")
        follow = np.array(automaton.rule_ctx_follow, dtype=np.uint8)
        if n_many:
            # a rule with more return states than a walk follows: its own FOLLOW set (_classify)
            many = np.flatnonzero(np.diff(ctx_off) > _max_ctx_walk)
            follow[many] = np.asarray(automaton.rule_follow, dtype=np.uint8)[many]
        follow = np.ascontiguousarray(follow.reshape(-1))
        if follow.shape[0] != 256 * n_rules:
            raise ValueError("automaton context tables have the wrong size")
        # keep valid pointers for empty arrays
        self.arrays = {
            "ctx_off": ctx_off,
            "ctx_states": ctx_states if ctx_states.size else np.zeros(1, np.int32),
            "follow": follow if follow.size else np.zeros(1, np.uint8),
            "state_rule": state_rule if state_rule.size else np.zeros(1, np.int32),
        }
        cdef const int64_t[::1] co = self.arrays["ctx_off"]
        cdef const int32_t[::1] cs = self.arrays["ctx_states"]
        cdef const uint8_t[::1] fo = self.arrays["follow"]
        cdef const int32_t[::1] sr = self.arrays["state_rule"]
        self.c.n_states = n
        self.c.max_ctx_walk = _max_ctx_walk
        self.c.pair_min_unc = _pair_min_unc
        if limits is not None:  # a CompileLimits: bounds on each state's classification
            self.c.max_tops = limits.max_classify_tops
            self.c.max_bytes = limits.max_compile_memory_bytes
            self.c.max_seconds = limits.max_compile_seconds or 0.0
        self.c.ctx_off = &co[0]
        self.c.ctx_states = &cs[0]
        self.c.follow = &fo[0]
        self.c.state_rule = &sr[0]
        self.c.entry = <CacheEntryC**>calloc(<size_t>(n if n > 0 else 1), sizeof(CacheEntryC*))
        self.c.last_of_rule = <int32_t*>malloc(<size_t>(n_rules if n_rules > 0 else 1) * sizeof(int32_t))
        if self.c.entry == NULL or self.c.last_of_rule == NULL:
            raise MemoryError()
        memset(self.c.last_of_rule, 0xFF, <size_t>(n_rules if n_rules > 0 else 1) * sizeof(int32_t))
        self.c.has_many = n_many > 0  # states classified with the frame they return to
        self.c.n_pair_blocks = (n >> PAIR_BLOCK_SHIFT) + 1
        self.c.pair_blocks = <CacheEntryC****>calloc(<size_t>self.c.n_pair_blocks,
                                                     sizeof(void*))
        if self.c.pair_blocks == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef intp_t k, b, r
        cdef CacheEntryC*** block
        for k in range(self.c.n_spent_memo):
            free(self.c.spent_memo[k])
        free(self.c.spent_memo)
        _store_free(&self.c.store)
        _store_free(&self.c.pair_store)
        free(self.c.entry)
        free(self.c.last_of_rule)
        if self.c.pair_blocks != NULL:
            for b in range(self.c.n_pair_blocks):
                block = self.c.pair_blocks[b]
                if block != NULL:
                    for r in range(1 << PAIR_BLOCK_SHIFT):
                        free(block[r])
                    free(block)
            free(self.c.pair_blocks)

    def __reduce__(self):
        raise TypeError("MaskCache is not picklable; serialize its CompiledGrammar instead")

    def precompute(self, AutomatonTables automaton, VocabTables vocab, states, int max_threads=1,
                   double deadline=0.0, rets=None):
        """Classify every state in ``states`` (int32, top-capable) that has no entry yet, on up
        to ``max_threads`` C threads; with ``rets``, every pair ``(states[i], rets[i])`` of a
        state of a rule whose callers a walk does not follow and one of that rule's return
        states (see :attr:`max_ctx_walk`).  ``deadline``: a ``time.monotonic()`` value (0 =
        none); returns False if it passed before every one was classified, else True."""
        cdef const int32_t[::1] st = np.ascontiguousarray(states, dtype=np.int32)
        cdef const int32_t[::1] rt = st if rets is None else np.ascontiguousarray(rets, dtype=np.int32)
        cdef intp_t n = st.shape[0], k
        cdef PrecomputeJob job
        cdef intp_t n_threads
        cdef int ran
        cdef PyObject* err = NULL
        self._check_states(st)
        if rets is not None:
            if rt.shape[0] != n:
                raise ValueError("states and rets differ in length")
            self._check_states(rt)
        if n == 0:
            return True
        if automaton.c.n_states != self.c.n_states:
            raise ValueError("the automaton tables do not belong to this cache")
        # small chunks so threads balance (states differ 1000x in cost).  The work runs on
        # the warm-up pool's threads, at a lower OS priority, while the caller waits
        # (_workers.pxd): a thread that wakes up meanwhile (a server's scheduler) gets a core
        # at once, and the warm-up still uses every idle core.  When the pool is busy with
        # another grammar's warm-up, the caller does the work itself.
        n_threads = max(1, min(<intp_t>max_threads, (n + 15) // 16))
        memset(&job, 0, sizeof(PrecomputeJob))
        job.c, job.a, job.v, job.states, job.n = &self.c, &automaton.c, &vocab.c, &st[0], n
        job.rets = NULL if rets is None else &rt[0]
        job.per = max(1, min(16, n // (4 * n_threads)))
        job.deadline = deadline
        with nogil:
            ran = xm_pool_run(_precompute_job, &job, <int>n_threads, &err)
            if ran == 0:
                _precompute_chunks(&job)  # raises here, in the caller
        if err != NULL:
            e = <object>err
            Py_XDECREF(err)
            raise e
        return job.status == 0

    @property
    def max_ctx_walk(self):
        """How many return states a classification walk continues into: states of a rule
        with more are classified per (state, return state) pair as well."""
        return int(self.c.max_ctx_walk)

    def share(self, members, reps):
        """Give each ``members[i]`` without an entry the entry of ``reps[i]`` (which must be
        classified): states that classify every token alike (see mask_cache)."""
        cdef const int32_t[::1] m = np.ascontiguousarray(members, dtype=np.int32)
        cdef const int32_t[::1] r = np.ascontiguousarray(reps, dtype=np.int32)
        cdef intp_t i, bad = -1
        cdef CacheEntryC* e
        if m.shape[0] != r.shape[0]:
            raise ValueError("members and reps differ in length")
        self._check_states(m)
        self._check_states(r)
        with nogil:  # (a big grammar shares tens of thousands of states)
            for i in range(m.shape[0]):
                e = <CacheEntryC*>cache_peek(&self.c, r[i])
                if e == NULL:
                    bad = i
                    break
                _share(&self.c, m[i], e)
        if bad >= 0:
            raise ValueError(f"state {r[bad]} is not classified")

    def share_pairs(self, states, rets, from_states, from_rets):
        """Give each pair ``(states[i], rets[i])`` without an entry the entry of the pair
        ``(from_states[i], from_rets[i])`` (which must be classified): pairs that classify
        every token alike (see mask_cache).  Pairs that are not pairs of this cache (see
        :attr:`max_ctx_walk`) raise ``ValueError``."""
        cdef const int32_t[::1] st = np.ascontiguousarray(states, dtype=np.int32)
        cdef const int32_t[::1] rt = np.ascontiguousarray(rets, dtype=np.int32)
        cdef const int32_t[::1] fs = np.ascontiguousarray(from_states, dtype=np.int32)
        cdef const int32_t[::1] fr = np.ascontiguousarray(from_rets, dtype=np.int32)
        cdef intp_t i, n = st.shape[0], slot, from_slot, bad = -1
        cdef bint unclassified = False
        cdef const CacheEntryC* e
        if not (rt.shape[0] == fs.shape[0] == fr.shape[0] == n):
            raise ValueError("states, rets and their sources differ in length")
        self._check_states(st)
        self._check_states(rt)
        self._check_states(fs)
        self._check_states(fr)
        if n and not self.c.has_many:
            raise ValueError("this cache has no pair entries")
        with nogil:  # (hundreds of thousands of pairs for a long bounded string)
            for i in range(n):
                slot = cache_pair_slot(&self.c, st[i], rt[i])
                from_slot = cache_pair_slot(&self.c, fs[i], fr[i])
                if slot < 0 or from_slot < 0:
                    bad = i
                    break
                e = cache_pair_peek(&self.c, fs[i], from_slot)
                if e == NULL:
                    bad = i
                    unclassified = True
                    break
                _share_pair(&self.c, st[i], slot, <CacheEntryC*>e)
        if bad >= 0:
            raise ValueError(f"pair ({fs[bad]}, {fr[bad]}) is not classified" if unclassified else
                             f"({st[bad]}, {rt[bad]}) or ({fs[bad]}, {fr[bad]}) is not a pair")

    cdef int _check_states(self, const int32_t[::1] st) except -1:
        cdef intp_t i
        for i in range(st.shape[0]):
            if not 0 <= st[i] < self.c.n_states:
                raise ValueError(f"state {st[i]} out of range")
        return 0

    def peaks(self):
        """``(tops, bytes)``: the largest stack top set (after one byte) and parse-stack memory
        one state's classification has needed so far (what ``CompileLimits.max_classify_tops``
        and ``max_compile_memory_bytes`` bound)."""
        return int(self.c.peak_tops), int(self.c.peak_bytes)

    def summary(self):
        """``(classified states, distinct entries, entry bytes)``."""
        cdef intp_t classified, owned
        cdef int64_t nbytes
        # no Python object is made under the spin lock: that could run arbitrary Python code
        # and switch to a thread spinning on the lock while holding the GIL
        _lock(&self.c)
        classified, owned, nbytes = self.c.n_classified, self.c.store.n_owned, self.c.store.bytes
        _unlock(&self.c)
        return classified, owned, nbytes

    @property
    def nbytes(self):
        """Bytes held: the sum of ``memory_parts()``."""
        return sum(self.memory_parts().values())

    def memory_parts(self):
        """Bytes held, by part (one consistent snapshot): ``entry_payloads`` (token ids and
        uncertain positions of the distinct entries, and the masks memoized for the last token
        of a token budget), ``entry_headers``, ``state_index`` (the per-state entry pointers,
        and one pointer per block of pair rows), ``dedup_table``, ``context_tables`` (return
        contexts, follow sets, state rules) and, for a grammar with a rule whose callers are
        not walked or once a fill paired a state with its frame, ``pair_entries`` (the entries
        of (state, return state) pairs, MaskCacheC.pair_blocks, with their rows, blocks and
        table).  Entries only grow, so equal results before and after an ``export()``
        describe that export."""
        cdef int64_t payload, headers, index, table, pairs
        # (MaskCacheC.last_of_rule: one int per rule)
        cdef int64_t rule_index = max(self.arrays["ctx_off"].shape[0] - 1, 1) * <int64_t>sizeof(int32_t)
        _lock(&self.c)  # plain C reads only under the lock (see summary)
        payload = self.c.store.bytes + self.c.spent_memo_bytes
        headers = self.c.store.n_owned * <int64_t>sizeof(CacheEntryC)
        index = (self.c.n_states + self.c.n_pair_blocks) * <int64_t>sizeof(void*) + rule_index
        table = self.c.store.table_cap * <int64_t>sizeof(void*)
        pairs = (_store_bytes(&self.c.pair_store) + self.c.pair_row_bytes
                 + self.c.pair_block_bytes)
        has_pairs = self.c.has_many or self.c.pair_block_bytes > 0
        _unlock(&self.c)
        parts = {"entry_payloads": payload, "entry_headers": headers, "state_index": index,
                 "dedup_table": table,
                 "context_tables": sum(a.nbytes for a in self.arrays.values())}
        if has_pairs:
            parts["pair_entries"] = pairs
        return parts

    def export(self):
        """A snapshot as flat arrays: ``state_entry`` (entry index, -1 = not classified),
        ``entry_kind``, ``entry_off``/``entry_len`` (range in ``data``), ``unc_off``/``unc_len``
        (range in ``unc``), ``entry_accepted``/``entry_rejected`` (token counts), ``data``,
        ``unc``, and the classified (state, return state) pairs as ``pair_state`` /
        ``pair_slot`` (the return state's place in the state's rule's return states) /
        ``pair_entry``.  Entries are numbered in order of first use: states in state order,
        then pairs in (state, slot) order."""
        cdef intp_t n = self.c.n_states, s, k, m = 0, dlen = 0, ulen = 0
        cdef const CacheEntryC* e
        cdef CacheEntryC** snap = <CacheEntryC**>malloc(<size_t>(n if n > 0 else 1)
                                                        * sizeof(CacheEntryC*))
        if snap == NULL:
            raise MemoryError()
        cdef PairRef* pairs = NULL
        cdef intp_t n_pairs = 0, p
        # entries are immutable and live as long as the cache: copy the pointers under the
        # lock (no Python code there, see summary), read the entries after it
        _lock(&self.c)
        memcpy(snap, self.c.entry, <size_t>n * sizeof(CacheEntryC*))
        n_pairs = _pair_refs_locked(&self.c, &pairs)
        _unlock(&self.c)
        if n_pairs < 0:
            free(snap)
            raise MemoryError()
        try:
            state_entry = np.full(n, -1, dtype=np.int32)
            pair_cols = np.empty((3, n_pairs), dtype=np.int32)  # state, slot, entry
            index = {}
            firsts = []
            for p in range(n + n_pairs):
                e = snap[p] if p < n else pairs[p - n].entry
                if e == NULL:
                    continue
                key = <size_t>e
                k = index.get(key, -1)
                if k < 0:
                    k = index[key] = len(firsts)
                    firsts.append(key)
                    dlen += e.n_data
                    ulen += e.n_unc
                if p < n:
                    state_entry[p] = k
                else:
                    pair_cols[0, p - n] = pairs[p - n].state
                    pair_cols[1, p - n] = <int32_t>pairs[p - n].slot
                    pair_cols[2, p - n] = k
        finally:
            free(snap)
            free(pairs)
        m = len(firsts)
        kind = np.empty(m, dtype=np.uint8)
        cols = {name: np.empty(m, dtype=np.int64) for name in
                ("entry_off", "entry_len", "unc_off", "unc_len", "entry_accepted",
                 "entry_rejected")}
        data = np.empty(dlen, dtype=np.int32)
        unc = np.empty(ulen, dtype=np.int32)
        dlen = ulen = 0
        for k in range(m):
            e = <const CacheEntryC*><size_t>firsts[k]
            kind[k] = e.kind
            cols["entry_off"][k] = dlen
            cols["entry_len"][k] = e.n_data
            cols["unc_off"][k] = ulen
            cols["unc_len"][k] = e.n_unc
            cols["entry_accepted"][k] = e.n_acc
            cols["entry_rejected"][k] = e.n_rej
            if e.n_data:
                data[dlen:dlen + e.n_data] = <int32_t[:e.n_data]><int32_t*>e.data
            if e.n_unc:
                unc[ulen:ulen + e.n_unc] = <int32_t[:e.n_unc]><int32_t*>e.unc
            dlen += e.n_data
            ulen += e.n_unc
        out = {"state_entry": state_entry, "entry_kind": kind, "data": data, "unc": unc,
               "pair_state": pair_cols[0].copy(), "pair_slot": pair_cols[1].copy(),
               "pair_entry": pair_cols[2].copy()}
        out.update(cols)
        return out

    def load(self, arrays):
        """Publish entries from ``export()``-style arrays (validated by the caller: ranges,
        kinds, lengths) into this cache, which must have nothing classified yet."""
        cdef const int32_t[::1] se = np.ascontiguousarray(arrays["state_entry"], dtype=np.int32)
        cdef const uint8_t[::1] kind = np.ascontiguousarray(arrays["entry_kind"], dtype=np.uint8)
        cdef const int64_t[::1] eo = np.ascontiguousarray(arrays["entry_off"], dtype=np.int64)
        cdef const int64_t[::1] el = np.ascontiguousarray(arrays["entry_len"], dtype=np.int64)
        cdef const int64_t[::1] uo = np.ascontiguousarray(arrays["unc_off"], dtype=np.int64)
        cdef const int64_t[::1] ul = np.ascontiguousarray(arrays["unc_len"], dtype=np.int64)
        cdef const int64_t[::1] na = np.ascontiguousarray(arrays["entry_accepted"], dtype=np.int64)
        cdef const int64_t[::1] nr = np.ascontiguousarray(arrays["entry_rejected"], dtype=np.int64)
        data_a = np.ascontiguousarray(arrays["data"], dtype=np.int32)
        unc_a = np.ascontiguousarray(arrays["unc"], dtype=np.int32)
        cdef const int32_t[::1] data = data_a if data_a.size else np.zeros(1, np.int32)
        cdef const int32_t[::1] unc = unc_a if unc_a.size else np.zeros(1, np.int32)
        cdef intp_t m = kind.shape[0], k, s, i, slot
        cdef CacheEntryC* e
        cdef CacheEntryC** row
        cdef const CacheEntryC* got
        if se.shape[0] != self.c.n_states:
            raise ValueError("state_entry has the wrong length")
        if self.c.n_classified:
            # entries are shared by index: a state that already had one would pass a different
            # entry on to the other states of the same index
            raise ValueError("load() needs a cache with nothing classified yet")
        made = [0] * m
        for s in range(self.c.n_states):
            k = se[s]
            if k < 0:
                continue
            if k >= m:
                raise ValueError(f"state {s} names entry {k} of {m}")
            if made[k] == 0:
                e = _loaded_entry(k, kind, eo, el, uo, ul, na, nr, data, unc)
                got = _publish(&self.c, <int32_t>s, e)
                made[k] = <size_t>got
            else:
                _share(&self.c, <int32_t>s, <CacheEntryC*><size_t>made[k])
        ps = np.ascontiguousarray(arrays.get("pair_state", np.zeros(0, np.int32)), dtype=np.int32)
        pl = np.ascontiguousarray(arrays.get("pair_slot", np.zeros(0, np.int32)), dtype=np.int32)
        pe = np.ascontiguousarray(arrays.get("pair_entry", np.zeros(0, np.int32)), dtype=np.int32)
        if not (ps.shape[0] == pl.shape[0] == pe.shape[0]):
            raise ValueError("pair_state, pair_slot and pair_entry differ in length")
        for i in range(ps.shape[0]):
            s, slot, k = ps[i], pl[i], pe[i]
            if not (0 <= s < self.c.n_states and 0 <= k < m
                    and 0 <= slot < self.c.ctx_off[self.c.state_rule[s] + 1]
                    - self.c.ctx_off[self.c.state_rule[s]]):
                raise ValueError(f"pair {i} (state {s}, slot {slot}, entry {k}) is out of range")
            if made[k] == 0:
                e = _loaded_entry(k, kind, eo, el, uo, ul, na, nr, data, unc)
                _lock(&self.c)
                row = _pair_row_locked(&self.c, <int32_t>s)
                if row == NULL:
                    _unlock(&self.c)
                    free(e)
                    raise MemoryError()
                got = _publish_locked(&self.c, &row[slot], &self.c.pair_store, &self.c.n_pairs, e)
                made[k] = <size_t>got
            else:
                _share_pair(&self.c, <int32_t>s, slot, <CacheEntryC*><size_t>made[k])
