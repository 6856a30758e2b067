# Draft-tree traversal kernel for tree-structured speculative decoding (see _draft_tree.pyx).
from libc.stdint cimport int64_t
from xmask.runtime._types cimport uint8_t, intp_t
from xmask.runtime._fill cimport FillJob


cdef intp_t check_tree(const int64_t* nxt, const int64_t* sib, intp_t n,
                       intp_t* work) noexcept nogil
cdef int traverse_tree(FillJob* job, bint terminate_without_stop,
                       const int64_t* nxt, const int64_t* sib, const int64_t* tok, intp_t n,
                       char* row0, intp_t stride_words, intp_t* work,
                       double time_threshold) except -1 nogil
