# Whether two states of one rule classify every token alike (implemented in
# _token_equivalence.pyx): a lazy fill about to classify a state first tries to reuse the entry
# of such a state (a long bounded string's positions far from the bound).
from xmask.runtime._types cimport int32_t, intp_t
from xmask.runtime._tables cimport AutomatonC


cdef intp_t agree_depth(const AutomatonC* a, int32_t s, int32_t t,
                        intp_t horizon) except -1 nogil
cdef int token_equivalent(const AutomatonC* a, int32_t s, int32_t t,
                          intp_t horizon) except -1 nogil
