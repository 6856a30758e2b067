# C layouts of a compiled grammar (implemented in _tables.pyx).
#
# Invariants: every pointer points into a NumPy array owned by the CompiledTables object, which
# never changes after construction, so any number of matchers on any threads may read it.
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint64_t, word_t, intp_t


ctypedef struct AutomatonC:
    intp_t n_states
    intp_t n_classes
    int32_t root_start             # start state of the root rule
    const uint8_t* byte_class      # [256] byte -> class
    const int32_t* trans           # [n_states * n_classes] target state or -1
    const uint8_t* flags           # [n_states] XM_FLAG_*
    const int32_t* call_offsets    # [n_states + 1] range into call_target / call_ret
    const int32_t* call_target     # callee start state
    const int32_t* call_ret        # return state, -1 = tail call (return to our caller)
    const int32_t* call_budget     # token budget of the callee (-1: none); NULL: no budgets
    int32_t min_call_budget        # the least of them (0x7FFFFFFF without budgets)
    # Token edges (whole-token grammar elements, xmask/compiler/token_rules.py): a state with
    # XM_FLAG_TOKEN reads one whole token whose id is in its set, to token_target[state].
    const int32_t* token_set_of    # [n_states] token set of the state's token edge, or -1
    const int32_t* token_target    # [n_states] target of that edge, or -1
    const word_t* token_bits       # [n_token_sets * token_words] each set's ids as a bitset
    const word_t* token_any        # [token_words] the union of every set
    intp_t n_token_sets
    intp_t token_words             # the vocabulary's n_words (0 when there is no token set)
    # An automaton with stub states (XM_FLAG_STUB) points this at its tables' flag, which a
    # step sets when a path would read a byte from a stub; NULL otherwise.  Only ever set to
    # 1 (a benign race between threads).
    int32_t* stub_hit


ctypedef struct VocabC:
    intp_t vocab_size              # mask width (may exceed the tokenizer: padding ids)
    intp_t n_words                 # ceil(vocab_size / 32)
    intp_t n_sorted                # number of grammar-eligible (non-special) tokens
    intp_t max_token_len
    const int32_t* sorted_ids      # [n_sorted] token id at each byte-sorted position
    const int64_t* tok_offsets     # [n_sorted + 1] byte range of each sorted token
    const uint8_t* tok_bytes
    const int32_t* lcp             # [n_sorted] common prefix length with the previous token
    const int32_t* skip            # [len(tok_bytes)] at tok_offsets[i] + d: the first sorted
                                   # position after i whose token does not start with the
                                   # first d + 1 bytes of token i (the end of that prefix group)
    const int32_t* id_pos          # [vocab_size] sorted position of an id, -1 if special
    const word_t* eligible         # [n_words] bitset of non-special ids
    # Tokens by first byte b: sorted positions [group_off[b], group_off[b + 1]).  A token is a
    # "shortcut" token if a string body takes it whole: its bytes are plain string text (valid
    # UTF-8, the last character may be cut off, no '"', '\\' or control bytes), or, when b
    # itself cannot start plain text (a quote, ...), the bytes after b are (see _classify.pyx).
    const int32_t* group_off       # [257]
    const int32_t* shortcut_pos    # shortcut tokens' sorted positions, ascending
    const int32_t* shortcut_off    # [257] those starting with b: shortcut_off[b] .. [b + 1]
    const uint64_t* shortcut_sig   # per shortcut token: bit (c & 63) set for every ASCII byte c
                                   # after the first (a state that reads plain text but a few
                                   # ASCII bytes takes the tokens whose signature avoids them)
    const int32_t* rest_pos        # the other tokens' sorted positions, ascending
    const int32_t* rest_lcp        # common prefix with the previous rest token of the same b
    const int32_t* rest_off        # [257] those starting with b: rest_off[b] .. [b + 1]
    # The shortcut tokens whose first byte starts plain text ("plain tokens"), for a string
    # body that takes all of them, or all of at most d bytes, at once (_classify.pyx):
    const word_t* plain_bits       # [n_words] their ids
    const int32_t* plain_longest   # [n_plain_longest] their sorted positions, longest first
    const int32_t* plain_longer    # [max_token_len + 2] how many are longer than d bytes
    intp_t n_plain_longest         # (only the longest n_sorted / 16 are listed)
    # The same for every token: an entry derived from another state's, which agrees with this
    # one on strings of up to d bytes, walks the tokens longer than d (_classify.pyx)
    const int32_t* all_longest     # [n_all_longest] sorted positions, longest first
    const int32_t* all_longer      # [max_token_len + 2] how many are longer than d bytes
    intp_t n_all_longest



cdef class AutomatonTables:
    cdef AutomatonC c              # views into the arrays below
    cdef readonly object arrays    # dict name -> ndarray (keeps the memory alive)
    cdef intp_t _push_bound_plus1  # cached push_bound() + 1, 0 = not computed yet
    cdef int32_t _stub_hit         # AutomatonC.stub_hit's target (automata with stubs)
    cdef intp_t push_bound(self) except -1
    cdef int _set_token_edges(self, automaton) except -1
    cdef int _set_budgets(self, automaton) except -1


cdef class VocabTables:
    cdef VocabC c
    cdef readonly object arrays
    cdef int _split_plain(self) except -1
    cdef int _plain_by_length(self, shortcut_pos) except -1


# The automaton of plain string bytes (see _tables.pyx): states 0-7, 0 = at a character
# boundary (the start); 255 = no transition.
cdef enum:
    PLAIN_UTF8_STATES = 8
    PLAIN_UTF8_NONE = 255
cdef uint8_t plain_utf8_step(uint8_t u, uint8_t b) noexcept nogil
cdef bint plain_from(uint8_t u, const uint8_t* data, intp_t n) noexcept nogil
