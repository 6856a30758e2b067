# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""How many bytes of plain text a state reads whatever they are: the bounded string body.

A JSON string with ``maxLength`` (or any ``x{0,n}`` over text) is a chain of states, one per
character position.  No state of the chain reads *every* plain string (the chain ends), so the
classifier's string-body shortcut (``_classify._reads_plain_strings``) refused them all and each
position walked the whole vocabulary (~5 ms on Llama-3).  But a state with n characters of room
reads every plain string of up to n bytes, and a plain token is one such string: tokens no longer
than that are accepted without a walk, and only the longer ones (and the non-plain ones) are
walked.

"Plain text" is what ``_tables.plain_utf8_step`` reads: UTF-8 without '"', '\\' or control
bytes, starting on a character boundary.  A path may use the state's own transitions and its
tail calls, as the shortcut's (``frame_succ``), and go one call deep (``call_succ``): a long
bounded string reads ASCII itself and calls one shared rule for each other character, which
returns to the next position.  The path never leaves the rule's frame, so it accepts the token
whatever the stack below holds.

Example (from Python, the test helper)::

    >>> plain_depth_of(compiled_tables, state, 128)  # doctest: +SKIP
    (40, False)
"""

from libc.stdlib cimport malloc, free
from libc.string cimport memset

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint64_t, intp_t, XM_FLAG_FINAL
from xmask.runtime._tables cimport (
    AutomatonC, AutomatonTables, PLAIN_UTF8_STATES, PLAIN_UTF8_NONE, plain_utf8_step,
)
from xmask.runtime._intseq cimport key_slot

# (state, return state, plain UTF-8 state) triples one search may visit; past it the answer is
# the depth reached so far (a lower bound, still exact to use: it only means more tokens are
# walked).
cdef intp_t _MAX_PAIRS = 4096

# Bytes that no plain state reads (category 0), else a category shared by the bytes whose
# column of the plain UTF-8 automaton is the same: with the same byte class they step alike.
cdef uint8_t _CAT[256]
cdef int _N_CAT = 0


def _init_categories():
    global _N_CAT
    cdef dict seen = {}
    cdef int b, u
    for b in range(256):
        col = tuple(plain_utf8_step(<uint8_t>u, <uint8_t>b) for u in range(PLAIN_UTF8_STATES))
        if all(x == PLAIN_UTF8_NONE for x in col):
            _CAT[b] = 0
            continue
        _CAT[b] = seen.setdefault(col, len(seen) + 1)
    _N_CAT = len(seen) + 1


_init_categories()


cdef int32_t frame_succ(const AutomatonC* a, int32_t x, uint8_t b) noexcept nogil:
    # A state reached from x on byte b inside the walked rule's frame: x's own transition, else
    # one of a state x tail-calls (up to two tail calls deep: free-text automata emitted as one
    # rule per state hand plain characters back to their loop that way).  A tail call keeps
    # the caller's parent, so a path through it is still "inside" the rule.
    cdef int32_t c = a.byte_class[b], t = a.trans[x * a.n_classes + c], y, z
    cdef intp_t i, j
    if t >= 0:
        return t
    for i in range(a.call_offsets[x], a.call_offsets[x + 1]):
        if a.call_ret[i] >= 0:
            continue
        y = a.call_target[i]
        t = a.trans[y * a.n_classes + c]
        if t >= 0:
            return t
        for j in range(a.call_offsets[y], a.call_offsets[y + 1]):
            if a.call_ret[j] < 0:
                z = a.call_target[j]
                t = a.trans[z * a.n_classes + c]
                if t >= 0:
                    return t
    return -1


cdef int32_t call_succ(const AutomatonC* a, int32_t x, int32_t r, uint8_t b,
                       int32_t* r_out) noexcept nogil:
    # Like frame_succ, but a path may also enter one (non-tail) call and return from it: with
    # r < 0, x is in the walked rule's frame; with r >= 0, x is in a callee that returns to r.
    # The state reached is returned (-1: none) and its return state stored in r_out[0].
    # One path among several is enough (a path for every plain string is what is asked).
    cdef int32_t t = frame_succ(a, x, b), y
    cdef intp_t i
    r_out[0] = r
    if t >= 0:
        return t
    if r >= 0:
        if a.flags[x] & XM_FLAG_FINAL:  # the callee may end here: its caller reads b
            return call_succ(a, r, -1, b, r_out)
        return -1
    for i in range(a.call_offsets[x], a.call_offsets[x + 1]):
        if a.call_ret[i] < 0 or (a.call_budget != NULL and a.call_budget[i] >= 0):
            continue  # tail calls: frame_succ's; a budgeted callee: its tokens are counted
        y = frame_succ(a, a.call_target[i], b)
        if y >= 0:
            r_out[0] = a.call_ret[i]
            return y
    return -1


cdef int _reserve(PlainDepthScratch* s) except -1 nogil:
    if s.keys != NULL:
        return 0
    s.cap = _MAX_PAIRS
    s.keys = <int64_t*>malloc(2 * s.cap * sizeof(int64_t))
    s.queue = <int64_t*>malloc(s.cap * sizeof(int64_t))
    s.depth = <int32_t*>malloc(s.cap * sizeof(int32_t))
    if s.keys == NULL or s.queue == NULL or s.depth == NULL:
        plain_depth_free(s)
        with gil:
            raise MemoryError()
    return 0


cdef intp_t plain_depth(PlainDepthScratch* s, const AutomatonC* a, int32_t state, int32_t ret,
                        intp_t limit, bint* closed) except -2 nogil:
    """The most bytes d <= ``limit`` such that every plain string of up to d bytes has a path
    from ``state`` inside its frame: a breadth-first search over (state, return state, plain
    UTF-8 state) triples (the return state of the one call the path may be in, see
    ``call_succ``), which stops at the first triple refusing a plain byte (its depth is the
    answer: BFS meets them in order of the fewest bytes that reach them).  ``closed[0]`` tells whether the
    search visited every reachable pair without a refusal: then every plain string of any
    length has a path (an unbounded string body)."""
    cdef uint8_t reps[256]
    cdef uint8_t seen[256 * 32]
    cdef intp_t n_reps = 0, n_pairs = 1, head = 0, mask, slot, k
    cdef int64_t key, got
    cdef int32_t x, r, r2, t, dep
    cdef int64_t n_ret = a.n_states + 1  # return states -1 .. n_states - 1, shifted by one
    cdef uint8_t u, u2, b
    cdef int cb
    cdef bint dedup = a.n_classes * _N_CAT <= 256 * 32  # (else every plain byte: still exact)
    closed[0] = False
    if limit <= 0:
        return 0
    # one byte per (byte class, category): the only bytes whose steps can differ
    if dedup:
        memset(seen, 0, <size_t>(a.n_classes * _N_CAT))
    for cb in range(256):
        if _CAT[cb] == 0:
            continue
        if dedup:
            k = a.byte_class[cb] * _N_CAT + _CAT[cb]
            if seen[k]:
                continue
            seen[k] = 1
        reps[n_reps] = <uint8_t>cb
        n_reps += 1
    _reserve(s)
    mask = 2 * s.cap - 1
    for slot in range(2 * s.cap):
        s.keys[slot] = -1
    key = (<int64_t>state * n_ret + (ret + 1)) * PLAIN_UTF8_STATES
    s.queue[0] = key
    s.depth[0] = 0
    s.keys[key_slot(key, mask)] = key
    while head < n_pairs:
        dep = s.depth[head]
        if dep >= limit:
            return limit
        key = s.queue[head]
        u = <uint8_t>(key % PLAIN_UTF8_STATES)
        key = key // PLAIN_UTF8_STATES
        x = <int32_t>(key // n_ret)
        r = <int32_t>(key % n_ret) - 1
        for k in range(n_reps):
            b = reps[k]
            u2 = plain_utf8_step(u, b)
            if u2 == PLAIN_UTF8_NONE:
                continue
            t = call_succ(a, x, r, b, &r2)
            if t < 0:
                return dep  # a plain string of dep + 1 bytes dies here
            key = (<int64_t>t * n_ret + (r2 + 1)) * PLAIN_UTF8_STATES + u2
            slot = key_slot(key, mask)
            while True:
                got = s.keys[slot]
                if got == key:
                    break
                if got < 0:
                    if n_pairs == s.cap:
                        return dep  # too many pairs: every string of dep bytes is known alive
                    s.keys[slot] = key
                    s.queue[n_pairs] = key
                    s.depth[n_pairs] = dep + 1
                    n_pairs += 1
                    break
                slot = (slot + 1) & mask
        head += 1
    closed[0] = True  # no refusal anywhere: any plain string, however long
    return limit


cdef void plain_depth_free(PlainDepthScratch* s) noexcept nogil:
    free(s.keys)
    free(s.queue)
    free(s.depth)
    memset(s, 0, sizeof(PlainDepthScratch))


def plain_depth_of(AutomatonTables tables, int32_t state, intp_t limit):
    """``(depth, closed)`` of ``plain_depth`` for ``state`` (for tests): every plain string of
    up to ``depth`` bytes (at most ``limit``) has a path from ``state`` inside its rule's
    frame; ``closed``: every plain string has."""
    cdef PlainDepthScratch s
    cdef intp_t d
    cdef bint closed
    if not 0 <= state < tables.c.n_states:
        raise ValueError(f"no state {state}")
    memset(&s, 0, sizeof(PlainDepthScratch))
    try:
        d = plain_depth(&s, &tables.c, state, -1, limit, &closed)
    finally:
        plain_depth_free(&s)
    return int(d), bool(closed)
