"""Classify every vocabulary token for one automaton state: one token-mask cache entry.

For a state s of rule R the walk starts from the stack (s over BOTTOM).  When a path returns
past BOTTOM (R is done) it continues in every place R can return to (the return states of R's
call sites, following tail calls up, each over CONTEXT); a path that returns past CONTEXT too can
only be judged by the real stack, so the next byte is checked against those callers' FOLLOW set.

A token is
* accepted  if a path consumes all of it without leaving R (or leaving R exactly at its end);
* uncertain if not, but a path consumed it in a caller's context, or left the callers too with a
  byte that can follow them: only the real stack can decide;
* rejected  otherwise: no context whatsoever accepts it.

Work is proportional to what survives, not to the vocabulary: tokens are visited in byte-sorted
order so a shared prefix is parsed once (truncate the history to the common prefix, then push
the rest), and when byte d kills every path the walk jumps over the whole group of tokens that
share those d + 1 bytes (``VocabC.skip``) without touching them.  Only accepted and uncertain
positions are written, straight into the entry's final form: no dense per-token row.
"""

from libc.stdlib cimport malloc, calloc, free, qsort
from libc.string cimport memset, memcpy

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, word_t, intp_t
from xmask.runtime._cache_entry cimport (
    CacheEntryC, entry_new, entry_seal, entry_from_sets, entry_accepted_bits,
)
from xmask.runtime._types cimport XM_KIND_ACCEPTED
from xmask.runtime._tables cimport (
    AutomatonC, VocabC, AutomatonTables, PLAIN_UTF8_STATES, PLAIN_UTF8_NONE, plain_utf8_step,
)
from xmask.runtime._intseq cimport cmp_i32, key_slot
from xmask.runtime._clock cimport monotonic_seconds
from xmask.runtime._stack cimport (
    StackC, grow_array, stack_init, stack_free, stack_reset, stack_truncate, stack_set_contains,
    stack_node,
    stack_reaches_bottom, stack_memory_bytes,
)
from xmask.runtime._stack_gss cimport stack_start, stack_start_many, stack_step
from xmask.runtime._plain_depth cimport frame_succ, call_succ, plain_depth, plain_depth_free

from xmask.errors import GrammarLimitError

cdef extern from *:
    int __builtin_popcount(unsigned int x) nogil

# Byte steps between two clock / memory checks of a walk: a step usually costs >= ~20 ns and a
# clock read ~25 ns, so checking every 256 steps costs < 1%.  Steps of an ambiguous grammar
# can each take milliseconds (a closure through thousands of nullable frames), so when 256 steps
# took over a millisecond the walk checks after every step until they are fast again: the
# deadline is overrun by at most one step.
cdef intp_t _CHECK_EVERY = 256

# Bytes one closure item of a parse step can hold (GSS item, pair-set slot at half load, work
# list entry: ~50): the walk's memory bound, divided by this, bounds the items of one step.
cdef intp_t _STEP_ITEM_BYTES = 64




# The string-body shortcut of classify_entry (off only to test it against the full walk), and
# the fewest shortcut tokens of a first byte worth a plain-text check instead of a walk.
cdef bint _plain_fast_path = True
cdef intp_t _MIN_SHORTCUT = 16
# Below this many bytes of guaranteed plain text, a bounded string body's shortcut takes too few
# tokens to beat the plain walk (most tokens are longer than 2 bytes).
cdef intp_t _MIN_DEPTH = 3


def set_plain_fast_path(bint on):
    """Turn the string-body shortcut on or off (tests compare both; masks never differ)."""
    global _plain_fast_path
    _plain_fast_path = on


def plain_text_check(AutomatonTables tables, int32_t state):
    """``(reads_plain, avoid_bits)``: whether the classifier's shortcut takes plain-text tokens
    from ``state`` and the signature bits of the ASCII bytes it refuses (0: none).  For tests.

    Example::

        >>> plain_text_check(compiled_tables, 0)  # doctest: +SKIP
        (True, 0)
    """
    cdef ClassifyScratch s
    cdef uint64_t avoid = 0
    cdef bint ok
    if not 0 <= state < tables.c.n_states:
        raise ValueError(f"no state {state}")
    memset(&s, 0, sizeof(ClassifyScratch))
    try:
        ok = _reads_plain_strings(&s, &tables.c, state, &avoid)
    finally:
        scratch_free(&s)  # (only the plain-text check's buffers were allocated)
    return bool(ok), int(avoid)


cdef inline int _grow_i32(int32_t** p, intp_t* cap, intp_t need) except -1 nogil:
    return grow_array(<void**>p, cap, need, sizeof(int32_t))


cdef int scratch_init(ClassifyScratch* s, const VocabC* v) except -1 nogil:
    memset(s, 0, sizeof(ClassifyScratch))
    stack_init(&s.st)
    s.unc_prefix = <uint8_t*>malloc(<size_t>(v.max_token_len + 2))
    s.marks = <word_t*>calloc(<size_t>(v.n_words if v.n_words > 0 else 1), sizeof(word_t))
    if s.unc_prefix == NULL or s.marks == NULL:
        scratch_free(s)
        with gil:
            raise MemoryError()
    return 0


cdef void scratch_free(ClassifyScratch* s) noexcept nogil:
    stack_free(&s.st)
    free(s.unc_prefix)
    free(s.ctx_tops)
    free(s.acc)
    free(s.unc)
    free(s.marks)
    free(s.pair_keys)
    free(s.pair_queue)
    free(s.pair_byte)
    free(s.walk_pos)
    free(s.walk_lcp)
    plain_depth_free(&s.pd)
    memset(s, 0, sizeof(ClassifyScratch))


cdef bint _inside_rule(const StackC* st) noexcept nogil:
    # Whether a path of the newest top set is still inside the walked rule (or just ended it):
    # it ends at BOTTOM rather than CONTEXT.
    cdef intp_t i
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        if stack_reaches_bottom(st, st.tops[i]):
            return True
    return False


cdef bint _walk_start(ClassifyScratch* s, const AutomatonC* a, int32_t state, int32_t ret,
                      const int32_t* ctx, intp_t n_ctx) except -1 nogil:
    # The stack for a walk from `state` (over a frame at `ret` if ret >= 0), whose rule returns
    # into `ctx`; returns whether the callers' own top set holds CONTEXT (they can return
    # further).
    cdef StackC* st = &s.st
    cdef intp_t i, n_ctx_tops
    cdef bint ctx_has_ctx
    cdef bint no_ctx = n_ctx < 0  # callers not walked (a rule called from many places)
    if no_ctx:
        n_ctx = 0
    stack_reset(st, st.n_nodes > 1 << 16)
    st.bottom_cont = NULL
    s.state = state
    # one step's closure work is bounded too (a step's scratch is ~50 bytes per item): an
    # ambiguous grammar can need seconds and GBs inside a single step, between two checks
    st.step_budget = s.max_bytes // _STEP_ITEM_BYTES if s.max_bytes > 0 else 0
    st.step_deadline = s.deadline
    # the caller contexts' top set, kept outside the history (node ids stay valid: no reset
    # drops nodes during this walk)
    stack_start_many(st, a, ctx, n_ctx, 1)
    if st.step_over:
        _step_over(s)
    n_ctx_tops = st.set_start[1]
    ctx_has_ctx = no_ctx or stack_set_contains(st, 0, 1)
    if n_ctx_tops > s.ctx_cap:
        _grow_i32(&s.ctx_tops, &s.ctx_cap, n_ctx_tops)
    for i in range(n_ctx_tops):
        s.ctx_tops[i] = st.tops[i]
    stack_reset(st, False)
    st.bottom_cont = s.ctx_tops
    st.n_bottom_cont = n_ctx_tops
    if ret >= 0:
        stack_start_many(st, a, &state, 1, stack_node(st, ret, 0))
    else:
        stack_start(st, a, state)
    if st.step_over:
        _step_over(s)
    s.unc_prefix[0] = 0
    return ctx_has_ctx


cdef intp_t _feed(ClassifyScratch* s, const AutomatonC* a, const VocabC* v, intp_t pos,
                  intp_t k, const uint8_t* follow, bint ctx_has_ctx) except -2 nogil:
    # Feed token `pos` from byte k on (the history holds its first k bytes).  Returns -1 if a
    # path consumed it whole, else the depth d at which every path died.
    cdef StackC* st = &s.st
    cdef int64_t off = v.tok_offsets[pos]
    cdef intp_t length = v.tok_offsets[pos + 1] - off, d = k
    cdef uint8_t b
    cdef intp_t n
    stack_truncate(st, k + 1)
    while d < length:
        b = v.tok_bytes[off + d]
        # returned past the callers too (directly, or via BOTTOM whose continuation holds
        # CONTEXT) with a byte that can follow them: only the real stack can tell
        s.unc_prefix[d + 1] = s.unc_prefix[d] | (
            follow[b] != 0 and (stack_set_contains(st, d, 1)
                                or (ctx_has_ctx and stack_set_contains(st, d, 0))))
        n = stack_step(st, a, b)
        if n == 0 and st.step_over:
            _step_over(s)
        if n > s.peak_tops:
            s.peak_tops = n
            if s.max_tops > 0 and n > s.max_tops:
                _check_bounds(s)
        s.until_check -= 1
        if s.until_check <= 0:
            _check_bounds(s)
        if n == 0:
            return d
        d += 1
    return -1


cdef int _check_bounds(ClassifyScratch* s) except -1 nogil:
    # The walk's bounds (see ClassifyScratch); raises GrammarLimitError past one.  The top-set
    # bound is exact (checked on every new peak), memory and the clock every _CHECK_EVERY
    # steps; one step holds at most max_classify_tops new tops, so memory passes its bound by
    # at most one step's growth.
    cdef int64_t nbytes = stack_memory_bytes(&s.st)  # parent sets and step scratch included
    cdef double now = monotonic_seconds()
    if now - s.last_check > 1e-3:
        s.check_every = 1
    elif s.check_every < _CHECK_EVERY:
        s.check_every *= 2
    s.until_check = s.check_every
    s.last_check = now
    if nbytes > s.peak_bytes:
        s.peak_bytes = nbytes
    if s.max_tops > 0 and s.peak_tops > s.max_tops:
        with gil:
            raise GrammarLimitError(
                f"classifying automaton state {s.state} for the token-mask cache meets more "
                f"than {s.max_tops} parse-stack tops after one byte "
                f"(CompileLimits.max_classify_tops): a highly ambiguous grammar")
    if s.max_bytes > 0 and nbytes > s.max_bytes:
        with gil:
            raise GrammarLimitError(
                f"classifying automaton state {s.state} for the token-mask cache needs more "
                f"than {s.max_bytes / 1048576:.3g} MB of parse stack "
                f"(CompileLimits.max_compile_memory_bytes)")
    if s.deadline > 0 and now > s.deadline:
        with gil:
            raise GrammarLimitError(
                f"classifying automaton state {s.state} for the token-mask cache ran past the "
                f"deadline (CompileLimits.max_compile_seconds)")
    return 0


cdef int _step_over(ClassifyScratch* s) except -1 nogil:
    # One parse step of the walk was abandoned by its bounds (set in _walk_start): raise.
    if s.deadline > 0 and monotonic_seconds() > s.deadline:
        with gil:
            raise GrammarLimitError(
                f"classifying automaton state {s.state} for the token-mask cache ran past the "
                f"deadline (CompileLimits.max_compile_seconds) inside one parse step")
    with gil:
        raise GrammarLimitError(
            f"classifying automaton state {s.state} for the token-mask cache needs more than "
            f"{s.st.step_budget} closure items in one parse step (a budget of "
            f"CompileLimits.max_compile_memory_bytes / {_STEP_ITEM_BYTES}): a highly ambiguous "
            f"grammar, e.g. nullable rules called from a large repeat")


cdef inline int _push(int32_t** buf, intp_t* cap, intp_t* n, intp_t pos) except -1 nogil:
    if n[0] >= cap[0]:
        _grow_i32(buf, cap, n[0] + 1)
    buf[0][n[0]] = <int32_t>pos
    n[0] += 1
    return 0


cdef inline intp_t _record_whole(ClassifyScratch* s, const VocabC* v, intp_t pos,
                                 intp_t* n_acc, intp_t* n_unc) except -1 nogil:
    # Token `pos` was consumed whole: accepted if a path stayed inside the rule, else
    # uncertain.  Returns its length (how far the history now reaches).
    if _inside_rule(&s.st):
        _push(&s.acc, &s.acc_cap, n_acc, pos)
    else:
        _push(&s.unc, &s.unc_cap, n_unc, pos)
    return v.tok_offsets[pos + 1] - v.tok_offsets[pos]


cdef int _walk_range(ClassifyScratch* s, const AutomatonC* a, const VocabC* v, intp_t lo,
                     intp_t hi, const uint8_t* follow, bint ctx_has_ctx, intp_t* n_acc,
                     intp_t* n_unc) except -1 nogil:
    # Sorted positions [lo, hi) (tokens sharing a first byte): accepted ones appended to
    # s.acc, uncertain ones to s.unc.
    cdef intp_t i = lo, d, k, reached = 0
    while i < hi:
        k = v.lcp[i] if v.lcp[i] < reached else reached
        if i == lo:
            k = 0
        d = _feed(s, a, v, i, k, follow, ctx_has_ctx)
        if d < 0:
            reached = _record_whole(s, v, i, n_acc, n_unc)
            i += 1
            continue
        reached = d
        # every token sharing these d + 1 bytes dies the same way: jump over the group
        k = v.skip[v.tok_offsets[i] + d]
        if s.unc_prefix[d + 1]:
            while i < k:
                _push(&s.unc, &s.unc_cap, n_unc, i)
                i += 1
        i = k
    return 0


cdef int _walk_list(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                    const int32_t* pos_list, const int32_t* lcp_list, intp_t n,
                    const uint8_t* follow, bint ctx_has_ctx, intp_t* n_acc,
                    intp_t* n_unc) except -1 nogil:
    # Like _walk_range over the ascending positions pos_list[0:n] of tokens sharing a first
    # byte (lcp_list: common prefix with the previous one); tokens after one that died at
    # depth d and share more than d bytes with it are judged without a walk.
    cdef intp_t i, d, k, reached = 0, dead_at = -1, pos
    cdef bint dead_unc = False
    for i in range(n):
        pos = pos_list[i]
        k = 0 if i == 0 else lcp_list[i]
        if dead_at >= 0 and k > dead_at:
            if dead_unc:
                _push(&s.unc, &s.unc_cap, n_unc, pos)
            continue
        dead_at = -1
        if reached < k:
            k = reached
        d = _feed(s, a, v, pos, k, follow, ctx_has_ctx)
        if d < 0:
            reached = _record_whole(s, v, pos, n_acc, n_unc)
        else:
            reached = dead_at = d
            dead_unc = s.unc_prefix[d + 1] != 0
            if dead_unc:
                _push(&s.unc, &s.unc_cap, n_unc, pos)
    return 0


cdef bint _shortcut_group(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                          int32_t state, intp_t b, bint whole) except -1 nogil:
    # Whether every shortcut token starting with byte b is accepted from `state` without a
    # walk: b starts plain text and `state` reads any plain text (whole), or b does not and
    # `state`'s own b-transition leads to a state that reads any plain text.
    cdef int32_t y
    if v.shortcut_off[b + 1] - v.shortcut_off[b] < _MIN_SHORTCUT:
        return False  # a walk is as cheap
    if plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE:
        return whole
    y = frame_succ(a, state, <uint8_t>b)
    return y >= 0 and _reads_plain_strings(s, a, y, NULL)


cdef bint _after_first_byte(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                            int32_t state, int32_t ret, intp_t b, int64_t* memo,
                            intp_t* after) except -1 nogil:
    # For a walk from `state` over a frame at `ret` (a character tail's state, mid-character
    # or mid-escape): whether the shortcut tokens starting with byte b are worth a depth
    # search after b, and then in after[0] how many bytes of any plain text the state reached
    # on b reads (plain_depth, following the return to ret).  A shortcut token of b is b then
    # plain text from a character boundary (b ASCII, or b unable to start plain text: see
    # VocabC), so one of at most after[0] + 1 bytes has a path inside the frame: accepted.
    # (A lead byte is left to the walk: the text after it starts inside a character.)
    cdef int32_t y, r2
    cdef bint closed
    if v.shortcut_off[b + 1] - v.shortcut_off[b] < _MIN_SHORTCUT:
        return False
    if b >= 0x80 and plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE:
        return False
    y = call_succ(a, state, ret, <uint8_t>b, &r2)
    if y < 0:
        return False
    # memo[0:2]: the last (y, r2) searched and its depth (most bytes lead to one state)
    if memo[0] != y or memo[1] != r2:
        memo[0], memo[1] = y, r2
        memo[2] = plain_depth(&s.pd, a, y, r2, v.max_token_len - 1, &closed)
    after[0] = <intp_t>memo[2]
    return True


cdef enum:
    MAX_AVOIDED = 8          # most ASCII bytes a "plain text but these" state may refuse
    _PLAIN_SEARCH_CAP = 1024  # (state, plain state) pairs one search may visit


cdef bint _refuses_plain_path(const AutomatonC* a, int32_t state) noexcept nogil:
    # Whether the path of "ééé..." (C3 A9 repeated) from `state` meets a refusal within the
    # frame: every search of _reads_plain_strings follows that path (no ASCII byte on it can be
    # avoided) and fails there, so a bounded string body fails at once rather than after
    # searching all of its positions up to the bound.  Stops at a self-loop and after as many
    # steps as a search may visit pairs.
    cdef int32_t x = state, y
    cdef intp_t i
    for i in range(_PLAIN_SEARCH_CAP):
        y = frame_succ(a, x, 0xC3)
        if y < 0:
            return True
        y = frame_succ(a, y, 0xA9)
        if y < 0:
            return True
        if y == x:
            return False
        x = y
    return False


cdef bint _reads_plain_strings(ClassifyScratch* s, const AutomatonC* a, int32_t state,
                               uint64_t* avoid) except -1 nogil:
    # Whether `state` accepts every plain-string token inside its rule's frame (own
    # transitions and tail calls, see _plain_depth.frame_succ; no pushes, no returns): our automaton, started in
    # `state`, simulates the plain UTF-8 automaton from its boundary state, following one
    # successor per byte (a path for every plain string is all a token needs to be accepted).
    # Then only the other tokens need a walk.  A bounded search over (state, plain state) pairs.
    # With `avoid` (else NULL: strict), a few ASCII bytes may be refused: their signature bits
    # (c & 63, see VocabC.shortcut_sig) are returned there, and plain tokens containing none of
    # them are accepted; a token with a colliding bit is only walked, never misjudged.  When
    # refusals pile up behind one byte (the last byte of a trigger, after which the text must
    # go on a particular way), that byte is refused instead and the search starts over.
    cdef uint64_t forced_lo = 0, forced_hi = 0
    cdef int attempt, blame
    if _refuses_plain_path(a, state):
        return False
    if avoid == NULL:
        return _plain_search(s, a, state, NULL, 0, 0, NULL) == 1
    for attempt in range(MAX_AVOIDED):
        blame = -1
        if _plain_search(s, a, state, avoid, forced_lo, forced_hi, &blame) == 1:
            return True
        if blame < 0:
            return False
        if blame < 64:
            forced_lo |= (<uint64_t>1) << blame
        else:
            forced_hi |= (<uint64_t>1) << (blame - 64)
    return False


cdef int _plain_search(ClassifyScratch* s, const AutomatonC* a, int32_t state, uint64_t* avoid,
                       uint64_t avoided_lo, uint64_t avoided_hi, int* blame) except -1 nogil:
    # One search of _reads_plain_strings with the ASCII bytes in avoided_lo/hi refused from the
    # start.  Returns 1 on success, else 0 and (with `blame`) the ASCII byte that led into the
    # pair where the first refusal happened (-1 if none did).
    cdef intp_t n_pairs = 1, head = 0, cap = _PLAIN_SEARCH_CAP, slot, n_avoided = 0, k
    cdef int64_t key, got
    cdef int32_t x, t
    cdef uint8_t u, u2
    cdef int b, first_blame = -2
    if s.pair_keys == NULL:
        s.pair_keys = <int64_t*>malloc(2 * cap * sizeof(int64_t))
        s.pair_queue = <int64_t*>malloc(cap * sizeof(int64_t))
        s.pair_byte = <uint8_t*>malloc(cap * sizeof(uint8_t))
        if s.pair_keys == NULL or s.pair_queue == NULL or s.pair_byte == NULL:
            with gil:
                raise MemoryError()
    for slot in range(2 * cap):
        s.pair_keys[slot] = -1
    if avoid != NULL:
        avoid[0] = 0
        for k in range(128):
            if (avoided_lo >> k) & 1 if k < 64 else (avoided_hi >> (k - 64)) & 1:
                avoid[0] |= (<uint64_t>1) << (k & 63)
                n_avoided += 1
    key = <int64_t>state * PLAIN_UTF8_STATES
    s.pair_queue[0] = key
    s.pair_byte[0] = 255
    s.pair_keys[key_slot(key, 2 * cap - 1)] = key
    while head < n_pairs:
        key = s.pair_queue[head]
        x = <int32_t>(key // PLAIN_UTF8_STATES)
        u = <uint8_t>(key % PLAIN_UTF8_STATES)
        for b in range(256):
            u2 = plain_utf8_step(u, <uint8_t>b)
            if u2 == PLAIN_UTF8_NONE:
                continue
            if b < 64 and (avoided_lo >> b) & 1:
                continue
            if 64 <= b < 128 and (avoided_hi >> (b - 64)) & 1:
                continue
            t = frame_succ(a, x, <uint8_t>b)
            if t < 0:
                if first_blame == -2 and blame != NULL:
                    first_blame = s.pair_byte[head] if s.pair_byte[head] < 128 else -1
                    blame[0] = first_blame
                if avoid == NULL or b >= 128 or n_avoided == MAX_AVOIDED:
                    return 0
                n_avoided += 1
                if b < 64:
                    avoided_lo |= (<uint64_t>1) << b
                else:
                    avoided_hi |= (<uint64_t>1) << (b - 64)
                avoid[0] |= (<uint64_t>1) << (b & 63)
                continue
            key = <int64_t>t * PLAIN_UTF8_STATES + u2
            slot = key_slot(key, 2 * cap - 1)
            while True:
                got = s.pair_keys[slot]
                if got == key:
                    break
                if got < 0:
                    if n_pairs == cap:
                        return 0  # too big to be a string body: walk everything
                    s.pair_keys[slot] = key
                    s.pair_queue[n_pairs] = key
                    s.pair_byte[n_pairs] = <uint8_t>b
                    n_pairs += 1
                    break
                slot = (slot + 1) & (2 * cap - 1)
        head += 1
    return 1


cdef int _walk_avoiding(ClassifyScratch* s, const AutomatonC* a, const VocabC* v, intp_t b,
                        uint64_t avoid, intp_t max_len, const uint8_t* follow, bint ctx_has_ctx,
                        intp_t* n_acc, intp_t* n_unc) except -1 nogil:
    # The shortcut tokens starting with b, from a state that reads plain text of up to
    # `max_len` bytes but the bytes behind `avoid` (b itself not among them): a token of at
    # most `max_len` bytes whose signature misses `avoid` is accepted untouched, the others are
    # walked (their common prefixes with each other are the minimum of the sorted lcp between
    # them).
    cdef intp_t lo = v.shortcut_off[b], hi = v.shortcut_off[b + 1], i, n = 0, p, q = -1
    cdef int32_t run
    if hi - lo > s.walk_pos_cap:
        _grow_i32(&s.walk_pos, &s.walk_pos_cap, hi - lo)
    if hi - lo > s.walk_lcp_cap:
        _grow_i32(&s.walk_lcp, &s.walk_lcp_cap, hi - lo)
    if n_acc[0] + (hi - lo) > s.acc_cap:
        _grow_i32(&s.acc, &s.acc_cap, n_acc[0] + (hi - lo))
    for i in range(lo, hi):
        p = v.shortcut_pos[i]
        if v.shortcut_sig[i] & avoid == 0 and v.tok_offsets[p + 1] - v.tok_offsets[p] <= max_len:
            s.acc[n_acc[0]] = <int32_t>p
            n_acc[0] += 1
            continue
        run = 0
        if q >= 0:
            run = v.lcp[q + 1]
            for q in range(q + 2, p + 1):
                if v.lcp[q] < run:
                    run = v.lcp[q]
        s.walk_pos[n] = <int32_t>p
        s.walk_lcp[n] = run
        n += 1
        q = p
    _walk_list(s, a, v, s.walk_pos, s.walk_lcp, n, follow, ctx_has_ctx, n_acc, n_unc)
    return 0


cdef inline void _bit_clear(word_t* bits, int32_t i) noexcept nogil:
    bits[i >> 5] &= ~((<word_t>1) << (i & 31))


cdef inline intp_t _common_prefix(const VocabC* v, intp_t p, intp_t q) noexcept nogil:
    cdef const uint8_t* x = v.tok_bytes + v.tok_offsets[p]
    cdef const uint8_t* y = v.tok_bytes + v.tok_offsets[q]
    cdef intp_t n = v.tok_offsets[p + 1] - v.tok_offsets[p], k = 0
    cdef intp_t m = v.tok_offsets[q + 1] - v.tok_offsets[q]
    if m < n:
        n = m
    while k < n and x[k] == y[k]:
        k += 1
    return k


cdef bint _take_plain_bulk(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                           intp_t max_len, const uint8_t* follow, bint ctx_has_ctx,
                           intp_t* n_acc, intp_t* n_unc, intp_t* n_bulk) except -1 nogil:
    # From a state that reads every plain string of up to max_len bytes: the plain tokens
    # (VocabC.plain_bits) of first-byte groups big enough for the shortcut, as bits in s.marks
    # (n_bulk of them), except those longer than max_len, which are walked here.  Exactly what
    # the per-group shortcut (_shortcut_group / _walk_avoiding) accepts and walks, with the
    # work of a word per 32 tokens.  False (nothing done) when too many are longer.
    cdef intp_t n_long = v.plain_longer[max_len if max_len <= v.max_token_len else v.max_token_len + 1]
    cdef intp_t b, i, lo, hi
    cdef intp_t n_words = v.n_words
    if n_long > v.n_plain_longest:
        return False
    memcpy(s.marks, v.plain_bits, <size_t>n_words * sizeof(word_t))
    for b in range(256):  # small groups are walked whole by the caller: not taken here
        lo, hi = v.shortcut_off[b], v.shortcut_off[b + 1]
        if hi > lo and hi - lo < _MIN_SHORTCUT and plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE:
            for i in range(lo, hi):
                _bit_clear(s.marks, v.sorted_ids[v.shortcut_pos[i]])
    _walk_longest(s, a, v, v.plain_longest, n_long, True, follow, ctx_has_ctx, n_acc, n_unc)
    n_bulk[0] = _count_bits(s.marks, v.n_words)
    return True


cdef intp_t _count_bits(const word_t* bits, intp_t n_words) noexcept nogil:
    cdef intp_t w, count = 0
    for w in range(n_words):
        count += __builtin_popcount(bits[w])
    return count


cdef int _walk_longest(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                       const int32_t* longest, intp_t n_long, bint big_groups_only,
                       const uint8_t* follow, bint ctx_has_ctx, intp_t* n_acc,
                       intp_t* n_unc) except -1 nogil:
    # The sorted positions longest[0:n_long]: cleared from s.marks and walked (with
    # big_groups_only, only those whose first-byte group is big enough for the shortcut: the
    # caller walks the other groups whole).
    cdef intp_t i, n = 0, p
    cdef int32_t first
    if n_long > s.walk_pos_cap:
        _grow_i32(&s.walk_pos, &s.walk_pos_cap, n_long)
    if n_long > s.walk_lcp_cap:
        _grow_i32(&s.walk_lcp, &s.walk_lcp_cap, n_long)
    for i in range(n_long):
        p = longest[i]
        _bit_clear(s.marks, v.sorted_ids[p])
        first = v.tok_bytes[v.tok_offsets[p]]
        if not big_groups_only or v.shortcut_off[first + 1] - v.shortcut_off[first] >= _MIN_SHORTCUT:
            s.walk_pos[n] = <int32_t>p
            n += 1
    # sorted, each with its common prefix with the previous one, for _walk_list
    if n > 1:
        qsort(s.walk_pos, <size_t>n, sizeof(int32_t), cmp_i32)
    for i in range(n):
        s.walk_lcp[i] = 0 if i == 0 else <int32_t>_common_prefix(v, s.walk_pos[i - 1], s.walk_pos[i])
    _walk_list(s, a, v, s.walk_pos, s.walk_lcp, n, follow, ctx_has_ctx, n_acc, n_unc)
    return 0


cdef inline void _start_classify(ClassifyScratch* s, int32_t state) noexcept nogil:
    s.state = state
    s.peak_tops = 0
    s.check_every = s.until_check = _CHECK_EVERY
    s.last_check = monotonic_seconds()


cdef CacheEntryC* classify_entry_from(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                      int32_t state, const int32_t* ctx, intp_t n_ctx,
                                      const uint8_t* follow, const CacheEntryC* base,
                                      intp_t same_len) except? NULL nogil:
    """The entry of ``state`` from ``base``, the entry of a state of the same rule that agrees
    with it on every byte string shorter than ``same_len + 1`` bytes: a token that short meets
    the same states at the same depths from either (the rule's return contexts and follow bytes
    are the same too), so its verdict is copied; the longer ones are walked.  NULL (nothing
    done) when more than VocabC.n_all_longest tokens are longer."""
    cdef intp_t n_long, k, n_acc = 0, n_unc = 0, p
    cdef bint ctx_has_ctx
    if same_len < 1 or same_len > v.max_token_len:
        return NULL
    n_long = v.all_longer[same_len]
    if n_long > v.n_all_longest:
        return NULL
    ctx_has_ctx = _walk_start(s, a, state, -1, ctx, n_ctx)
    _start_classify(s, state)
    entry_accepted_bits(base, v, s.marks)
    if base.n_unc > s.unc_cap:
        _grow_i32(&s.unc, &s.unc_cap, base.n_unc)
    for k in range(base.n_unc):  # (ascending, and stays so: the walked ones are sorted below)
        p = base.unc[k]
        if v.tok_offsets[p + 1] - v.tok_offsets[p] <= same_len:
            s.unc[n_unc] = p
            n_unc += 1
    _walk_longest(s, a, v, v.all_longest, n_long, False, follow, ctx_has_ctx, &n_acc, &n_unc)
    if n_unc > 1:
        qsort(s.unc, <size_t>n_unc, sizeof(int32_t), cmp_i32)
    return entry_from_sets(v, s.acc, n_acc, s.marks, _count_bits(s.marks, v.n_words), s.unc,
                           n_unc)


cdef CacheEntryC* classify_pair_from(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                     int32_t state, int32_t ret, const int32_t* ctx,
                                     intp_t n_ctx, const uint8_t* follow,
                                     const CacheEntryC* own) except NULL nogil:
    """The overlay of ``state`` over a frame at ``ret`` on ``own``, the state's entry with no
    frame under it: an accepted-ids entry whose ids are the tokens ``own`` leaves uncertain that
    the two frames accept, and whose uncertain positions are those still undecided.  Both walks
    are sound for every stack with ``state`` on top, so a token ``own`` accepts (a path within
    the rule) or rejects (no context at all) keeps its verdict: a fill takes ``own``'s accepted
    set, adds these ids and checks only these uncertain tokens.  Only ``own``'s uncertain
    tokens are walked (what one fill's check of them costs), and the overlay holds only them
    (``own``'s accepted set is not copied per caller)."""
    cdef intp_t n_acc = 0, n_unc = 0, k
    cdef bint ctx_has_ctx = _walk_start(s, a, state, ret, ctx, n_ctx)
    cdef CacheEntryC* e
    cdef int32_t* data
    _start_classify(s, state)
    if own.n_unc > s.unc_cap:
        _grow_i32(&s.unc, &s.unc_cap, own.n_unc)
    _walk_longest(s, a, v, own.unc, own.n_unc, False, follow, ctx_has_ctx, &n_acc, &n_unc)
    e = entry_new(XM_KIND_ACCEPTED, n_acc, n_unc, n_acc, 0)
    data = <int32_t*>e.data
    for k in range(n_acc):
        data[k] = v.sorted_ids[s.acc[k]]
    if n_acc > 1:
        qsort(data, <size_t>n_acc, sizeof(int32_t), cmp_i32)
    if n_unc > 1:
        qsort(s.unc, <size_t>n_unc, sizeof(int32_t), cmp_i32)
    if n_unc:
        memcpy(<int32_t*>e.unc, s.unc, <size_t>n_unc * sizeof(int32_t))
    entry_seal(e)
    return e


cdef CacheEntryC* classify_entry(ClassifyScratch* s, const AutomatonC* a, const VocabC* v,
                                 int32_t state, int32_t ret, const int32_t* ctx, intp_t n_ctx,
                                 const uint8_t* follow) except NULL nogil:
    """Walk ``state`` and build its entry in the smallest of three forms: accepted ids (when
    they are the fewest and fit in a bitset's size), rejected ids, or an accepted bitset; ids
    ascending either way, so equal sets give equal entries."""
    cdef intp_t n_acc, n_unc
    cdef intp_t b, lo, hi
    cdef bint ctx_has_ctx = _walk_start(s, a, state, ret, ctx, n_ctx)
    # a string body reads any plain text: its plain tokens are accepted without a walk; free
    # text that refuses a few ASCII bytes (the first byte of a trigger) takes the plain tokens
    # without those bytes
    cdef uint64_t avoid = 0
    _start_classify(s, state)
    # `depth`: the state reads every plain string of up to that many bytes (a bounded string
    # body: a chain with room for n more characters), so its plain tokens that short are
    # accepted without a walk.  Every plain string (`closed`): the whole shortcut.  Neither, but
    # plain text refused only after a few ASCII bytes (a trigger's): the search with refusals.
    cdef intp_t depth = 0, after = 0
    cdef int64_t after_memo[3]
    cdef bint closed = False, plain = False
    if _plain_fast_path:
        depth = plain_depth(&s.pd, a, state, ret, v.max_token_len, &closed)
        if closed:
            plain = True
        elif depth < v.max_token_len:
            plain = _reads_plain_strings(s, a, state, &avoid)
    cdef bint whole = plain and avoid == 0, unsorted_unc = False
    after_memo[0] = after_memo[1] = -2
    after_memo[2] = 0
    n_acc = n_unc = 0
    # The plain tokens a string body takes without a walk, as bits in s.marks at once (the
    # common case: all of them, or all but the few longer than the room left), instead of one
    # by one per first byte below.
    cdef bint bulk = False
    cdef intp_t n_bulk = 0
    if _plain_fast_path and (whole or (not plain and depth >= _MIN_DEPTH)):
        bulk = _take_plain_bulk(s, a, v, v.max_token_len if whole else depth, follow,
                                ctx_has_ctx, &n_acc, &n_unc, &n_bulk)
        unsorted_unc = bulk
    for b in range(256):  # the groups of tokens sharing a first byte, in sorted order
        if v.group_off[b] == v.group_off[b + 1]:
            continue
        if (bulk and plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE
                and v.shortcut_off[b + 1] - v.shortcut_off[b] >= _MIN_SHORTCUT):
            # its plain tokens are in s.marks or were walked: the others remain
            lo, hi = v.rest_off[b], v.rest_off[b + 1]
            _walk_list(s, a, v, v.rest_pos + lo, v.rest_lcp + lo, hi - lo, follow,
                       ctx_has_ctx, &n_acc, &n_unc)
        elif (plain and avoid != 0 and (avoid >> (b & 63)) & 1 == 0
                and plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE
                and v.shortcut_off[b + 1] - v.shortcut_off[b] >= _MIN_SHORTCUT):
            _walk_avoiding(s, a, v, b, avoid, v.max_token_len, follow, ctx_has_ctx, &n_acc,
                           &n_unc)
            unsorted_unc = True
            lo, hi = v.rest_off[b], v.rest_off[b + 1]
            _walk_list(s, a, v, v.rest_pos + lo, v.rest_lcp + lo, hi - lo, follow,
                       ctx_has_ctx, &n_acc, &n_unc)
        elif (not plain and depth >= _MIN_DEPTH and plain_utf8_step(0, <uint8_t>b) != PLAIN_UTF8_NONE
              and v.shortcut_off[b + 1] - v.shortcut_off[b] >= _MIN_SHORTCUT):
            _walk_avoiding(s, a, v, b, 0, depth, follow, ctx_has_ctx, &n_acc, &n_unc)
            unsorted_unc = True
            lo, hi = v.rest_off[b], v.rest_off[b + 1]
            _walk_list(s, a, v, v.rest_pos + lo, v.rest_lcp + lo, hi - lo, follow,
                       ctx_has_ctx, &n_acc, &n_unc)
        elif _plain_fast_path and _shortcut_group(s, a, v, state, b, whole):
            lo, hi = v.shortcut_off[b], v.shortcut_off[b + 1]
            if n_acc + (hi - lo) > s.acc_cap:
                _grow_i32(&s.acc, &s.acc_cap, n_acc + (hi - lo))
            memcpy(s.acc + n_acc, v.shortcut_pos + lo, <size_t>(hi - lo) * sizeof(int32_t))
            n_acc += hi - lo
            lo, hi = v.rest_off[b], v.rest_off[b + 1]
            _walk_list(s, a, v, v.rest_pos + lo, v.rest_lcp + lo, hi - lo, follow,
                       ctx_has_ctx, &n_acc, &n_unc)
        elif (_plain_fast_path and ret >= 0 and _after_first_byte(s, a, v, state, ret, b, after_memo, &after)
              and after >= _MIN_DEPTH):
            _walk_avoiding(s, a, v, b, 0, after + 1, follow, ctx_has_ctx, &n_acc, &n_unc)
            unsorted_unc = True
            lo, hi = v.rest_off[b], v.rest_off[b + 1]
            _walk_list(s, a, v, v.rest_pos + lo, v.rest_lcp + lo, hi - lo, follow,
                       ctx_has_ctx, &n_acc, &n_unc)
        else:
            _walk_range(s, a, v, v.group_off[b], v.group_off[b + 1], follow, ctx_has_ctx,
                        &n_acc, &n_unc)
    if unsorted_unc and n_unc > 1:  # the fill checks them in sorted order
        qsort(s.unc, <size_t>n_unc, sizeof(int32_t), cmp_i32)
    # accepted: s.acc[0:n_acc] (sorted positions) and, with bulk, the n_bulk bits of s.marks
    return entry_from_sets(v, s.acc, n_acc, s.marks, n_bulk, s.unc, n_unc)
