# The token-mask cache of one compiled grammar (implemented in _mask_cache.pyx): per automaton
# state a published CacheEntryC, classified lazily by the first fill that needs it or eagerly by
# precompute; shared read-mostly by every matcher and thread of the grammar.
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, intp_t, word_t
from xmask.runtime._tables cimport AutomatonC, VocabC
from xmask.runtime._cache_entry cimport CacheEntryC
# entries are published with xm_store_release and read with xm_load_acquire: a reader sees
# NULL (not classified yet) or a complete entry, never a half-built one
from xmask.runtime._atomic cimport xm_load_acquire, xm_store_release

# The mask a spent top allows at the last token of its token budget (_fill_spent.pyx), for a
# state and the bytes that can follow its frame: a pure function of the automaton, the
# vocabulary, the state and `first`, so it is kept per grammar like the entries.  One block:
# `allowed` (n_words) and `bail` (n_bail sorted positions the real walk decides) follow it.
ctypedef struct SpentMemoC:
    int32_t state
    uint8_t first[256]
    intp_t n_words
    intp_t n_bail
    word_t* allowed
    int32_t* bail


ctypedef struct EntryStore:
    # Distinct entries, deduplicated by content (guarded by MaskCacheC.lock).
    CacheEntryC** table          # open addressing by entry hash, NULL = empty slot
    intp_t table_cap             # power of two
    CacheEntryC** owned          # distinct entries in publication order (freed with the cache)
    intp_t n_owned
    intp_t owned_cap
    int64_t bytes                # payload bytes of the distinct entries


ctypedef struct MaskCacheC:
    intp_t n_states
    CacheEntryC** entry          # [n_states] published entry, NULL = not classified (yet)
    const int32_t* state_rule    # [n_states]
    const int64_t* ctx_off       # [n_rules + 1] range of a rule's return states in ctx_states
    const int32_t* ctx_states
    const uint8_t* follow        # [n_rules * 256] bytes that can follow a rule's callers (a
                                 # rule with more than max_ctx_walk return states: the rule)
    intp_t max_ctx_walk          # return states a walk continues into (_mask_cache.pyx)
    int32_t* last_of_rule        # [n_rules] the state a fill classified last per rule, -1
                                 # (a lazy fill's candidate to share an entry with, see
                                 # _token_equivalence.pyx), guarded by `lock`
    # distinct entries (deduplicated), guarded by the spin lock `lock`
    char lock
    EntryStore store             # the states' entries
    intp_t n_classified          # states with a published entry
    # bounds on one state's classification (CompileLimits; 0 = none) and the largest seen
    int64_t max_tops             # max_classify_tops
    int64_t max_bytes            # max_compile_memory_bytes (the walk's parse stack)
    double max_seconds           # max_compile_seconds (shared by the states one fill classifies)
    int64_t peak_tops            # largest top set one classification met
    int64_t peak_bytes           # most parse-stack bytes one classification held
    # Entries of (state, return state) pairs: the pair row of a state is NULL or a row with one
    # slot per return state of the state's rule (ctx_states order), each NULL or a published
    # entry (deduplicated among themselves, in pair_store).  A state on top of the stack over a
    # frame at one of its return states r is classified with that frame: an exact entry for that
    # caller where the state's own would leave many tokens uncertain.  Fills use them for the
    # states of a rule whose callers are not walked (more than max_ctx_walk return states:
    # has_many), and for a state whose own entry has at least pair_min_unc uncertain tokens (-1:
    # never): the tokens that end the rule (a string's closing quote and what follows it) are
    # uncertain in the own entry, whatever its callers accept, and checking them costs every fill
    # ~100 ns each.  Rows hang in blocks of PAIR_BLOCK states (pair_row_peek), allocated on first
    # use, so a grammar pays for the states it pairs, not 8 bytes for each of its states.
    intp_t pair_min_unc
    bint has_many                # some rule has more than max_ctx_walk return states
    CacheEntryC**** pair_blocks  # [n_pair_blocks] NULL or PAIR_BLOCK rows (owned, published
                                 # with xm_store_release, like the rows)
    intp_t n_pair_blocks
    int64_t pair_block_bytes     # the allocated blocks' bytes
    intp_t n_pairs               # pair entries published
    EntryStore pair_store        # their distinct entries (apart: cache_stats counts states')
    int64_t pair_row_bytes       # the rows' bytes
    # spent-top masks (SpentMemoC, at most SPENT_MEMO_MAX, guarded by `lock`, owned)
    SpentMemoC** spent_memo
    intp_t n_spent_memo
    int64_t spent_memo_bytes


cdef enum:
    SPENT_MEMO_MAX = 64
    PAIR_BLOCK_SHIFT = 8         # pair rows per block: 1 << PAIR_BLOCK_SHIFT


cdef const SpentMemoC* cache_spent_memo_find(MaskCacheC* c, int32_t state,
                                             const uint8_t* first) noexcept nogil
cdef bint cache_spent_memo_publish(MaskCacheC* c, SpentMemoC* m) noexcept nogil


cdef const CacheEntryC* cache_classify(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                       int32_t state, double* deadline) except NULL nogil
cdef const CacheEntryC* cache_classify_pair(MaskCacheC* c, const AutomatonC* a,
                                            const VocabC* v, int32_t state, int32_t ret,
                                            intp_t slot, double* deadline,
                                            const CacheEntryC* own=*) except NULL nogil


cdef inline const CacheEntryC* cache_entry(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                           int32_t state, double* deadline) except NULL nogil:
    # The state's entry, classifying it first if no thread has yet.  deadline: shared by the
    # classifications of one call (0 until the first one sets it to max_seconds from then).
    cdef const CacheEntryC* e = <const CacheEntryC*>xm_load_acquire(<void**>&c.entry[state])
    if e != NULL:
        return e
    return cache_classify(c, a, v, state, deadline)


cdef inline const CacheEntryC* cache_peek(MaskCacheC* c, int32_t state) noexcept nogil:
    # The state's entry if classified, else NULL.
    return <const CacheEntryC*>xm_load_acquire(<void**>&c.entry[state])


cdef inline intp_t cache_ret_slot(const MaskCacheC* c, int32_t state, int32_t ret) noexcept nogil:
    # The slot of `ret` among the return states of the state's rule (its pair row), or -1.
    cdef int32_t r = c.state_rule[state]
    cdef intp_t lo = c.ctx_off[r], hi = c.ctx_off[r + 1], mid
    cdef intp_t base = lo
    if ret < 0:
        return -1
    while lo < hi:  # ctx_states of a rule are sorted
        mid = (lo + hi) >> 1
        if c.ctx_states[mid] < ret:
            lo = mid + 1
        else:
            hi = mid
    if lo < c.ctx_off[r + 1] and c.ctx_states[lo] == ret:
        return lo - base
    return -1


cdef inline intp_t cache_pair_slot(const MaskCacheC* c, int32_t state, int32_t ret) noexcept nogil:
    # The slot of (state, ret) in the state's pair row when the state's rule has more return
    # states than a walk follows, or -1: its own entry walks its callers, or ret is not one of
    # its return states.  (Fills also pair states with many uncertain tokens: pair_min_unc.)
    cdef int32_t r = c.state_rule[state]
    if c.ctx_off[r + 1] - c.ctx_off[r] <= c.max_ctx_walk:
        return -1
    return cache_ret_slot(c, state, ret)


cdef inline CacheEntryC** pair_row_peek(MaskCacheC* c, int32_t state) noexcept nogil:
    # The state's pair row if one was allocated, else NULL.
    cdef CacheEntryC*** block = <CacheEntryC***>xm_load_acquire(
        <void**>&c.pair_blocks[state >> PAIR_BLOCK_SHIFT])
    if block == NULL:
        return NULL
    return <CacheEntryC**>xm_load_acquire(<void**>&block[state & ((1 << PAIR_BLOCK_SHIFT) - 1)])


cdef inline const CacheEntryC* cache_pair_peek(MaskCacheC* c, int32_t state,
                                               intp_t slot) noexcept nogil:
    # The entry of (state, the return state in `slot`) if classified, else NULL.
    cdef CacheEntryC** row = pair_row_peek(c, state)
    if row == NULL:
        return NULL
    return <const CacheEntryC*>xm_load_acquire(<void**>&row[slot])


cdef inline const CacheEntryC* cache_pair_entry(MaskCacheC* c, const AutomatonC* a,
                                                const VocabC* v, int32_t state, int32_t ret,
                                                intp_t slot, double* deadline,
                                                const CacheEntryC* own=NULL) except NULL nogil:
    # The entry of `state` over a frame at `ret` (slot: a pair slot), classified first if no
    # thread has yet (from the state's own entry `own`, when given: classify_pair_from).
    cdef const CacheEntryC* e = cache_pair_peek(c, state, slot)
    if e != NULL:
        return e
    return cache_classify_pair(c, a, v, state, ret, slot, deadline, own)


cdef class MaskCache:
    cdef MaskCacheC c
    cdef readonly object arrays      # ctx / follow / state_rule arrays the C struct points into
    cdef int _check_states(self, const int32_t[::1] st) except -1
