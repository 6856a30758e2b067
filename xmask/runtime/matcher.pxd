# GrammarMatcher's C layout, shared with the batch matcher (batch.pyx) so it can fill and accept
# for many matchers inside one nogil region.
from xmask.runtime._types cimport int32_t, uint8_t, word_t, intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC, AutomatonTables, VocabTables
from xmask.runtime._mask_cache cimport MaskCache
from xmask.runtime._stack cimport StackC
from xmask.runtime._fill cimport FillJob
from xmask.runtime._guard cimport GuardC


cdef class GrammarMatcher:
    cdef StackC st
    cdef bint st_ready
    # ready: __init__ (or fork) finished, every buffer matches the grammar; busy: a call is
    # running on this matcher (see _enter).  Every public method checks both first.
    cdef bint ready
    cdef char busy                 # taken / released atomically (_enter, _leave)
    cdef object _grammar
    cdef AutomatonTables at
    cdef VocabTables vt
    cdef MaskCache ct
    cdef intp_t* token_depth       # [n_tokens + 1] history depth after each kept token
    cdef intp_t n_tokens           # accepted tokens whose history is kept (see max_rollback)
    cdef intp_t cap_tokens
    cdef intp_t max_rollback       # max_rollback_tokens (-1: unlimited, history never dropped)
    cdef intp_t n_dropped          # accepted tokens whose history was dropped
    cdef GuardC guard              # runtime limits and the sticky error (guard.crossed)
    cdef intp_t byte_work          # work units per byte of the last accept: the GIL policy's
                                   # estimate for the next call (0: none yet)
    cdef object _limits            # the RuntimeLimits
    cdef bint terminated
    cdef bint terminate_without_stop_token
    cdef int32_t* stop_ids
    cdef intp_t n_stop
    cdef object _stop_list
    cdef object _default_temperature
    # Grammars with capture attributes only (else None): what was accepted, one entry per
    # token (id, accept_string bytes, None for a stop token), and its lazy replay
    # (xmask.grammar.captures) for get_captures.
    cdef list _cap_units
    cdef object _cap_log
    # On a lazily compiled grammar's first part (xmask/compiler/lazy_schema.py) until anything
    # but a fill at the start: then _enter moves the matcher to the whole grammar.
    cdef bint provisional

    cdef int _enter(self) except -1
    cdef int _enter_fill(self) except -1
    cdef int _materialize(self) except -1
    cdef int _init_from(self, compiled_grammar, list stops, bint twst, limits,
                        intp_t max_rollback, temperature, bint whole=*) except -1
    cdef void _leave(self) noexcept
    cdef int _check_ready(self) except -1
    cdef int _swap_state(self, GrammarMatcher other) except -1
    cdef int _setup(self, compiled_grammar, list stops, bint twst, limits,
                    intp_t max_rollback, bint whole=*) except -1
    cdef int _reset_state(self) except -1
    cdef int _accept_data(self, data) except -1
    cdef int _rollback(self, intp_t num_tokens) except -1
    cdef int _check_rollback(self, intp_t num_tokens, str what) except -1
    cdef int _trim_history(self) except -1
    cdef bint _can_end(self) noexcept
    cdef int _push_token(self) except -1
    cdef int _make_job(self, FillJob* j, word_t* row) except -1
    cdef int _check_can_fill(self) except -1
    cdef int _accept_id(self, intp_t tid) except -1
    cdef word_t* _checked_row(self, bitmask, index) except NULL
    cdef int _fill(self, bitmask, index, debug_print) except -1
    cdef int _reference_fill(self, bitmask, index) except -1
    cdef object _traverse(self, nxt, sib, tok, token_bitmask, double limit, temperatures)
    cdef object _jump_forward(self)
    cdef list _top_states(self)
    cdef str _describe(self)
