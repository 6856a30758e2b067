# How far a state reads any plain text (implemented in _plain_depth.pyx): the classifier's
# shortcut for bounded string bodies (a JSON string with maxLength, x{0,n} over text).
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, intp_t
from xmask.runtime._tables cimport AutomatonC


ctypedef struct PlainDepthScratch:
    # Reused across calls; all NULL / 0 before the first.
    int64_t* keys            # [2 * cap] open-addressing set of (state, return state, plain
                             # UTF-8 state) triples
    int64_t* queue           # [cap] the triples in breadth-first order
    int32_t* depth           # [cap] bytes read to reach each queued pair (the least: BFS)
    intp_t cap


cdef int32_t frame_succ(const AutomatonC* a, int32_t x, uint8_t b) noexcept nogil
cdef int32_t call_succ(const AutomatonC* a, int32_t x, int32_t r, uint8_t b,
                       int32_t* r_out) noexcept nogil
cdef intp_t plain_depth(PlainDepthScratch* s, const AutomatonC* a, int32_t state, int32_t ret,
                        intp_t limit, bint* closed) except -2 nogil
cdef void plain_depth_free(PlainDepthScratch* s) noexcept nogil
