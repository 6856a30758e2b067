# The mask kernel (implemented in _fill.pyx): one next-token mask from a parse stack, no GIL.
from xmask.runtime._types cimport int32_t, uint8_t, word_t, intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC
from xmask.runtime._mask_cache cimport MaskCacheC
from xmask.runtime._stack cimport StackC
from xmask.runtime._guard cimport GuardC
from xmask.runtime._intseq cimport first_at_least


ctypedef struct FillJob:
    # Everything one mask computation touches: pointers into one matcher and its grammar.
    # Distinct jobs (distinct matchers) share only read-only tables, so they may run in parallel.
    StackC* st
    const AutomatonC* a
    const VocabC* v
    MaskCacheC* c            # classifies states on first use (shared, thread-safe)
    word_t* row
    GuardC* guard            # the matcher's runtime limits (NULL: unguarded)
    const int32_t* stop_ids  # sorted ascending
    intp_t n_stop
    intp_t margin            # frames one token can push at most (max token bytes x push bound)
    bint exact               # near the recursion bound: check every token on the real stack
    intp_t byte_work         # the matcher's work units per byte lately (scales fill_cost)


cdef bint fill_classifies(FillJob* j) noexcept nogil
cdef int fill_job(FillJob* j) except -1 nogil
cdef intp_t fill_cost(FillJob* j) noexcept nogil
cdef int accept_bytes(StackC* st, const AutomatonC* a, const uint8_t* data,
                      intp_t n, GuardC* g) except -1 nogil
cdef int accept_token_id(StackC* st, const AutomatonC* a, const VocabC* v,
                         intp_t tid, GuardC* g) except -1 nogil
cdef int budget_end(StackC* st, intp_t base, int ok) except -1 nogil
cdef int or_token_sets(const StackC* st, const AutomatonC* a, word_t* row,
                       intp_t n_words) except -1 nogil
cdef intp_t max_top_depth(const StackC* st) noexcept nogil
cdef void update_exact(FillJob* j) noexcept nogil
cdef intp_t current_max_depth() noexcept nogil
cdef void set_max_depth(intp_t n) noexcept nogil

# Estimated work (fill_cost units, about one uncertain token each) below which a call keeps the
# GIL: see _fill.pyx for the measurement.
cdef intp_t nogil_min_cost() noexcept nogil


cdef inline bint is_stop_id(const int32_t* stop_ids, intp_t n_stop, intp_t tid) noexcept nogil:
    # Whether tid is one of the sorted stop_ids (binary search: a matcher keeps no
    # vocabulary-sized stop table).
    cdef intp_t lo = first_at_least(stop_ids, n_stop, <int32_t>tid)
    return lo < n_stop and stop_ids[lo] == tid
