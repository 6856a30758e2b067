# GrammarMatcher's C layout, shared with the batch matcher (batch.pyx) so it can fill and accept
# for many matchers inside one nogil region.
from xmask.runtime._types cimport int32_t, uint8_t, word_t, intp_t
from xmask.runtime._tables cimport (
    AutomatonC, VocabC, MaskCacheC, AutomatonTables, VocabTables, MaskCacheTables,
)
from xmask.runtime._stack cimport StackC
from xmask.runtime._fill cimport FillJob


cdef class GrammarMatcher:
    cdef StackC st
    cdef bint st_ready
    cdef readonly object compiled_grammar
    cdef AutomatonTables at
    cdef VocabTables vt
    cdef MaskCacheTables ct
    cdef intp_t* token_depth       # [n_tokens + 1] history depth after each accepted token
    cdef intp_t n_tokens
    cdef intp_t cap_tokens
    cdef bint terminated
    cdef bint terminate_without_stop_token
    cdef int32_t* stop_ids
    cdef intp_t n_stop
    cdef uint8_t* is_stop          # [vocab_size]
    cdef word_t* scratch           # [n_words]
    cdef word_t* pos_bits          # [ceil(n_sorted / 32)], kept all-zero between calls
    cdef object _stop_list
    cdef object _default_temperature

    cdef int _setup(self, compiled_grammar, list stops, bint twst) except -1
    cdef bint _can_end(self) noexcept
    cdef int _push_token(self) except -1
    cdef int _make_job(self, FillJob* j, word_t* row) except -1
    cdef int _check_can_fill(self) except -1
    cdef int _accept_id(self, intp_t tid) except -1
