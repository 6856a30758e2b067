# The last token of a token budget (implemented in _fill_spent.pyx): the mask a spent top allows.
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, word_t, intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC
from xmask.runtime._mask_cache cimport MaskCacheC
from xmask.runtime._stack cimport StackC
from xmask.runtime._guard cimport GuardC
from xmask.runtime._cache_entry cimport CacheEntryC


cdef enum:
    _FRAME_MAX = 16          # states of one frame-local set
    _REGION_MAX = 4096       # states a frame region may have


ctypedef struct SpentScratch:
    int32_t* sets            # [(max_token_len + 1) * _FRAME_MAX] state set after d bytes
    int32_t* sizes           # [max_token_len + 1] its size, -1: too many states (real walk)
    uint8_t* bail            # [max_token_len + 1] the path could have left mid-token by then
    word_t* cand             # [pos_words] candidate positions of one top
    uint8_t* seen            # [n_states] region check
    int32_t* work            # [n_states]
    uint8_t first[256]       # bytes that can follow the spent frames (over-approximated)


cdef inline intp_t token_lcp(const VocabC* v, int64_t a_off, intp_t a_len, int64_t b_off,
                            intp_t b_len) noexcept nogil:
    # Bytes two tokens of the sorted vocabulary share at their start (walks in sorted order
    # reuse the parse of that prefix).
    cdef intp_t n = 0, lim = a_len if a_len < b_len else b_len
    while n < lim and v.tok_bytes[a_off + n] == v.tok_bytes[b_off + n]:
        n += 1
    return n


cdef inline bint spent_top(const StackC* st, int32_t node) noexcept nogil:
    # Whether some path of top `node` is in a budgeted rule that may read only the next token
    # (then a token is allowed by that path only if it leaves the rule by its end).
    return st.node_live != NULL and st.node_dead[node] <= st.set_tok[st.depth - 1] + 1


# Set in `bits` the sorted positions of the tokens a cache entry accepts (never its uncertain
# ones); `bits` has a word per 32 positions of the vocabulary's sorted order.
cdef void entry_positions(const VocabC* v, const CacheEntryC* e, word_t* bits) noexcept nogil
cdef void spent_scratch_free(SpentScratch* sp) noexcept nogil
cdef bint spent_fast_usable(StackC* st, const AutomatonC* a, const VocabC* v,
                            SpentScratch* sp) except -1 nogil
cdef int spent_fast_top_memo(MaskCacheC* c, StackC* st, const AutomatonC* a, const VocabC* v,
                             SpentScratch* sp, int32_t x, const CacheEntryC* e, word_t* row,
                             word_t* pos_bits, GuardC* g) except -1 nogil
