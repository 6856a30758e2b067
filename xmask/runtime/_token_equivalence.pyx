# cython: language_level=3
"""Whether two states of one rule classify every token alike, by a bounded pair search.

Two states of the same rule whose byte behaviour agrees on every string of up to ``horizon``
bytes (the longest token and one more) -- the same flags at every step, the same callees with
return states that agree in turn, the same transitions alive -- give identical token-mask
cache entries: a token's walk from either meets the same frames at the same depths, and the
rule's return contexts and follow bytes, the rest of what a walk reads, belong to the rule.
This is the equivalence the eager warm-up computes for all states at once
(``compiler.mask_cache.token_equivalent_states``); a lazy fill checks one pair instead, before
classifying a state, against the state its rule classified last: the positions of a long
bounded string far from its bound then share one walk, as in the warm-up.  The search also
finds the shortest byte string that tells the two apart (``agree_depth``): every shorter token
is classified alike, so a position nearer the bound copies those verdicts from its neighbour's
entry and walks only the longer tokens (``_classify.classify_entry_from``).

The search is bounded (``_MAX_PAIRS`` state pairs); past that it answers "they may differ at
once", which only costs the classification it tried to save.
"""

from libc.stdlib cimport malloc, free
from libc.string cimport memset

from xmask.runtime._types cimport int32_t, int64_t, intp_t, XM_FLAG_FINAL, XM_FLAG_TOKEN
from xmask.runtime._tables cimport AutomatonC, AutomatonTables

# pairs of states one check may visit: a string position's pairs up to the horizon are about
# 130 (Llama-3) to 260; 20 states per character position (short bounds) about 20x that
cdef enum:
    _MAX_PAIRS = 4096
    _TABLE = 8192           # open addressing, power of two, at most half full
    _QUEUE = 8192           # queued pairs (a pair is queued again at a lesser depth)


cdef struct _Search:
    int64_t* keys           # [_TABLE] x * n + y, -1 = empty
    int32_t* depth          # [_TABLE] least depth the pair was queued at
    int32_t* qx             # [_QUEUE] the queue
    int32_t* qy
    int32_t* qd
    intp_t n_queued
    intp_t n_pairs
    intp_t n_states
    int32_t best            # least length of a string found to tell the states apart


cdef inline intp_t _slot(int64_t key) noexcept nogil:
    cdef unsigned long long h = <unsigned long long>key * 0x9E3779B97F4A7C15ULL
    return <intp_t>((h >> 32) & (_TABLE - 1))


cdef inline void _differ(_Search* w, int32_t d) noexcept nogil:
    if d < w.best:
        w.best = d


cdef void _push(_Search* w, int32_t x, int32_t y, int32_t d) noexcept nogil:
    cdef int64_t key
    cdef intp_t slot
    if x == y or d >= w.best:  # (nothing found there could lower `best`)
        return
    if x < 0 or y < 0:  # one a tail call (-1), the other not
        _differ(w, d)
        return
    key = <int64_t>x * w.n_states + y
    slot = _slot(key)
    while w.keys[slot] >= 0 and w.keys[slot] != key:
        slot = (slot + 1) & (_TABLE - 1)
    if w.keys[slot] == key:
        if w.depth[slot] <= d:
            return  # checked already, with at least as many bytes to go
    else:
        if w.n_pairs == _MAX_PAIRS:
            w.best = 0  # too big to tell
            return
        w.n_pairs += 1
        w.keys[slot] = key
    w.depth[slot] = d
    if w.n_queued == _QUEUE:
        w.best = 0
        return
    w.qx[w.n_queued] = x
    w.qy[w.n_queued] = y
    w.qd[w.n_queued] = d
    w.n_queued += 1


cdef inline int32_t _reads_first(const AutomatonC* a, int32_t start) noexcept nogil:
    # 1 if a rule started at `start` reads a byte before it can return (its start is not final
    # and calls nothing), else 0
    if a.flags[start] & XM_FLAG_FINAL or a.call_offsets[start + 1] > a.call_offsets[start]:
        return 0
    return 1


cdef intp_t agree_depth(const AutomatonC* a, int32_t s, int32_t t,
                        intp_t horizon) except -1 nogil:
    """The length of the shortest byte string that may tell states ``s`` and ``t`` (of one
    rule) apart -- in flags, callees or live transitions, their return states compared in turn
    -- or ``horizon + 1`` if none of at most ``horizon`` bytes does; 0 when the search grows
    past its bound.  Every token shorter than that is classified alike from both."""
    cdef _Search w
    cdef intp_t head = 0, nc = a.n_classes, i, n, ox, oy
    cdef int32_t x, y, d, tx, ty
    cdef const int32_t* rx
    cdef const int32_t* ry
    if s == t:
        return horizon + 1
    memset(&w, 0, sizeof(_Search))
    w.n_states = a.n_states
    w.best = <int32_t>(horizon + 1)
    w.keys = <int64_t*>malloc(_TABLE * sizeof(int64_t))
    w.depth = <int32_t*>malloc(_TABLE * sizeof(int32_t))
    w.qx = <int32_t*>malloc(3 * _QUEUE * sizeof(int32_t))
    if w.keys == NULL or w.depth == NULL or w.qx == NULL:
        free(w.keys)
        free(w.depth)
        free(w.qx)
        with gil:
            raise MemoryError()
    w.qy = w.qx + _QUEUE
    w.qd = w.qy + _QUEUE
    memset(w.keys, 0xFF, _TABLE * sizeof(int64_t))
    _push(&w, s, t, 0)
    while head < w.n_queued and w.best > 0:
        x = w.qx[head]
        y = w.qy[head]
        d = w.qd[head]
        head += 1
        if d >= w.best:
            continue
        if a.flags[x] != a.flags[y] or a.flags[x] & XM_FLAG_TOKEN:
            _differ(&w, d)  # (token edges are not compared: they count as a difference)
            continue
        ox, oy = a.call_offsets[x], a.call_offsets[y]
        n = a.call_offsets[x + 1] - ox
        if n != a.call_offsets[y + 1] - oy:
            _differ(&w, d)
            continue
        for i in range(n):
            if (a.call_target[ox + i] != a.call_target[oy + i]
                    or (a.call_budget != NULL and a.call_budget[ox + i] != a.call_budget[oy + i])):
                _differ(&w, d)
                break
            # the return states must agree from the least depth the callee can return at: this
            # one if it may read nothing (its start is final, or calls first), else the next
            _push(&w, a.call_ret[ox + i], a.call_ret[oy + i], d + _reads_first(a, a.call_target[ox + i]))
        if d + 1 >= w.best:
            continue
        rx = a.trans + <intp_t>x * nc
        ry = a.trans + <intp_t>y * nc
        for i in range(nc):
            tx = rx[i]
            ty = ry[i]
            if (tx < 0) != (ty < 0):
                _differ(&w, d + 1)
                break
            if tx >= 0:
                _push(&w, tx, ty, d + 1)
    free(w.keys)
    free(w.depth)
    free(w.qx)
    return w.best


cdef int token_equivalent(const AutomatonC* a, int32_t s, int32_t t,
                          intp_t horizon) except -1 nogil:
    """1 if states ``s`` and ``t`` (of one rule) agree on every byte string of up to
    ``horizon`` bytes (see :func:`agree_depth`), else 0 (also when the search is too big)."""
    return 1 if agree_depth(a, s, t, horizon) > horizon else 0


def states_token_equivalent(AutomatonTables tables, int32_t s, int32_t t, intp_t horizon):
    """Whether states ``s`` and ``t`` (of one rule) classify every token of at most
    ``horizon - 1`` bytes alike (see the module docstring); conservative: False when the
    search is too big.

    Example::

        >>> states_token_equivalent(compiled._automaton_tables, 40, 41, 129)  # doctest: +SKIP
        True
    """
    if not (0 <= s < tables.c.n_states and 0 <= t < tables.c.n_states):
        raise ValueError(f"state out of range (the automaton has {tables.c.n_states} states)")
    cdef int r
    with nogil:
        r = token_equivalent(&tables.c, s, t, horizon)
    return r == 1


def states_agree_depth(AutomatonTables tables, int32_t s, int32_t t, intp_t horizon):
    """The length of the shortest byte string that may tell states ``s`` and ``t`` (of one
    rule) apart, ``horizon + 1`` if none of at most ``horizon`` bytes does, 0 if the search
    was too big to tell.

    Example::

        >>> states_agree_depth(compiled._automaton_tables, 40, 41, 129)  # doctest: +SKIP
        57
    """
    if not (0 <= s < tables.c.n_states and 0 <= t < tables.c.n_states):
        raise ValueError(f"state out of range (the automaton has {tables.c.n_states} states)")
    cdef intp_t r
    with nogil:
        r = agree_depth(&tables.c, s, t, horizon)
    return r
