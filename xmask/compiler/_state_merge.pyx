"""Compile-time kernel: the blocks of states no token can tell apart (GIL released).

``mask_cache.token_equivalent_states`` calls :func:`equivalent_states`; its pure-Python twin is
``mask_cache.token_equivalent_states_reference`` (same partition, tested equal).

A state's first signature is its rule, its FINAL / HAS_BYTES / TOKEN flags, its token edge (set
and target) and its calls: each call's target and, when the callee is nullable, its return
state (a nullable callee can return at once, so the return state's whole behaviour is visible
with no byte read).  Then bounded Moore rounds:
a state's signature is its block, the blocks of its byte targets (one per byte class) and the
blocks of the return states of its non-nullable calls.  A non-nullable callee reads a byte at
least before it returns, so comparing return states one round behind, like byte targets, keeps
"same block after k rounds" = "same outcome on every input of up to k bytes": the long chain of
a bounded string's positions (each calling the shared character tail, returning to the next
position) merges like a chain of plain byte transitions.

Signatures are grouped with an open-addressing hash table whose slots hold a representative
state; a probe compares the full signature with the representative's (the hash only picks the
slot), so different signatures never share a block.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from xmask.runtime._types cimport intp_t
from xmask.runtime._clock cimport monotonic_seconds

# FINAL | HAS_BYTES | TOKEN (automaton.py): what a state does with no byte read
cdef uint8_t _FLAGS = 1 | 2 | 8
cdef uint64_t _MUL = 0x9E3779B97F4A7C15ULL
cdef uint64_t _PRIME = 0x100000001B3ULL


cdef struct Graph:
    intp_t n
    intp_t nc
    const uint8_t* flags
    const int32_t* rule
    const int32_t* trans       # [n * nc], -1 = no target
    const int32_t* call_off    # [n + 1]
    const int32_t* call_target
    const int32_t* call_ret     # -1: a tail call
    const uint8_t* nullable     # per state (a callee is nullable iff its start state is)
    const int32_t* token_set    # per state: the token set of its token edge, -1 = none
    const int32_t* token_target  # where that edge leads


cdef inline uint64_t _mix(uint64_t h, int64_t x) noexcept nogil:
    h = (h ^ <uint64_t>(x + 2)) * _PRIME
    return h ^ (h >> 29)


cdef inline int64_t _ret_key(const Graph* g, intp_t j) noexcept nogil:
    # the first signature's part of call j's return state: only for a nullable callee
    return g.call_ret[j] if g.nullable[g.call_target[j]] else -2


cdef uint64_t _hash_first(const Graph* g, intp_t s) noexcept nogil:
    cdef intp_t j
    cdef uint64_t h = <uint64_t>(g.flags[s] & _FLAGS) * _MUL
    h = _mix(h, g.rule[s])
    h = _mix(h, g.token_set[s])
    h = _mix(h, g.token_target[s])
    h = _mix(h, g.call_off[s + 1] - g.call_off[s])
    for j in range(g.call_off[s], g.call_off[s + 1]):
        h = _mix(h, g.call_target[j])
        h = _mix(h, _ret_key(g, j))
    return h


cdef bint _same_first(const Graph* g, intp_t a, intp_t b) noexcept nogil:
    cdef intp_t j, k
    if (g.flags[a] & _FLAGS) != (g.flags[b] & _FLAGS) or g.rule[a] != g.rule[b]:
        return False
    if g.token_set[a] != g.token_set[b] or g.token_target[a] != g.token_target[b]:
        return False
    if g.call_off[a + 1] - g.call_off[a] != g.call_off[b + 1] - g.call_off[b]:
        return False
    k = g.call_off[b]
    for j in range(g.call_off[a], g.call_off[a + 1]):
        if g.call_target[j] != g.call_target[k] or _ret_key(g, j) != _ret_key(g, k):
            return False
        k += 1
    return True


cdef inline int64_t _blk(const int64_t* block, int32_t t) noexcept nogil:
    return -1 if t < 0 else block[t]


cdef uint64_t _hash_round(const Graph* g, const int64_t* block, intp_t s) noexcept nogil:
    cdef intp_t c, j
    cdef const int32_t* row = g.trans + s * g.nc
    cdef uint64_t h = <uint64_t>block[s] * _MUL
    for c in range(g.nc):
        h = _mix(h, _blk(block, row[c]))
    for j in range(g.call_off[s], g.call_off[s + 1]):
        if not g.nullable[g.call_target[j]]:
            h = _mix(h, _blk(block, g.call_ret[j]))
    return h


cdef bint _same_round(const Graph* g, const int64_t* block, intp_t a, intp_t b) noexcept nogil:
    # a and b share a block, so they have the same calls (targets in the same order)
    cdef intp_t c, j, k
    cdef const int32_t* ra = g.trans + a * g.nc
    cdef const int32_t* rb = g.trans + b * g.nc
    if block[a] != block[b]:
        return False
    for c in range(g.nc):
        if _blk(block, ra[c]) != _blk(block, rb[c]):
            return False
    k = g.call_off[b]
    for j in range(g.call_off[a], g.call_off[a + 1]):
        if not g.nullable[g.call_target[j]] and _blk(block, g.call_ret[j]) != _blk(block, g.call_ret[k]):
            return False
        k += 1
    return True


cdef int64_t _group_first(const Graph* g, int64_t* out, intp_t* slots, intp_t cap) noexcept nogil:
    # out[s] = dense id of s's first signature; returns the count
    cdef intp_t s, h
    cdef int64_t next_id = 0
    for s in range(cap):
        slots[s] = -1
    for s in range(g.n):
        h = <intp_t>(_hash_first(g, s) & <uint64_t>(cap - 1))
        while True:
            if slots[h] < 0:
                slots[h] = s
                out[s] = next_id
                next_id += 1
                break
            if _same_first(g, slots[h], s):
                out[s] = out[slots[h]]
                break
            h = (h + 1) & (cap - 1)
    for s in range(cap):
        slots[s] = -1
    return next_id


cdef struct Work:
    # scratch of the rounds, each array [n] unless said
    int64_t* block       # the current block of each state (ids stay: a split-off part gets a new one)
    int64_t* size        # members per block id
    int64_t* n_dirty     # dirty members per block id (0 between rounds)
    int32_t* rev_off     # [n + 1] predecessors (byte targets and return columns), CSR
    int32_t* rev_src     # [edges]
    int32_t* changed     # states whose block changed in the last round
    int32_t* next_changed
    int32_t* dirty       # this round's states to regroup
    int32_t* mark        # round stamp: in dirty already
    int32_t* group       # per state: its group in this round
    int64_t* group_block  # [n] per group: the block it gets
    int64_t* group_size   # [n] per group: its dirty members
    int64_t* best        # per block: its group that keeps the id (-1 between rounds)
    intp_t* slots        # [cap] hash table, -1 = free (cleared after each use)
    intp_t cap


cdef inline int _edge(const Graph* g, intp_t s, intp_t k) noexcept nogil:
    # column k of state s: byte classes first, then calls (-1: none or a nullable callee's)
    cdef intp_t j
    if k < g.nc:
        return g.trans[s * g.nc + k]
    j = g.call_off[s] + k - g.nc
    return -1 if g.nullable[g.call_target[j]] else g.call_ret[j]


cdef int _predecessors(const Graph* g, Work* w) noexcept nogil:
    # w.rev_off / w.rev_src (allocated here, for the live edges only); -1 if out of memory
    cdef intp_t s, k, width
    cdef int t
    cdef int32_t total
    for s in range(g.n + 1):
        w.rev_off[s] = 0
    for s in range(g.n):
        width = g.nc + g.call_off[s + 1] - g.call_off[s]
        for k in range(width):
            t = _edge(g, s, k)
            if t >= 0:
                w.rev_off[t + 1] += 1
    for s in range(g.n):
        w.rev_off[s + 1] += w.rev_off[s]
    total = w.rev_off[g.n]
    w.rev_src = <int32_t*>malloc((total if total > 0 else 1) * sizeof(int32_t))
    if w.rev_src == NULL:
        return -1
    for s in range(g.n):  # fill from the back of each range (rev_off ends up as starts)
        width = g.nc + g.call_off[s + 1] - g.call_off[s]
        for k in range(width):
            t = _edge(g, s, k)
            if t >= 0:
                w.rev_off[t + 1] -= 1
                w.rev_src[w.rev_off[t + 1]] = <int32_t>s
    # now rev_off[t + 1] is t's first slot: shift down so rev_off[t] .. rev_off[t + 1]
    for s in range(g.n):
        w.rev_off[s] = w.rev_off[s + 1]
    w.rev_off[g.n] = total
    return 0


cdef intp_t _round(const Graph* g, Work* w, intp_t n_changed, int32_t stamp,
                   int64_t* n_blocks) noexcept nogil:
    # One Moore round on the states whose successors' blocks changed last round; returns how
    # many states changed block now (listed in next_changed).  States none of whose successors
    # changed keep their block: the members of a block had one signature, so such states still
    # share one, and a state with a changed successor cannot share it (a changed block id is
    # new).  So only the dirty states are grouped; a block whose members are all dirty keeps
    # its id for its largest group (Hopcroft's rule: a state changes block O(log n) times, so
    # a long chain costs about its splits, not states x rounds).
    cdef intp_t i, e, n_dirty = 0, n_groups = 0, h, p, out = 0
    cdef int32_t x, d
    cdef int64_t b
    for i in range(n_changed):
        x = w.changed[i]
        for e in range(w.rev_off[x], w.rev_off[x + 1]):
            p = w.rev_src[e]
            if w.mark[p] != stamp:
                w.mark[p] = stamp
                w.dirty[n_dirty] = <int32_t>p
                n_dirty += 1
    if n_dirty == 0:
        return 0
    for i in range(n_dirty):  # group by the signature over the current blocks
        d = w.dirty[i]
        h = <intp_t>(_hash_round(g, w.block, d) & <uint64_t>(w.cap - 1))
        while True:
            if w.slots[h] < 0:
                w.slots[h] = d
                w.group[d] = <int32_t>n_groups
                n_groups += 1
                break
            if _same_round(g, w.block, w.slots[h], d):
                w.group[d] = w.group[w.slots[h]]
                break
            h = (h + 1) & (w.cap - 1)
        w.n_dirty[w.block[d]] += 1
    for i in range(n_dirty):  # clear the table (its used slots only)
        d = w.dirty[i]
        h = <intp_t>(_hash_round(g, w.block, d) & <uint64_t>(w.cap - 1))
        while w.slots[h] >= 0:
            w.slots[h] = -1
            h = (h + 1) & (w.cap - 1)
    for i in range(n_groups):
        w.group_block[i] = -1
        w.group_size[i] = 0
    for i in range(n_dirty):
        w.group_size[w.group[w.dirty[i]]] += 1
    for i in range(n_dirty):  # an all-dirty block: its largest group keeps its id
        d = w.dirty[i]
        b = w.block[d]
        if w.n_dirty[b] == w.size[b] and (
                w.best[b] < 0 or w.group_size[w.group[d]] > w.group_size[w.best[b]]):
            w.best[b] = w.group[d]
    for i in range(n_dirty):  # the other groups get new ids, in order of first appearance
        d = w.dirty[i]
        if w.group_block[w.group[d]] >= 0:
            continue
        b = w.block[d]
        if w.best[b] == w.group[d]:
            w.group_block[w.group[d]] = b
        else:
            w.group_block[w.group[d]] = n_blocks[0]
            n_blocks[0] += 1
    for i in range(n_dirty):
        d = w.dirty[i]
        w.n_dirty[w.block[d]] = 0
        w.best[w.block[d]] = -1
    for i in range(n_dirty):
        d = w.dirty[i]
        b = w.group_block[w.group[d]]
        if b != w.block[d]:
            w.size[w.block[d]] -= 1
            w.size[b] += 1
            w.block[d] = b
            w.next_changed[out] = d
            out += 1
    return out


cdef int _blocks(const Graph* g, Work* w, intp_t horizon, double deadline,
                 int32_t* rep) noexcept nogil:
    # rep[s] = the lowest state of s's block; 1 if the deadline passed, 3 if out of memory
    # (rep not set)
    cdef intp_t k, s, n_changed
    cdef int64_t n_blocks
    cdef int32_t* tmp
    n_blocks = _group_first(g, w.block, w.slots, w.cap)
    for s in range(g.n):
        w.size[s] = 0
        w.n_dirty[s] = 0
        w.mark[s] = 0
        w.best[s] = -1
        w.changed[s] = <int32_t>s  # the first round looks at every state with a successor
    for s in range(g.n):
        w.size[w.block[s]] += 1
    if _predecessors(g, w) < 0:
        return 3
    n_changed = g.n
    for k in range(horizon):
        if deadline > 0 and monotonic_seconds() > deadline:
            return 1
        n_changed = _round(g, w, n_changed, <int32_t>(k + 1), &n_blocks)
        if n_changed == 0:
            break  # stable: no later round splits anything
        tmp = w.changed
        w.changed = w.next_changed
        w.next_changed = tmp
    # the lowest state of each block (size as the block -> state table)
    for s in range(n_blocks):
        w.size[s] = -1
    for s in range(g.n):
        if w.size[w.block[s]] < 0:
            w.size[w.block[s]] = s
        rep[s] = <int32_t>w.size[w.block[s]]
    return 0


cdef int _check(const Graph* g) noexcept nogil:
    # 2 if a target is out of range or the call offsets decrease, else 0
    cdef intp_t s, j
    for s in range(g.n):
        if g.call_off[s + 1] < g.call_off[s]:
            return 2
    for s in range(g.n * g.nc):
        if g.trans[s] < -1 or g.trans[s] >= g.n:
            return 2
    for j in range(g.call_off[g.n]):
        if g.call_target[j] < 0 or g.call_target[j] >= g.n or g.call_ret[j] < -1 or g.call_ret[j] >= g.n:
            return 2
    return 0


def equivalent_states(const uint8_t[::1] flags, const int32_t[::1] state_rule,
                      const int32_t[:, ::1] trans, const int32_t[::1] call_offsets,
                      const int32_t[::1] call_target, const int32_t[::1] call_ret,
                      const uint8_t[::1] nullable, const int32_t[::1] token_set,
                      const int32_t[::1] token_target, intp_t horizon, double deadline=0.0):
    """Per state the lowest state of its block (int32), after at most ``horizon`` rounds; None
    if ``deadline`` (a ``time.monotonic()`` value, 0 = none) passed first.

    Example::

        >>> rep = equivalent_states(flags, rule, trans, off, tgt, ret, nullable, tset, ttgt,
        ...                         129)                                   # doctest: +SKIP
    """
    cdef intp_t n = flags.shape[0], cap = 1
    cdef Graph g
    cdef int status
    if (state_rule.shape[0] != n or trans.shape[0] != n or call_offsets.shape[0] != n + 1
            or nullable.shape[0] != n or call_target.shape[0] != call_ret.shape[0]
            or token_set.shape[0] != n or token_target.shape[0] != n):
        raise ValueError("automaton arrays disagree in length")
    rep = np.zeros(n, dtype=np.int32)
    if n == 0:
        return rep
    if call_offsets[0] != 0 or call_offsets[n] != call_target.shape[0]:
        raise ValueError("call offsets are inconsistent")
    cdef int32_t[::1] rp = rep
    while cap < 2 * n:
        cap <<= 1
    g.n, g.nc = n, trans.shape[1]
    g.flags, g.rule, g.trans = &flags[0], &state_rule[0], &trans[0, 0] if g.nc else NULL
    g.call_off = &call_offsets[0]
    g.call_target = &call_target[0] if call_target.shape[0] else NULL
    g.call_ret = &call_ret[0] if call_ret.shape[0] else NULL
    g.nullable = &nullable[0]
    g.token_set, g.token_target = &token_set[0], &token_target[0]
    cdef Work w
    cdef int64_t* i64 = NULL
    cdef int32_t* i32 = NULL
    memset(&w, 0, sizeof(Work))
    w.cap = cap
    try:
        # two allocations: six int64 arrays, then six int32 arrays and rev_off (the rounds
        # swap changed / next_changed: free the allocations, not the fields)
        i64 = <int64_t*>malloc(6 * n * sizeof(int64_t))
        i32 = <int32_t*>malloc((6 * n + 1) * sizeof(int32_t))
        w.slots = <intp_t*>malloc(cap * sizeof(intp_t))
        if i64 == NULL or i32 == NULL or w.slots == NULL:
            raise MemoryError()
        w.block, w.changed = i64, i32
        w.size, w.n_dirty, w.group_block = w.block + n, w.block + 2 * n, w.block + 3 * n
        w.group_size, w.best = w.block + 4 * n, w.block + 5 * n
        w.next_changed, w.dirty, w.mark = w.changed + n, w.changed + 2 * n, w.changed + 3 * n
        w.group, w.rev_off = w.changed + 4 * n, w.changed + 5 * n
        with nogil:  # (the checks too: a big automaton has millions of transitions)
            status = _check(&g)
            if status == 0:
                status = _blocks(&g, &w, horizon, deadline, &rp[0])
    finally:
        free(i64)
        free(i32)
        free(w.rev_src)
        free(w.slots)
    if status == 3:
        raise MemoryError()
    if status == 2:
        raise ValueError("a transition, call target or return state is out of range, "
                         "or call offsets are inconsistent")
    return None if status else rep
