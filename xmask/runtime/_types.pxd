# The one scalar type vocabulary of the runtime (see STYLE.md rule 5).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef uint32_t word_t      # bitset word: token i <-> bit (i & 31) of word (i >> 5)
ctypedef int32_t state_id_t   # global automaton state; -1 = none
ctypedef int32_t token_id_t   # vocabulary id; -1 = none
ctypedef int32_t node_id_t    # persistent-stack node; 0 = BOTTOM (the stack below the root)
ctypedef Py_ssize_t intp_t    # every index and length

cdef enum:
    XM_FLAG_FINAL = 1         # the rule may end in this state
    XM_FLAG_HAS_BYTES = 2     # the state has byte edges (it can be a stack top)
    XM_FLAG_EXIT_ONLY = 4     # final with no edges: a frame here is equivalent to its parent
    XM_FLAG_TOKEN = 8         # has a token edge (one whole token from a set): a stack top too
    XM_FLAG_STUB = 16         # start of a rule not built yet (a lazy compile's first part): a
                              # stack top with no edges; a step that would read a byte here
                              # sets AutomatonC.stub_hit (xmask/compiler/lazy_schema.py)

cdef enum:
    XM_KIND_ACCEPTED = 0      # entry data = accepted token ids
    XM_KIND_REJECTED = 1      # entry data = rejected token ids (accepted = rest - uncertain)
    XM_KIND_BITSET = 2        # entry data = accepted-token bitset of n_words words
