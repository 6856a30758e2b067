# Classifying the vocabulary for one automaton state (implemented in _classify.pyx): the work
# behind one token-mask cache entry, done lazily by a fill or eagerly by precompute.
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint64_t, word_t, intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC
from xmask.runtime._stack cimport StackC
from xmask.runtime._plain_depth cimport PlainDepthScratch
from xmask.runtime._cache_entry cimport CacheEntryC


ctypedef struct ClassifyScratch:
    # Per-thread working memory of classify_entry, reused across states.
    StackC st
    uint8_t* unc_prefix      # [max_token_len + 2]
    int32_t* ctx_tops
    intp_t ctx_cap
    int32_t* acc             # accepted sorted positions of the state being classified
    intp_t acc_cap
    int32_t* unc             # uncertain sorted positions
    intp_t unc_cap
    word_t* marks            # [n_words], all-zero between calls
    int64_t* pair_keys       # string-body check (see _reads_plain_strings)
    int64_t* pair_queue
    uint8_t* pair_byte       # the byte that led to each queued pair (-> what to refuse)
    PlainDepthScratch pd     # bounded string-body check (see _plain_depth)
    int32_t* walk_pos        # shortcut tokens that need a walk after all, and their common
    intp_t walk_pos_cap      # prefixes with the previous one (see _walk_avoiding)
    int32_t* walk_lcp
    intp_t walk_lcp_cap
    # bounds on one classify_entry call, set by the caller (0 = none); past one the call
    # raises GrammarLimitError naming the CompileLimits field (see _classify.pyx)
    double deadline          # time.monotonic() value (CompileLimits.max_compile_seconds)
    int64_t max_tops         # stack tops one byte step may hold (max_classify_tops)
    int64_t max_bytes        # parse-stack memory of the walk (max_compile_memory_bytes)
    int64_t peak_tops        # largest top set of this call
    int64_t peak_bytes       # largest parse-stack memory seen (kept across calls)
    intp_t until_check       # byte steps until the next clock / memory check
    intp_t check_every       # steps between checks (fewer when steps are slow)
    double last_check        # monotonic time of the last check
    int32_t state            # the state being classified (for the error message)




cdef int scratch_init(ClassifyScratch* s, const VocabC* v) except -1 nogil
cdef void scratch_free(ClassifyScratch* s) noexcept nogil
# ret >= 0: `state` is in a callee frame returning to `ret` (ctx / follow: of ret's rule);
# n_ctx < 0: the callers are not walked (_mask_cache.pyx), follow is the rule's FOLLOW set
cdef CacheEntryC* classify_entry(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                 int32_t state, int32_t ret, const int32_t* ctx, intp_t n_ctx,
                                 const uint8_t* follow) except NULL nogil
# The entry of `state` from the entry `base` of a state of the same rule that classifies every
# token of at most `same_len` bytes alike (_token_equivalence.agree_depth): those verdicts
# copied, the longer tokens walked; NULL when too many are longer (classify_entry then)
cdef CacheEntryC* classify_entry_from(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                      int32_t state, const int32_t* ctx, intp_t n_ctx,
                                      const uint8_t* follow, const CacheEntryC* base,
                                      intp_t same_len) except? NULL nogil
# The overlay of `state` over a frame at `ret` on the state's own entry `own` (classified with
# no frame under it): own's accepted and rejected verdicts hold over any frame, so only its
# uncertain tokens are walked, from both frames; the overlay holds the ids of those the frames
# accept and the positions still uncertain
cdef CacheEntryC* classify_pair_from(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                     int32_t state, int32_t ret, const int32_t* ctx,
                                     intp_t n_ctx, const uint8_t* follow,
                                     const CacheEntryC* own) except NULL nogil
